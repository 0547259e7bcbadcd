package strategies

import (
	"time"

	"plimsoll.dev/plimsoll/contract"
)

// Keys, reasons and defaults of the planners.
//
// The plimsoll.dev/ keys are in package contract. The
// deployment.kubernetes.io/ key and the condition reasons are the Deployment
// controller's, read back from the objects it writes.
const (
	// LabelPodTemplateHash is the label the Deployment controller adds to
	// the template of each of its ReplicaSets (appsv1.DefaultDeploymentUniqueLabelKey).
	LabelPodTemplateHash = "pod-template-hash"

	// AnnotationDeploymentRevision is the Deployment controller's revision
	// of a ReplicaSet: 1, 2, 3... in the order its templates went live.
	AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"
	// AnnotationChangeCause is what `kubectl rollout history` lists for a
	// revision; the rollout controller sets it to "<short commit>
	// <subject>", and a promotion carries it from the canary to the
	// stable Deployment.
	AnnotationChangeCause = "kubernetes.io/change-cause"

	// ReasonProgressDeadlineExceeded is the reason of a Progressing=False
	// condition: the new ReplicaSet made no progress for
	// spec.progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNewReplicaSetAvailable is the reason of a Progressing=True
	// condition: the rollout completed.
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"

	// PhaseProgressing: a revision is going out, or the Deployment
	// controller has not yet acted on the latest change.
	PhaseProgressing Phase = contract.PhaseProgressing
	// PhasePaused: the live Deployment is paused (spec.paused).
	PhasePaused Phase = contract.PhasePaused
	// PhaseHealthy: every replica runs the desired template and is available.
	PhaseHealthy Phase = contract.PhaseHealthy
	// PhaseDegraded: a revision failed, was rolled back or was refused.
	PhaseDegraded Phase = contract.PhaseDegraded

	// waitForEndpoints is how soon a blue-green plan that holds a
	// scale-down back for the active Service's endpoints plans again.
	waitForEndpoints = time.Second
)
