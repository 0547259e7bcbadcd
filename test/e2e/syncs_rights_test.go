//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// strategyWorkloads is a team repository of one workload of each
// strategy, web-rolling, web-canary and web-bg, with their Services, at
// image version, and a ConfigMap.
func strategyWorkloads(version string) map[string]string {
	return map[string]string{
		"rolling.yaml": switchManifest("web-rolling", "rolling", version, false),
		"canary.yaml":  switchManifest("web-canary", "canary", version, false),
		"bg.yaml":      switchManifest("web-bg", "blue-green", version, false),
		"config.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {version: " + version + "}\n",
	}
}

// TestTeamRights: a team sync whose ServiceAccount has the rights of
// docs/guide.md (the ClusterRole admin, bound in its namespace) or the
// Role of docs/syncs.md, each word for word, rolls a rolling, a canary
// and a blue-green workload out to Healthy, twice; the Role of
// docs/syncs.md less any one of its rights that the workloads need
// refuses the commit before anything of it is applied, naming the verb
// and the resource; less the delete of ConfigMaps, a commit that prunes
// one is refused before anything of it is applied.
func TestTeamRights(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	guide := p.teamWith(t, "guide", func(ns string) string { return docTeam(t, ns) })
	role := p.teamWith(t, "role", func(ns string) string { return teamAccount(ns) + docRole(t, ns, "", "") })
	good := testgit.New(t)
	v1 := good.Commit("v1", strategyWorkloads("v1"))

	// Each right, taken away in turn: the name of the sync, and the
	// resource and verb it lacks.
	lacking := []struct{ resource, verb string }{
		{"deployments", "create"}, {"deployments", "update"}, {"deployments", "patch"}, {"deployments", "delete"},
		{"replicasets", "patch"}, {"replicasets", "delete"}, {"pods", "patch"}, {"pods", "delete"}, {"services", "patch"},
	}
	decl := func(name, ns string) string {
		return p.declaration(name, fmt.Sprintf("repository: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n", good.URL(), ns, ns))
	}
	declarations := map[string]string{"guide.yaml": decl("guide", guide), "role.yaml": decl("role", role)}
	spaces := map[string]string{}
	for _, l := range lacking {
		name := "no-" + l.verb + "-" + l.resource
		ns := p.teamWith(t, name, func(ns string) string { return teamAccount(ns) + docRole(t, ns, l.resource, l.verb) })
		spaces[name] = ns
		declarations[name+".yaml"] = decl(name, ns)
	}
	// A team that may not delete its ConfigMaps: its commit that drops
	// one is refused before anything of it is applied.
	noPrune := p.teamWith(t, "no-prune", func(ns string) string { return teamAccount(ns) + docRole(t, ns, "configmaps", "delete") })
	declarations["no-prune.yaml"] = decl("no-prune", noPrune)
	rootHead := p.root.Commit("teams", declarations)
	d := kit.StartDaemon(t, p)
	p.waitForSynced(t, "root", rootHead)

	for _, l := range lacking {
		name := "no-" + l.verb + "-" + l.resource
		msg := p.waitForRefused(t, name, v1)
		// The dry-run names a resource as the API server does
		// ("deployments" in API group "apps"), the rights check as RBAC
		// ("deployments.apps").
		verb := regexp.MustCompile(`(may not|cannot) ` + l.verb + ` (resource "` + l.resource + `"|` + l.resource + `\b)`)
		if !verb.MatchString(msg) {
			t.Errorf("sync %s: message %q does not name %s %s", name, msg, l.verb, l.resource)
		}
		ns := spaces[name]
		for _, kind := range []string{"deployments", "services", "configmaps"} {
			if left := labelledObjects(t, ns, kind, p.sync(name)); len(left) > 0 {
				t.Errorf("sync %s, refused, applied %s %v", name, kind, left)
			}
		}
	}

	for _, team := range []struct{ sync, ns string }{{"guide", guide}, {"role", role}} {
		p.waitForSynced(t, team.sync, v1)
		for _, w := range []string{"web-rolling", "web-canary", "web-bg"} {
			waitForWorkload(t, team.ns, w, 1, "Healthy")
		}
	}
	p.waitForSynced(t, "no-prune", v1)
	v2files := strategyWorkloads("v2")
	v2files["config.yaml"] = "" // the ConfigMap leaves Git
	v2 := good.Commit("v2", v2files)
	msg := p.waitForRefused(t, "no-prune", v2)
	for _, want := range []string{"rights check failed", "prune ConfigMap " + noPrune + "/settings", "may not delete configmaps in namespace " + noPrune} {
		if !strings.Contains(msg, want) {
			t.Errorf("sync no-prune: message %q does not say %q", msg, want)
		}
	}
	if configMapData(t, noPrune, "settings") == nil {
		t.Error("sync no-prune's ConfigMap was pruned, though its commit was refused")
	}
	for _, team := range []struct{ sync, ns string }{{"guide", guide}, {"role", role}} {
		p.waitForSynced(t, team.sync, v2)
		for _, w := range []string{"web-rolling", "web-canary", "web-bg"} {
			waitForWorkload(t, team.ns, w, 2, "Healthy")
		}
		if refused := warnings(t, team.ns, "WriteRefused"); len(refused) > 0 {
			t.Errorf("team %s: writes refused: %q", team.sync, refused)
		}
		waitFor(t, "team "+team.sync+"'s ConfigMap to be pruned", func(context.Context) (bool, error) {
			return configMapData(t, team.ns, "settings") == nil, nil
		})
	}
	for _, w := range []string{"web-rolling", "web-canary", "web-bg"} {
		if _, st := workloadStatus(t, noPrune, w); st["plimsoll.dev/revision"] != "1" {
			t.Errorf("sync no-prune's %s went to revision %s, though its commit was refused", w, st["plimsoll.dev/revision"])
		}
	}
	d.FailIfExited(t)
}

// waitForWorkload waits until workload name of ns is at revision in
// phase, as the Deployment that carries its newest revision says.
func waitForWorkload(t *testing.T, ns, name string, revision int, phase string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s/%s revision %d %s", ns, name, revision, phase), func(context.Context) (bool, error) {
		_, st := workloadStatus(t, ns, name)
		return st["plimsoll.dev/revision"] == fmt.Sprint(revision) && st["plimsoll.dev/phase"] == phase, nil
	})
}

// labelledObjects names the objects of resource (deployments, services
// or configmaps) in ns that sync applied or made.
func labelledObjects(t *testing.T, ns, resource, sync string) []string {
	t.Helper()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: resource}
	if resource == "deployments" {
		gvr.Group = "apps"
	}
	list, err := suite.dynamic.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "plimsoll.dev/sync=" + sync})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list.Items {
		names = append(names, o.GetName())
	}
	return names
}

// warnings lists the messages of the Warning Events of reason in ns.
func warnings(t *testing.T, ns, reason string) []string {
	t.Helper()
	list, err := suite.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Type == "Warning" && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// teamAccount is the ServiceAccount deployer of ns and its RoleBinding
// to the Role deployer.
func teamAccount(ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: ServiceAccount, name: deployer, namespace: %[1]s}]
---
`, ns)
}

// docBlock returns the first fenced block of docs/<file> after the line
// that starts with after.
func docBlock(t *testing.T, file, after string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(suite.root, "docs", file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "\n"+after)
	if i < 0 {
		t.Fatalf("docs/%s has no line starting %q", file, after)
	}
	text = text[i:]
	start := strings.Index(text, "```yaml\n")
	end := strings.Index(text[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatalf("docs/%s has no yaml block after %q", file, after)
	}
	return text[start+8 : start+8+end]
}

// docTeam is the ServiceAccount and RoleBinding of docs/guide.md's many
// teams, word for word, in namespace ns instead of team-a.
func docTeam(t *testing.T, ns string) string {
	t.Helper()
	docs := strings.Split(docBlock(t, "guide.md", "## Many teams"), "---\n")
	if len(docs) < 2 || !strings.Contains(docs[1], "name: admin") {
		t.Fatalf("docs/guide.md's many teams no longer start with a ServiceAccount and its RoleBinding to admin: %q", docs)
	}
	return strings.ReplaceAll(docs[0]+"---\n"+docs[1], "team-a", ns) + "---\n"
}

// docRole is the Role of docs/syncs.md, word for word, in namespace ns
// instead of team-a; with resource set, less its verb on resource.
func docRole(t *testing.T, ns, resource, verb string) string {
	t.Helper()
	text := strings.ReplaceAll(docBlock(t, "syncs.md", "<!-- team-role -->"), "team-a", ns)
	if resource == "" {
		return text
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(text), &role); err != nil {
		t.Fatalf("docs/syncs.md's Role: %v", err)
	}
	var rules []rbacv1.PolicyRule
	found := false
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, resource) {
			rules = append(rules, r)
			continue
		}
		if others := slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resource }); len(others) > 0 {
			rest := r
			rest.Resources = others
			rules = append(rules, rest)
		}
		lacking := r
		lacking.Resources = []string{resource}
		lacking.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(s string) bool { return s == verb })
		found = found || len(lacking.Verbs) < len(r.Verbs)
		rules = append(rules, lacking)
	}
	if !found {
		t.Fatalf("docs/syncs.md's Role grants no %s on %s", verb, resource)
	}
	role.Rules = rules
	out, err := yaml.Marshal(role)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
