package job_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// rules stand for what a caller grants the shards.
var rules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
}

func options() job.Options {
	return job.Options{
		Name:      "kb-bench-20261123-083157-73f1c9",
		Namespace: "kb-bench-20261123-083157-73f1c9",
		RunID:     "20261123-083157-73f1c9",
		Shards:    3,
		Image:     "kb-bench/kb-bench:v0.3.0",
		Rules:     rules,
	}
}

// list is the objects in the order they are created in: the
// ServiceAccount and its rights before the Job whose pods use them.
func list(o job.Objects) []runtime.Object {
	return []runtime.Object{o.ServiceAccount, o.Role, o.RoleBinding, o.Job}
}

// render is the objects as one multi-document YAML stream, as kubectl
// apply -f takes them.
func render(o job.Objects) ([]byte, error) {
	var docs [][]byte
	for _, obj := range list(o) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("rendering %T as YAML: %w", obj, err)
		}
		docs = append(docs, b)
	}
	return bytes.Join(docs, []byte("---\n")), nil
}

func TestYAMLGolden(t *testing.T) {
	tuned := options()
	tuned.Shards = 8
	tuned.ImagePullPolicy = corev1.PullAlways
	tuned.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	tuned.AntiAffinity = true
	tuned.NodeSelector = map[string]string{"kb-bench.io/pool": "load", "kubernetes.io/arch": "amd64"}
	tuned.ActiveDeadline = 90*time.Second + time.Millisecond // rounded up to 91
	tuned.Labels = map[string]string{"team": "apimachinery"}
	remote := options()
	remote.Namespace = "kb-bench-shards-20261123-083157-73f1c9"
	remote.TargetNamespace, remote.TargetSecret = "kb-bench-20261123-083157-73f1c9", "kb-bench-20261123-083157-73f1c9-target"
	for _, tc := range []struct {
		name string
		opts job.Options
	}{
		{"default-3-shards.yaml", options()},
		{"tuned.yaml", tuned},
		{"runner-cluster.yaml", remote},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := job.Build(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := render(objs)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name, got)
		})
	}
}

// TestBuild checks what the golden files show but a reviewer could miss.
func TestBuild(t *testing.T) {
	o := options()
	o.Labels = map[string]string{"team": "a"}
	objs, err := job.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range list(objs) {
		m := obj.(interface{ GetLabels() map[string]string }).GetLabels()
		for k, v := range k8s.Labels(o.RunID) {
			if m[k] != v {
				t.Errorf("%T: label %s=%q, want %q", obj, k, m[k], v)
			}
		}
		if m["team"] != "a" {
			t.Errorf("%T: caller's label team missing: %v", obj, m)
		}
	}
	j := objs.Job.Spec
	if *j.Completions != 3 || *j.Parallelism != 3 || *j.BackoffLimit != 0 || j.TTLSecondsAfterFinished != nil || j.ActiveDeadlineSeconds != nil {
		t.Errorf("completions %d, parallelism %d, backoffLimit %d, ttl %v, deadline %v; want 3, 3, 0, unset, unset",
			*j.Completions, *j.Parallelism, *j.BackoffLimit, j.TTLSecondsAfterFinished, j.ActiveDeadlineSeconds)
	}
	c := j.Template.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("default pull policy %q, want IfNotPresent", c.ImagePullPolicy)
	}
	if got := strings.Join(c.Args, " "); got != "shard --namespace "+o.Namespace+" --run-id "+o.RunID {
		t.Errorf("args %q", got)
	}
	if j.Template.Spec.Affinity != nil || j.Template.Spec.NodeSelector != nil {
		t.Errorf("affinity %v, node selector %v: want neither by default", j.Template.Spec.Affinity, j.Template.Spec.NodeSelector)
	}
	// The objects own their data: changing the options afterwards does not
	// change them.
	o.Rules[0].Verbs[0] = "delete"
	o.Labels["team"] = "b"
	if objs.Role.Rules[0].Verbs[0] != "get" || objs.Job.Labels["team"] != "a" {
		t.Error("the objects share the options' slices or maps")
	}
	o.Rules[0].Verbs[0] = "get"
}

func TestBuildInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*job.Options)
		want []string // every one must appear in the error
	}{
		{"no shards", func(o *job.Options) { o.Shards = 0 }, []string{"shards: Invalid value: 0: use 1 to 256 (--shards)"}},
		{"too many shards", func(o *job.Options) { o.Shards = 5000 }, []string{"use 1 to 256"}},
		{"no image", func(o *job.Options) { o.Image = "" }, []string{"image: Required value", "make image"}},
		{"no name", func(o *job.Options) { o.Name = "" }, []string{"name: Required value"}},
		{"name not a DNS label", func(o *job.Options) { o.Name = "KB_bench" }, []string{`name: Invalid value: "KB_bench"`, "RFC 1123"}},
		{"name too long for NAME-INDEX", func(o *job.Options) { o.Name = strings.Repeat("a", 62) }, []string{"name: Too long", "61"}},
		{"no namespace", func(o *job.Options) { o.Namespace = "" }, []string{"namespace: Required value"}},
		{"namespace not a DNS label", func(o *job.Options) { o.Namespace = "Team.A" }, []string{`namespace: Invalid value: "Team.A"`}},
		{"no run id", func(o *job.Options) { o.RunID = "" }, []string{"runID: Required value"}},
		{"run id not a label value", func(o *job.Options) { o.RunID = "a run" }, []string{`runID: Invalid value: "a run"`, "kb-bench.io/run-id label"}},
		{"bad pull policy", func(o *job.Options) { o.ImagePullPolicy = "Sometimes" }, []string{`imagePullPolicy: Unsupported value: "Sometimes"`}},
		{"negative deadline", func(o *job.Options) { o.ActiveDeadline = -time.Second }, []string{`activeDeadline: Invalid value: "-1s"`}},
		{"no rules", func(o *job.Options) { o.Rules = nil }, []string{"rules: Required value"}},
		{"own label", func(o *job.Options) { o.Labels = map[string]string{k8s.LabelRunID: "other"} }, []string{"labels[kb-bench.io/run-id]: Forbidden", "drop it"}},
		{"bad label", func(o *job.Options) { o.Labels = map[string]string{"a b": "c"} }, []string{`labels[a b]: Invalid value: "a b"`}},
		{"bad node selector", func(o *job.Options) { o.NodeSelector = map[string]string{"pool": "a b"} }, []string{`nodeSelector[pool]: Invalid value: "a b"`}},
		{"several at once", func(o *job.Options) { o.Shards, o.Image = 0, "" }, []string{"shards: Invalid", "image: Required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options()
			tc.edit(&o)
			_, err := job.Build(o)
			if err == nil {
				t.Fatal("no error")
			}
			if !spec.IsInput(err) {
				t.Errorf("not an input error: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
	// The longest name that fits: NAME-INDEX with 10 shards is NAME-9.
	o := options()
	o.Name, o.Shards = strings.Repeat("a", 61), 10
	if _, err := job.Build(o); err != nil {
		t.Errorf("a 61-character name with 10 shards: %v", err)
	}
	o.Shards = 11
	if _, err := job.Build(o); err == nil {
		t.Error("a 61-character name with 11 shards (NAME-10 is 64 characters) was accepted")
	}
}
