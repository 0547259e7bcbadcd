package main

import (
	"debug/buildinfo"
	"runtime/debug"
	"slices"
	"testing"
	"time"
)

// TestDocument checks the packages and relationships of an SBOM: the main
// module at the build's version, the standard library, each module, a
// replaced one as its replacement.
func TestDocument(t *testing.T) {
	info := &buildinfo.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "plimsoll.dev/plimsoll", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.10.1"},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1"}},
		},
	}
	created := time.Date(2026, 11, 26, 3, 6, 16, 0, time.UTC)
	doc := document(info, "v0.1.0", "ea6cdff", created)

	var got []string
	for _, p := range doc.Packages {
		got = append(got, p.SPDXID+" "+p.Name+"@"+p.VersionInfo+" "+p.ExternalRefs[0].ReferenceLocator)
	}
	want := []string{
		"SPDXRef-Package-main plimsoll.dev/plimsoll@v0.1.0 pkg:golang/plimsoll.dev/plimsoll@v0.1.0",
		"SPDXRef-Package-stdlib stdlib@1.26.8 pkg:golang/stdlib@1.26.8",
		"SPDXRef-Package-1 github.com/spf13/cobra@v1.10.1 pkg:golang/github.com/spf13/cobra@v1.10.1",
		"SPDXRef-Package-2 example.com/fork@v1.0.1 pkg:golang/example.com/fork@v1.0.1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("packages:\n got %q\nwant %q", got, want)
	}
	if doc.Packages[3].Comment != "replaces example.com/old v1.0.0" {
		t.Errorf("the replacement's comment is %q", doc.Packages[3].Comment)
	}
	if n := len(doc.Relationships); n != 4 || doc.Relationships[0].RelationshipType != "DESCRIBES" {
		t.Errorf("relationships: %+v; want DESCRIBES the main module, then 3 DEPENDS_ON", doc.Relationships)
	}
	if doc.CreationInfo.Created != "2026-11-26T03:06:16Z" {
		t.Errorf("created %s; want the time given", doc.CreationInfo.Created)
	}
	again := document(info, "v0.1.0", "ea6cdff", created)
	other := document(info, "v0.1.0", "0123456", created)
	if again.DocumentNamespace != doc.DocumentNamespace || other.DocumentNamespace == doc.DocumentNamespace {
		t.Errorf("namespaces %s, %s, %s: want the same for the same binary and commit, another for another commit",
			doc.DocumentNamespace, again.DocumentNamespace, other.DocumentNamespace)
	}
}
