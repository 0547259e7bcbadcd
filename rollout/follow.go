package rollout

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// Outcome is where the rollout of one workload handed off by the last
// commit stands, as `plimsoll sync --once --wait` reports it.
type Outcome struct {
	// Namespace and Name name the workload.
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
}

// Outcomes reads from the caches where the rollout of each workload the
// last handoff holds stands, sorted by namespace and name.
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
	return out
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
