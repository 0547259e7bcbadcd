package strategies

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/internal/revision"
)

// Progress is where a Deployment's rollout stands, in pods, with the bounds
// its strategy keeps it within. The counts come from the Deployment's
// status; Replicas is the desired count.
type Progress struct {
	// Replicas is the desired number of pods (Desired.Replicas, or the live
	// spec.replicas when Git leaves it unset).
	Replicas int32
	// Updated pods run the live template; Ready pass their readiness
	// probe; Available have been ready for minReadySeconds.
	Updated, Ready, Available int32
	// Old pods still run an older template.
	Old int32
	// MaxPods and MinAvailable are the envelope of the strategy (see
	// rollingBounds): the Deployment controller never runs more than MaxPods
	// pods nor lets fewer than MinAvailable be available on its own account.
	MaxPods, MinAvailable int32
}

// measure reads the Progress of live toward desired's replica count.
func measure(live *appsv1.Deployment, desired Desired) Progress {
	replicas := liveReplicas(live)
	if desired.Replicas != nil {
		replicas = *desired.Replicas
	}
	st := live.Status
	p := Progress{
		Replicas:  replicas,
		Updated:   st.UpdatedReplicas,
		Ready:     st.ReadyReplicas,
		Available: st.AvailableReplicas,
		// status.replicas counts the pods of every ReplicaSet: 5 pods of
		// which 2 updated leave 3 old.
		Old: max(st.Replicas-st.UpdatedReplicas, 0),
	}
	p.MaxPods, p.MinAvailable = rollingBounds(replicas, live.Spec.Strategy)
	return p
}

// liveReplicas is spec.replicas of live, 1 when unset (the API default).
func liveReplicas(live *appsv1.Deployment) int32 {
	if live.Spec.Replicas == nil {
		return 1
	}
	return *live.Spec.Replicas
}

// rollingBounds returns the envelope the Deployment controller keeps while
// it replaces pods: at most maxPods pods in all, at least minAvailable
// available. Surge rounds up and unavailability rounds down, so that a
// percentage never stalls a rollout nor takes more capacity than it says:
//
//	4 replicas, maxSurge 25%, maxUnavailable 25% (the defaults):
//	  surge ceil(4×0.25) = 1, unavailable floor(4×0.25) = 1
//	  -> at most 5 pods, at least 3 available
//	10 replicas, 30%, 30%: ceil(3.0) = 3, floor(3.0) = 3 -> 13 pods, 7 available
//	3 replicas, 25%, 25%: ceil(0.75) = 1, floor(0.75) = 0 -> 4 pods, 3 available:
//	  one extra pod at a time, capacity never drops
//	1 replica, maxSurge 0, maxUnavailable 25%: 0 and floor(0.25) = 0; both
//	  zero would let nothing move, so unavailable becomes 1 -> 1 pod, 0 available
//	Recreate, 4 replicas: every old pod goes before a new one comes
//	  -> 4 pods, 0 available
//
// A value that is neither an integer nor a percentage cannot pass API
// validation; it would count as 0 here.
func rollingBounds(replicas int32, strategy appsv1.DeploymentStrategy) (maxPods, minAvailable int32) {
	if strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return replicas, 0
	}
	surgeValue := intstr.FromString("25%")
	unavailableValue := intstr.FromString("25%")
	if ru := strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surgeValue = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailableValue = *ru.MaxUnavailable
		}
	}
	surge := scaled(surgeValue, replicas, true)
	unavailable := scaled(unavailableValue, replicas, false)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return replicas + surge, max(replicas-unavailable, 0)
}

// Surge returns the strategy a Deployment takes a template with when
// none of its pods may go before the new ones are available: a rolling
// update of maxSurge 100% and maxUnavailable 0, in place of strategy. The
// Deployment controller then asks for every new pod at once and removes
// an old one only once the new ones are available: 4 replicas run 8 pods
// for a moment, never fewer than 4 available. A Recreate strategy is
// returned as it is: it keeps nothing available whatever the counts, the
// gap the user asked for.
func Surge(strategy appsv1.DeploymentStrategy) appsv1.DeploymentStrategy {
	if strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return strategy
	}
	all, none := intstr.FromString("100%"), intstr.FromInt32(0)
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &all, MaxUnavailable: &none}}
}

// scaled resolves an integer or a percentage of total, rounding up or down.
func scaled(v intstr.IntOrString, total int32, roundUp bool) int32 {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(total), roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, math.MaxInt32))
}

// complete reports whether every desired pod runs the live template and is
// ready and available, with no old pod left: 4 replicas with 4 updated,
// 4 ready, 4 available and 0 old.
func (p Progress) complete() bool {
	return p.Updated == p.Replicas && p.Ready == p.Replicas &&
		p.Available == p.Replicas && p.Old == 0
}

// message is the line of a rollout under way, rollingOut ("rolling out
// revision 4 (commit def5678)"), the same line the rollout started with.
// It names no pod counts: the status is written as
// annotations, and each write costs the Deployment controller an update
// of its own (it copies a Deployment's annotations to its ReplicaSet), so
// a line that changed with every pod would be rewritten 4 to 6 times per
// revision (1,000 workloads rolled at once: about 5,000 writes of ours
// and as many of the controller's). The counts are the Deployment's own status
// (kubectl get deploy). Only a warning changes the line: fewer available
// pods than the strategy keeps while old pods remain means pods fail
// rather than start slowly. 4 replicas at 25% keep 3 available, so 2
// available gives "rolling out revision 4 (commit def5678): below the
// minimum of 3 available".
func (p Progress) message(rollingOut string) string {
	m := rollingOut
	if p.Old > 0 && p.Available < p.MinAvailable {
		m += fmt.Sprintf(": below the minimum of %d available", p.MinAvailable)
	}
	return m
}

// ProgressCondition returns live's Progressing condition, or nil.
func ProgressCondition(live *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i := range live.Status.Conditions {
		if live.Status.Conditions[i].Type == appsv1.DeploymentProgressing {
			return &live.Status.Conditions[i]
		}
	}
	return nil
}

// deadlineExceeded reports whether the Deployment controller gave up on
// live's rollout: Progressing=False, reason ProgressDeadlineExceeded. The
// condition stays until the Deployment makes progress again, whatever
// template it carries meanwhile.
func deadlineExceeded(live *appsv1.Deployment) bool {
	c := ProgressCondition(live)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded
}

// rolloutComplete reports whether the Deployment controller agrees that the
// rollout is done: when live has a progress deadline, its Progressing
// condition reads NewReplicaSetAvailable, set in the same status write as
// the complete counts. Without a deadline (progressDeadlineSeconds at its
// maximum, 2147483647) the controller keeps no Progressing condition and
// the counts alone tell.
func rolloutComplete(live *appsv1.Deployment) bool {
	if d := live.Spec.ProgressDeadlineSeconds; d == nil || *d == math.MaxInt32 {
		return true
	}
	c := ProgressCondition(live)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == ReasonNewReplicaSetAvailable
}

// deadlineReason says why a rollout failed: "progress deadline exceeded
// after 600s".
func deadlineReason(live *appsv1.Deployment) string {
	if d := live.Spec.ProgressDeadlineSeconds; d != nil {
		return fmt.Sprintf("progress deadline exceeded after %ds", *d)
	}
	return "progress deadline exceeded"
}

// describeRevision names a revision and, when known, its commit:
// "revision 4 (commit abc1234)".
func describeRevision(n int64, commit string) string {
	if commit == "" {
		return fmt.Sprintf("revision %d", n)
	}
	return fmt.Sprintf("revision %d (commit %s)", n, revision.Short(commit))
}
