package helm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// helmIndex is an index as helm's repo.IndexFile writes it: WriteFile
// marshals it with sigs.k8s.io/yaml, WriteJSONFile with
// json.MarshalIndent. (helm's repo package itself needs plugin modules
// this module does not.)
type helmIndex struct {
	APIVersion string                        `json:"apiVersion"`
	Generated  time.Time                     `json:"generated"`
	Entries    map[string][]helmChartVersion `json:"entries"`
}

// helmChartVersion is helm's repo.ChartVersion.
type helmChartVersion struct {
	*chart.Metadata
	URLs    []string  `json:"urls"`
	Created time.Time `json:"created"`
	Digest  string    `json:"digest,omitempty"`
}

// add lists version of chart name, with metadata as a real chart has it:
// a description folded over lines, a multi-line annotation whose lines
// look like list items and keys, keywords and maintainers.
func (h *helmIndex) add(name, version, digest string) {
	if h.Entries == nil {
		h.APIVersion, h.Generated, h.Entries = "v1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), map[string][]helmChartVersion{}
	}
	h.Entries[name] = append(h.Entries[name], helmChartVersion{
		Metadata: &chart.Metadata{
			APIVersion: "v2", Name: name, Version: version, AppVersion: "v" + version, Type: "application",
			Description: strings.Repeat("A chart that deploys "+name+" with care; ", 4) + "\nfor \"everyone\": yes",
			Keywords:    []string{name, "web", "1.0"},
			Maintainers: []*chart.Maintainer{{Name: "Ops", Email: "ops@example.com"}},
			Annotations: map[string]string{
				"artifacthub.io/changes": "- kind: added\n  description: " + name + " " + version + "\nentries:\n  web:\n  - version: 6.6.6\n",
				"category":               "Web: servers",
			},
		},
		URLs:    []string{fmt.Sprintf("charts/%s-%s.tgz", name, version)},
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Digest:  digest,
	})
}

func (h *helmIndex) yaml(t testing.TB) string {
	t.Helper()
	out, err := yaml.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (h *helmIndex) json(t testing.TB, indent bool) string {
	t.Helper()
	out, err := json.Marshal(h)
	if indent {
		out, err = json.MarshalIndent(h, "", "  ")
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// smallIndex lists web 1.0.0 and 0.9.0 and db 2.0.0.
func smallIndex() *helmIndex {
	var h helmIndex
	h.add("web", "1.0.0", "sha256:"+strings.Repeat("a", 64))
	h.add("db", "2.0.0", "")
	h.add("web", "0.9.0", "")
	return &h
}

// largeIndex lists, among charts filler-0000 ... of 20 versions each,
// web at 0.9.0 ... 0.9.39 and at 1.0.0 with digest: over size bytes in
// all.
func largeIndex(size int, digest string) *helmIndex {
	var h helmIndex
	for i := 0; i < 40; i++ {
		h.add("web", fmt.Sprintf("0.9.%d", i), "")
	}
	h.add("web", "1.0.0", digest)
	for c := 0; c*20*850 < size; c++ {
		for v := 0; v < 20; v++ {
			h.add(fmt.Sprintf("filler-%04d", c), fmt.Sprintf("1.%d.0", v), "sha256:"+strings.Repeat("f", 64))
		}
	}
	return &h
}

// describe renders what readIndex answered, for comparing answers.
func describe(versions []indexVersion, found bool, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "found %v:", found)
	for _, v := range versions {
		fmt.Fprintf(&b, " {%q %q %q}", v.Version, v.URLs, v.Digest)
	}
	return b.String()
}

func TestReadIndexAnswersAsAWholeParse(t *testing.T) {
	cases := []struct {
		name  string
		index string
	}{
		{"as helm repo index writes it", smallIndex().yaml(t)},
		{"as helm writes JSON", smallIndex().json(t, true)},
		{"compact JSON", smallIndex().json(t, false)},
		{"lists indented under their keys", "apiVersion: v1\nentries:\n    db:\n        - version: 2.0.0\n          urls: [db.tgz]\n    web:\n        -   version: 1.0.0\n            urls:\n                - web.tgz\n            digest: sha256:ab\n        - {version: 0.9.0, urls: [old.tgz]}\n"},
		{"comments, blank lines and CRLF", "# an index\r\napiVersion: v1\r\n\r\nentries: # the charts\r\n  # web first\r\n  web:   # comment\r\n\r\n  - version: 1.0.0 # newest\r\n    description: |\r\n      line one\r\n\r\n      line three\r\n# at the margin\r\n    urls: [web.tgz]\r\n  db: []\r\n"},
		{"quoted keys and a document marker", "---\n\"apiVersion\": v1\n'entries':\n  'web' :\n  - version: 1.0.0\n    urls: [\"web.tgz\"]\n  \"db\":\n  - version: '2.0.0'\n"},
		{"a block scalar whose lines look like entries", "entries:\n  db:\n  - description: |-\n      entries:\n        web:\n        - version: 6.6.6\n    version: 2.0.0\n  web:\n  - version: 1.0.0\n"},
		{"a chart listed twice: the last counts", "entries:\n  web:\n  - version: 0.1.0\n  db: null\n  web:\n  - version: 1.0.0\n"},
		{"entries listed twice: the last counts", "entries:\n  web:\n  - version: 0.1.0\ngenerated: now\nentries:\n  db:\n  - version: 2.0.0\n"},
		{"empty charts and no entries", "apiVersion: v1\nentries:\n  web: []\n  db:\n  other: ~\n"},
		{"entries empty", "entries: {}\n"},
		{"a second document, which does not count", "entries:\n  web:\n  - version: 1.0.0\n---\nentries:\n  web:\n  - version: 6.6.6\n"},
		{"a version written as a number", "entries:\n  web:\n  - version: 1.0\n    urls: [web-1.0.tgz]\n"},
		{"anchors within an entry", "entries:\n  web:\n  - version: &v 1.0.0\n    appVersion: *v\n    urls: &u [web.tgz]\n    sources: *u\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"web", "db", "absent"} {
				whole := describe(readIndex(strings.NewReader(tc.index), "index x", name, 1<<30))
				streamed := describe(readIndex(strings.NewReader(tc.index), "index x", name, 0))
				if streamed != whole {
					t.Errorf("chart %s: read as a stream %s, parsed whole %s", name, streamed, whole)
				}
			}
		})
	}
}

func TestFetchFromALargeIndex(t *testing.T) {
	archive := helmtest.Chart(t, "web", webChart)
	digest := sha256Hex(archive)
	h := largeIndex(maxIndexParseBytes*5/4, digest)
	h.Entries["web"][40].URLs = []string{"archives/web-1.0.0.tgz"}
	for _, format := range []string{"YAML", "JSON"} {
		t.Run(format, func(t *testing.T) {
			index := h.yaml(t)
			if format == "JSON" {
				index = h.json(t, true)
			}
			if len(index) <= maxIndexParseBytes {
				t.Fatalf("an index of %d bytes, want more than %d, to be read as a stream", len(index), maxIndexParseBytes)
			}
			srv := serveRepo(t, index, map[string][]byte{"archives/web-1.0.0.tgz": archive})
			rel := func(version string) map[string]string {
				return map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: %q, chart: web, version: %s, digest: sha256:%s}\n", srv.URL, version, digest)}
			}
			out, err := renderTree(t, repoFS(rel("1.0.0"), "x", nil), Config{})
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(out.Objects); len(got) != 3 || out.Charts[0].Release.Source != srv.URL {
				t.Errorf("objects %v from %q, want the chart's three from %s", got, out.Charts[0].Release.Source, srv.URL)
			}
			_, err = renderTree(t, repoFS(rel("2.0.0"), "x", nil), Config{})
			mustFail(t, err, "has no version 2.0.0 of chart web (it has 1.0.0, 0.9.39, 0.9.38, 0.9.37, 0.9.36 and 36 more)")
		})
	}
}

func TestReadLargeIndexAnswersAsAWholeParse(t *testing.T) {
	h := largeIndex(maxIndexParseBytes*5/4, "sha256:"+strings.Repeat("b", 64))
	for _, index := range []string{h.yaml(t), h.json(t, false)} {
		for _, name := range []string{"web", "filler-0003", "absent"} {
			whole := describe(readIndex(strings.NewReader(index), "index x", name, 1<<30))
			streamed := describe(readIndex(strings.NewReader(index), "index x", name, maxIndexParseBytes))
			if streamed != whole {
				t.Errorf("chart %s: read as a stream %s, parsed whole %s", name, streamed, whole)
			}
		}
	}
}

// aliasBomb is a version entry whose aliases expand nine-fold at each of
// nine levels.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("  - version: 1.0.0\n    a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "    a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// wholeParseError is what a parse of the whole of index answers.
func wholeParseError(index string) string {
	var idx repoIndex
	if err := yaml.Unmarshal([]byte(index), &idx); err != nil {
		return err.Error()
	}
	return "no error"
}

func TestReadIndexRefuses(t *testing.T) {
	large := largeIndex(maxIndexParseBytes*5/4, "").yaml(t)
	entries := strings.Index(large, "\n  filler-0000:\n")
	// inLarge puts web's entries first among the charts of large.
	inLarge := func(web string) string { return large[:entries] + "\n  web:\n" + web + large[entries+1:] }
	malformed := "entries:\n  web: [\n"
	bomb := "entries:\n  web:\n" + aliasBomb()
	cases := []struct {
		name  string
		index func(w io.Writer)
		limit int64
		want  []string
	}{
		{"malformed", text(malformed), 0, []string{"does not parse: " + wholeParseError(malformed)}},
		{"an alias bomb", text(bomb), 0, []string{"does not parse: " + wholeParseError(bomb)}},
		{"over its limit", text(large), 9 << 19, []string{"index.yaml is larger than the limit of 4718592 bytes"}},
		{"endless", endless, 9 << 19, []string{"index.yaml is larger than the limit of 4718592 bytes"}},
		{"large, malformed in the chart", text(inLarge("  - version: [\n")), 0, []string{"does not parse: line ", ": the entry of chart web at line ", "did not find expected"}},
		{"large, an alias bomb in the chart", text(inLarge(aliasBomb())), 0, []string{"does not parse: line ", ": the entry of chart web at line ", "excessive aliasing"}},
		{"large, a chart that is not a list", text(inLarge("    version: 1.0.0\n")), 0, []string{"does not parse: line ", "chart web is not a block list"}},
		{"large, a flow mapping of entries", text("entries: {web: []}\n" + large), 0, []string{"does not parse: line 1: entries is \"{web: []}\", not a block mapping"}},
		{"large, an entry over 4 MiB", text(inLarge("  - version: 1.0.0\n    description: |\n" + strings.Repeat("      words words words\n", maxIndexParseBytes/20))), 0,
			[]string{"does not parse: line ", "the entry of chart web at line ", "is larger than 4194304 bytes, the most of an index parsed at once"}},
		{"large JSON, malformed", text(`{"entries": {"web": [{"version": 1.0.0}]}}` + large), 0, []string{"does not parse: invalid character"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.index(w) }))
			t.Cleanup(srv.Close)
			files := map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: %q, chart: web, version: 1.0.0}\n", srv.URL)}
			_, err := renderTree(t, repoFS(files, "x", nil), Config{Limits: Limits{MaxIndexBytes: tc.limit}})
			mustFail(t, err, append([]string{"web.yaml, document 1: field spec.chart: chart web (web 1.0.0): index " + srv.URL + "/index.yaml "}, tc.want...)...)
			asManifestError(t, err)
		})
	}
}

// text writes s.
func text(s string) func(io.Writer) {
	return func(w io.Writer) { _, _ = io.WriteString(w, s) }
}

// endless writes a well-formed index that never ends, as fast as it is
// read, with no Content-Length.
func endless(w io.Writer) {
	if _, err := io.WriteString(w, "apiVersion: v1\nentries:\n"); err != nil {
		return
	}
	for i := 0; ; i++ {
		if _, err := fmt.Fprintf(w, "  filler-%d:\n  - version: 1.0.0\n    urls: [filler.tgz]\n", i); err != nil {
			return
		}
	}
}

// FuzzReadIndexAgrees checks that an index read as a stream, when it is
// read at all, answers for each chart what a parse of the whole gives.
func FuzzReadIndexAgrees(f *testing.F) {
	f.Add(smallIndex().yaml(f))
	f.Add(smallIndex().json(f, false))
	f.Add("entries:\n  web:\n  - version: 1.0.0\n    urls: [a]\n  db: []\n")
	f.Add("entries:\n    web:\n        - version: 1.0.0\n          description: |\n            x: y\n        - version: 2.0.0\n")
	f.Fuzz(func(t *testing.T, index string) {
		for _, name := range []string{"web", "db"} {
			versions, found, err := readIndex(strings.NewReader(index), "index x", name, 0)
			if err != nil {
				continue
			}
			whole := describe(readIndex(strings.NewReader(index), "index x", name, 1<<30))
			if streamed := describe(versions, found, nil); !strings.HasPrefix(whole, "error: ") && streamed != whole {
				t.Fatalf("chart %s of %q: read as a stream %s, parsed whole %s", name, index, streamed, whole)
			}
		}
	})
}
