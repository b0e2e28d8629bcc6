package kubelettest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kb-bench/kb-bench/workload/distributed/job"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// node is the node the test pods are bound to.
var node = Node{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux"},
	IP: "127.0.0.1", APIHost: "127.0.0.1", APIPort: "6443", Dir: "/k", ContainerLabel: "kl"}

// options are a run's shard Job on a cluster of its own.
func options() job.Options {
	return job.Options{Name: "kb-bench-r1", Namespace: "kb-bench-r1", RunID: "r1", Shards: 3, Image: "kb-bench/kb-bench:v1",
		Rules: []rbacv1.PolicyRule{scenario.Rule("", []string{"configmaps"}, "get")}}
}

// jobPod is shard index's pod as the Job controller makes it from o's
// template and the apiserver admits it (defaults, the ServiceAccount
// admission plugin's token volume), bound to node.
func jobPod(t *testing.T, o job.Options, index int) *corev1.Pod {
	t.Helper()
	objs, err := job.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := objs.Job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name, pod.Namespace, pod.UID = fmt.Sprintf("%s-%d-x7k2p", o.Name, index), o.Namespace, types.UID(fmt.Sprintf("uid-%d", index))
	pod.Annotations = map[string]string{completionIndex: fmt.Sprint(index)}
	// The Job controller's.
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", o.Name, index)
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['" + completionIndex + "']"}}})
	// The apiserver's defaults and admission's.
	pod.Spec.NodeName, pod.Spec.SchedulerName, pod.Spec.DNSPolicy = node.Name, corev1.DefaultSchedulerName, corev1.DNSClusterFirst
	pod.Spec.TerminationGracePeriodSeconds, pod.Spec.EnableServiceLinks = new(int64(30)), new(true)
	pod.Spec.Priority, pod.Spec.PreemptionPolicy = new(int32(0)), new(corev1.PreemptLowerPriority)
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))}}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	if *pod.Spec.AutomountServiceAccountToken {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: new(int32(0o644)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(3607)), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	return pod
}

// The shard Job's pod, on the run's own cluster: the in-cluster path, with
// the service account token, CA and namespace where client-go reads them.
func TestDockerRunOfTheJobsPod(t *testing.T) {
	pod := jobPod(t, options(), 1)
	before := pod.DeepCopy()
	c, err := DockerRun(pod, node)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pod, before) {
		t.Error("DockerRun changed the pod it was given")
	}
	dir := "/k/uid-1"
	want := []string{
		"--name", "k8s_shard_kb-bench-r1-1-x7k2p_kb-bench-r1_uid-1_0",
		"--label", "kl=n1", "--label", "io.kubernetes.pod.name=kb-bench-r1-1-x7k2p", "--label", "io.kubernetes.pod.namespace=kb-bench-r1",
		"--label", "io.kubernetes.pod.uid=uid-1", "--label", "io.kubernetes.container.name=shard",
		"--network", "host", "--restart", "no", "--stop-timeout", "30", "--hostname", "kb-bench-r1-1",
		"--user", "65532:65532", "--read-only", "--security-opt", "no-new-privileges", "--cap-drop", "ALL",
		"--cpu-shares", "2",
		"--env", "KUBERNETES_SERVICE_HOST=127.0.0.1", "--env", "KUBERNETES_SERVICE_PORT=6443", "--env", "KUBERNETES_SERVICE_PORT_HTTPS=6443",
		"--env", "KUBERNETES_PORT=tcp://127.0.0.1:6443", "--env", "POD_NAME=kb-bench-r1-1-x7k2p", "--env", "JOB_COMPLETION_INDEX=1",
		"--mount", "type=bind,src=" + dir + "/volumes/tmp,dst=/tmp",
		"--mount", "type=bind,src=" + dir + "/volumes/kube-api-access-abcde,dst=/var/run/secrets/kubernetes.io/serviceaccount,readonly",
		"--mount", "type=bind,src=" + dir + "/containers/shard/termination-log,dst=/dev/termination-log",
		"--pull", "missing", "--entrypoint", "/kb-bench", "kb-bench/kb-bench:v1",
		"shard", "--namespace", "kb-bench-r1", "--run-id", "r1",
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("docker create\n%q\nwant\n%q", c.Args, want)
	}
	wantVolumes := []Volume{
		{Name: "tmp", Dir: dir + "/volumes/tmp", Mode: 0o777},
		{Name: "kube-api-access-abcde", Dir: dir + "/volumes/kube-api-access-abcde", Mode: 0o755, Sources: []Source{
			{Token: &TokenSource{ServiceAccount: "kb-bench-r1", Expiration: 3607 * time.Second, Path: "token"}, Mode: 0o644},
			{ConfigMap: "kube-root-ca.crt", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, Mode: 0o644},
			{Files: map[string][]byte{"namespace": []byte("kb-bench-r1")}, Mode: 0o644},
		}},
	}
	if !reflect.DeepEqual(c.Volumes, wantVolumes) {
		t.Errorf("volumes\n%+v\nwant\n%+v", c.Volumes, wantVolumes)
	}
	if c.TerminationLog != dir+"/containers/shard/termination-log" || !c.FallbackToLogs || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("termination log %s (fall back to logs: %v), pull policy %s", c.TerminationLog, c.FallbackToLogs, c.ImagePullPolicy)
	}
}

// On a runner cluster the pod has no token of that cluster: the target's
// kubeconfig comes from the Secret, read-only.
func TestDockerRunOfARunnerClustersPod(t *testing.T) {
	o := options()
	o.Namespace, o.TargetNamespace, o.TargetSecret = "kb-bench-shards-r1", "kb-bench-r1", "kb-bench-shards-target"
	c, err := DockerRun(jobPod(t, o, 0), node)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"--mount", "type=bind,src=/k/uid-0/volumes/target,dst=/var/run/kb-bench/target,readonly"},
		{"kb-bench/kb-bench:v1", "shard", "--namespace", "kb-bench-r1", "--run-id", "r1", "--kubeconfig", "/var/run/kb-bench/target/kubeconfig"},
	} {
		if !containsRun(c.Args, want) {
			t.Errorf("docker create %q lacks %q", c.Args, want)
		}
	}
	secret := Volume{Name: "target", Dir: "/k/uid-0/volumes/target", Mode: 0o755, Sources: []Source{{Secret: "kb-bench-shards-target", Mode: 0o644}}}
	if len(c.Volumes) != 2 || !reflect.DeepEqual(c.Volumes[1], secret) {
		t.Errorf("volumes %+v, want the Secret's %+v last", c.Volumes, secret)
	}
}

// containsRun says whether want appears in args, in a row.
func containsRun(args, want []string) bool {
	for i := range args {
		if len(args)-i >= len(want) && slices.Equal(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// Requests and limits become cgroup settings as the kubelet sets them;
// scheduling's fields (a node selector this node matches, preferred
// anti-affinity) need nothing.
func TestDockerRunResources(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources corev1.ResourceList
		want      []string
	}{
		{"best effort", nil, []string{"--cpu-shares", "2"}},
		{"guaranteed", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			[]string{"--cpu-shares", "512", "--cpus", "0.5", "--memory", "268435456", "--memory-swap", "268435456"}},
		{"two cpus", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, []string{"--cpu-shares", "2048", "--cpus", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options()
			o.Resources = corev1.ResourceRequirements{Requests: tc.resources, Limits: tc.resources.DeepCopy()}
			o.AntiAffinity, o.NodeSelector = true, map[string]string{"kubernetes.io/os": "linux"}
			c, err := DockerRun(jobPod(t, o, 0), node)
			if err != nil {
				t.Fatal(err)
			}
			if !containsRun(c.Args, tc.want) {
				t.Errorf("docker create %q lacks %q", c.Args, tc.want)
			}
		})
	}
}

// Any field of the pod that DockerRun does not translate is refused,
// named by its path: a change to the pod template cannot slip past the
// containers test.
func TestDockerRunRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"a probe", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, "spec.containers[0].livenessProbe.exec.command[0]"},
		{"the host's network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "spec.hostNetwork"},
		{"privileged", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = new(true) }, "spec.containers[0].securityContext.privileged"},
		{"an unmasked /proc", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.ProcMount = new(corev1.UnmaskedProcMount) }, "spec.containers[0].securityContext.procMount"},
		{"a sysctl", func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		}, "spec.securityContext.sysctls[0].name"},
		{"an fsGroup", func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = new(int64(2000)) }, "spec.securityContext.fsGroup"},
		{"a hostPath volume", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}})
		}, "spec.volumes[2].hostPath.path"},
		{"an emptyDir on huge pages", func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir.Medium = corev1.StorageMediumHugePages }, "spec.volumes[0].emptyDir.medium"},
		{"a cluster trust bundle", func(p *corev1.Pod) {
			pr := p.Spec.Volumes[1].Projected
			pr.Sources = append(pr.Sources, corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}})
		}, "spec.volumes[1].projected.sources[3].clusterTrustBundle.path"},
		{"an init container", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init"}} }, "spec.initContainers[0].name"},
		{"two containers", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, "this kubelet runs pods of one container"},
		{"an env from a Secret", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})
		}, "spec.containers[0].env[2].valueFrom.secretKeyRef.key"},
		{"an env of the pod's phase", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.phase"}}})
		}, `spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Invalid value: "status.phase"`},
		{"a variable reference", func(p *corev1.Pod) { p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "$(POD_NAME)") }, "spec.containers[0].args[5]"},
		{"a sub path", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "x" }, "spec.containers[0].volumeMounts[0].subPath"},
		{"a mount of no volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, "spec.containers[0].volumeMounts[0].name"},
		{"restarts", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, "spec.restartPolicy"},
		{"a node selector of another node", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, "spec.nodeSelector[disk]"},
		{"another node", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, "spec.nodeName"},
		{"required node affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpExists}}}}}}}
		}, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"},
		{"ephemeral storage", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		}, "spec.containers[0].resources.limits[ephemeral-storage]"},
		{"pod-level resources", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		}, "spec.resources.limits.cpu"},
		{"root, though not root", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = new(int64(0)) }, "runAsNonRoot with user 0"},
		{"a registry's secret", func(p *corev1.Pod) {
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		}, "spec.imagePullSecrets[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := jobPod(t, options(), 0)
			tc.edit(pod)
			_, err := DockerRun(pod, node)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
