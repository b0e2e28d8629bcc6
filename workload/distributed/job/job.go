// Package job builds the Kubernetes objects that run a distributed
// benchmark's shards as one Indexed Job: a ServiceAccount, a Role holding
// exactly the rights the shards need, a RoleBinding, and the Job whose pod
// I runs `kb-bench shard` as shard I (it reads I from JOB_COMPLETION_INDEX,
// which the Job controller sets, and authenticates as the ServiceAccount).
// It builds and renders objects only; creating them is the caller's.
package job

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/internal/ociimage"
	"github.com/kb-bench/kb-bench/spec"
)

const (
	// Binary is the path of kb-bench in the image (make image).
	Binary = ociimage.BinaryPath
	// ContainerName is the name of the shard container.
	ContainerName = "shard"
	// UserID is the non-root user (and group) the shard runs as, the one
	// the image declares.
	UserID = 65532
	// LabelComponent marks the shard pods, so that they can be told from
	// other pods of the run.
	LabelComponent = "app.kubernetes.io/component"
	// ComponentShard is the value of LabelComponent on shard pods.
	ComponentShard = "shard"
)

// Options describe one run's shards.
type Options struct {
	// Name names the ServiceAccount, Role, RoleBinding and Job, for example
	// "kb-bench-" + RunID. It must be a DNS label short enough for the pod
	// hostnames NAME-INDEX.
	Name string
	// Namespace is the Job's namespace; without TargetNamespace it is also
	// the run's, where the shards' rights are made and which the shards
	// are told to use.
	Namespace string
	// RunID is the run's id, passed to the shards and set as the
	// k8s.LabelRunID label on every object.
	RunID string
	// Shards is the number of shard pods, each with its own index 0..Shards-1.
	Shards int
	// Image is the kb-bench image (make image builds one).
	Image string
	// ImagePullPolicy defaults to IfNotPresent, which runs an image loaded
	// into the nodes (kind load image-archive) without a registry.
	ImagePullPolicy corev1.PullPolicy
	// Rules are the rights the shards need in Namespace; the Role has
	// exactly these.
	Rules []rbacv1.PolicyRule
	// Resources are the shard container's requests and limits.
	Resources corev1.ResourceRequirements
	// AntiAffinity spreads the shard pods over nodes where it can (a
	// preferred, not required, pod anti-affinity on the node's hostname).
	AntiAffinity bool
	// NodeSelector restricts the nodes the shards may run on.
	NodeSelector map[string]string
	// ActiveDeadline, if not zero, has the Job controller end shards still
	// running that long after the Job started (a safety net for a lost
	// coordinator; rounded up to whole seconds).
	ActiveDeadline time.Duration
	// Labels are added to every object and pod; they may not change
	// kb-bench's own labels (k8s.Labels).
	Labels map[string]string
	// TargetSecret, when set, is for a Job on a separate runner cluster
	// (--runner-kubeconfig): the pods reach the target with the
	// kubeconfig under the key "kubeconfig" of this Secret (in Namespace),
	// join the run in TargetNamespace there, and use no service account
	// of the runner cluster. The ServiceAccount, Role and RoleBinding are
	// then in TargetNamespace, to be made on the target.
	TargetSecret    string
	TargetNamespace string
}

// TargetKubeconfigKey is the key of the kubeconfig in Options.TargetSecret.
const TargetKubeconfigKey = "kubeconfig"

// targetDir is where a runner cluster's pods find TargetSecret.
const targetDir = "/var/run/kb-bench/target"

// Objects are a run's shard objects, all named Options.Name in
// Options.Namespace.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	Job            *batchv1.Job
}

// Build validates o, applies its defaults and returns the objects that run
// the shards. An invalid o is an input error (spec.IsInput) listing every
// problem.
func Build(o Options) (Objects, error) {
	o.ImagePullPolicy = cmp.Or(o.ImagePullPolicy, corev1.PullIfNotPresent)
	if errs := o.validate(); len(errs) > 0 {
		return Objects{}, spec.Input(fmt.Errorf("the shard Job cannot be built: %w", errs.ToAggregate()))
	}
	// kb-bench's labels for the run over the caller's.
	labels := map[string]string{}
	maps.Copy(labels, o.Labels)
	maps.Copy(labels, k8s.Labels(o.RunID))
	meta := func(namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: o.Name, Namespace: namespace, Labels: maps.Clone(labels)}
	}
	// The run's namespace on the target: where the shards join the run
	// and their rights are.
	rights := cmp.Or(o.TargetNamespace, o.Namespace)
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(rights),
	}
	// Copies: the objects share no map or slice with o, nor with each other.
	role := k8s.Role(rights, o.Name, labels, o.Rules).DeepCopy()
	binding := k8s.RoleBinding(rights, o.Name, labels, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: o.Name, Namespace: rights}).DeepCopy()
	return Objects{ServiceAccount: sa, Role: role, RoleBinding: binding, Job: o.job(meta(o.Namespace), labels, rights)}, nil
}

// job is the Indexed Job in the run's namespace ns: one pod per shard,
// none retried.
func (o Options) job(meta metav1.ObjectMeta, labels map[string]string, ns string) *batchv1.Job {
	podLabels := maps.Clone(labels)
	podLabels[LabelComponent] = ComponentShard
	shards := int32(o.Shards)
	args := []string{"shard", "--namespace", ns, "--run-id", o.RunID}
	if o.TargetSecret != "" {
		args = append(args, "--kubeconfig", targetDir+"/"+TargetKubeconfigKey)
	}
	pod := corev1.PodSpec{
		ServiceAccountName:           o.Name,
		AutomountServiceAccountToken: new(true),
		RestartPolicy:                corev1.RestartPolicyNever,
		NodeSelector:                 maps.Clone(o.NodeSelector),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   new(true),
			RunAsUser:      new(int64(UserID)),
			RunAsGroup:     new(int64(UserID)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            ContainerName,
			Image:           o.Image,
			ImagePullPolicy: o.ImagePullPolicy,
			Command:         []string{Binary},
			Args:            args,
			Env: []corev1.EnvVar{{
				Name:      "POD_NAME",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			}},
			Resources: *o.Resources.DeepCopy(),
			// A failed shard's last log lines end up in its pod's status,
			// where the coordinator can quote them.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             new(true),
				RunAsUser:                new(int64(UserID)),
				ReadOnlyRootFilesystem:   new(true),
				AllowPrivilegeEscalation: new(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// The root filesystem is read-only; /tmp is the one writable place.
			VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	if o.TargetSecret != "" {
		// On a runner cluster the pods are nobody there: what they may do
		// is the target's ServiceAccount's, whose token the Secret holds.
		pod.ServiceAccountName, pod.AutomountServiceAccountToken = "", new(false)
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "target", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: o.TargetSecret}}})
		c := &pod.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "target", MountPath: targetDir, ReadOnly: true})
	}
	if o.AntiAffinity {
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						k8s.LabelRunID: o.RunID,
						LabelComponent: ComponentShard,
					}},
					TopologyKey: corev1.LabelHostname,
				},
			}},
		}}
	}
	var deadline *int64
	if o.ActiveDeadline > 0 {
		deadline = new(int64((o.ActiveDeadline + time.Second - 1) / time.Second))
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			ActiveDeadlineSeconds: deadline,
			CompletionMode:        new(batchv1.IndexedCompletion),
			Completions:           new(shards),
			Parallelism:           new(shards),
			// A failed shard fails the run: it is never retried behind the
			// coordinator's back.
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       pod,
			},
		},
	}
}

// validate returns every problem with o, each saying what to change.
func (o Options) validate() field.ErrorList {
	var errs field.ErrorList
	invalid := func(p *field.Path, v string, msgs []string, why string) {
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(p, v, msg+why))
		}
	}
	// Indexed pods are named and get the hostname NAME-INDEX, which must
	// be a DNS label too.
	maxName := validation.DNS1123LabelMaxLength - len("-") - len(strconv.Itoa(max(o.Shards-1, 0)))
	switch p := field.NewPath("name"); {
	case o.Name == "":
		errs = append(errs, field.Required(p, "name the shard objects, for example kb-bench-RUNID"))
	case len(o.Name) > maxName:
		errs = append(errs, field.TooLong(p, o.Name, maxName))
	default:
		invalid(p, o.Name, validation.IsDNS1123Label(o.Name), "")
	}
	if o.Namespace == "" {
		errs = append(errs, field.Required(field.NewPath("namespace"), "the run's namespace, which the coordinator creates before the shards"))
	} else {
		invalid(field.NewPath("namespace"), o.Namespace, validation.IsDNS1123Label(o.Namespace), "")
	}
	if (o.TargetSecret == "") != (o.TargetNamespace == "") {
		errs = append(errs, field.Required(field.NewPath("targetSecret"), "a Job on a runner cluster needs both the Secret with the target's kubeconfig and the run's namespace on the target"))
	}
	if o.RunID == "" {
		errs = append(errs, field.Required(field.NewPath("runID"), "the run id the shards report under"))
	} else {
		invalid(field.NewPath("runID"), o.RunID, validation.IsValidLabelValue(o.RunID), " (it is the value of the "+k8s.LabelRunID+" label)")
	}
	if o.Shards < 1 || o.Shards > spec.MaxShards {
		errs = append(errs, field.Invalid(field.NewPath("shards"), o.Shards, fmt.Sprintf("use 1 to %d (--shards)", spec.MaxShards)))
	}
	if o.ActiveDeadline < 0 {
		errs = append(errs, field.Invalid(field.NewPath("activeDeadline"), o.ActiveDeadline.String(), "use a positive duration, or 0 for none"))
	}
	if o.Image == "" {
		errs = append(errs, field.Required(field.NewPath("image"), "give the kb-bench image the shards run (--image); `make image` builds one"))
	}
	if pulls := []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}; !slices.Contains(pulls, o.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(field.NewPath("imagePullPolicy"), o.ImagePullPolicy, pulls))
	}
	if len(o.Rules) == 0 {
		errs = append(errs, field.Required(field.NewPath("rules"), "the shards need rights in the namespace (at least to the Leases and ConfigMaps they coordinate through)"))
	}
	own := k8s.Labels(o.RunID)
	for _, m := range []struct {
		name   string
		labels map[string]string
	}{{"labels", o.Labels}, {"nodeSelector", o.NodeSelector}} {
		for _, k := range slices.Sorted(maps.Keys(m.labels)) {
			p := field.NewPath(m.name).Key(k)
			if _, ok := own[k]; ok && m.name == "labels" {
				errs = append(errs, field.Forbidden(p, "kb-bench sets this label itself; drop it"))
			} else if k == LabelComponent && m.name == "labels" {
				errs = append(errs, field.Forbidden(p, "kb-bench sets this label on the shard pods; drop it"))
			} else {
				invalid(p, k, validation.IsQualifiedName(k), "")
				invalid(p, m.labels[k], validation.IsValidLabelValue(m.labels[k]), "")
			}
		}
	}
	return errs
}
