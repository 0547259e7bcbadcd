//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// platform is the home of a daemon of many syncs: its namespace (the
// records, the declarations and the Leases), the root repository that
// declares the syncs, and the daemon's identity: a ServiceAccount that may
// do everything but impersonate, and may impersonate only the deployer of
// each team.
type platform struct {
	home       string
	root       *testgit.Repo
	kubeconfig string
	cacheDir   string
}

// newPlatform makes a platform: its namespace, root repository and
// identity.
func newPlatform(t *testing.T) *platform {
	t.Helper()
	p := &platform{home: kit.NewNamespace(t, suite.client, "syncs"), root: testgit.New(t), cacheDir: t.TempDir()}
	role := "plimsoll-e2e-" + p.home
	kubectlApply(t, p.home, map[string]string{"rbac.yaml": fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: plimsoll, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[2]s}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects: [{kind: ServiceAccount, name: plimsoll, namespace: %[1]s}]
`, p.home, role)})
	t.Cleanup(func() {
		kubectl(t, "delete", "--ignore-not-found", "clusterrolebinding/"+role, "clusterrole/"+role)
	})
	p.kubeconfig = tokenKubeconfig(t, p.home, "plimsoll", "")
	return p
}

// tokenKubeconfig is the admin kubeconfig with the credentials of
// ServiceAccount ns/name, and namespace contextNS in its contexts when
// it is not "".
func tokenKubeconfig(t *testing.T, ns, name, contextNS string) string {
	t.Helper()
	token := strings.TrimSpace(kubectl(t, "-n", ns, "create", "token", name, "--duration=1h"))
	cfg, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		user.Token, user.TokenFile = token, ""
		user.ClientCertificate, user.ClientCertificateData, user.ClientKey, user.ClientKeyData = "", nil, "", nil
	}
	for _, c := range cfg.Contexts {
		if contextNS != "" {
			c.Namespace = contextNS
		}
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// team makes the namespace of a team and its ServiceAccount deployer,
// which may do anything in that namespace and nothing elsewhere; the
// platform's daemon may impersonate it.
func (p *platform) team(t *testing.T, name string) string {
	t.Helper()
	return p.teamWith(t, name, func(ns string) string {
		return teamAccount(ns) + fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: %s}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
`, ns)
	})
}

// teamWith makes the namespace of a team, its ServiceAccount deployer
// and its rights, as rights(namespace) says (the ServiceAccount
// included); the platform's daemon may impersonate deployer.
func (p *platform) teamWith(t *testing.T, name string, rights func(ns string) string) string {
	t.Helper()
	ns := kit.NewNamespace(t, suite.client, name)
	kubectlApply(t, ns, map[string]string{"team.yaml": rights(ns) + fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: plimsoll-impersonates, namespace: %[1]s}
rules:
- apiGroups: [""]
  resources: [serviceaccounts]
  resourceNames: [deployer]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: plimsoll-impersonates, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: plimsoll-impersonates}
subjects: [{kind: ServiceAccount, name: plimsoll, namespace: %[2]s}]
`, ns, p.home)})
	return ns
}

// sync is the name of the platform's sync called name: the suffix of its
// namespace keeps the syncs of tests that run at once apart (a sync's
// objects are found by its name, cluster-wide).
func (p *platform) sync(name string) string {
	return name + "-" + p.home[strings.LastIndex(p.home, "-")+1:]
}

// declaration is the document of a ConfigMap in the platform's namespace
// declaring the platform's sync name (see sync) with body, the fields of
// its sync.yaml.
func (p *platform) declaration(name, body string) string {
	name = p.sync(name)
	return kit.SyncDeclaration(name, p.home, body)
}

// RunFlags runs the platform's daemon: the root sync of its repository,
// declarations taken from its namespace, as its ServiceAccount.
func (p *platform) RunFlags(extra ...string) (string, []string) {
	return suite.plimsoll, append([]string{
		"--repo", p.root.URL(), "--kubeconfig", p.kubeconfig, "--namespace", p.home, "--status-namespace", p.home,
		"--sync-name", p.home, "--cache-dir", p.cacheDir, "--syncs-namespace", p.home, "--interval", "2s", "--ui-listen", "",
	}, extra...)
}

// record returns the annotations of the platform's sync name's record
// (the root's for "root"); nil when it does not exist.
func (p *platform) record(t *testing.T, name string) map[string]string {
	t.Helper()
	if name == "root" {
		name = p.home
	} else {
		name = p.sync(name)
	}
	cm, err := suite.client.CoreV1().ConfigMaps(p.home).Get(context.Background(), "plimsoll-sync-"+name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations == nil {
		return map[string]string{}
	}
	return cm.Annotations
}

// waitForSynced waits until sync name has applied commit.
func (p *platform) waitForSynced(t *testing.T, name, commit string) {
	t.Helper()
	waitFor(t, "sync "+name+" to apply "+commit[:7], func(context.Context) (bool, error) {
		r := p.record(t, name)
		return r["plimsoll.dev/sync-status"] == "Synced" && r["plimsoll.dev/commit"] == commit, nil
	})
}

// waitForRefused waits until sync name's record says commit failed, and
// returns its message.
func (p *platform) waitForRefused(t *testing.T, name, commit string) string {
	t.Helper()
	var msg string
	waitFor(t, "sync "+name+" to refuse "+commit[:7], func(context.Context) (bool, error) {
		r := p.record(t, name)
		msg = r["plimsoll.dev/message"]
		return r["plimsoll.dev/sync-status"] == "Failed" && strings.Contains(msg, "commit "+commit[:7]+" not applied"), nil
	})
	return msg
}

// configMapOf reads ConfigMap ns/name; nil when it does not exist.
func configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// configMapDoc is ConfigMap name in ns holding key=value.
func configMapDoc(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {value: %q}\n", name, ns, value)
}

// TestDeclaredSyncs: a root sync whose Git tree declares three syncs, two
// paths of one repository and a second repository, each applying into
// its own namespace as its own ServiceAccount. A sync that tries to write
// into another team's namespace is refused, and nothing of that commit is
// applied; a sync removed from Git is retired: what it applied is pruned
// (or left, with prune off) and its record goes.
func TestDeclaredSyncs(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	a, b, c := p.team(t, "team-a"), p.team(t, "team-b"), p.team(t, "team-c")
	apps, other := testgit.New(t), testgit.New(t)
	apps.Commit("teams a and b", map[string]string{
		"a/config.yaml": configMapDoc(a, "a-config", "one"),
		"b/config.yaml": configMapDoc(b, "b-config", "one"),
	})
	other.Commit("team c", map[string]string{"config.yaml": configMapDoc(c, "c-config", "one")})
	decl := func(name, repo, path, ns string, extra string) string {
		return p.declaration(name, fmt.Sprintf("repository: %s\npath: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n%s",
			repo, path, ns, ns, extra))
	}
	declarations := map[string]string{
		"teams/a.yaml": decl("team-a", apps.URL(), "a", a, ""),
		"teams/b.yaml": decl("team-b", apps.URL(), "b", b, "prune: false\n"),
		"teams/c.yaml": decl("team-c", other.URL(), ".", c, ""),
	}
	rootHead := p.root.Commit("three teams", declarations)
	d := kit.StartDaemon(t, p)
	p.waitForSynced(t, "root", rootHead)
	appsHead := apps.Head()
	p.waitForSynced(t, "team-a", appsHead)
	p.waitForSynced(t, "team-b", appsHead)
	p.waitForSynced(t, "team-c", other.Head())
	for ns, name := range map[string]string{a: "a-config", b: "b-config", c: "c-config"} {
		if got := configMapData(t, ns, name)["value"]; got != "one" {
			t.Errorf("ConfigMap %s/%s holds %q, want one", ns, name, got)
		}
	}
	host, _ := os.Hostname()
	replica := fmt.Sprintf("%s_%d", strings.ReplaceAll(host, "_", "-"), d.Cmd.Process.Pid)
	table, code := runPlimsoll(t, "status", "-A", "--kubeconfig", suite.kubeconfig)
	lines := map[string]string{}
	for line := range strings.SplitSeq(table, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			lines[f[1]] = line
		}
	}
	for _, name := range []string{"team-a", "team-b", "team-c"} {
		if line := lines[p.sync(name)]; code != 0 || !strings.Contains(line, "Synced") || !strings.Contains(line, replica) {
			t.Errorf("plimsoll status -A (exit %d) does not show %s Synced on replica %s:\n%s", code, p.sync(name), replica, table)
		}
		series := fmt.Sprintf(`plimsoll_sync_total{outcome="synced",sync=%q} `, p.sync(name))
		if !slices.ContainsFunc(scrapeMetrics(t, d), func(l string) bool { return strings.HasPrefix(l, series) }) {
			t.Errorf("/metrics has no series %s", series)
		}
	}

	// Team b reaches into team a's namespace: its account may not, the
	// dry-run says so, and nothing of the commit is applied.
	intrusion := apps.Commit("team b reaches into team a", map[string]string{
		"b/config.yaml":    configMapDoc(b, "b-config", "two"),
		"b/new.yaml":       configMapDoc(b, "b-new", "two"),
		"b/intrusion.yaml": configMapDoc(a, "from-b", "taken"),
	})
	p.waitForSynced(t, "team-a", intrusion) // a's path did not change; a applies the commit as it is
	msg := p.waitForRefused(t, "team-b", intrusion)
	for _, want := range []string{"b/intrusion.yaml", "forbidden", "system:serviceaccount:" + b + ":deployer", a} {
		if !strings.Contains(msg, want) {
			t.Errorf("team-b's message %q does not say %q", msg, want)
		}
	}
	if configMapData(t, a, "from-b") != nil {
		t.Error("team b's ConfigMap was created in team a's namespace")
	}
	if configMapData(t, b, "b-new") != nil || configMapData(t, b, "b-config")["value"] != "one" {
		t.Errorf("a part of team b's refused commit was applied: b-new %v, b-config %v", configMapData(t, b, "b-new"), configMapData(t, b, "b-config"))
	}

	// Teams b (prune off) and c leave Git.
	delete(declarations, "teams/b.yaml")
	gone := p.root.Commit("teams b and c leave", map[string]string{"teams/b.yaml": "", "teams/c.yaml": ""})
	p.waitForSynced(t, "root", gone)
	waitFor(t, "the records of teams b and c to go", func(context.Context) (bool, error) {
		return p.record(t, "team-b") == nil && p.record(t, "team-c") == nil, nil
	})
	waitFor(t, "team c's ConfigMap to be pruned", func(context.Context) (bool, error) {
		return configMapData(t, c, "c-config") == nil, nil
	})
	if configMapData(t, b, "b-config") == nil {
		t.Error("team b's ConfigMap was pruned, though its prune is off")
	}
	for _, name := range []string{"team-b", "team-c"} {
		if _, err := suite.client.CoreV1().ConfigMaps(p.home).Get(context.Background(), p.sync(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the declaration of %s: %v, want it gone (its finalizer taken off)", name, err)
		}
		waitFor(t, "the Lease of "+name+" to go", func(ctx context.Context) (bool, error) {
			_, err := suite.client.CoordinationV1().Leases(p.home).Get(ctx, "plimsoll-"+p.sync(name), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	if r := p.record(t, "team-a"); r["plimsoll.dev/sync-status"] != "Synced" {
		t.Errorf("team a, which stays, is %q", r["plimsoll.dev/sync-status"])
	}
	d.FailIfExited(t)
}
