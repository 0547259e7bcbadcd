package strategies

import (
	"slices"
	"strings"

	"plimsoll.dev/plimsoll/contract"
)

// WorkloadKeys are the annotations the controller keeps alike on every
// Deployment of a workload: the status, the state a restarted controller
// resumes from, and the analysis run. Anything else on a Deployment is
// Git's or its own.
var WorkloadKeys = slices.Concat(contract.StatusKeys, contract.StateKeys, []string{contract.AnnotationAnalysisRun})

// PlanInvalid lists the writes that record message, an input error met
// while reading a workload, on each of its Deployments named by suffix
// (see Action.Deployment): phase Degraded and the message, with the
// plimsoll.dev/ inputs of Git (git; nil keeps the live ones), which name
// what is wrong, so that a reconcile without the sync's intent meets the
// same error. The strategy is not copied, nor the status and state: a
// workload keeps being reconciled by the strategy it runs with. Nothing
// else changes: the pods run on as they are, and the workload waits for
// Git to change.
func PlanInvalid(suffixes []string, git map[string]string, message string) []Action {
	a := map[string]string{}
	for k, v := range git {
		if strings.HasPrefix(k, contract.Prefix) && !slices.Contains(WorkloadKeys, k) && k != contract.AnnotationStrategy {
			a[k] = v
		}
	}
	a[contract.AnnotationPhase], a[contract.AnnotationMessage] = contract.PhaseDegraded, message
	actions := make([]Action, len(suffixes))
	for i, suffix := range suffixes {
		actions[i] = Action{Kind: ActionWrite, Deployment: suffix, Annotations: a, Alone: true}
	}
	return actions
}

// PlanMessage lists the write of message alone on the workload's
// Deployment named by suffix: a write of the controller's that the API
// server refused, told where users look.
func PlanMessage(suffix, message string) []Action {
	return []Action{{Kind: ActionWrite, Deployment: suffix, Annotations: map[string]string{contract.AnnotationMessage: message}, Alone: true}}
}
