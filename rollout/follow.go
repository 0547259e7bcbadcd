package rollout

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// Outcome is where the rollout of one workload handed off by the last
// commit stands, as `plimsoll sync --once --wait` reports it.
type Outcome struct {
	// Kind is "" for a workload of Deployments, StatefulSet or DaemonSet
	// for one of those; Namespace and Name name the workload.
	Kind            string
	Namespace, Name string
	// Phase and Message are its status.
	Phase   strategies.Phase
	Message string
	// Ended is true once its rollout ended: Healthy on the Git template,
	// or Degraded (failed, refused, or input that cannot be rolled out).
	Ended bool
}

// Follow ends once mode (Config.Once): from now on the controller follows
// its workloads as a daemon does, every change its informers see queueing
// the workload again, and the workloads handed off are queued at once.
// `plimsoll sync --once --wait` calls it after its sync, to see the
// rollouts of its commit through.
func (c *Controller) Follow() {
	c.once.Store(false)
	for _, key := range c.intents.keys() {
		c.queue.Add(key)
	}
	for _, s := range c.cachedSets() {
		c.sets.Add(setKey(s.kind, s.meta.GetNamespace(), s.meta.GetName()))
	}
}

// cachedSets are the StatefulSets and DaemonSets in the caches: those of
// the controller's sync (or of every sync), but those left to their own
// controller (OnDelete).
func (c *Controller) cachedSets() []*set {
	var out []*set
	for _, v := range c.views {
		statefulSets, _ := v.statefulSets.List(labels.Everything())
		for _, sts := range statefulSets {
			out = append(out, statefulSetOf(sts))
		}
		daemonSets, _ := v.daemonSets.List(labels.Everything())
		for _, ds := range daemonSets {
			out = append(out, daemonSetOf(ds))
		}
	}
	return slices.DeleteFunc(out, func(s *set) bool { return s.manual })
}

// setOutcomes reads where the rollout of each set in the caches stands:
// ended once its status is of its live template (or of the failed one
// it was rolled back from) and Healthy or Degraded.
func (c *Controller) setOutcomes() []Outcome {
	var out []Outcome
	for _, s := range c.cachedSets() {
		st, _ := strategies.ReadStatus(s.meta.GetAnnotations())
		hash := podtemplate.Hash(s.template)
		out = append(out, Outcome{Kind: s.kind, Namespace: s.meta.GetNamespace(), Name: s.meta.GetName(), Phase: st.Phase, Message: st.Message,
			Ended: (st.Phase == strategies.PhaseHealthy && st.Hash == hash) || (st.Phase == strategies.PhaseDegraded && (st.Hash == hash || st.FailedHash == hash))})
	}
	return out
}

// Outcomes reads from the caches where the rollout of each workload the
// last handoff holds stands, sorted by namespace and name, then of each
// StatefulSet and DaemonSet of the sync.
func (c *Controller) Outcomes() []Outcome {
	keys := c.intents.keys()
	slices.Sort(keys)
	out := make([]Outcome, 0, len(keys))
	for _, key := range keys {
		in, ok := c.intents.get(key)
		if !ok || in.git == nil {
			continue
		}
		out = append(out, c.outcomeOf(in))
	}
	sets := c.setOutcomes()
	slices.SortFunc(sets, func(a, b Outcome) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return append(out, sets...)
}

// outcomeOf reads the status of the workload of intent in: the status of
// its Deployments with the highest revision (a progressive workload's
// Deployments all carry it).
func (c *Controller) outcomeOf(in intent) Outcome {
	git := in.git
	o := Outcome{Namespace: git.Namespace, Name: git.Name}
	v, ok := c.viewOf(git.Namespace)
	if !ok {
		return o
	}
	deploys := indexed[*appsv1.Deployment](v.index.deploys, byWorkload, git.Namespace+"/"+git.Name)
	var best strategies.Status
	found := false
	for _, d := range deploys {
		st, err := strategies.ReadStatus(c.written.newest(d).Annotations)
		if err == nil && (!found || st.Revision > best.Revision) {
			best, found = st, true
		}
	}
	o.Phase, o.Message = best.Phase, best.Message
	want := podtemplate.Hash(git.Spec.Template)
	o.Ended = best.Phase == strategies.PhaseDegraded || (best.Phase == strategies.PhaseHealthy && best.Hash == want)
	return o
}
