//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// simpleChart is a chart of one ConfigMap named <release>-<name>.
func simpleChart(name, version string, extra map[string]string) map[string]string {
	files := map[string]string{
		"Chart.yaml":        fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version),
		"templates/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-%s\ndata:\n  version: %q\n", name, version),
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// chartRepo serves an HTTP chart repository on 127.0.0.1: index.yaml
// lists every archive added, served under its file name.
type chartRepo struct {
	srv      *httptest.Server
	archives map[string][]byte
	index    strings.Builder
}

func newChartRepo(t *testing.T) *chartRepo {
	r := &chartRepo{archives: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name := strings.TrimPrefix(req.URL.Path, "/")
		if name == "index.yaml" {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n%s", r.index.String())
			return
		}
		data, ok := r.archives[name]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// add serves a chart archive, before the first request.
func (r *chartRepo) add(name, version string, data []byte) string {
	file := fmt.Sprintf("%s-%s.tgz", name, version)
	r.archives[file] = data
	sum := sha256.Sum256(data)
	fmt.Fprintf(&r.index, "  %s:\n  - version: %s\n    urls: [%s]\n    digest: %s\n", name, version, file, hex.EncodeToString(sum[:]))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// newRegistry starts an OCI registry (distribution's, in memory) on
// 127.0.0.1 and returns its host:port.
func newRegistry(t *testing.T) string {
	t.Helper()
	return artifacttest.NewRegistry(t).Host
}

// pushChart pushes a chart archive to the registry as Helm does: a config
// blob, one chart layer, a manifest tagged with the version.
func pushChart(t *testing.T, host, repo, version string, data []byte) {
	t.Helper()
	(&artifacttest.Registry{Host: host}).PushChart(t, repo, version, data)
}

// release is a release document of a chart from a repository.
func release(name, repo, chart, version, extra string) string {
	return fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: %s}\nspec:\n  repo: %s\n  chart: %s\n  version: %s\n%s", name, repo, chart, version, extra)
}

// TestHelmChartRepositories syncs a chart from an HTTP repository (its
// digest pinned) and one from an OCI registry whose dependency is fetched
// from the HTTP repository at the version its Chart.lock pins; then
// checks that an unknown version, an unreachable repository and an
// archive holding a symlink each fail the commit, naming the chart, with
// nothing applied or pruned.
func TestHelmChartRepositories(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	repo := newChartRepo(t)
	registry := newRegistry(t)
	webDigest := repo.add("web", "1.0.0", helmtest.Chart(t, "web", simpleChart("web", "1.0.0", nil)))
	repo.add("db", "2.1.0", helmtest.Chart(t, "db", simpleChart("db", "2.1.0", nil)))
	repo.add("evil", "0.1.0", helmtest.Archive(t,
		helmtest.Entry{Name: "evil/Chart.yaml", Body: "apiVersion: v2\nname: evil\nversion: 0.1.0\n"},
		helmtest.Entry{Name: "evil/templates/cm.yaml", Link: "/etc/passwd"},
	))
	pushChart(t, registry, "charts/api", "1.0.0", helmtest.Chart(t, "api", simpleChart("api", "1.0.0", map[string]string{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: api\nversion: 1.0.0\ndependencies:\n- {name: db, version: ~2.1, repository: %q}\n", repo.srv.URL),
		"Chart.lock": fmt.Sprintf("dependencies:\n- {name: db, version: 2.1.0, repository: %q}\n", repo.srv.URL),
	})))

	t.Log("1. a chart from each kind of repository, a dependency fetched")
	s.repo.Commit("charts from repositories", map[string]string{
		"web.yaml": release("web", repo.srv.URL, "web", "1.0.0", "  digest: "+webDigest+"\n"),
		"api.yaml": release("api", "oci://"+registry+"/charts", "api", "1.0.0", "  plainHTTP: true\n"),
	})
	s.mustSync(t)
	objs := []object{{configMaps, s.ns, "web-web"}, {configMaps, s.ns, "api-api"}, {configMaps, s.ns, "api-db"}}
	for _, o := range objs {
		if resourceVersion(t, o) == "" {
			t.Errorf("%s was not applied", o)
		}
	}
	msg := s.status(t)["plimsoll.dev/message"]
	if !strings.Contains(msg, "charts: api (api 1.0.0), web (web 1.0.0)") {
		t.Errorf("status message %q does not name both charts", msg)
	}
	before := resourceVersions(t, objs)
	applied := s.status(t)["plimsoll.dev/commit"]

	cases := []struct {
		name, file, doc string
		want            []string
	}{
		{"unknown version", "web.yaml", release("web", repo.srv.URL, "web", "2.0.0", ""),
			[]string{"web.yaml, document 1: field spec.chart", "has no version 2.0.0 of chart web (it has 1.0.0)"}},
		{"unreachable repository", "gone.yaml", release("gone", "http://127.0.0.1:9", "gone", "1.0.0", ""),
			[]string{"gone.yaml, document 1: chart gone (gone 1.0.0): chart repository http://127.0.0.1:9 unreachable since"}},
		{"archive with a symlink", "evil.yaml", release("evil", repo.srv.URL, "evil", "0.1.0", ""),
			[]string{"evil.yaml, document 1: field spec.chart", "entry evil/templates/cm.yaml is a link (to /etc/passwd)"}},
	}
	for _, tc := range cases {
		t.Log("2. " + tc.name)
		old := ""
		if tc.file == "web.yaml" {
			old = release("web", repo.srv.URL, "web", "1.0.0", "  digest: "+webDigest+"\n")
		}
		head := s.repo.Commit(tc.name, map[string]string{tc.file: tc.doc})
		out, code := s.syncOnce(t)
		if code == 0 {
			t.Fatalf("%s: sync exited 0:\n%s", tc.name, out)
		}
		st := s.status(t)
		for _, want := range append(tc.want, "commit "+head[:7]+" not applied (render failed; still running "+applied[:7]) {
			if !strings.Contains(st["plimsoll.dev/message"], want) {
				t.Errorf("%s: status message %q does not hold %q", tc.name, st["plimsoll.dev/message"], want)
			}
		}
		for _, o := range objs {
			if now := resourceVersion(t, o); now != before[o] {
				t.Errorf("%s: %s written or pruned (%s, then %q)", tc.name, o, before[o], now)
			}
		}
		s.repo.Commit("undo "+tc.name, map[string]string{tc.file: old})
	}
}
