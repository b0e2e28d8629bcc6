package results

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
)

// AppendNew appends to list each of items it does not hold yet: the
// warnings, errors or workloads of several results, each said once.
func AppendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// DescribeTarget says which apiserver ran a result; its address only
// withServer (it means nothing once the run is over).
func DescribeTarget(t spec.TargetInfo, withServer bool) string {
	d := string(t.Kind)
	if t.Server != "" && withServer {
		d += " " + t.Server
	}
	if t.Context != "" {
		d += ", context " + t.Context
	}
	var parts []string
	if t.ServerVersion != "" {
		parts = append(parts, "kube-apiserver "+t.ServerVersion)
	}
	if t.EtcdVersion != "" || t.Storage != "" {
		e := "etcd"
		if t.EtcdVersion != "" {
			e += " " + t.EtcdVersion
		}
		if t.Storage != "" {
			e += " on " + string(t.Storage)
		}
		parts = append(parts, e)
	}
	if len(t.APIServers) > 1 {
		parts = append(parts, fmt.Sprintf("%d apiservers", len(t.APIServers)))
	}
	if e := t.EtcdProxy; e != nil {
		parts = append(parts, fmt.Sprintf("etcd behind a delaying proxy that added %s per round trip (mean; max %s)",
			words.Duration(e.Mean.Duration), words.Duration(e.Max.Duration)))
	}
	for _, p := range []struct {
		on  bool
		say string
	}{{t.ControllerManager, "kube-controller-manager"}, {t.Reused, "reused control plane"}, {t.NodeImage != "", "node image " + t.NodeImage}, {t.KindConfig != "", "made by kb-bench kind up"}} {
		if p.on {
			parts = append(parts, p.say)
		}
	}
	if len(parts) > 0 {
		d += " (" + strings.Join(parts, ", ") + ")"
	}
	return d
}

// Describe is the run in words: the scenario's own description (what),
// then the strategy, the loop (for a driven scenario) and the bounds.
func Describe(s spec.Spec, what string, driven bool) string {
	parts := []string{s.Scenario + ": " + what}
	if s.Strategy != "" {
		parts = append(parts, "strategy "+describeStrategy(s))
	}
	switch {
	case !driven:
	case s.Rate > 0:
		parts = append(parts, fmt.Sprintf("open loop %g ops/s (max %d in flight)", s.Rate, s.MaxInFlight))
	case s.ThinkTime.Duration > 0:
		parts = append(parts, "closed loop, think time "+s.ThinkTime.String())
	default:
		parts = append(parts, "closed loop")
	}
	var bounds []string
	if s.Duration.Duration > 0 {
		bounds = append(bounds, s.Duration.String())
	}
	if s.Operations > 0 {
		bounds = append(bounds, fmt.Sprintf("%d ops", s.Operations))
	}
	length := strings.Join(bounds, " or ")
	if s.Warmup.Duration > 0 {
		length += " after " + s.Warmup.String() + " warm-up"
	}
	parts = append(parts, length)
	if s.Shards > 0 {
		parts = append(parts, fmt.Sprintf("in %s (%s runner)", words.Plural(s.Shards, "shard"), s.Runner))
	}
	return strings.Join(parts, ", ")
}

func describeStrategy(s spec.Spec) string {
	switch s.Strategy {
	case spec.StrategyUpdate:
		if s.Unconditional {
			return "update without resourceVersion (last write wins)"
		}
		return "update"
	case spec.StrategyRetry:
		if s.Backoff == nil {
			return "retry"
		}
		return "retry (backoff " + s.Backoff.String() + ")"
	case spec.StrategyPatch:
		d := "patch " + string(s.PatchType)
		if s.PatchPrecondition {
			d += " with resourceVersion precondition"
		}
		return d
	case spec.StrategySSA:
		d := "ssa (" + string(s.FieldManager) + " field managers"
		if s.Force {
			d += ", force"
		}
		return d + ")"
	}
	return string(s.Strategy)
}
