// Package metrics records what a benchmark run measures: outcomes by class,
// attempts, and latency in HDR histograms kept per lock stripe and merged exactly at
// the end, plus a per-second series and the apiserver's own counters.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Outcome is the class of a finished request or operation.
type Outcome uint8

// The outcome classes. Keep NumOutcomes last.
const (
	Success              Outcome = iota // 2xx
	VersionConflict                     // 409 on a stale resourceVersion
	FieldManagerConflict                // 409 from server-side apply field ownership
	FailedPrecondition                  // 422 from a JSON patch test op: the CAS said no
	Invalid                             // 422 that names a kind: its schema or a validation rule (CEL) refused the object
	Throttled                           // 429
	ServerError                         // 5xx
	Timeout                             // client or server timeout
	Other                               // anything else
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{
	Success:              "success",
	VersionConflict:      "conflict",
	FieldManagerConflict: "field-manager-conflict",
	FailedPrecondition:   "failed-precondition",
	Invalid:              "invalid",
	Throttled:            "throttled",
	ServerError:          "server-error",
	Timeout:              "timeout",
	Other:                "other",
}

// String returns the outcome's stable name, used in results and tables.
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// OutcomeMap names counts indexed by Outcome, leaving zeros out.
func OutcomeMap(counts []int64) map[string]int64 {
	m := map[string]int64{}
	for i, n := range counts {
		if n != 0 {
			m[Outcome(i).String()] = n
		}
	}
	return m
}

// Classify maps a client-go error to its outcome class. A nil error is Success.
func Classify(err error) Outcome {
	if err == nil {
		return Success
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	var status apierrors.APIStatus
	var details metav1.StatusDetails
	if errors.As(err, &status) && status.Status().Details != nil {
		details = *status.Status().Details
	}
	switch {
	case apierrors.IsConflict(err) && slices.ContainsFunc(details.Causes, func(c metav1.StatusCause) bool { return c.Type == metav1.CauseTypeFieldManagerConflict }):
		return FieldManagerConflict
	case apierrors.IsConflict(err):
		return VersionConflict
	case apierrors.IsInvalid(err) && details.Kind == "":
		// A JSON patch whose test op fails answers 422 Invalid, naming no
		// kind: the compare-and-swap said no.
		return FailedPrecondition
	case apierrors.IsInvalid(err):
		// A 422 that names a kind rejects the object's fields: its schema
		// or a validation rule (a CRD's CEL rules) said no. Its message is
		// kept, as an "other" error's is.
		return Invalid
	case apierrors.IsTooManyRequests(err):
		return Throttled
	case status != nil && status.Status().Code >= http.StatusInternalServerError:
		return ServerError
	}
	return Other
}
