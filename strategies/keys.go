package strategies

// Keys, reasons and defaults of the planners.
//
// The plimsoll.dev/ keys are the ones of the product contract: status
// annotations on every Deployment of a workload, and the labels and
// annotations the controller itself puts on pod templates. The
// deployment.kubernetes.io/ key and the condition reasons are the Deployment
// controller's, read back from the objects it writes. The defaults are the
// values the API server fills into a pod template when a manifest leaves a
// field out; NormalizeTemplate fills the same ones (the others it uses come
// from k8s.io/api, e.g. corev1.DefaultTerminationGracePeriodSeconds).
const (
	// ControllerPrefix starts every label and annotation key plimsoll owns.
	// Template annotations with this prefix are the controller's: they never
	// count in TemplateHash.
	ControllerPrefix = "plimsoll.dev/"

	// LabelWorkload names the workload a Deployment and its pod template
	// belong to.
	LabelWorkload = "plimsoll.dev/workload"
	// LabelColor is blue or green on the two Deployments of a blue-green
	// workload and on their pod templates.
	LabelColor = "plimsoll.dev/color"
	// LabelServing is "true" on the pods of a canary workload that receive
	// traffic.
	LabelServing = "plimsoll.dev/serving"
	// LabelTrack is "canary" on the canary Deployment of a canary workload,
	// in its selector and template, so that it never selects the stable
	// Deployment's pods.
	LabelTrack = "plimsoll.dev/track"
	// TrackCanary is the value of LabelTrack.
	TrackCanary = "canary"
	// LabelPodTemplateHash is the label the Deployment controller adds to
	// the template of each of its ReplicaSets (appsv1.DefaultDeploymentUniqueLabelKey).
	LabelPodTemplateHash = "pod-template-hash"

	// AnnotationPhase holds the Phase of the workload.
	AnnotationPhase = "plimsoll.dev/phase"
	// AnnotationRevision holds the revision number: 1 for the first
	// template, +1 each time the Git pod template hash changes.
	AnnotationRevision = "plimsoll.dev/revision"
	// AnnotationTemplateHash holds, on a Deployment, the hash of the desired
	// pod template as written in Git. On a pod template the controller wrote,
	// it holds the hash of that template itself (see Stamp).
	AnnotationTemplateHash = "plimsoll.dev/template-hash"
	// AnnotationCommit holds the Git commit the desired state came from.
	AnnotationCommit = "plimsoll.dev/commit"
	// AnnotationMessage holds one human line about the rollout.
	AnnotationMessage = "plimsoll.dev/message"
	// AnnotationFailedHash holds the template hash that failed. A revision
	// with that hash is not started until Git changes it or a retry clears it.
	AnnotationFailedHash = "plimsoll.dev/failed-hash"

	// AnnotationDeploymentRevision is the Deployment controller's revision
	// of a ReplicaSet: 1, 2, 3... in the order its templates went live.
	AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"

	// ReasonProgressDeadlineExceeded is the reason of a Progressing=False
	// condition: the new ReplicaSet made no progress for
	// spec.progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNewReplicaSetAvailable is the reason of a Progressing=True
	// condition: the rollout completed.
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"

	// PhaseProgressing: a revision is going out, or the Deployment
	// controller has not yet acted on the latest change.
	PhaseProgressing Phase = "Progressing"
	// PhasePaused: the live Deployment is paused (spec.paused).
	PhasePaused Phase = "Paused"
	// PhaseHealthy: every replica runs the desired template and is available.
	PhaseHealthy Phase = "Healthy"
	// PhaseDegraded: a revision failed, was rolled back or was refused.
	PhaseDegraded Phase = "Degraded"

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
