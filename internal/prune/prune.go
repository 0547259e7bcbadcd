// Package prune holds the one rule by which a sync's prune keeps a live
// object that left Git, for the sync, which deletes what it applied, and
// for the rollout controller, which retires what a workload ran under
// other names (a blue-green workload's colors) by the same rule.
package prune

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// Allowed reports whether a prune of sync syncName may delete live: it
// still carries the sync's label and no plimsoll.dev/prune: disabled.
func Allowed(live metav1.Object, syncName string) bool {
	return live.GetLabels()[contract.LabelSync] == syncName && live.GetAnnotations()[contract.AnnotationPrune] != contract.PruneDisabled
}
