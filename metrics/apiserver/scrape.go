// Package apiserver reads the apiserver's own /metrics (through client-go's
// REST client, parsed with prometheus/common/expfmt) into a plain
// metrics.ServerSample, the server's side of kb-bench's cross-check.
//
// Scrape once before and once after the measured window, then hand both
// samples to analysis.NewServerCheck. When the endpoint cannot be read
// (UnavailableError: 401, 403 or 404, e.g. RBAC without the nonResourceURL
// /metrics), the caller warns once, records ServerCheck{Available: false}
// and carries on: the benchmark's own figures do not depend on it.
package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
)

// The metric families kb-bench keeps.
const (
	requestTotal    = "apiserver_request_total"
	requestDuration = "apiserver_request_duration_seconds"
	etcdTotal       = "etcd_requests_total"
	etcdDuration    = "etcd_request_duration_seconds"
	flowRejected    = "apiserver_flowcontrol_rejected_requests_total"
	flowWait        = "apiserver_flowcontrol_request_wait_duration_seconds"
	processCPU      = "process_cpu_seconds_total"
	processMemory   = "process_resident_memory_bytes"
)

// UnavailableError says /metrics cannot be read with these credentials (or
// is not served), and what to grant.
type UnavailableError struct {
	// Code is the HTTP status (401, 403 or 404).
	Code int
	Err  error
}

// Error says why /metrics could not be read.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the apiserver's /metrics is not readable (HTTP %d %s): grant get on the nonResourceURL /metrics to compare with the server's own counts", e.Code, http.StatusText(e.Code))
}

// Unwrap returns the underlying request error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Scrape reads /metrics through c (for example
// clientset.Discovery().RESTClient() or CoreV1().RESTClient()).
func Scrape(ctx context.Context, c rest.Interface) (metrics.ServerSample, error) {
	body, err := c.Get().AbsPath("/metrics").
		SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))).
		DoRaw(ctx)
	if err != nil {
		for code, is := range map[int]func(error) bool{http.StatusForbidden: apierrors.IsForbidden, http.StatusUnauthorized: apierrors.IsUnauthorized, http.StatusNotFound: apierrors.IsNotFound} {
			if is(err) {
				return metrics.ServerSample{}, &UnavailableError{Code: code, Err: err}
			}
		}
		return metrics.ServerSample{}, fmt.Errorf("scraping the apiserver's /metrics: %w", err)
	}
	return Parse(bytes.NewReader(body), time.Now())
}

// Parse reads a Prometheus text exposition taken at at.
func Parse(r io.Reader, at time.Time) (metrics.ServerSample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return metrics.ServerSample{}, fmt.Errorf("parsing the apiserver's /metrics: %w", err)
	}
	s := metrics.NewServerSample(at)
	if _, ok := fams[requestTotal]; !ok {
		return metrics.ServerSample{}, fmt.Errorf("the /metrics answer has no %s: it does not come from a kube-apiserver", requestTotal)
	}
	for _, m := range fams[requestTotal].GetMetric() {
		l := labels(m)
		s.Requests[metrics.RequestKey{EndpointKey: endpoint(l), Code: l["code"]}] += counter(m)
	}
	for _, m := range fams[requestDuration].GetMetric() {
		k := endpoint(labels(m))
		s.Durations[k] = s.Durations[k].Add(histogram(m))
		s.DurationBuckets[k] = metrics.AddBuckets(s.DurationBuckets[k], buckets(m))
	}
	for _, m := range fams[etcdTotal].GetMetric() {
		s.Etcd[etcdKey(labels(m))] += counter(m)
	}
	for _, m := range fams[etcdDuration].GetMetric() {
		k := etcdKey(labels(m))
		s.EtcdDurations[k] = s.EtcdDurations[k].Add(histogram(m))
	}
	for _, m := range fams[flowRejected].GetMetric() {
		l := labels(m)
		s.FlowRejected[metrics.FlowKey{PriorityLevel: l["priority_level"], FlowSchema: l["flow_schema"], Reason: l["reason"]}] += counter(m)
	}
	for _, m := range fams[flowWait].GetMetric() {
		l := labels(m)
		k := metrics.FlowWaitKey{PriorityLevel: l["priority_level"], FlowSchema: l["flow_schema"], Executed: l["execute"] == "true"}
		s.FlowWait[k] = s.FlowWait[k].Add(histogram(m))
	}
	s.Process = process(fams)
	return s, nil
}

// process reads Prometheus' process collector's figures.
func process(fams map[string]*dto.MetricFamily) metrics.ProcessSample {
	var p metrics.ProcessSample
	for _, m := range fams[processCPU].GetMetric() {
		p.Has, p.CPUSeconds = true, value(m)
	}
	for _, m := range fams[processMemory].GetMetric() {
		p.ResidentBytes = int64(value(m))
	}
	return p
}

// ScrapeProcess reads the process figures of any Prometheus /metrics
// endpoint served over plain HTTP: the local control plane's etcd serves
// them on its client URL.
func ScrapeProcess(ctx context.Context, client *http.Client, url string) (metrics.ProcessSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return metrics.ProcessSample{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return metrics.ProcessSample{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metrics.ProcessSample{}, fmt.Errorf("scraping %s: HTTP %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return metrics.ProcessSample{}, fmt.Errorf("parsing %s: %w", url, err)
	}
	p := process(fams)
	if !p.Has {
		return p, fmt.Errorf("%s has no %s", url, processCPU)
	}
	return p, nil
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func endpoint(l map[string]string) metrics.EndpointKey {
	return metrics.EndpointKey{Verb: l["verb"], Group: l["group"], Resource: l["resource"], Subresource: l["subresource"]}
}

func etcdKey(l map[string]string) metrics.EtcdKey {
	return metrics.EtcdKey{Operation: l["operation"], Group: l["group"], Resource: l["resource"]}
}

// value reads a counter, a gauge or an untyped sample.
func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// counter reads a counter (or an untyped sample) as a whole number.
func counter(m *dto.Metric) int64 { return int64(math.Round(value(m))) }

// buckets are a histogram's cumulative buckets, +Inf left out (it is the count).
func buckets(m *dto.Metric) []metrics.BucketCount {
	var out []metrics.BucketCount
	for _, b := range m.GetHistogram().GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out = append(out, metrics.BucketCount{UpperBound: b.GetUpperBound(), Count: int64(b.GetCumulativeCount())})
	}
	return out
}

func histogram(m *dto.Metric) metrics.CountSum {
	h := m.GetHistogram()
	return metrics.CountSum{Count: int64(h.GetSampleCount()), Sum: h.GetSampleSum()}
}
