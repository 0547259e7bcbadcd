package helm

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"plimsoll.dev/plimsoll/sync/helm/helmtest"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestCredentialsGoToTheirHostOnly fetches a chart from a repository that
// wants a user and a password, given in a credentials file, and one from
// another repository, which must not see them.
func TestCredentialsGoToTheirHostOnly(t *testing.T) {
	archive := helmtest.Chart(t, "web", webChart)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - version: 1.0.0\n    urls: [web-1.0.0.tgz]\n    digest: %s\n", sha256Hex(archive))
	serve := func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "index.yaml") {
			_, _ = w.Write([]byte(index))
			return
		}
		_, _ = w.Write(archive)
	}
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "ci" || pass != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		serve(w, r)
	}))
	t.Cleanup(private.Close)
	var leaked atomic.Int32
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		serve(w, r)
	}))
	t.Cleanup(public.Close)

	// One host as a URL with the user and password apart, as helm
	// registry login writes them; an unrelated host in the auth form.
	file := filepath.Join(t.TempDir(), "config.json")
	doc := fmt.Sprintf(`{"auths": {%q: {"username": "ci", "password": "s3cret"}, "charts.example": {"auth": %q}}}`,
		private.URL+"/charts", base64.StdEncoding.EncodeToString([]byte("other:pw")))
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := LoadCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	release := func(name, repo string) string {
		return fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: %s}\nspec: {repo: %q, chart: web, version: 1.0.0}\n", name, repo)
	}
	files := map[string]string{"private.yaml": release("private", private.URL), "public.yaml": release("public", public.URL)}

	r := New(Config{Namespace: "apps", Credentials: creds})
	r.StartSync()
	out, err := manifest.RenderTree(context.Background(), repoFS(files, "x", nil), ".", manifest.Limits{}, r)
	if err != nil {
		t.Fatalf("render with the credentials: %v", err)
	}
	if len(out.Charts) != 2 {
		t.Errorf("%d charts rendered, want both", len(out.Charts))
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d requests to %s carried credentials meant for another host", n, public.URL)
	}

	_, err = renderTree(t, repoFS(map[string]string{"private.yaml": files["private.yaml"]}, "x", nil), Config{})
	mustFail(t, err, "private.yaml, document 1", "chart repository "+private.URL, "401 Unauthorized")
}

func TestLoadCredentialsRefuses(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"not JSON", `auths: {}`, "invalid character"},
		{"auth not base64", `{"auths": {"r.example": {"auth": "%%%"}}}`, `auths["r.example"].auth: not base64`},
		{"auth without a colon", `{"auths": {"r.example": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`, "not user:password"},
		{"no user name", `{"auths": {"r.example": {"password": "pw"}}}`, `auths["r.example"]: no username`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(file, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCredentials(file)
			mustFail(t, err, file, tc.want)
		})
	}
}

// TestLookupOnlyReads checks the transport lookup's requests go through:
// reads pass, anything else is refused before it leaves.
func TestLookupOnlyReads(t *testing.T) {
	var writes atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(api.Close)
	rt := readOnlyTransport{next: http.DefaultTransport}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, err := http.NewRequest(method, api.URL+"/api/v1/namespaces/apps/configmaps/db", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if method == http.MethodGet {
			if err != nil {
				t.Errorf("GET refused: %v", err)
			} else {
				resp.Body.Close()
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "lookup may only read: "+method) {
			t.Errorf("%s: error %v, want it refused", method, err)
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d requests that write reached the API server", n)
	}
}
