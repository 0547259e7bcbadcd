package strategies

import (
	"time"

	"plimsoll.dev/plimsoll/contract"
)

// Keys, reasons and defaults of the planners.
//
// The plimsoll.dev/ keys are in package contract. The
// deployment.kubernetes.io/ key and the condition reasons are the Deployment
// controller's, read back from the objects it writes. The defaults are the
// values the API server fills into a pod template when a manifest leaves a
// field out; NormalizeTemplate fills the same ones (the others it uses come
// from k8s.io/api, e.g. corev1.DefaultTerminationGracePeriodSeconds).
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

	// hashLength is how many hex digits of the SHA-256 digest TemplateHash
	// keeps: 10 digits are 40 bits, so two templates of one workload share
	// a hash with odds of about 1 in 10^12.
	hashLength = 10

	// Probe defaults (SetDefaults_Probe).
	defaultProbeTimeoutSeconds   = 1
	defaultProbePeriodSeconds    = 10
	defaultProbeSuccessThreshold = 1
	defaultProbeFailureThreshold = 3
	// defaultHTTPGetPath is the path of an httpGet probe or hook without one.
	defaultHTTPGetPath = "/"
	// defaultFieldRefAPIVersion is the apiVersion of a fieldRef without one.
	defaultFieldRefAPIVersion = "v1"
	// defaultTokenExpirationSeconds is one hour, the lifetime of a projected
	// service account token without expirationSeconds.
	defaultTokenExpirationSeconds = 3600
	// Defaults of the legacy in-tree volume sources.
	defaultISCSIInterface  = "default"
	defaultRBDPool         = "rbd"
	defaultRBDUser         = "admin"
	defaultRBDKeyring      = "/etc/ceph/keyring"
	defaultAzureDiskFSType = "ext4"
	defaultScaleIOStorage  = "ThinProvisioned"
	defaultScaleIOFSType   = "xfs"
	// latestTag is the image tag that makes the pull policy Always, as does
	// an image with neither tag nor digest (it means :latest).
	latestTag = "latest"
	// milliScale is the scale resource quantities are rounded up to: the
	// API server stores 0.0001 CPU as 1m.
	milliScale = -3
)
