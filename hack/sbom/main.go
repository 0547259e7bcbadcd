// Command sbom writes the software bill of materials of a Go binary as an
// SPDX 2.3 JSON document: the main module, every module linked into it,
// and the Go standard library, from the build information the Go
// toolchain embeds (what `go version -m` prints). hack/image writes it
// beside the image.
//
//	go run ./hack/sbom -version v0.1.0 -commit <sha> bin/image/plimsoll > plimsoll.spdx.json
//
// The document is the same for the same binary: its creation time is
// $SOURCE_DATE_EPOCH when set (hack/image sets the commit's time).
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// The SPDX document's fixed parts.
const (
	spdxVersion   = "SPDX-2.3"
	dataLicense   = "CC0-1.0"
	documentID    = "SPDXRef-DOCUMENT"
	creator       = "Tool: plimsoll-hack-sbom"
	namespaceBase = "https://plimsoll.dev/spdx/"
	noAssertion   = "NOASSERTION"
	// stdlib is the name purl tools (and vulnerability scanners) give the
	// Go standard library.
	stdlib = "stdlib"
)

func main() {
	version := flag.String("version", "", "version of the main module (the build's, since a trimmed build records none)")
	commit := flag.String("commit", "", "commit the binary was built from")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: sbom [-version V] [-commit C] BINARY")
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *version, *commit, os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

// run writes the SBOM of binary to w.
func run(w io.Writer, binary, version, commit, epoch string) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read the build information of %s: %w", binary, err)
	}
	created := time.Now().UTC()
	if epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("read SOURCE_DATE_EPOCH %q: want seconds since 1970", epoch)
		}
		created = time.Unix(sec, 0).UTC()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(document(info, version, commit, created))
}

// Document is an SPDX 2.3 document, as much of it as a list of Go modules
// needs.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says when and by what the document was made.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Package is one module (or the standard library).
type Package struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	ExternalRefs     []ExternalRef `json:"externalRefs"`
	Comment          string        `json:"comment,omitempty"`
}

// ExternalRef is a package's purl.
type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// Relationship ties two elements of the document.
type Relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// document builds the SBOM of info: the main module (at version, built
// from commit) DEPENDS_ON each module linked in (a replaced module as its
// replacement, which is the code in the binary) and on the standard
// library of the Go that built it.
func document(info *buildinfo.BuildInfo, version, commit string, created time.Time) Document {
	if version == "" {
		version = info.Main.Version
	}
	top := pkg("SPDXRef-Package-main", info.Main.Path, version)
	if commit != "" {
		top.Comment = "built from commit " + commit
	}
	doc := Document{
		SPDXVersion:  spdxVersion,
		DataLicense:  dataLicense,
		SPDXID:       documentID,
		Name:         info.Main.Path + " " + version,
		CreationInfo: CreationInfo{Created: created.Format(time.RFC3339), Creators: []string{creator}},
		Packages:     []Package{top},
		Relationships: []Relationship{
			{SPDXElementID: documentID, RelationshipType: "DESCRIBES", RelatedSPDXElement: top.SPDXID},
		},
	}
	goVersion := strings.TrimPrefix(info.GoVersion, "go")
	deps := append([]Package{pkg("SPDXRef-Package-stdlib", stdlib, goVersion)}, modules(info.Deps)...)
	for _, d := range deps {
		doc.Packages = append(doc.Packages, d)
		doc.Relationships = append(doc.Relationships, Relationship{SPDXElementID: top.SPDXID, RelationshipType: "DEPENDS_ON", RelatedSPDXElement: d.SPDXID})
	}
	// The namespace is unique per content, as SPDX asks, and the same for
	// the same binary.
	sum := sha256.New()
	for _, p := range doc.Packages {
		fmt.Fprintf(sum, "%s@%s\n", p.Name, p.VersionInfo)
	}
	fmt.Fprintf(sum, "%s\n", commit)
	doc.DocumentNamespace = namespaceBase + info.Main.Path + "/" + version + "-" + hex.EncodeToString(sum.Sum(nil)[:8])
	return doc
}

// modules are the packages of deps, numbered in order.
func modules(deps []*debug.Module) []Package {
	var out []Package
	for i, m := range deps {
		id := "SPDXRef-Package-" + strconv.Itoa(i+1)
		if m.Replace != nil {
			p := pkg(id, m.Replace.Path, m.Replace.Version)
			p.Comment = "replaces " + m.Path + " " + m.Version
			out = append(out, p)
			continue
		}
		out = append(out, pkg(id, m.Path, m.Version))
	}
	return out
}

// pkg is the package of Go module path at version, with its purl.
func pkg(id, path, version string) Package {
	return Package{
		SPDXID:           id,
		Name:             path,
		VersionInfo:      version,
		DownloadLocation: noAssertion,
		ExternalRefs: []ExternalRef{{
			ReferenceCategory: "PACKAGE-MANAGER",
			ReferenceType:     "purl",
			ReferenceLocator:  "pkg:golang/" + path + "@" + version,
		}},
	}
}
