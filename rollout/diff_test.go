package rollout

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// diffGit is a Git Deployment web of 4 replicas running image, with
// annotations.
func diffGit(image string, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(4)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

// diffLive is git as the controller left it at revision 1, Healthy, under
// name with role and template labels extra, run by an HPA at 6 replicas,
// with minReadySeconds 30 that Git has dropped since, status st and the
// Deployment controller's revision.
func diffLive(git *appsv1.Deployment, name, role string, extra map[string]string, st strategies.Status) *appsv1.Deployment {
	live := rollingObject(git, st.Annotations())
	live.Name, live.ResourceVersion = name, "42"
	live.Annotations[contract.AnnotationRole] = role
	live.Annotations[AnnotationChangeCause] = "feedfac v1"
	live.Annotations["deployment.kubernetes.io/revision"] = "1"
	live.Spec.MinReadySeconds = 30
	live.Spec.Replicas = new(int32(6))
	t := *git.Spec.Template.DeepCopy()
	for k, v := range extra {
		setLabel(&t.ObjectMeta, k, v)
	}
	live.Spec.Template = strategies.WorkloadTemplate(t, git.Name)
	return live
}

// setByHand changes d's template as `kubectl set image` does: the image,
// not the stamp.
func setByHand(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Containers[0].Image = "web:hotfix"
	return d
}

// TestDiffWrite: what diff dry-runs for each strategy is the write the
// controller would make once the rollout went through: Git's fields (a
// dropped one gone), the live status and the Deployment controller's
// annotation kept (an apply leaves it alone, an update carries it), Git's
// template with the commit as its cause unless Git's runs already or is
// the failed-hash, Git's template over one changed by hand or undone (as
// the same revision), and the HPA's count when one scales it.
func TestDiffWrite(t *testing.T) {
	const cause = "0123456 v2"
	rolling, canary := map[string]string(nil), map[string]string{contract.AnnotationStrategy: contract.StrategyCanary}
	blueGreen := map[string]string{contract.AnnotationStrategy: contract.StrategyBlueGreen}
	v1 := diffGit("web:v1", nil).Spec.Template
	healthy := strategies.Status{Phase: strategies.PhaseHealthy, Revision: 1, Hash: podtemplate.Hash(v1),
		StableHash: podtemplate.Hash(v1), Commit: "feedface", Message: "revision 1 is Healthy"}
	failed := healthy
	failed.Phase, failed.FailedHash = strategies.PhaseDegraded, podtemplate.Hash(diffGit("web:v2", nil).Spec.Template)
	kept := map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationKubectlEdits: contract.KubectlEditsKept}
	serving := map[string]string{contract.LabelServing: "true"}
	green := map[string]string{contract.LabelColor: "green"}

	tests := []struct {
		name        string
		annotations map[string]string
		image       string // Git's
		live        func(git *appsv1.Deployment) *appsv1.Deployment
		scaled      bool
		replace     bool
		wantImage   string
		wantCause   string
		wantLabel   map[string]string // on the template
		wantReplica int32
	}{
		{name: "rolling, Git's template runs", annotations: rolling, image: "web:v1",
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(g, "web", contract.RolePrimary, nil, healthy)
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantReplica: 4},
		{name: "rolling, a new template", annotations: rolling, image: "web:v2",
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(diffGit("web:v1", nil), "web", contract.RolePrimary, nil, healthy)
			},
			wantImage: "web:v2", wantCause: cause, wantReplica: 4},
		{name: "rolling, Git's template failed", annotations: rolling, image: "web:v2",
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(diffGit("web:v1", nil), "web", contract.RolePrimary, nil, failed)
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantReplica: 4},
		{name: "rolling, autoscaled", annotations: rolling, image: "web:v1", scaled: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(g, "web", contract.RolePrimary, nil, healthy)
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantReplica: 6},
		{name: "canary, Git's template runs", annotations: canary, image: "web:v1", replace: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(g, "web", contract.RoleStable, serving, healthy)
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantLabel: serving, wantReplica: 4},
		{name: "canary, a new template", annotations: canary, image: "web:v2", replace: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(diffGit("web:v1", canary), "web", contract.RoleStable, serving, healthy)
			},
			wantImage: "web:v2", wantCause: cause, wantLabel: serving, wantReplica: 4},
		{name: "canary, Git's template rolling out", annotations: canary, image: "web:v2", replace: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				progressing := healthy
				progressing.Phase, progressing.Revision, progressing.Hash = strategies.PhaseProgressing, 2, podtemplate.Hash(g.Spec.Template)
				return diffLive(diffGit("web:v1", canary), "web", contract.RoleStable, serving, progressing)
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantLabel: serving, wantReplica: 4},
		{name: "rolling, Git's template changed by hand", annotations: rolling, image: "web:v1",
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return setByHand(diffLive(g, "web", contract.RolePrimary, nil, healthy))
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantReplica: 4},
		{name: "rolling, Git's template undone by hand", annotations: rolling, image: "web:v2",
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				// `kubectl rollout undo` put v1's template back under
				// revision 2's status (read from its ReplicaSet).
				undone := healthy
				undone.Revision, undone.Hash = 2, podtemplate.Hash(g.Spec.Template)
				return diffLive(diffGit("web:v1", nil), "web", contract.RolePrimary, nil, undone)
			},
			wantImage: "web:v2", wantCause: "feedfac v1", wantReplica: 4},
		{name: "canary, Git's template changed by hand", annotations: canary, image: "web:v1", replace: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return setByHand(diffLive(g, "web", contract.RoleStable, serving, healthy))
			},
			wantImage: "web:v1", wantCause: "feedfac v1", wantLabel: serving, wantReplica: 4},
		{name: "canary, changed by hand and kept", annotations: kept, image: "web:v1", replace: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return setByHand(diffLive(g, "web", contract.RoleStable, serving, healthy))
			},
			wantImage: "web:hotfix", wantCause: "feedfac v1", wantLabel: serving, wantReplica: 4},
		{name: "blue-green, a new template", annotations: blueGreen, image: "web:v2", replace: true, scaled: true,
			live: func(g *appsv1.Deployment) *appsv1.Deployment {
				return diffLive(diffGit("web:v1", blueGreen), "web-green", contract.RoleActive, green, healthy)
			},
			wantImage: "web:v2", wantCause: cause, wantLabel: green, wantReplica: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := diffGit(tt.image, tt.annotations)
			live := tt.live(git)
			got, replace, err := diffWrite(git, live, tt.scaled, cause, time.Now())
			if err != nil {
				t.Fatalf("diffWrite: %v", err)
			}
			if replace != tt.replace {
				t.Errorf("replace %v, want %v", replace, tt.replace)
			}
			if got.Name != live.Name {
				t.Errorf("writes %s, want the serving %s", got.Name, live.Name)
			}
			if got.Spec.MinReadySeconds != 0 {
				t.Errorf("minReadySeconds %d, want Git's 0: a field Git dropped is not kept", got.Spec.MinReadySeconds)
			}
			if *got.Spec.Replicas != tt.wantReplica {
				t.Errorf("replicas %d, want %d", *got.Spec.Replicas, tt.wantReplica)
			}
			st, _ := strategies.ReadStatus(live.Annotations)
			for k, v := range st.Annotations() {
				if got.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want the live %q", k, got.Annotations[k], v)
				}
			}
			if got.Annotations[contract.AnnotationRole] != live.Annotations[contract.AnnotationRole] || got.Labels[contract.LabelWorkload] != "web" {
				t.Errorf("role %q, workload label %q: want the live %q and web",
					got.Annotations[contract.AnnotationRole], got.Labels[contract.LabelWorkload], live.Annotations[contract.AnnotationRole])
			}
			if _, ok := got.Annotations["deployment.kubernetes.io/revision"]; ok != tt.replace {
				t.Errorf("the Deployment controller's annotation in the write: %v, want %v (an update carries it, an apply leaves it)", ok, tt.replace)
			}
			if got.Annotations[AnnotationChangeCause] != tt.wantCause {
				t.Errorf("change cause %q, want %q", got.Annotations[AnnotationChangeCause], tt.wantCause)
			}
			if image := got.Spec.Template.Spec.Containers[0].Image; image != tt.wantImage {
				t.Errorf("image %q, want %q", image, tt.wantImage)
			}
			for k, v := range tt.wantLabel {
				if got.Spec.Template.Labels[k] != v {
					t.Errorf("template label %s = %q, want %q", k, got.Spec.Template.Labels[k], v)
				}
			}
			if got.Spec.Template.Annotations[contract.AnnotationTemplateHash] == "" {
				t.Error("the template carries no stamp")
			}
			if tt.replace && (got.ManagedFields != nil || got.ResourceVersion != "42") {
				t.Errorf("update with managedFields %v, resourceVersion %q: want none, and the live one", got.ManagedFields, got.ResourceVersion)
			}
			if !tt.replace && got.ResourceVersion != "" {
				t.Errorf("apply with resourceVersion %q, want none", got.ResourceVersion)
			}
		})
	}
}

// TestServingAs: diff compares a rolling workload with its primary, a
// canary with its stable Deployment and blue-green with the active color;
// a Deployment of another role, or none, is nothing to compare with.
func TestServingAs(t *testing.T) {
	deployment := func(name, role string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team",
			Annotations: map[string]string{contract.AnnotationRole: role}}}
	}
	c := New(Config{Client: fake.NewClientset(deployment("web", contract.RolePrimary), deployment("api", contract.RoleStable),
		deployment("api-canary", contract.RoleCanary), deployment("shop-blue", contract.RoleIdle), deployment("shop-green", contract.RoleActive),
		deployment("new-canary", contract.RoleCanary))})
	tests := []struct{ git, strategy, want string }{
		{"web", contract.StrategyRolling, "web"},
		{"api", contract.StrategyCanary, "api"},
		{"shop", contract.StrategyBlueGreen, "shop-green"},
		{"api", contract.StrategyRolling, ""}, // a switch from canary
		{"web", contract.StrategyBlueGreen, ""},
		{"new", contract.StrategyCanary, ""},
		{"gone", contract.StrategyRolling, ""},
	}
	for _, tt := range tests {
		got, err := c.servingAs(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: tt.git, Namespace: "team"}}, tt.strategy)
		if err != nil {
			t.Fatalf("servingAs(%s, %s): %v", tt.git, tt.strategy, err)
		}
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tt.want {
			t.Errorf("servingAs(%s, %s) = %q, want %q", tt.git, tt.strategy, name, tt.want)
		}
	}
}

// TestServingDeployment: a workload is served by the Deployment
// workloads.Serving names (a blue-green one's active color, under the
// workload's name, without the color in its selector and template
// labels, also while blue-green's idle legacy namesake is left), else by
// a namesake no strategy rolled.
func TestServingDeployment(t *testing.T) {
	color := func(name, role string) *appsv1.Deployment {
		d := diffLive(diffGit("web:v1", nil), name, role, map[string]string{contract.LabelColor: "green"}, strategies.Status{})
		d.Spec.Selector.MatchLabels[contract.LabelColor] = "green"
		return d
	}
	c := New(Config{Client: fake.NewClientset(diffLive(diffGit("web:v1", nil), "web", contract.RolePrimary, nil, strategies.Status{}),
		color("shop-blue", contract.RoleIdle), color("shop-green", contract.RoleActive), color("lone-blue", contract.RoleIdle),
		diffLive(diffGit("web:v1", nil), "cart", contract.RoleIdle, nil, strategies.Status{}), color("cart-green", contract.RoleActive),
		diffLive(diffGit("web:v1", nil), "plain", "", nil, strategies.Status{}))})
	for _, tt := range []struct{ name, want, from string }{{"web", "web", "web"}, {"shop", "shop", "shop-green"}, {"lone", "", ""},
		{"gone", "", ""}, {"cart", "cart", "cart-green"}, {"plain", "plain", "plain"}} {
		got, err := c.ServingDeployment(context.Background(), "team", tt.name)
		if err != nil {
			t.Fatalf("ServingDeployment(%s): %v", tt.name, err)
		}
		if tt.want == "" {
			if got != nil {
				t.Errorf("ServingDeployment(%s) = %s, want none", tt.name, got.Name)
			}
			continue
		}
		if got == nil || got.Name != tt.want || got.Annotations[contract.AnnotationRole] != roleOf(tt.from) {
			t.Fatalf("ServingDeployment(%s) = %v, want %s as %s", tt.name, got, tt.from, tt.want)
		}
		if got.Spec.Selector.MatchLabels[contract.LabelColor] != "" || got.Spec.Template.Labels[contract.LabelColor] != "" {
			t.Errorf("ServingDeployment(%s) keeps the color in selector %v or template labels %v",
				tt.name, got.Spec.Selector.MatchLabels, got.Spec.Template.Labels)
		}
	}
}

// roleOf is the role TestServingDeployment gives Deployment name.
func roleOf(name string) string {
	switch {
	case strings.HasSuffix(name, contract.SuffixGreen):
		return contract.RoleActive
	case name == "plain":
		return ""
	}
	return contract.RolePrimary
}

// TestDiffWriteDropsWhatGitDropped: a label and an annotation the
// controller wrote from Git and Git no longer sets are not in the write
// diff dry-runs, as they are not in the controller's; one kubectl set
// stays.
func TestDiffWriteDropsWhatGitDropped(t *testing.T) {
	canary := map[string]string{contract.AnnotationStrategy: contract.StrategyCanary}
	before := diffGit("web:v1", map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, "owner": "alice"})
	before.Labels = map[string]string{"app": "web", "team": "payments"}
	live := diffLive(before, "web", contract.RoleStable, map[string]string{contract.LabelServing: "true"}, strategies.Status{Revision: 1, Hash: "abc", Phase: strategies.PhaseHealthy})
	live.Labels["by-hand"] = "yes"
	live.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{},"f:team":{}},"f:annotations":{"f:owner":{}}}}`)}},
		{Manager: "kubectl-label", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`)}},
	}
	git := diffGit("web:v1", canary)
	git.Labels = map[string]string{"app": "web"}
	got, _, err := diffWrite(git, live, false, "0123456 v2", time.Now())
	if err != nil {
		t.Fatalf("diffWrite: %v", err)
	}
	if _, ok := got.Labels["team"]; ok {
		t.Errorf("labels %v, want team gone with Git", got.Labels)
	}
	if _, ok := got.Annotations["owner"]; ok {
		t.Errorf("annotation owner=%q, want it gone with Git", got.Annotations["owner"])
	}
	if got.Labels["app"] != "web" || got.Labels["by-hand"] != "yes" {
		t.Errorf("labels %v, want Git's app and kubectl's by-hand kept", got.Labels)
	}
}
