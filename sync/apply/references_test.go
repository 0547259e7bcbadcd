package apply

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/sync/manifest"
)

func configMapKey(name string) manifest.Key {
	return manifest.Key{Kind: kindConfigMap, Namespace: "shop", Name: name}
}

func secretKey(name string) manifest.Key {
	return manifest.Key{Kind: kindSecret, Namespace: "shop", Name: name}
}

// TestPodReferences reads every way a pod spec names a ConfigMap or a
// Secret, in containers, init containers and ephemeral containers.
func TestPodReferences(t *testing.T) {
	cmRef := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	tests := []struct {
		name string
		spec corev1.PodSpec
		want []manifest.Key
	}{
		{
			name: "envFrom, ConfigMap and Secret",
			spec: corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("settings")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("creds")}},
			}}}},
			want: []manifest.Key{configMapKey("settings"), secretKey("creds")},
		},
		{
			name: "env valueFrom, ConfigMap and Secret keys; other sources are no reference",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("settings"), Key: "mode"}}},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("creds"), Key: "token"}}},
			}}}},
			want: []manifest.Key{configMapKey("settings"), secretKey("creds")},
		},
		{
			name: "volumes, ConfigMap and Secret; other volumes are no reference",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("settings")}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			}},
			want: []manifest.Key{configMapKey("settings"), secretKey("tls")},
		},
		{
			name: "projected volume sources",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("settings")}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("creds")}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				},
			}}}}},
			want: []manifest.Key{configMapKey("settings"), secretKey("creds")},
		},
		{
			name: "init containers",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{{
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("migrations")}}},
				Env:     []corev1.EnvVar{{Name: "DB", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("db"), Key: "url"}}}},
			}}},
			want: []manifest.Key{configMapKey("migrations"), secretKey("db")},
		},
		{
			name: "ephemeral containers",
			spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("debug")}}},
				Env:     []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("levels"), Key: "l"}}}},
			}}}},
			want: []manifest.Key{secretKey("debug"), configMapKey("levels")},
		},
		{
			name: "image pull secrets",
			spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{cmRef("registry")}},
			want: []manifest.Key{secretKey("registry")},
		},
		{
			name: "optional references count",
			spec: corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("extra"), Optional: new(true)}},
			}}}},
			want: []manifest.Key{configMapKey("extra")},
		},
		{
			name: "a name used many ways counts once; a ConfigMap and a Secret of one name are two",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("app")}}}}},
				Containers:     []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("app")}}}}},
				Volumes: []corev1.Volume{
					{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}}},
					{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "app"}}},
				},
			},
			want: []manifest.Key{configMapKey("app"), secretKey("app")},
		},
		{
			name: "nothing",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podReferences("shop", &tt.spec)
			if !slices.Equal(got, tt.want) {
				t.Errorf("podReferences = %v, want %v", got, tt.want)
			}
		})
	}
}

// usingConfig is the pod template of revision n of the web workload: image
// web:<n>, its settings from ConfigMap app-<n> (envFrom) and Secret
// creds-<n> (a projected volume).
func usingConfig(n int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", contract.LabelWorkload: "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: fmt.Sprintf("web:%d", n),
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("app-%d", n)}}}},
			}},
			Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("creds-%d", n)}}}},
			}}}},
		},
	}
}

// liveDeployment is Deployment name of the web workload running
// revision n's template (stamped as the controller writes it), with
// the given annotations (key, value pairs) besides revision n.
func liveDeployment(name string, n int, annotations ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name),
			Labels: map[string]string{contract.LabelWorkload: "web"},
			Annotations: map[string]string{
				contract.AnnotationRevision:     fmt.Sprint(n),
				contract.AnnotationTemplateHash: podtemplate.Hash(usingConfig(n)),
			}},
		Spec: appsv1.DeploymentSpec{Template: podtemplate.Stamp(usingConfig(n))},
	}
	for i := 0; i+1 < len(annotations); i += 2 {
		d.Annotations[annotations[i]] = annotations[i+1]
	}
	return d
}

// liveReplicaSet is d's ReplicaSet of revision n at Deployment controller
// revision n, with pods pods.
func liveReplicaSet(d *appsv1.Deployment, n int, pods int32) *appsv1.ReplicaSet {
	yes := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", d.Name, n), Namespace: d.Namespace,
			Annotations: map[string]string{strategies.AnnotationDeploymentRevision: fmt.Sprint(n)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name,
				UID: d.UID, Controller: &yes}},
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &pods, Template: podtemplate.Stamp(usingConfig(n))},
		Status: appsv1.ReplicaSetStatus{Replicas: pods},
	}
}

// TestReferrers decides which ConfigMaps and Secrets that left Git wait,
// and for whom, through a rolling workload's rollout, its failure and
// rollback, and blue-green and canary workloads.
func TestReferrers(t *testing.T) {
	// history is d's ReplicaSets of revisions 1, 2..., with pods[i] pods
	// at revision i+1.
	history := func(d *appsv1.Deployment, pods ...int32) []*appsv1.ReplicaSet {
		var out []*appsv1.ReplicaSet
		for i, n := range pods {
			out = append(out, liveReplicaSet(d, i+1, n))
		}
		return out
	}
	phase := contract.AnnotationPhase
	progressing3 := liveDeployment("web", 3, phase, contract.PhaseProgressing)
	healthy3 := liveDeployment("web", 3, phase, contract.PhaseHealthy)
	healthy2 := liveDeployment("web", 2, phase, contract.PhaseHealthy)
	// Revision 3 failed and revision 2's template was restored.
	rolledBack := liveDeployment("web", 2, phase, contract.PhaseDegraded, contract.AnnotationRevision, "3",
		contract.AnnotationTemplateHash, podtemplate.Hash(usingConfig(3)),
		contract.AnnotationFailedHash, podtemplate.Hash(usingConfig(3)))
	// Revision 3 failed; the rollback is not written yet.
	failing := liveDeployment("web", 3, phase, contract.PhaseDegraded,
		contract.AnnotationFailedHash, podtemplate.Hash(usingConfig(3)))
	// The color of a workload removed from Git, deleted before the prune.
	deleting := liveDeployment("web-green", 2, phase, contract.PhaseHealthy)
	deleting.DeletionTimestamp = &metav1.Time{}
	noAutoRollback := liveDeployment("web", 3, phase, contract.PhaseProgressing, contract.AnnotationAutoRollback, "false")
	blue := liveDeployment("web-blue", 2, phase, contract.PhaseProgressing, contract.AnnotationStrategy, contract.StrategyBlueGreen,
		contract.AnnotationRole, contract.RoleActive)
	green := liveDeployment("web-green", 3, phase, contract.PhaseProgressing, contract.AnnotationStrategy, contract.StrategyBlueGreen,
		contract.AnnotationRole, contract.RolePreview)
	stable := liveDeployment("web", 2, phase, contract.PhaseProgressing, contract.AnnotationStrategy, contract.StrategyCanary,
		contract.AnnotationRole, contract.RoleStable)
	canary := liveDeployment("web-canary", 3, phase, contract.PhaseProgressing, contract.AnnotationStrategy, contract.StrategyCanary,
		contract.AnnotationRole, contract.RoleCanary)

	// Revisions 1 and 2 left Git; revision 3's ConfigMap and Secret are in
	// Git, so never candidates.
	candidates := map[manifest.Key]bool{
		configMapKey("app-1"): true, secretKey("creds-1"): true,
		configMapKey("app-2"): true, secretKey("creds-2"): true,
	}
	ref := func(d string, revision int, phase string, via ...Via) Referrer {
		return Referrer{Deployment: d, Revision: fmt.Sprint(revision), Phase: phase, Via: via}
	}
	both := func(r ...Referrer) map[manifest.Key][]Referrer {
		return map[manifest.Key][]Referrer{configMapKey("app-2"): r, secretKey("creds-2"): r}
	}

	tests := []struct {
		name        string
		deployments []*appsv1.Deployment
		replicaSets []*appsv1.ReplicaSet
		leaving     []manifest.Key
		want        map[manifest.Key][]Referrer
	}{
		{
			name:        "the commit's sync, before the controller writes revision 3: the live template",
			deployments: []*appsv1.Deployment{healthy2},
			replicaSets: history(healthy2, 0, 4),
			want:        both(ref("web", 2, contract.PhaseHealthy, ViaTemplate)),
		},
		{
			name:        "revision 3 rolling out: old pods, and the rollback target",
			deployments: []*appsv1.Deployment{progressing3},
			replicaSets: history(progressing3, 0, 3, 2),
			want:        both(ref("web", 3, contract.PhaseProgressing, ViaOldPods, ViaRollback)),
		},
		{
			name:        "revision 3 not ready, old pods gone: the rollback target",
			deployments: []*appsv1.Deployment{progressing3},
			replicaSets: history(progressing3, 0, 0, 4),
			want:        both(ref("web", 3, contract.PhaseProgressing, ViaRollback)),
		},
		{
			name:        "revision 3 failed, rollback not written yet: the rollback target",
			deployments: []*appsv1.Deployment{failing},
			replicaSets: history(failing, 0, 0, 4),
			want:        both(ref("web", 3, contract.PhaseDegraded, ViaRollback)),
		},
		{
			name:        "rolled back to revision 2: its template; revision 1 is no rollback target",
			deployments: []*appsv1.Deployment{rolledBack},
			replicaSets: history(rolledBack, 0, 4, 0),
			want:        both(ref("web", 3, contract.PhaseDegraded, ViaTemplate)),
		},
		{
			name:        "revision 3 Healthy: nothing waits",
			deployments: []*appsv1.Deployment{healthy3},
			replicaSets: history(healthy3, 0, 0, 4),
			want:        map[manifest.Key][]Referrer{},
		},
		{
			name:        "auto-rollback off: only the old pods",
			deployments: []*appsv1.Deployment{noAutoRollback},
			replicaSets: []*appsv1.ReplicaSet{liveReplicaSet(noAutoRollback, 2, 1), liveReplicaSet(noAutoRollback, 3, 4)},
			want:        both(ref("web", 3, contract.PhaseProgressing, ViaOldPods)),
		},
		{
			name:        "ReplicaSets of another Deployment are not this one's",
			deployments: []*appsv1.Deployment{progressing3},
			replicaSets: []*appsv1.ReplicaSet{liveReplicaSet(liveDeployment("api", 2), 2, 3)},
			want:        map[manifest.Key][]Referrer{},
		},
		{
			name:        "blue-green: the color that served keeps its template",
			deployments: []*appsv1.Deployment{green, blue},
			replicaSets: []*appsv1.ReplicaSet{liveReplicaSet(blue, 1, 0), liveReplicaSet(blue, 2, 4), liveReplicaSet(green, 3, 4)},
			want:        both(ref("web-blue", 2, contract.PhaseProgressing, ViaTemplate)),
		},
		{
			name:        "canary: the stable Deployment keeps its template; its history is no rollback target",
			deployments: []*appsv1.Deployment{canary, stable},
			replicaSets: append(history(stable, 0, 4), liveReplicaSet(canary, 3, 1)),
			want:        both(ref("web", 2, contract.PhaseProgressing, ViaTemplate)),
		},
		{
			name:        "two Deployments refer: both named, by name",
			deployments: []*appsv1.Deployment{healthy2, liveDeployment("api", 2, phase, contract.PhaseHealthy)},
			want:        both(ref("api", 2, contract.PhaseHealthy, ViaTemplate), ref("web", 2, contract.PhaseHealthy, ViaTemplate)),
		},
		{
			name:        "a Deployment being deleted refers to nothing",
			deployments: []*appsv1.Deployment{deleting},
			want:        map[manifest.Key][]Referrer{},
		},
		{
			name:        "a Deployment the same prune deletes refers to nothing",
			deployments: []*appsv1.Deployment{healthy2},
			leaving:     []manifest.Key{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
			want:        map[manifest.Key][]Referrer{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaving := map[manifest.Key]bool{}
			for _, k := range tt.leaving {
				leaving[k] = true
			}
			got := referrers(candidates, tt.deployments, tt.replicaSets, leaving)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("referrers =\n %v\nwant\n %v", got, tt.want)
			}
		})
	}
}

// TestWaitingString is the status line's description of one wait.
func TestWaitingString(t *testing.T) {
	w := Waiting{Key: configMapKey("app-config-5g2h7"), Referrers: []Referrer{
		{Deployment: "web", Revision: "3", Phase: contract.PhaseProgressing, Via: []Via{ViaOldPods, ViaRollback}},
		{Deployment: "api", Via: []Via{ViaTemplate}},
	}}
	want := "ConfigMap shop/app-config-5g2h7 (referenced by Deployment web, revision 3 Progressing; old pods, rollback target" +
		" and by Deployment api; template)"
	if got := w.String(); got != want {
		t.Errorf("Waiting.String() =\n %s\nwant\n %s", got, want)
	}
}
