package strategies

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// The canary's pods and counts: which pods serve, and how many each
// Deployment runs.

// servesAny reports whether one of pods carries the serving label.
func servesAny(pods []Pod) bool {
	for _, p := range pods {
		if p.Serving {
			return true
		}
	}
	return false
}

// unlabelled counts the live canary pods taken out of traffic by hand.
func unlabelled(pods []Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.Unlabelled && !p.Deleting {
			n++
		}
	}
	return n
}

// weightAt is the weight in force at step k: that of the last weight step
// at or before k, 0 before the first.
func weightAt(steps []Step, k int) int32 {
	for i := min(k, len(steps)-1); i >= 0; i-- {
		if !steps[i].Pause {
			return steps[i].Weight
		}
	}
	return 0
}

// label plans the serving labels for c serving canary pods: Ready pods
// without the label get it until c serve, extra serving pods lose it (the
// last by name first). A pod that is not Ready or is being deleted does not
// count, so a dead canary pod's replacement is labelled once Ready; a pod
// unlabelled by hand is never labelled again. It returns how many canary
// pods serve once the plan is executed.
//
// Pods of another template than hash (the canary's) that serve, a
// revision's that a new commit replaces, lose the label first: with
// revision 2's pod serving at 25% of 4 when revision 3's becomes Ready,
// revision 2's leaves the Service, whatever the names, and revision 3's,
// once unlabelled, would never be labelled again.
func label(plan *CanaryPlan, pods []Pod, c int32, hash string) int32 {
	return balance(plan, pods, c, func(p Pod) bool { return !p.Unlabelled }, func(p Pod) bool { return p.Hash == hash })
}

// balance plans the serving labels of pods so that want of them serve:
// Ready serving pods beyond want lose the label (those for which keep
// does not hold first, then the last by name first), Ready pods without
// it for which may holds get it (the first by name first) until want
// serve. A serving pod that is not Ready or is being deleted counts for
// nothing; the label goes with it. It returns how many serve once the
// plan is executed.
func balance(plan *CanaryPlan, pods []Pod, want int32, may, keep func(Pod) bool) int32 {
	var serving, others, candidates []string
	for _, p := range pods {
		switch {
		case p.Deleting || !p.Ready:
		case p.Serving && keep(p):
			serving = append(serving, p.Name)
		case p.Serving:
			others = append(others, p.Name)
		case may(p):
			candidates = append(candidates, p.Name)
		}
	}
	slices.Sort(serving)
	slices.Sort(others)
	serving = append(serving, others...)
	slices.Sort(candidates)
	for int32(len(serving)) > want {
		plan.Unlabel = append(plan.Unlabel, serving[len(serving)-1])
		serving = serving[:len(serving)-1]
	}
	for _, name := range candidates {
		if int32(len(serving)) >= want {
			break
		}
		plan.Label = append(plan.Label, name)
		serving = append(serving, name)
	}
	return int32(len(serving))
}

// lowering returns how many canary pods are to serve at a step of c
// canary pods and a stable share of share: c, or, while more serve (a
// step that lowers the weight, "50%, 25%"), as many as serve until the
// stable serves its share. At 25% of 4 after 50%: 2 canary pods serve
// on while the stable goes from 2 to 3, then one leaves; taking it out
// first left 3 serving until the stable's third pod was Ready.
func lowering(desired CanaryDesired, o CanaryObserved, c, share int32) int32 {
	now := servingNow(o.Pods)
	if now <= c {
		return c
	}
	served := stableAt(o.Stable, share, o.ReplicaSets)
	if desired.Autoscaled {
		served = servingNow(o.StablePods) >= share
	}
	if served {
		return c
	}
	return now
}

// servingNow counts the pods that serve: Ready, labelled and not being
// deleted.
func servingNow(pods []Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.Ready && p.Serving && !p.Deleting {
			n++
		}
	}
	return n
}

// leaving counts the pods of template hash among the pods a plan takes
// out of the Service (out). The canary keeps a pod for each until it is
// out: scaled down in the same plan, its ReplicaSet might delete a pod
// that stays in the Service instead, before it sees which one left (the
// one taken out is the first it deletes, see the executor's unlabel).
// Pods of another template go with their own ReplicaSet.
func leaving(out []string, pods []Pod, hash string) int32 {
	var n int32
	for _, p := range pods {
		if p.Hash == hash && slices.Contains(out, p.Name) {
			n++
		}
	}
	return n
}

// servingSurge is how many pods a stable Deployment of n pods must add so
// that replacing them all within its rolling update keeps n available:
// the least e with n+e-floor(maxUnavailable of n+e) >= n. With n = 4 and
// the default 25%: e = 0 keeps 4-1 = 3, e = 1 keeps 5-floor(1.25) = 4, so
// 1. With maxUnavailable 0 it is 0. The Recreate strategy keeps nothing
// available whatever the count: 0, and the replacement is a gap the user's
// strategy asked for.
func servingSurge(n int32, strategy appsv1.DeploymentStrategy) int32 {
	if strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0
	}
	for e := int32(0); e <= n; e++ {
		if _, minAvailable := rollingBounds(n+e, strategy); minAvailable >= n {
			return e
		}
	}
	return 0
}

// serveEveryStable plans the serving label back onto every Ready stable
// pod of an autoscaled workload that lacks it: the canary is gone or on
// its way out, or the stable is about to be replaced, and the stable
// serves the whole count again. It returns how many pods it labels.
func serveEveryStable(plan *CanaryPlan, pods []Pod) int {
	before := len(plan.Label)
	serveStable(plan, pods, int32(len(pods)))
	return len(plan.Label) - before
}

// stableCount is the stable count for a plan to write: n, or none when an
// HPA owns the count.
func stableCount(desired CanaryDesired, n int32) *int32 {
	if desired.Autoscaled {
		return nil
	}
	return &n
}

// serveStable plans the serving labels of the stable pods of an
// autoscaled workload so that want of them serve (see balance). With an
// HPA at 6 and the canary at 25%, 2 canary pods serve and ceil(4.5) = 5
// of the 6 stable pods; the sixth keeps running outside the Service.
func serveStable(plan *CanaryPlan, pods []Pod, want int32) int32 {
	always := func(Pod) bool { return true }
	return balance(plan, pods, want, always, always)
}
