package apply

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Via is how a live Deployment refers to a ConfigMap or Secret.
type Via string

// The ways a Deployment refers to an object, in the order they are named.
const (
	// ViaTemplate: the Deployment's own pod template.
	ViaTemplate Via = "template"
	// ViaOldPods: a ReplicaSet of the Deployment with another template
	// still has pods (a rollout in flight).
	ViaOldPods Via = "old pods"
	// ViaRollback: the template an automatic rollback of the Deployment
	// would restore (strategies.PossibleRollback).
	ViaRollback Via = "rollback target"
)

// Referrer is a live Deployment that refers to an object a prune would
// delete, and how.
type Referrer struct {
	// Deployment is the Deployment's name, in the object's namespace.
	Deployment string
	// Revision and Phase are its plimsoll.dev/revision and
	// plimsoll.dev/phase, "" when it has none.
	Revision, Phase string
	// Via holds each way it refers to the object, in the order of the Via
	// constants.
	Via []Via
}

// String describes the referrer for the sync status:
// "Deployment web, revision 3 Progressing; old pods, rollback target".
func (r Referrer) String() string {
	var b strings.Builder
	b.WriteString("Deployment " + r.Deployment)
	switch {
	case r.Revision != "":
		b.WriteString(", revision " + r.Revision)
		if r.Phase != "" {
			b.WriteString(" " + r.Phase)
		}
	case r.Phase != "":
		b.WriteString(", " + r.Phase)
	}
	ways := make([]string, len(r.Via))
	for i, v := range r.Via {
		ways[i] = string(v)
	}
	b.WriteString("; " + strings.Join(ways, ", "))
	return b.String()
}

// Waiting is an object that left Git and that a prune leaves in place
// because live Deployments still refer to it.
type Waiting struct {
	Key       manifest.Key
	Referrers []Referrer
}

// String describes the wait for the sync status: "ConfigMap
// shop/app-config-5g2h7 (referenced by Deployment web, revision 3
// Progressing; rollback target)", the referrers joined by " and by ".
func (w Waiting) String() string {
	refs := make([]string, len(w.Referrers))
	for i, r := range w.Referrers {
		refs[i] = r.String()
	}
	return fmt.Sprintf("%s (referenced by %s)", w.Key, strings.Join(refs, " and by "))
}

// referencedKind reports whether k is a kind a pod template can refer to
// by name: a ConfigMap or a Secret of the core group.
func referencedKind(k manifest.Key) bool {
	return k.Group == "" && (k.Kind == kindConfigMap || k.Kind == kindSecret)
}

// referrers returns the Deployments that refer to each of candidates, the
// ConfigMaps and Secrets of one namespace that a prune would delete.
// deployments and replicaSets are the namespace's workloads (labelled
// plimsoll.dev/workload). A Deployment counts with
//
//   - its pod template (ViaTemplate), which the Deployment controller
//     rolls pods from, and which blue-green's other color and canary's
//     stable Deployment keep until the new revision takes over;
//   - each of its ReplicaSets with another template that still has pods
//     (ViaOldPods): mid-rollout, the old pods run on, and restart, from
//     theirs;
//   - the ReplicaSet an automatic rollback would restore (ViaRollback),
//     which for a rolling workload that is not Healthy may be scaled to
//     zero already and still come back.
//
// leaving names the Deployments the same prune deletes: they refer to
// nothing, as do those being deleted already (the colors and canary
// Deployment of a workload removed from Git, which the rollout controller
// deletes just before the prune). Candidates no Deployment refers to are
// not in the result; each list is in Deployment name order, so the same
// state reads the same.
func referrers(candidates map[manifest.Key]bool, deployments []*appsv1.Deployment, replicaSets []*appsv1.ReplicaSet, leaving map[manifest.Key]bool) map[manifest.Key][]Referrer {
	deployments = slices.Clone(deployments)
	slices.SortFunc(deployments, func(a, b *appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	out := map[manifest.Key][]Referrer{}
	for _, d := range deployments {
		if d.DeletionTimestamp != nil || leaving[manifest.Key{Group: "apps", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}] {
			continue
		}
		via := map[manifest.Key][]Via{}
		refer := func(t corev1.PodTemplateSpec, how Via) {
			for _, k := range podReferences(d.Namespace, &t.Spec) {
				if candidates[k] && !slices.Contains(via[k], how) {
					via[k] = append(via[k], how)
				}
			}
		}
		refer(d.Spec.Template, ViaTemplate)
		current := podtemplate.LiveHash(d.Spec.Template)
		var owned []*appsv1.ReplicaSet
		for _, rs := range replicaSets {
			if metav1.IsControlledBy(rs, d) {
				owned = append(owned, rs)
			}
		}
		for _, rs := range owned {
			if hasPods(rs) && podtemplate.LiveHash(rs.Spec.Template) != current {
				refer(rs.Spec.Template, ViaOldPods)
			}
		}
		if rs := strategies.PossibleRollback(d, owned); rs != nil {
			refer(rs.Spec.Template, ViaRollback)
		}
		for k, how := range via {
			out[k] = append(out[k], Referrer{Deployment: d.Name, Revision: d.Annotations[contract.AnnotationRevision],
				Phase: d.Annotations[contract.AnnotationPhase], Via: how})
		}
	}
	return out
}

// hasPods reports whether rs runs pods or is asked to.
func hasPods(rs *appsv1.ReplicaSet) bool {
	return rs.Status.Replicas > 0 || (rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0)
}

// podReferences returns the ConfigMaps and Secrets of namespace ns that a
// pod of spec refers to by name, each once, in the order first met:
// through envFrom and env valueFrom of every container, init container and
// ephemeral container; configMap, secret and projected volumes; and
// imagePullSecrets. Optional references count too: the pods start without
// them, but not as they would with them. Other volume plugins' secret
// references (CSI, CephFS and the like) are not read.
func podReferences(ns string, spec *corev1.PodSpec) []manifest.Key {
	var out []manifest.Key
	add := func(kind, name string) {
		k := manifest.Key{Kind: kind, Namespace: ns, Name: name}
		if name != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	env := func(from []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, f := range from {
			if f.ConfigMapRef != nil {
				add(kindConfigMap, f.ConfigMapRef.Name)
			}
			if f.SecretRef != nil {
				add(kindSecret, f.SecretRef.Name)
			}
		}
		for _, v := range vars {
			if v.ValueFrom == nil {
				continue
			}
			if r := v.ValueFrom.ConfigMapKeyRef; r != nil {
				add(kindConfigMap, r.Name)
			}
			if r := v.ValueFrom.SecretKeyRef; r != nil {
				add(kindSecret, r.Name)
			}
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			add(kindConfigMap, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add(kindSecret, v.Secret.SecretName)
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				add(kindConfigMap, s.ConfigMap.Name)
			}
			if s.Secret != nil {
				add(kindSecret, s.Secret.Name)
			}
		}
	}
	for _, s := range spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	return out
}
