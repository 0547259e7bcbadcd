//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// installChart renders charts/plimsoll into namespace ns with the given
// --set values and applies what it renders but the daemon's Deployment
// and Service: the ServiceAccount and its rights. It returns a kubeconfig
// that acts as that ServiceAccount, for a daemon run out of the cluster
// with exactly the chart's rights, and the flags of the rendered daemon
// that limit it to namespaces.
func installChart(t *testing.T, ns string, sets ...string) (kubeconfig string, limits []string) {
	t.Helper()
	var keep []string
	for _, doc := range strings.Split(renderChart(t, ns, sets...), "\n---") {
		if strings.Contains(doc, "\nkind: Deployment") {
			for _, line := range strings.Split(doc, "\n") {
				if arg, ok := strings.CutPrefix(strings.TrimSpace(line), "- --watch-namespace="); ok {
					limits = append(limits, "--watch-namespace="+arg)
				}
			}
			continue
		}
		if strings.Contains(doc, "\nkind: Service\n") {
			continue
		}
		keep = append(keep, doc)
	}
	manifest := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(keep, "\n---")), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", manifest)
	t.Cleanup(func() {
		_ = exec.Command(suite.kubectl, "--kubeconfig", suite.kubeconfig, "delete", "--ignore-not-found", "-f", manifest).Run()
	})

	// The admin's kubeconfig, impersonating the chart's ServiceAccount.
	admin, err := os.ReadFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa := "system:serviceaccount:" + ns + ":plimsoll"
	impersonating := strings.Replace(string(admin), "  user:\n", "  user:\n    as: "+sa+"\n    as-groups:\n    - system:serviceaccounts\n    - system:serviceaccounts:"+ns+"\n    - system:authenticated\n", 1)
	if impersonating == string(admin) {
		t.Fatalf("could not add impersonation to the kubeconfig:\n%s", admin)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(impersonating), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, limits
}

// renderChart renders charts/plimsoll into namespace ns with the given
// --set values, with the helm hack/cluster builds.
func renderChart(t *testing.T, ns string, sets ...string) string {
	t.Helper()
	args := []string{"template", "plimsoll", filepath.Join(suite.root, "charts", "plimsoll"), "--namespace", ns,
		"--set", "repo.url=file:///unused"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := kit.Helm(t, append(args, "--kubeconfig", suite.kubeconfig)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChartObjectsValid sends every object the chart renders, in both
// modes and with the options that need no CRD, to the API server as a
// server-side dry-run with strict field validation: a misspelled or
// misplaced field fails here, not at install time.
func TestChartObjectsValid(t *testing.T) {
	home, team := kit.NewNamespace(t, suite.client, ""), kit.NewNamespace(t, suite.client, "")
	for name, sets := range map[string][]string{
		"default":    nil,
		"namespaced": {"rbac.namespaced=true", "rbac.namespaces={" + team + "}"},
		"options": {"replicas=2", "windows={deny 0 22 * * 5 62h}", "git.existingSecret=git", "git.tokenKey=token",
			"webhook.existingSecret=hook", "resources.limits.memory=256Mi"},
	} {
		t.Run(name, func(t *testing.T) {
			manifest := filepath.Join(t.TempDir(), "chart.yaml")
			if err := os.WriteFile(manifest, []byte(renderChart(t, home, sets...)), 0o600); err != nil {
				t.Fatal(err)
			}
			out := kubectl(t, "apply", "--dry-run=server", "--validate=strict", "-f", manifest)
			t.Logf("%s", out)
			if !strings.Contains(out, "deployment.apps/plimsoll created (server dry run)") {
				t.Errorf("the daemon's Deployment was not accepted:\n%s", out)
			}
		})
	}
}

// TestChartRights runs the daemon with exactly the rights and the
// namespace flags the chart gives it. Cluster-wide: a full sync of a
// rolling and a canary workload, and a canary rollout, succeed. Namespaced
// to one namespace: the daemon cannot even list pods elsewhere, the same
// sync and rollout succeed there, and a commit that adds an object for
// another namespace and a cluster-scoped one is refused naming both files,
// while what runs keeps running.
func TestChartRights(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaced bool
	}{
		{"cluster-wide", false},
		{"namespaced", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			home := kit.NewNamespace(t, suite.client, "") // the daemon's own namespace: its status, its Lease
			sets := []string{}
			if tc.namespaced {
				sets = append(sets, "rbac.namespaced=true", "rbac.namespaces={"+s.ns+"}")
			}
			kubeconfig, limits := installChart(t, home, sets...)
			s.kubeconfig, s.statusNS = kubeconfig, home
			if want := tc.namespaced; (len(limits) > 0) != want {
				t.Fatalf("the chart's daemon flags limiting namespaces: %v, want some: %v", limits, want)
			}
			if tc.namespaced {
				cantListPodsEverywhere(t, kubeconfig)
			}
			files := mergeFiles(inDir("web", example(t, "rolling")), inDir("api", example(t, "canary",
				`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, 100%"`)))
			first := s.repo.Commit("web and api", files)
			kit.StartDaemon(t, s, append(limits, "--interval", "1s")...)
			waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
			waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
			s.waitForCommit(t, first)

			s.repo.Commit("api v2", mergeFiles(files, inDir("api", example(t, "canary",
				`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, 100%"`,
				"registry.example/api:v1", "registry.example/api:v2"))))
			waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
			checkPods(t, s.ns, "app=api", 4, "registry.example/api:v2")
			if !tc.namespaced {
				return
			}

			other := kit.NewNamespace(t, suite.client, "")
			bad := s.repo.Commit("a ConfigMap elsewhere and a Namespace", mergeFiles(files, map[string]string{
				"elsewhere.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: " + other + "\ndata:\n  k: v\n",
				"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + other + "-new\n",
			}))
			waitFor(t, "the commit to be refused", func(ctx context.Context) (bool, error) {
				st := s.status(t)
				return st["plimsoll.dev/fetched-commit"] == bad && st["plimsoll.dev/sync-status"] == "Failed", nil
			})
			msg := s.status(t)["plimsoll.dev/message"]
			t.Logf("status message: %s", msg)
			for _, want := range []string{
				`elsewhere.yaml, document 1: field metadata.namespace: "` + other + `" is not among the namespaces this daemon may write in (` + s.ns + `)`,
				"namespace.yaml, document 1: field kind: Namespace is cluster-scoped",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("status message %q does not say %q", msg, want)
				}
			}
			if _, err := suite.client.CoreV1().ConfigMaps(other).Get(context.Background(), "elsewhere", metav1.GetOptions{}); err == nil {
				t.Error("the ConfigMap for the other namespace was created")
			}
			if _, err := suite.client.CoreV1().Namespaces().Get(context.Background(), other+"-new", metav1.GetOptions{}); err == nil {
				t.Error("the Namespace was created")
			}
			checkPods(t, s.ns, "app=api", 4, "registry.example/api:v2")
			checkPods(t, s.ns, "app=web", 4, "registry.example/web:v1")
		})
	}
}

// cantListPodsEverywhere checks that kubeconfig's user may not list pods
// across namespaces: namespaced mode grants nothing cluster-wide.
func cantListPodsEverywhere(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{Limit: 1})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list pods in every namespace as the chart's ServiceAccount: %v, want forbidden", err)
	}
}

// TestChartImpersonation applies the RBAC the chart renders with
// syncs.enabled to the local control plane and asks the API server what
// the daemon's ServiceAccount may do: impersonate the ServiceAccounts of
// syncs.serviceAccounts, and no other ServiceAccount, user or group; and
// still write everywhere, as without syncs.
func TestChartImpersonation(t *testing.T) {
	parallel(t)
	client := suite.client
	home, teamA, teamB := kit.NewNamespace(t, client, "chart-home"), kit.NewNamespace(t, client, "chart-a"), kit.NewNamespace(t, client, "chart-b")
	release := "imp-" + home[strings.LastIndex(home, "-")+1:]
	rendered, err := kit.Helm(t, "template", release, filepath.Join(suite.root, "charts", "plimsoll"), "--namespace", home,
		"--set", "repo.url=file:///unused", "--set", "syncs.enabled=true", "--set", "syncs.serviceAccounts={"+teamA+"/deployer}",
		"--show-only", "templates/rbac.yaml", "--show-only", "templates/serviceaccount.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runKubectl(rendered, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = runKubectl("", "delete", "--ignore-not-found", "clusterrole/"+release+"-plimsoll", "clusterrolebinding/"+release+"-plimsoll")
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
