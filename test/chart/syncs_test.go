//go:build e2e

package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestChartSyncs: with syncs.enabled the replicas share the syncs (no
// leader election, a rolling update), the daemon takes declarations from
// the release namespace, and the chart's own declared syncs are rendered
// as declarations.
func TestChartSyncs(t *testing.T) {
	objs := render(t, "syncs.enabled=true", "replicas=3", "syncs.workers=8",
		"syncs.declared.team-a.repository=https://git.example/team-a.git", "syncs.declared.team-a.serviceAccount=team-a/deployer")
	d := deployment(t, objs)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--syncs-namespace=plimsoll-system", "--sync-workers=8"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %q", args, want)
		}
	}
	if slices.Contains(args, "--leader-elect") || d.Spec.Replicas != 3 || d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("3 replicas sharing syncs: args %v, replicas %d, strategy %q; want no --leader-elect and a rolling update",
			args, d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	declared := false
	for _, o := range objs {
		declared = declared || (o.Kind == "ConfigMap" && o.Metadata.Name == "team-a" && o.Metadata.Namespace == "plimsoll-system")
	}
	if !declared {
		t.Error("syncs.declared.team-a rendered no declaration team-a in the release namespace")
	}
	out, err := kit.Helm(t, "template", "plimsoll", "charts/plimsoll", "--set", "repo.url="+repoURL,
		"--set", "syncs.declared.team-a.repository=https://git.example/a.git", "--set", "syncs.declared.team-a.serviceAccount=team-a/deployer")
	if err == nil || !strings.Contains(err.Error(), "syncs.enabled is false") {
		t.Errorf("declared syncs without syncs.enabled: err %v, output %q", err, out)
	}
}

// TestChartImpersonation applies the RBAC the chart renders with
// syncs.enabled to the local control plane and asks the API server what
// the daemon's ServiceAccount may do: impersonate the ServiceAccounts of
// syncs.serviceAccounts, and no other ServiceAccount, user or group; and
// still write everywhere, as without syncs.
func TestChartImpersonation(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(kit.Root(t), ".cluster", "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	home, teamA, teamB := kit.NewNamespace(t, client, "chart-home"), kit.NewNamespace(t, client, "chart-a"), kit.NewNamespace(t, client, "chart-b")
	release := "imp-" + home[strings.LastIndex(home, "-")+1:]
	rendered, err := kit.Helm(t, "template", release, "charts/plimsoll", "--namespace", home, "--set", "repo.url="+repoURL,
		"--set", "syncs.enabled=true", "--set", "syncs.serviceAccounts={"+teamA+"/deployer}", "--show-only", "templates/rbac.yaml",
		"--show-only", "templates/serviceaccount.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(kit.Root(t), ".cluster", "bin", "kubectl"), append([]string{"--kubeconfig",
			filepath.Join(kit.Root(t), ".cluster", "kubeconfig")}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = os.Environ()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl(rendered, "apply", "-f", "-")
	t.Cleanup(func() {
		kubectl("", "delete", "--ignore-not-found", "clusterrole/"+release+"-plimsoll", "clusterrolebinding/"+release+"-plimsoll")
	})
	daemon := "system:serviceaccount:" + home + ":" + release + "-plimsoll"
	for _, tc := range []struct {
		what  string
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{"impersonate the declared identity", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: teamA, Name: "deployer"}, true},
		{"impersonate another ServiceAccount of its namespace", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: teamA, Name: "default"}, false},
		{"impersonate the same name elsewhere", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: teamB, Name: "deployer"}, false},
		{"impersonate kube-system's admin", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "kube-system", Name: "default"}, false},
		{"impersonate a user", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: "admin"}, false},
		{"impersonate a group", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: "system:masters"}, false},
		{"write anywhere, as the sync of the flags", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: teamB}, true},
		{"delete anywhere, to prune", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "configmaps", Namespace: teamB}, true},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: daemon,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + home, "system:authenticated"}, ResourceAttributes: &tc.attrs}}
		got, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.want {
			t.Errorf("may the daemon %s? %v, want %v (%s)", tc.what, got.Status.Allowed, tc.want, got.Status.Reason)
		}
	}
}
