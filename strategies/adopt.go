package strategies

import (
	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// PlanAdoption plans the adoption of found, the Deployment <name> of
// workload that runs already but was not written by plimsoll (created by
// `kubectl apply` or Helm), for git, Git's Deployment <name>. Found has
// neither the plimsoll.dev/workload label nor (with a sync name) the
// plimsoll.dev/sync one, so the informers, which watch only labelled
// Deployments and ReplicaSets, do not hold it; without an adoption the
// strategy would take it for absent and write Git's Deployment over it
// with a labelled, stamped template: every pod replaced, although the
// template is the one that runs.
//
// The one action labels found as the workload's and git's sync's, and
// takes over what kubectl set on it; the strategies then go on as with
// any live Deployment: a rolling workload whose Git template hashes like
// the live one keeps the live template (revision 1 is what runs), a
// different one rolls out as a new revision, and blue-green and canary
// take <name> over as they take over a rolling workload of their own.
// Nothing found, or no Git Deployment, is nothing to adopt.
func PlanAdoption(workload string, git, found *appsv1.Deployment) []Action {
	if git == nil || found == nil {
		return nil
	}
	labels := map[string]string{contract.LabelWorkload: workload}
	if sync := git.Labels[contract.LabelSync]; sync != "" {
		labels[contract.LabelSync] = sync
	}
	return []Action{{Kind: ActionAdopt, Deployment: "", Labels: labels}}
}
