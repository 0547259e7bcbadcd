package podtemplate

// The defaults the API server fills into a pod template when a manifest
// leaves a field out; Normalize fills the same ones (the others it uses
// come from k8s.io/api, e.g. corev1.DefaultTerminationGracePeriodSeconds).
const (
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
