package helm

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// CRDPolicy says what a sync does with the CustomResourceDefinitions of a
// chart's crds/ folders.
type CRDPolicy string

// The CRD policies.
const (
	// CRDCreate creates a CRD that the cluster lacks and never updates or
	// prunes it, as Helm treats crds/ (the default).
	CRDCreate CRDPolicy = "Create"
	// CRDCreateReplace applies the CRDs like any object: created, updated
	// when the chart changes them, and pruned with the chart.
	CRDCreateReplace CRDPolicy = "CreateReplace"
	// CRDSkip leaves the crds/ folders out.
	CRDSkip CRDPolicy = "Skip"
)

// Release is a chart release declared in Git by a release document.
type Release struct {
	// Name and Namespace are the release's: Release.Name and
	// Release.Namespace in templates; namespaced objects that set no
	// namespace go to Namespace.
	Name, Namespace string
	// Path is the slash path of a chart directory in the repository; empty
	// for a chart from a repository.
	Path string
	// Repo is the chart repository: an https:// or http:// URL of an
	// index, or an oci:// URL of a registry repository holding the chart.
	Repo string
	// Chart is the chart's name in Repo; Version its exact version; Digest,
	// when set, the sha256 digest its archive (HTTP) or manifest (OCI)
	// must have.
	Chart, Version, Digest string
	// PlainHTTP talks to an OCI registry over plain HTTP.
	PlainHTTP bool
	// ValuesFiles are slash paths of values files in the repository,
	// merged in order over the chart's values; Values are merged last.
	ValuesFiles []string
	Values      map[string]any
	// CRDs is the policy for the chart's crds/ folders.
	CRDs CRDPolicy
	// Lookup lets templates call lookup, answered read-only by the
	// cluster; off, lookup returns nothing, as in `helm template`.
	Lookup bool
	// HookTimeout bounds how long a sync waits for each hook.
	HookTimeout time.Duration
	// PostRender is a kustomization applied to what the chart rendered
	// (patches, images, labels...), without resources of its own.
	PostRender map[string]any
	// Origin is the release document.
	Origin manifest.Origin
}

// sha256Digest is the form of a digest.
var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// releaseFields are the fields a release document may set, by section.
var (
	releaseTopFields      = []string{"apiVersion", "kind", "metadata", "spec"}
	releaseMetadataFields = []string{"name", "namespace", "labels", "annotations"}
	releaseSpecFields     = []string{"path", "repo", "chart", "version", "digest", "plainHTTP", "valuesFiles", "values", "crds", "lookup", "hookTimeout", "postRender"}
	postRenderFields      = []string{"kustomize"}
	// postRenderRefused are kustomization fields a post-render may not
	// set: it works on the chart's output only.
	postRenderRefused = []string{"resources", "bases", "components", "crds", "helmCharts", "helmGlobals", "generators", "transformers", "validators", "openapi"}
)

// ParseRelease reads a release document, already decoded, found at
// origin. Relative paths (spec.path, spec.valuesFiles) are resolved from
// the document's directory and must stay inside the repository;
// defaultNamespace is the release namespace when metadata.namespace is
// not set. Every problem is a *manifest.Error naming the field.
func ParseRelease(origin manifest.Origin, doc map[string]any, defaultNamespace string) (*Release, error) {
	p := &parser{origin: origin}
	rel := &Release{Origin: origin, CRDs: CRDCreate, HookTimeout: DefaultHookTimeout}
	p.known(doc, "", releaseTopFields)
	meta := p.mapAt(doc, "", "metadata", true)
	spec := p.mapAt(doc, "", "spec", true)
	if p.err != nil {
		return nil, p.err
	}
	p.known(meta, "metadata", releaseMetadataFields)
	p.known(spec, "spec", releaseSpecFields)
	rel.Name = p.str(meta, "metadata", "name", true)
	if rel.Name != "" {
		if problems := validation.IsDNS1123Subdomain(rel.Name); len(problems) > 0 || len(rel.Name) > maxReleaseName {
			p.fail("metadata.name", fmt.Sprintf("%q is not a release name: lowercase letters, digits, '-' and '.', at most %d characters", rel.Name, maxReleaseName))
		}
	}
	rel.Namespace = p.str(meta, "metadata", "namespace", false)
	if rel.Namespace == "" {
		rel.Namespace = defaultNamespace
	}
	if rel.Namespace == "" {
		p.fail("metadata.namespace", "is required: there is no default namespace")
	} else if problems := validation.IsDNS1123Label(rel.Namespace); len(problems) > 0 {
		p.fail("metadata.namespace", fmt.Sprintf("%q is not a namespace name", rel.Namespace))
	}
	if p.err != nil {
		return nil, p.err
	}
	dir := path.Dir(origin.File)
	p.source(rel, spec, dir)
	for i, f := range p.strList(spec, "spec", "valuesFiles") {
		rel.ValuesFiles = append(rel.ValuesFiles, p.repoPath(dir, f, fmt.Sprintf("spec.valuesFiles[%d]", i)))
	}
	rel.Values = p.mapAt(spec, "spec", "values", false)
	if crds := p.str(spec, "spec", "crds", false); crds != "" {
		rel.CRDs = CRDPolicy(crds)
		if !slices.Contains([]CRDPolicy{CRDCreate, CRDCreateReplace, CRDSkip}, rel.CRDs) {
			p.fail("spec.crds", fmt.Sprintf("%q is not a CRD policy: Create, CreateReplace or Skip", crds))
		}
	}
	rel.Lookup = p.boolean(spec, "spec", "lookup")
	rel.PlainHTTP = p.boolean(spec, "spec", "plainHTTP")
	if s := p.str(spec, "spec", "hookTimeout", false); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			p.fail("spec.hookTimeout", fmt.Sprintf("%q is not a positive duration such as 5m", s))
		}
		rel.HookTimeout = d
	}
	if pr := p.mapAt(spec, "spec", "postRender", false); pr != nil {
		p.known(pr, "spec.postRender", postRenderFields)
		rel.PostRender = p.mapAt(pr, "spec.postRender", "kustomize", true)
		for _, key := range postRenderRefused {
			if _, ok := rel.PostRender[key]; ok {
				p.fail("spec.postRender.kustomize."+key, "is not allowed: a post-render works on the chart's output only")
			}
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return rel, nil
}

// source reads where the chart comes from: a path in Git, or a repository,
// a chart name and a version.
func (p *parser) source(rel *Release, spec map[string]any, dir string) {
	chartPath := p.str(spec, "spec", "path", false)
	rel.Repo = p.str(spec, "spec", "repo", false)
	rel.Chart = p.str(spec, "spec", "chart", false)
	rel.Version = p.str(spec, "spec", "version", false)
	rel.Digest = p.str(spec, "spec", "digest", false)
	switch {
	case chartPath != "" && rel.Repo != "":
		p.fail("spec.repo", "must not be set with spec.path: a chart comes from Git or from a repository")
		return
	case chartPath != "":
		rel.Path = p.repoPath(dir, chartPath, "spec.path")
		for _, f := range []string{"chart", "version", "digest"} {
			if _, ok := spec[f]; ok {
				p.fail("spec."+f, "must not be set with spec.path: a chart in Git is rendered as it is in the commit")
			}
		}
		return
	case rel.Repo == "":
		p.fail("spec", "needs spec.path (a chart in Git) or spec.repo, spec.chart and spec.version (a chart from a repository)")
		return
	}
	u, err := url.Parse(rel.Repo)
	if err != nil || u.Host == "" || !slices.Contains([]string{"https", "http", "oci"}, u.Scheme) {
		p.fail("spec.repo", fmt.Sprintf("%q is not an https://, http:// or oci:// URL", rel.Repo))
	} else if u.User != nil {
		p.fail("spec.repo", "must not hold credentials: give them to the daemon (--helm-credentials-file)")
	}
	if rel.Chart == "" {
		p.fail("spec.chart", "is required with spec.repo")
	} else if strings.ContainsAny(rel.Chart, "/?#:@ ") || strings.HasPrefix(rel.Chart, ".") {
		p.fail("spec.chart", fmt.Sprintf("%q is not a chart name", rel.Chart))
	}
	if rel.Version == "" {
		p.fail("spec.version", "is required with spec.repo: an exact version such as 1.2.3")
	} else if _, err := semver.StrictNewVersion(strings.TrimPrefix(rel.Version, "v")); err != nil {
		p.fail("spec.version", fmt.Sprintf("%q is not an exact version such as 1.2.3 (ranges are not followed: pin the version in Git)", rel.Version))
	}
	if rel.Digest != "" && !sha256Digest.MatchString(rel.Digest) {
		p.fail("spec.digest", fmt.Sprintf("%q is not a digest of the form sha256:<64 hex digits>", rel.Digest))
	}
}

// parser collects the first problem of a release document.
type parser struct {
	origin manifest.Origin
	err    error
}

func (p *parser) fail(field, reason string) {
	if p.err == nil {
		p.err = &manifest.Error{Origin: p.origin, Field: field, Reason: reason}
	}
}

// known refuses the keys of m that are not in fields.
func (p *parser) known(m map[string]any, at string, fields []string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(fields, k) {
			field := k
			if at != "" {
				field = at + "." + k
			}
			p.fail(field, "is not a field of a "+manifest.ChartReleaseKind+" (known: "+strings.Join(fields, ", ")+")")
		}
	}
}

// mapAt returns the map at m[key], at being the path of m; nil when it
// is absent.
func (p *parser) mapAt(m map[string]any, at, key string, required bool) map[string]any {
	field := key
	if at != "" {
		field = at + "." + key
	}
	raw, ok := m[key]
	if !ok || raw == nil {
		if required {
			p.fail(field, "is required")
		}
		return nil
	}
	v, ok := raw.(map[string]any)
	if !ok {
		p.fail(field, "must be a map")
		return nil
	}
	return v
}

// str returns the string at m[key], at is the path of m.
func (p *parser) str(m map[string]any, at, key string, required bool) string {
	raw, ok := m[key]
	if !ok || raw == nil {
		if required {
			p.fail(at+"."+key, "is required")
		}
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		p.fail(at+"."+key, "must be a string")
		return ""
	}
	if s == "" && required {
		p.fail(at+"."+key, "is required")
	}
	return s
}

// boolean returns the boolean at m[key], false when absent.
func (p *parser) boolean(m map[string]any, at, key string) bool {
	raw, ok := m[key]
	if !ok || raw == nil {
		return false
	}
	b, ok := raw.(bool)
	if !ok {
		p.fail(at+"."+key, "must be true or false")
	}
	return b
}

// strList returns the strings of the list at m[key].
func (p *parser) strList(m map[string]any, at, key string) []string {
	raw, ok := m[key]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		p.fail(at+"."+key, "must be a list of strings")
		return nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok || s == "" {
			p.fail(fmt.Sprintf("%s.%s[%d]", at, key, i), "must be a non-empty string")
			continue
		}
		out = append(out, s)
	}
	return out
}

// repoPath resolves rel from dir as a slash path of the repository,
// refusing one that leaves it or is absolute.
func (p *parser) repoPath(dir, rel, field string) string {
	if path.IsAbs(rel) || strings.Contains(rel, "\\") {
		p.fail(field, fmt.Sprintf("%q must be a path relative to the release file", rel))
		return ""
	}
	joined := path.Clean(path.Join(dir, rel))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		p.fail(field, fmt.Sprintf("%q leaves the repository", rel))
		return ""
	}
	return joined
}
