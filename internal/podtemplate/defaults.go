package podtemplate

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DeploymentSpec returns spec with the defaults the API server gives an
// apps/v1 Deployment's own fields (SetDefaults_Deployment): 1 replica, a
// RollingUpdate strategy of 25% surge and 25% unavailable, 10 ReplicaSets
// of history, a progress deadline of 600 s. The pod template is left as
// it is. A spec from Git leaves them out, and is stored with them: the
// rollout controller compares the two with them filled in.
func DeploymentSpec(spec appsv1.DeploymentSpec) appsv1.DeploymentSpec {
	if spec.Replicas == nil {
		spec.Replicas = ptrTo[int32](1)
	}
	s := spec.Strategy.DeepCopy()
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := intstr.FromString("25%")
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = &quarter
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = &quarter
		}
	}
	spec.Strategy = *s
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptrTo[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptrTo[int32](600)
	}
	return spec
}

// setPodSpecDefaults fills in every field the API server (v1.36) defaults in
// the pod template of a Deployment and leaves every field that is set as it
// is. It mirrors SetObjectDefaults_Deployment of k8s.io/kubernetes
// pkg/apis/apps/v1 for spec.template.spec:
//
//	pod          dnsPolicy ClusterFirst, restartPolicy Always,
//	             schedulerName default-scheduler,
//	             terminationGracePeriodSeconds 30, securityContext {},
//	             overhead and resources rounded up to milli-units
//	containers   imagePullPolicy (see defaultPullPolicy),
//	(all kinds)  terminationMessagePath /dev/termination-log,
//	             terminationMessagePolicy File, ports[].protocol TCP,
//	             env[].valueFrom.fieldRef.apiVersion v1,
//	             env[].valueFrom.fileKeyRef.optional false,
//	             resources rounded up to milli-units (0.0001 -> 1m)
//	probes       timeoutSeconds 1, periodSeconds 10, successThreshold 1,
//	             failureThreshold 3, httpGet path / and scheme HTTP,
//	             grpc.service ""
//	hooks        lifecycle postStart/preStop httpGet path / and scheme HTTP
//	volumes      no source -> emptyDir {}; defaultMode 420 (0644) for
//	             configMap, secret, downwardAPI and projected; hostPath
//	             type ""; downwardAPI fieldRef apiVersion v1; projected
//	             serviceAccountToken expirationSeconds 3600; image
//	             pullPolicy as for containers; ephemeral claim volumeMode
//	             Filesystem and resources rounded; iscsi, rbd, azureDisk
//	             and scaleIO defaults
//
// The Pod-only defaults (enableServiceLinks, requests copied from limits,
// hostNetwork ports) are not template defaults: the API server applies them
// to Pods, not to the templates a Deployment stores.
func setPodSpecDefaults(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.Volumes {
		setVolumeDefaults(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i])
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		setContainerDefaults((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpToMilli(s.Overhead)
	if s.Resources != nil {
		roundUpToMilli(s.Resources.Limits)
		roundUpToMilli(s.Resources.Requests)
	}
}

func setContainerDefaults(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		setFieldRefDefaults(from.FieldRef)
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptrTo(false)
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	setProbeDefaults(c.LivenessProbe)
	setProbeDefaults(c.ReadinessProbe)
	setProbeDefaults(c.StartupProbe)
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			setHTTPGetDefaults(c.Lifecycle.PostStart.HTTPGet)
		}
		if c.Lifecycle.PreStop != nil {
			setHTTPGetDefaults(c.Lifecycle.PreStop.HTTPGet)
		}
	}
}

func setProbeDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = defaultProbeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = defaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = defaultProbeFailureThreshold
	}
	setHTTPGetDefaults(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptrTo("")
	}
}

func setHTTPGetDefaults(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = defaultHTTPGetPath
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func setFieldRefDefaults(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = defaultFieldRefAPIVersion
	}
}

func setVolumeDefaults(v *corev1.Volume) {
	// Every field of VolumeSource is a pointer: the zero value is a volume
	// that names no source, which the API server makes an emptyDir.
	if v.VolumeSource == (corev1.VolumeSource{}) {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if v.Image != nil && v.Image.PullPolicy == "" {
		v.Image.PullPolicy = defaultPullPolicy(v.Image.Reference)
	}
	if v.HostPath != nil && v.HostPath.Type == nil {
		v.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
	if v.Secret != nil {
		setDefaultMode(&v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if v.ConfigMap != nil {
		setDefaultMode(&v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if v.DownwardAPI != nil {
		setDefaultMode(&v.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range v.DownwardAPI.Items {
			setFieldRefDefaults(v.DownwardAPI.Items[i].FieldRef)
		}
	}
	if v.Projected != nil {
		setDefaultMode(&v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for _, source := range v.Projected.Sources {
			if source.DownwardAPI != nil {
				for i := range source.DownwardAPI.Items {
					setFieldRefDefaults(source.DownwardAPI.Items[i].FieldRef)
				}
			}
			if token := source.ServiceAccountToken; token != nil && token.ExpirationSeconds == nil {
				token.ExpirationSeconds = ptrTo(int64(defaultTokenExpirationSeconds))
			}
		}
	}
	if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
		spec := &v.Ephemeral.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
		roundUpToMilli(spec.Resources.Limits)
		roundUpToMilli(spec.Resources.Requests)
	}
	setLegacyVolumeDefaults(&v.VolumeSource)
}

// setLegacyVolumeDefaults fills in the defaults of the in-tree storage
// drivers that newer clusters no longer serve but the API still defaults.
func setLegacyVolumeDefaults(v *corev1.VolumeSource) {
	if v.ISCSI != nil && v.ISCSI.ISCSIInterface == "" {
		v.ISCSI.ISCSIInterface = defaultISCSIInterface
	}
	if v.RBD != nil {
		if v.RBD.RBDPool == "" {
			v.RBD.RBDPool = defaultRBDPool
		}
		if v.RBD.RadosUser == "" {
			v.RBD.RadosUser = defaultRBDUser
		}
		if v.RBD.Keyring == "" {
			v.RBD.Keyring = defaultRBDKeyring
		}
	}
	if d := v.AzureDisk; d != nil {
		if d.CachingMode == nil {
			d.CachingMode = ptrTo(corev1.AzureDataDiskCachingReadWrite)
		}
		if d.FSType == nil {
			d.FSType = ptrTo(defaultAzureDiskFSType)
		}
		if d.ReadOnly == nil {
			d.ReadOnly = ptrTo(false)
		}
		if d.Kind == nil {
			d.Kind = ptrTo(corev1.AzureSharedBlobDisk)
		}
	}
	if v.ScaleIO != nil {
		if v.ScaleIO.StorageMode == "" {
			v.ScaleIO.StorageMode = defaultScaleIOStorage
		}
		if v.ScaleIO.FSType == "" {
			v.ScaleIO.FSType = defaultScaleIOFSType
		}
	}
}

func setDefaultMode(mode **int32, value int32) {
	if *mode == nil {
		*mode = ptrTo(value)
	}
}

// roundUpToMilli rounds every quantity of list up to a whole milli-unit, as
// the API server does: 0.0001 CPU becomes 1m, 1.5m becomes 2m.
func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(milliScale)
		list[name] = q
	}
}

func ptrTo[T any](v T) *T {
	return &v
}
