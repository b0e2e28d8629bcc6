package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestClassify(t *testing.T) {
	configmaps := schema.GroupResource{Resource: "configmaps"}
	fmConflict := apierrors.NewConflict(configmaps, "kb-bench-0", errors.New("Apply failed with 1 conflict"))
	fmConflict.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Field: ".data.counter"}}
	tests := []struct {
		name string
		err  error
		want Outcome
	}{
		{"nil", nil, Success},
		{"stale resourceVersion", apierrors.NewConflict(configmaps, "kb-bench-0", errors.New("the object has been modified")), VersionConflict},
		{"field manager conflict", fmConflict, FieldManagerConflict},
		// What the apiserver's patch handler answers when a JSON patch's
		// test op fails: 422 with no kind, the patch error as a cause.
		{"json patch test failed", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "testing value /data/counter failed: test failed", 0, false), FailedPrecondition},
		// A field that fails validation is a bad request, not a
		// compare-and-swap that said no.
		{"validation error", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "kb-bench-0", field.ErrorList{field.TooLong(field.NewPath("data"), "", 1<<20)}), Invalid},
		{"429", apierrors.NewTooManyRequests("slow down", 1), Throttled},
		{"500", apierrors.NewInternalError(errors.New("etcd")), ServerError},
		{"504 timeout", apierrors.NewTimeoutError("took too long", 0), Timeout},
		{"client deadline", fmt.Errorf("Put: %w", context.DeadlineExceeded), Timeout},
		{"forbidden", apierrors.NewForbidden(configmaps, "kb-bench-0", errors.New("no")), Other},
		{"broken connection", errors.New("connection reset by peer"), Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
