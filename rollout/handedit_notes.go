package rollout

import (
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/takeover"
)

// What the informers note of each Deployment's managed fields before
// trim drops them (see newTransform): hand edits of its template and
// count, and the labels and annotations the controller wrote from Git.

// handEdits is what the caches keep of the Deployments' managed fields:
// which Deployments have a pod template that kubectl changed, and which a
// count that someone else than the controller set last (kubectl scale,
// an autoscaler), by namespace/name, with the uid and resourceVersion that
// say so. It holds an entry only while one of them is so, which is rare
// and short for the template (see runsGit), and lasts for a Deployment an
// autoscaler scales: one small entry each. It also keeps which labels and
// annotations the controller wrote from Git, so that those Git drops go
// (see dropped).
type handEdits struct {
	mu sync.Mutex
	by map[string]handEdit
	// unrestored holds, by namespace/name, who set the count of a
	// Deployment that the controller wrote since without putting its own
	// count back (a status write while the restore waited for the
	// endpoints): such a write makes the controller the field's owner,
	// and the count would no longer read as set by hand when it is put
	// back.
	unrestored map[string]scaledCount
	// written holds, by namespace/name, the labels and annotations of a
	// Deployment that the controller wrote and that are not its own keys
	// (see gitKeys), as the version the informer saw tells: one entry per
	// Deployment with such keys, a few names each.
	written map[string]gitKeys
}

// gitKeys are the labels and annotations of the version resourceVersion
// of the Deployment of uid that the controller wrote, but for its own
// (plimsoll.dev/ keys, kubernetes.io/change-cause): Git's, as a write from
// a commit set them, unless another writer set them to another value
// since.
type gitKeys struct {
	uid                 types.UID
	resourceVersion     string
	labels, annotations []string
}

// scaledCount is who set the count of a Deployment of uid outside Git.
type scaledCount struct {
	uid types.UID
	by  string
}

type handEdit struct {
	uid             types.UID
	resourceVersion string
	// template is whether kubectl owns a field of the pod template.
	template bool
	// scaledBy is the field manager that owns spec.replicas, when it is
	// not the rollout controller.
	scaledBy string
	// statusBy is the field manager that owns one of the status
	// annotations (message, phase, revision), when it is not the rollout
	// controller: kubectl-rollout after `kubectl rollout undo` put an
	// earlier ReplicaSet's annotations back (the field manager owns those
	// whose values it changed).
	statusBy string
}

func newHandEdits() *handEdits {
	return &handEdits{by: map[string]handEdit{}, unrestored: map[string]scaledCount{}, written: map[string]gitKeys{}}
}

// note records whether kubectl owns a field of the pod template of obj, a
// Deployment as the API server sent it, and who owns its count. An object
// without managed fields was trimmed already (the informers transform
// again what they hold): it tells nothing new.
func (h *handEdits) note(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || len(d.ManagedFields) == 0 {
		return
	}
	fields := takeover.Decode(d.ManagedFields)
	e := handEdit{uid: d.UID, resourceVersion: d.ResourceVersion, template: fields.ByHandUnder("spec", "template")}
	if owner := fields.OwnerOf("spec", "replicas"); owner != FieldManager {
		e.scaledBy = owner
	}
	for _, key := range []string{contract.AnnotationMessage, contract.AnnotationPhase, contract.AnnotationRevision} {
		if owner := fields.OwnerOf("metadata", "annotations", key); owner != FieldManager && owner != "" {
			e.statusBy = owner
		}
	}
	g := writtenKeys(fields)
	g.uid, g.resourceVersion = d.UID, d.ResourceVersion
	key := d.Namespace + "/" + d.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.template || e.scaledBy != "" || e.statusBy != "" {
		h.by[key] = e
	} else {
		delete(h.by, key)
	}
	if len(g.labels) > 0 || len(g.annotations) > 0 {
		h.written[key] = g
	} else {
		delete(h.written, key)
	}
}

// writtenKeys returns the labels and annotations that the controller
// owns by fields, a Deployment's managed fields, but for its own keys:
// those of plimsoll.dev/ (status, state, and the rollout inputs, which
// refresh drops itself when Git does) and kubernetes.io/change-cause,
// which it writes from the commit.
func writtenKeys(fields takeover.Fields) gitKeys {
	notOwn := func(k string) bool { return strings.HasPrefix(k, contract.Prefix) || k == AnnotationChangeCause }
	return gitKeys{labels: slices.DeleteFunc(fields.OwnedKeys(FieldManager, "metadata", "labels"), notOwn),
		annotations: slices.DeleteFunc(fields.OwnedKeys(FieldManager, "metadata", "annotations"), notOwn)}
}

// dropped returns the labels and annotations of live that the controller
// wrote from Git, as the version of live the informer noted tells, and
// that git, the workload's Deployment in the latest commit, no longer
// sets (see gitKeys.dropped). Nothing is dropped of a version not noted
// (one the controller just wrote): the next reconcile, from the
// informer's copy, drops it.
func (h *handEdits) dropped(live, git *appsv1.Deployment) (labels, annotations []string) {
	if live == nil {
		return nil, nil
	}
	h.mu.Lock()
	g, ok := h.written[live.Namespace+"/"+live.Name]
	h.mu.Unlock()
	if !ok || g.uid != live.UID || g.resourceVersion != live.ResourceVersion {
		return nil, nil
	}
	return g.dropped(live, git)
}

// dropped returns the labels and annotations of g that live holds and
// git no longer sets (see droppedKeys).
func (g gitKeys) dropped(live, git *appsv1.Deployment) (labels, annotations []string) {
	return droppedKeys(g.labels, live.Labels, git.Labels), droppedKeys(g.annotations, live.Annotations, git.Annotations)
}

// droppedKeys returns the keys of written, those the controller wrote of
// a live map (labels or annotations), that the live map holds and Git's
// no longer does: a write of Git's Deployment removes them, as an apply
// removes a field it no longer sends. A key that another writer set
// (`kubectl label`, the Deployment controller's revision) is not the
// controller's to remove.
func droppedKeys(written []string, live, git map[string]string) []string {
	var out []string
	for _, k := range written {
		_, inLive := live[k]
		if _, inGit := git[k]; inLive && !inGit {
			out = append(out, k)
		}
	}
	return out
}

// dropKeys removes labels and annotations from d.
func dropKeys(d *appsv1.Deployment, labels, annotations []string) {
	for _, k := range labels {
		delete(d.Labels, k)
	}
	for _, k := range annotations {
		delete(d.Annotations, k)
	}
}

// of returns what was noted of the version of d the informer saw.
func (h *handEdits) of(d *appsv1.Deployment) (handEdit, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.by[d.Namespace+"/"+d.Name]
	return e, ok && e.uid == d.UID && e.resourceVersion == d.ResourceVersion
}

// ownsTemplate reports whether kubectl owns a field of d's pod template,
// as far as the version of d the informer noted tells.
func (h *handEdits) ownsTemplate(d *appsv1.Deployment) bool {
	e, ok := h.of(d)
	return ok && e.template
}

// rewrote returns the field manager other than the controller that wrote
// d's status annotations last, "" when none did.
func (h *handEdits) rewrote(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	e, ok := h.of(d)
	if !ok {
		return ""
	}
	return e.statusBy
}

// scaledBy returns the field manager that set d's count when it is not
// the rollout controller, "" when it is or nothing was noted: as the
// version of d the informer noted tells, or as a write of the controller
// that kept that count remembered (see wroteCount).
func (h *handEdits) scaledBy(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	if e, ok := h.of(d); ok && e.scaledBy != "" {
		return e.scaledBy
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if u, ok := h.unrestored[d.Namespace+"/"+d.Name]; ok && u.uid == d.UID {
		return u.by
	}
	return ""
}

// keepScaledBy remembers that d's count, set by by, is still to be put
// back; forgetScaledBy that it was.
func (h *handEdits) keepScaledBy(d *appsv1.Deployment, by string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unrestored[d.Namespace+"/"+d.Name] = scaledCount{uid: d.UID, by: by}
}

func (h *handEdits) forgetScaledBy(ns, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.unrestored, ns+"/"+name)
}

// forget drops what was noted of Deployment ns/name, deleted.
func (h *handEdits) forget(ns, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := ns + "/" + name
	delete(h.by, key)
	delete(h.unrestored, key)
	delete(h.written, key)
}
