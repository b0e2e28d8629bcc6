package kubelettest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node is what the pods' node gives their containers.
type Node struct {
	// Name is the Node the pods are bound to; Labels are its labels.
	Name   string
	Labels map[string]string
	// IP is the node's address, and every pod's (the containers share
	// the host's network: there is no CNI here).
	IP string
	// APIHost and APIPort are where the cluster's kubernetes Service
	// leads (there is no kube-proxy here): the apiserver itself.
	APIHost, APIPort string
	// Dir is the kubelet's root directory on the host; a pod's volumes
	// and termination-message file go under Dir/UID.
	Dir string
	// ContainerLabel labels every container this node runs, with the
	// node's name as the value, so that all of them can be found.
	ContainerLabel string
}

// Container is a pod's container as Docker runs it, and what has to be on
// the host before it starts.
type Container struct {
	// Name is the pod's container's name (the spec's).
	Name string
	// Args are the arguments of `docker create`.
	Args []string
	// Volumes are the host directories to fill before the container is
	// created, in the order the pod lists them.
	Volumes []Volume
	// TerminationLog is the host file mounted at the container's
	// terminationMessagePath; FallbackToLogs says an empty one is
	// replaced by the end of the container's log when it fails.
	TerminationLog string
	FallbackToLogs bool
	// ImagePullPolicy is the container's; the kubelet looks for the
	// image first, as the real one does.
	Image           string
	ImagePullPolicy corev1.PullPolicy
}

// Volume is one pod volume's directory on the host.
type Volume struct {
	Name string
	Dir  string
	// Mode is the directory's mode (an emptyDir is writable by anyone,
	// as the kubelet makes it).
	Mode os.FileMode
	// Sources fill the directory (none for an emptyDir).
	Sources []Source
}

// Source is what one part of a volume holds: exactly one of Secret,
// ConfigMap, Token or Files.
type Source struct {
	// Secret or ConfigMap names the object whose keys (all, or Items)
	// become files; Optional lets it be missing.
	Secret    string
	ConfigMap string
	Items     []corev1.KeyToPath
	Optional  bool
	// Token is a service account token to request (TokenRequest,
	// bound to the pod) and write.
	Token *TokenSource
	// Files are written as they are (downward API values).
	Files map[string][]byte
	// Mode is the files' mode.
	Mode os.FileMode
}

// TokenSource is a projected service account token.
type TokenSource struct {
	ServiceAccount string
	Audience       string
	Expiration     time.Duration
	Path           string
}

// Labels of every container, as the kubelet's Docker integration set them.
const (
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelPodUID       = "io.kubernetes.pod.uid"
	LabelContainer    = "io.kubernetes.container.name"
)

// DockerRun translates a pod bound to node into the Docker container that
// runs it, the way a kubelet would: image, command and args, environment
// (the kubernetes Service's variables, then the container's own, with the
// downward API's values), security context, resources (CPU shares from
// the request, a CFS quota and a memory limit without swap from the
// limits), volumes (emptyDir, Secret, ConfigMap and projected sources,
// mounted read-only but for emptyDirs) and the termination-message file.
//
// Every field of the pod's spec is either translated or knowingly has
// nothing to do on one node without a registry, CNI or cluster DNS (each
// says why below); any other field set is an error naming it, so that a
// change to the pod template cannot pass the containers test unnoticed.
func DockerRun(pod *corev1.Pod, node Node) (*Container, error) {
	t := translation{pod: pod, node: node, spec: *pod.Spec.DeepCopy(), dir: filepath.Join(node.Dir, string(pod.UID))}
	c := t.translate()
	if len(t.errs) > 0 {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, t.errs.ToAggregate())
	}
	return c, nil
}

// translation consumes the pod's spec, field by field: what it
// understood it clears, and whatever is left is refused.
type translation struct {
	pod  *corev1.Pod
	node Node
	spec corev1.PodSpec // the copy being consumed
	dir  string
	errs field.ErrorList
}

func (t *translation) refuse(p *field.Path, value any, why string) {
	t.errs = append(t.errs, field.Invalid(p, value, why))
}

func (t *translation) translate() *Container {
	spec := &t.spec
	p := field.NewPath("spec")
	if spec.NodeName != t.node.Name {
		t.refuse(p.Child("nodeName"), spec.NodeName, "the pod is not bound to node "+t.node.Name)
	}
	spec.NodeName = ""
	if len(spec.Containers) != 1 {
		t.refuse(p.Child("containers"), len(spec.Containers), "this kubelet runs pods of one container")
		return nil
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever: // Docker's --restart no: an exited container stays exited
	default:
		t.refuse(p.Child("restartPolicy"), spec.RestartPolicy, "this kubelet never restarts a container: only Never")
	}
	spec.RestartPolicy = ""
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = nil
	}
	for k, v := range spec.NodeSelector {
		if t.node.Labels[k] != v {
			t.refuse(p.Child("nodeSelector").Key(k), v, "node "+t.node.Name+" does not have this label")
		}
	}
	spec.NodeSelector = nil
	t.affinity(p.Child("affinity"))
	// Nothing to do on one node that is the pods' own:
	// - the scheduler's choices: this kubelet placed the pod itself, on
	//   its only node, which has no taints to tolerate;
	spec.SchedulerName, spec.Tolerations, spec.Priority, spec.PreemptionPolicy = "", nil, nil, nil
	// - the service account's name and automount were admission's
	//   business: its token is the projected volume translated below;
	spec.ServiceAccountName, spec.DeprecatedServiceAccount, spec.AutomountServiceAccountToken = "", "", nil
	// - DNS: the containers share the host's network and resolver, and
	//   reach the apiserver by address (KUBERNETES_SERVICE_HOST);
	if spec.DNSPolicy == corev1.DNSClusterFirst || spec.DNSPolicy == corev1.DNSDefault {
		spec.DNSPolicy = ""
	}
	// - service links: the kubernetes Service's variables are set below;
	//   a run's namespace has no Service of its own.
	spec.EnableServiceLinks = nil
	if spec.OS != nil && spec.OS.Name == corev1.Linux {
		spec.OS = nil
	}

	podSC := spec.SecurityContext
	spec.SecurityContext = nil
	c := &spec.Containers[0]
	out := &Container{Name: c.Name, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy, TerminationLog: filepath.Join(t.dir, "containers", c.Name, "termination-log")}
	uid := t.pod.UID
	args := []string{
		"--name", dockerName(t.pod, c.Name),
		"--label", t.node.ContainerLabel + "=" + t.node.Name,
		"--label", LabelPodName + "=" + t.pod.Name,
		"--label", LabelPodNamespace + "=" + t.pod.Namespace,
		"--label", LabelPodUID + "=" + string(uid),
		"--label", LabelContainer + "=" + c.Name,
		// The pod network: the host's, where the apiserver listens on
		// loopback (no CNI here).
		"--network", "host",
		"--restart", "no",
		"--stop-timeout", strconv.FormatInt(grace, 10),
	}
	if spec.Hostname != "" {
		args = append(args, "--hostname", spec.Hostname) // the Job controller's NAME-INDEX
		spec.Hostname = ""
	}
	args = append(args, t.security(podSC, c, p.Child("containers").Index(0))...)
	args = append(args, t.resources(c, p.Child("containers").Index(0).Child("resources"))...)
	args = append(args, t.env(c, p.Child("containers").Index(0).Child("env"))...)
	mounts, volumes := t.volumes(c, p)
	out.Volumes = volumes
	args = append(args, mounts...)
	args = append(args, t.container(c, out, p.Child("containers").Index(0))...)
	spec.Containers = nil
	t.leftover(p, spec, &corev1.PodSpec{})
	out.Args = args
	return out
}

// dockerName names a pod's container as the kubelet's Docker integration
// did: k8s_CONTAINER_POD_NAMESPACE_UID_ATTEMPT.
func dockerName(pod *corev1.Pod, container string) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_0", container, pod.Name, pod.Namespace, pod.UID)
}

// affinity takes preferences, which one node satisfies as well as any,
// and refuses requirements.
func (t *translation) affinity(p *field.Path) {
	a := t.spec.Affinity
	if a == nil {
		return
	}
	t.spec.Affinity = nil
	if aa := a.PodAntiAffinity; aa != nil {
		aa.PreferredDuringSchedulingIgnoredDuringExecution = nil
	}
	t.leftover(p, a, &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}})
}

// security translates the pod's and the container's security contexts
// (the container's fields win).
func (t *translation) security(pod *corev1.PodSecurityContext, c *corev1.Container, p *field.Path) []string {
	sc := c.SecurityContext
	c.SecurityContext = nil
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	var args []string
	pick := func(own, pods *int64) *int64 {
		if own != nil {
			return own
		}
		return pods
	}
	user, group := pick(sc.RunAsUser, pod.RunAsUser), pick(sc.RunAsGroup, pod.RunAsGroup)
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = pod.RunAsNonRoot
	}
	switch {
	case user == nil && nonRoot != nil && *nonRoot:
		t.refuse(p.Child("securityContext", "runAsUser"), nil, "runAsNonRoot without a runAsUser needs the image's user, which this kubelet does not read")
	case user != nil && *user == 0 && nonRoot != nil && *nonRoot:
		t.refuse(p.Child("securityContext", "runAsUser"), 0, "runAsNonRoot with user 0: the kubelet refuses to start it")
	}
	if user != nil {
		u := strconv.FormatInt(*user, 10)
		if group != nil {
			u += ":" + strconv.FormatInt(*group, 10)
		}
		args = append(args, "--user", u)
	} else if group != nil {
		t.refuse(p.Child("securityContext", "runAsGroup"), *group, "a group without a user")
	}
	sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot = nil, nil, nil
	pod.RunAsUser, pod.RunAsGroup, pod.RunAsNonRoot = nil, nil, nil
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		args = append(args, "--read-only")
	}
	sc.ReadOnlyRootFilesystem = nil
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	sc.AllowPrivilegeEscalation = nil
	if sc.Privileged != nil && !*sc.Privileged {
		sc.Privileged = nil // true is refused below: nothing here runs privileged
	}
	if caps := sc.Capabilities; caps != nil {
		for _, c := range caps.Drop {
			args = append(args, "--cap-drop", string(c))
		}
		for _, c := range caps.Add {
			args = append(args, "--cap-add", string(c))
		}
		sc.Capabilities = nil
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = pod.SeccompProfile
	}
	switch {
	case seccomp == nil:
	case seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault:
		// Docker's default profile is the runtime's default: it applies
		// unless told otherwise.
	case seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		args = append(args, "--security-opt", "seccomp=unconfined")
	default:
		t.refuse(p.Child("securityContext", "seccompProfile"), seccomp.Type, "only RuntimeDefault and Unconfined")
	}
	sc.SeccompProfile, pod.SeccompProfile = nil, nil
	t.leftover(p.Child("securityContext"), sc, &corev1.SecurityContext{})
	t.leftover(field.NewPath("spec", "securityContext"), pod, &corev1.PodSecurityContext{})
	return args
}

// resources translates requests and limits as the kubelet sets cgroups:
// CPU shares from the CPU request (2 without one, as for a BestEffort
// pod), a CFS quota from the CPU limit, and the memory limit without
// swap. A memory request only counts for scheduling.
func (t *translation) resources(c *corev1.Container, p *field.Path) []string {
	r := c.Resources
	c.Resources = corev1.ResourceRequirements{}
	shares := int64(2)
	var args []string
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		q := r.Requests[name]
		switch name {
		case corev1.ResourceCPU:
			shares = max(2, q.MilliValue()*1024/1000)
		case corev1.ResourceMemory:
		default:
			t.refuse(p.Child("requests").Key(string(name)), q.String(), "only cpu and memory")
		}
	}
	args = append(args, "--cpu-shares", strconv.FormatInt(shares, 10))
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		q := r.Limits[name]
		switch name {
		case corev1.ResourceCPU:
			args = append(args, "--cpus", strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64))
		case corev1.ResourceMemory:
			b := strconv.FormatInt(q.Value(), 10)
			args = append(args, "--memory", b, "--memory-swap", b)
		default:
			t.refuse(p.Child("limits").Key(string(name)), q.String(), "only cpu and memory")
		}
	}
	r.Requests, r.Limits = nil, nil
	t.leftover(p, &r, &corev1.ResourceRequirements{})
	return args
}

// env is the kubernetes Service's variables, as the kubelet sets them
// (pointing at the apiserver: no kube-proxy here), then the container's,
// with downward API values resolved; a later variable replaces an
// earlier one of the same name.
func (t *translation) env(c *corev1.Container, p *field.Path) []string {
	var names []string
	values := map[string]string{}
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			names = append(names, k)
		}
		values[k] = v
	}
	set("KUBERNETES_SERVICE_HOST", t.node.APIHost)
	set("KUBERNETES_SERVICE_PORT", t.node.APIPort)
	set("KUBERNETES_SERVICE_PORT_HTTPS", t.node.APIPort)
	set("KUBERNETES_PORT", "tcp://"+t.node.APIHost+":"+t.node.APIPort)
	for i, e := range c.Env {
		ep := p.Index(i)
		switch {
		case e.ValueFrom == nil:
			if strings.Contains(e.Value, "$(") {
				t.refuse(ep.Child("value"), e.Value, "this kubelet does not expand $(VAR) references")
			}
			set(e.Name, e.Value)
		case e.ValueFrom.FieldRef != nil:
			v, err := t.fieldRef(e.ValueFrom.FieldRef)
			if err != nil {
				t.refuse(ep.Child("valueFrom", "fieldRef", "fieldPath"), e.ValueFrom.FieldRef.FieldPath, err.Error())
			}
			set(e.Name, v)
			rest := *e.ValueFrom
			rest.FieldRef = nil
			t.leftover(ep.Child("valueFrom"), &rest, &corev1.EnvVarSource{})
		default:
			t.leftover(ep.Child("valueFrom"), e.ValueFrom, &corev1.EnvVarSource{})
		}
	}
	c.Env = nil
	args := make([]string, 0, 2*len(names))
	for _, k := range names {
		args = append(args, "--env", k+"="+values[k])
	}
	return args
}

// fieldRef resolves a downward API field of the pod.
func (t *translation) fieldRef(f *corev1.ObjectFieldSelector) (string, error) {
	if f.APIVersion != "" && f.APIVersion != "v1" {
		return "", fmt.Errorf("apiVersion %s: only v1", f.APIVersion)
	}
	pod := t.pod
	fp := f.FieldPath
	if key, ok := subscript(fp, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	if key, ok := subscript(fp, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	switch fp {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return t.node.Name, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP":
		return t.node.IP, nil
	}
	return "", fmt.Errorf("a field this kubelet does not give")
}

// subscript reads PREFIX['KEY'].
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// volumes translates the pod's volumes and the container's mounts of
// them. Secret, ConfigMap and projected volumes are always read-only, as
// the kubelet mounts them; an emptyDir is a directory of the pod's on the
// host (or a tmpfs for medium Memory).
func (t *translation) volumes(c *corev1.Container, p *field.Path) ([]string, []Volume) {
	byName := map[string]corev1.Volume{}
	var out []Volume
	tmpfs := map[string]string{} // volume name: --mount options of a tmpfs
	for i, v := range t.spec.Volumes {
		vp := p.Child("volumes").Index(i)
		byName[v.Name] = v
		vol := Volume{Name: v.Name, Dir: filepath.Join(t.dir, "volumes", v.Name), Mode: 0o755}
		src := v.VolumeSource
		switch {
		case src.EmptyDir != nil:
			e := *src.EmptyDir
			src.EmptyDir = nil
			if e.Medium == corev1.StorageMediumMemory {
				opts := ""
				if e.SizeLimit != nil {
					opts = ",tmpfs-size=" + strconv.FormatInt(e.SizeLimit.Value(), 10)
				}
				tmpfs[v.Name] = opts
				e.Medium, e.SizeLimit = "", nil
			} else if e.Medium == corev1.StorageMediumDefault {
				vol.Mode = 0o777 // as the kubelet makes it; a size limit is enforced by eviction, not here
				e.SizeLimit = nil
			}
			t.leftover(vp.Child("emptyDir"), &e, &corev1.EmptyDirVolumeSource{})
		case src.Secret != nil:
			s := *src.Secret
			src.Secret = nil
			vol.Sources = []Source{{Secret: s.SecretName, Items: s.Items, Optional: s.Optional != nil && *s.Optional, Mode: mode(s.DefaultMode)}}
			t.checkItems(vp.Child("secret", "items"), s.Items)
			s.SecretName, s.Items, s.Optional, s.DefaultMode = "", nil, nil, nil
			t.leftover(vp.Child("secret"), &s, &corev1.SecretVolumeSource{})
		case src.ConfigMap != nil:
			s := *src.ConfigMap
			src.ConfigMap = nil
			vol.Sources = []Source{{ConfigMap: s.Name, Items: s.Items, Optional: s.Optional != nil && *s.Optional, Mode: mode(s.DefaultMode)}}
			t.checkItems(vp.Child("configMap", "items"), s.Items)
			s.Name, s.Items, s.Optional, s.DefaultMode = "", nil, nil, nil
			t.leftover(vp.Child("configMap"), &s, &corev1.ConfigMapVolumeSource{})
		case src.Projected != nil:
			pr := *src.Projected
			src.Projected = nil
			vol.Sources = t.projected(vp.Child("projected"), pr.Sources, mode(pr.DefaultMode))
			pr.Sources, pr.DefaultMode = nil, nil
			t.leftover(vp.Child("projected"), &pr, &corev1.ProjectedVolumeSource{})
		}
		t.leftover(vp, &src, &corev1.VolumeSource{})
		if _, ok := tmpfs[v.Name]; !ok {
			out = append(out, vol)
		}
	}
	t.spec.Volumes = nil

	var args []string
	mp := p.Child("containers").Index(0).Child("volumeMounts")
	for i, m := range c.VolumeMounts {
		v, ok := byName[m.Name]
		switch {
		case !ok:
			t.refuse(mp.Index(i).Child("name"), m.Name, "no volume of that name")
			continue
		case strings.ContainsAny(m.MountPath, ",\n"):
			t.refuse(mp.Index(i).Child("mountPath"), m.MountPath, "a comma or newline does not pass through docker's --mount")
			continue
		}
		if opts, ok := tmpfs[m.Name]; ok {
			args = append(args, "--mount", "type=tmpfs,dst="+m.MountPath+opts)
		} else {
			ro := m.ReadOnly || v.EmptyDir == nil
			opt := "type=bind,src=" + filepath.Join(t.dir, "volumes", m.Name) + ",dst=" + m.MountPath
			if ro {
				opt += ",readonly"
			}
			args = append(args, "--mount", opt)
		}
		m.Name, m.MountPath, m.ReadOnly = "", "", false
		t.leftover(mp.Index(i), &m, &corev1.VolumeMount{})
	}
	c.VolumeMounts = nil
	return args, out
}

// checkItems refuses item modes (the volume's default mode is taken) and
// paths that leave the volume.
func (t *translation) checkItems(p *field.Path, items []corev1.KeyToPath) {
	for i, it := range items {
		if it.Mode != nil {
			t.refuse(p.Index(i).Child("mode"), *it.Mode, "only the volume's defaultMode")
		}
		if !local(it.Path) {
			t.refuse(p.Index(i).Child("path"), it.Path, "a path inside the volume")
		}
	}
}

// local says whether a file path stays inside its volume.
func local(p string) bool {
	return p != "" && !path.IsAbs(p) && filepath.IsLocal(p)
}

// projected translates a projected volume's sources: a service account
// token, ConfigMap and Secret keys, and downward API files (the
// ServiceAccount admission plugin's kube-api-access volume is all three).
func (t *translation) projected(p *field.Path, sources []corev1.VolumeProjection, m os.FileMode) []Source {
	var out []Source
	for i, s := range sources {
		sp := p.Child("sources").Index(i)
		switch {
		case s.ServiceAccountToken != nil:
			tok := *s.ServiceAccountToken
			s.ServiceAccountToken = nil
			exp := time.Hour
			if tok.ExpirationSeconds != nil {
				exp = time.Duration(*tok.ExpirationSeconds) * time.Second
			}
			if !local(tok.Path) {
				t.refuse(sp.Child("serviceAccountToken", "path"), tok.Path, "a path inside the volume")
			}
			out = append(out, Source{Token: &TokenSource{ServiceAccount: t.pod.Spec.ServiceAccountName, Audience: tok.Audience, Expiration: exp, Path: tok.Path}, Mode: m})
			tok.Audience, tok.ExpirationSeconds, tok.Path = "", nil, ""
			t.leftover(sp.Child("serviceAccountToken"), &tok, &corev1.ServiceAccountTokenProjection{})
		case s.ConfigMap != nil:
			cm := *s.ConfigMap
			s.ConfigMap = nil
			t.checkItems(sp.Child("configMap", "items"), cm.Items)
			out = append(out, Source{ConfigMap: cm.Name, Items: cm.Items, Optional: cm.Optional != nil && *cm.Optional, Mode: m})
			cm.Name, cm.Items, cm.Optional = "", nil, nil
			t.leftover(sp.Child("configMap"), &cm, &corev1.ConfigMapProjection{})
		case s.Secret != nil:
			sec := *s.Secret
			s.Secret = nil
			t.checkItems(sp.Child("secret", "items"), sec.Items)
			out = append(out, Source{Secret: sec.Name, Items: sec.Items, Optional: sec.Optional != nil && *sec.Optional, Mode: m})
			sec.Name, sec.Items, sec.Optional = "", nil, nil
			t.leftover(sp.Child("secret"), &sec, &corev1.SecretProjection{})
		case s.DownwardAPI != nil:
			files := map[string][]byte{}
			for j, it := range s.DownwardAPI.Items {
				ip := sp.Child("downwardAPI", "items").Index(j)
				if !local(it.Path) {
					t.refuse(ip.Child("path"), it.Path, "a path inside the volume")
				}
				if it.FieldRef == nil {
					t.leftover(ip, &it, &corev1.DownwardAPIVolumeFile{})
					continue
				}
				v, err := t.fieldRef(it.FieldRef)
				if err != nil {
					t.refuse(ip.Child("fieldRef", "fieldPath"), it.FieldRef.FieldPath, err.Error())
				}
				files[it.Path] = []byte(v)
				it.Path, it.FieldRef = "", nil
				t.leftover(ip, &it, &corev1.DownwardAPIVolumeFile{})
			}
			s.DownwardAPI = nil
			out = append(out, Source{Files: files, Mode: m})
		}
		t.leftover(sp, &s, &corev1.VolumeProjection{})
	}
	return out
}

// mode is a volume's default file mode (the API's default, 0644, when
// unset).
func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

// container translates the rest of the container: the termination
// message, the image and its pull policy, the working directory, and the
// command and args (a command replaces the image's entrypoint, args its
// cmd).
func (t *translation) container(c *corev1.Container, out *Container, p *field.Path) []string {
	var args []string
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, "":
	case corev1.TerminationMessageFallbackToLogsOnError:
		out.FallbackToLogs = true
	default:
		t.refuse(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, "unknown")
	}
	msgPath := c.TerminationMessagePath
	if msgPath == "" {
		msgPath = corev1.TerminationMessagePathDefault
	}
	args = append(args, "--mount", "type=bind,src="+out.TerminationLog+",dst="+msgPath)
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
	switch c.ImagePullPolicy {
	case corev1.PullIfNotPresent, "":
		args = append(args, "--pull", "missing")
	case corev1.PullAlways:
		args = append(args, "--pull", "always")
	case corev1.PullNever:
		args = append(args, "--pull", "never")
	}
	c.ImagePullPolicy = ""
	if c.WorkingDir != "" {
		args = append(args, "--workdir", c.WorkingDir)
		c.WorkingDir = ""
	}
	cmd := slices.Clone(c.Command)
	for _, part := range []struct {
		name string
		list []string
	}{{"command", c.Command}, {"args", c.Args}} {
		for i, a := range part.list {
			if strings.Contains(a, "$(") {
				t.refuse(p.Child(part.name).Index(i), a, "this kubelet does not expand $(VAR) references")
			}
		}
	}
	if len(cmd) > 0 {
		args = append(args, "--entrypoint", cmd[0])
	}
	args = append(args, c.Image)
	if len(cmd) > 1 {
		args = append(args, cmd[1:]...)
	}
	args = append(args, c.Args...)
	c.Name, c.Image, c.Command, c.Args = "", "", nil, nil
	t.leftover(p, c, &corev1.Container{})
	return args
}

// leftover refuses every field of got, a consumed part of the pod's
// spec, that differs from zero (its type's zero value, or what the
// translation knowingly leaves): the fields no step understood.
func (t *translation) leftover(p *field.Path, got, zero any) {
	for _, f := range differences(got, zero) {
		t.errs = append(t.errs, field.Forbidden(p.Child(f.path), fmt.Sprintf("this kubelet does not know what to do with %s: teach DockerRun (workload/distributed/job/kubelettest) what it means, or change the pod template back", f.value)))
	}
}

type difference struct{ path, value string }

// differences lists the JSON fields of got that differ from zero's, by
// path (a.b[0].c), with their values.
func differences(got, zero any) []difference {
	var g, z any
	if err := roundTrip(got, &g); err != nil {
		return []difference{{"(unreadable)", err.Error()}}
	}
	if err := roundTrip(zero, &z); err != nil {
		return []difference{{"(unreadable)", err.Error()}}
	}
	var out []difference
	diff("", g, z, &out)
	return out
}

func roundTrip(v any, into *any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

func diff(p string, got, zero any, out *[]difference) {
	if reflect.DeepEqual(got, zero) {
		return
	}
	join := func(k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	switch g := got.(type) {
	case map[string]any:
		z, _ := zero.(map[string]any)
		if len(g) == 0 {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			diff(join(k), g[k], z[k], out)
		}
		return
	case []any:
		if len(g) == 0 && zero == nil {
			return
		}
		for i, v := range g {
			diff(fmt.Sprintf("%s[%d]", p, i), v, nil, out)
		}
		return
	case nil:
		return
	}
	b, _ := json.Marshal(got)
	*out = append(*out, difference{p, string(b)})
}
