package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Config wires a Renderer.
type Config struct {
	// Namespace is the release namespace of a release that names none,
	// and of a chart directory rendered on its own: the sync's default
	// namespace.
	Namespace string
	// Limits bound what fetching and loading one chart may read.
	Limits Limits
	// Manifest bounds the documents of a render, as for plain files.
	Manifest manifest.Limits
	// CacheDir, when set, keeps fetched chart archives by digest across
	// restarts; without it they are kept in memory only.
	CacheDir string
	// HTTP is the client for chart repositories and registries; nil uses
	// a client with a 30 s timeout.
	HTTP *http.Client
	// Credentials answers the credentials of a chart repository or
	// registry host; nil sends none.
	Credentials *Credentials
	// VerifyKeys, when set, are the cosign public keys every chart from an
	// OCI registry must be signed with (see artifact.Verify); a chart
	// unsigned or signed by another key fails its commit. Charts from
	// HTTP repositories carry no such signature and are not checked.
	VerifyKeys *artifact.Keys
	// Discovery gives the cluster's version and API versions, which
	// templates see as .Capabilities; nil renders with Helm's defaults.
	Discovery discovery.DiscoveryInterface
	// REST is the daemon's own client configuration, used read-only to
	// answer lookup for the releases that turn it on; nil answers lookup
	// with nothing.
	REST *rest.Config
	// Log receives the fetches.
	Log *slog.Logger
	// Now is the clock, for the time a repository became unreachable.
	Now func() time.Time
}

// Renderer renders chart releases for the sync; it implements
// manifest.Charts. It keeps the last render of each release, by a digest
// of everything the render read, so that a commit that leaves a chart's
// inputs alone renders nothing again (and a chart with random values keeps
// them); and the archives it fetched, by digest. It is safe for one sync
// at a time.
type Renderer struct {
	cfg   Config
	fetch *fetcher

	mu sync.Mutex
	// renders are the outputs kept from the last sync and this one, by
	// input digest; older ones are dropped by StartSync.
	renders, previous map[string]*manifest.ChartOutput
	// caps are the cluster's capabilities, read once per sync.
	caps *common.Capabilities
}

var _ manifest.Charts = (*Renderer)(nil)

// New returns a Renderer.
func New(cfg Config) *Renderer {
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Renderer{cfg: cfg, fetch: newFetcher(cfg), renders: map[string]*manifest.ChartOutput{}}
}

// StartSync begins a sync: the capabilities are read again when a chart
// needs rendering, and the renders kept are those the last sync used.
func (r *Renderer) StartSync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caps = nil
	r.previous, r.renders = r.renders, map[string]*manifest.ChartOutput{}
}

// RenderChart renders one chart release; see manifest.Charts.
func (r *Renderer) RenderChart(ctx context.Context, fsys fs.FS, src manifest.ChartSource) (*manifest.ChartOutput, error) {
	rel, err := r.release(src)
	if err != nil {
		return nil, err
	}
	in, err := r.inputs(ctx, fsys, rel)
	if err != nil {
		return nil, err
	}
	key := in.key()
	r.mu.Lock()
	kept := r.renders[key]
	if kept == nil && !rel.Lookup {
		kept = r.previous[key]
	}
	r.mu.Unlock()
	if kept != nil {
		r.keep(key, kept)
		return copyOutput(kept), nil
	}
	out, err := r.render(rel, in)
	if err != nil {
		return nil, err
	}
	if !rel.Lookup {
		r.keep(key, out)
	}
	return copyOutput(out), nil
}

// keep records a render for this sync and the next.
func (r *Renderer) keep(key string, out *manifest.ChartOutput) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.renders[key] = out
}

// release reads a release document, or makes the release of a chart
// directory rendered on its own.
func (r *Renderer) release(src manifest.ChartSource) (*Release, error) {
	if src.Release != nil {
		return ParseRelease(src.Origin, src.Release, r.cfg.Namespace)
	}
	return &Release{Name: path.Base(src.Dir), Namespace: r.cfg.Namespace, Path: src.Dir, CRDs: CRDCreate, HookTimeout: DefaultHookTimeout, Origin: src.Origin}, nil
}

// inputs is everything one render reads.
type inputs struct {
	rel   *Release
	chart *chart.Chart
	// chartDigest is the digest of the chart's archive, or of its files
	// in Git, fetched dependencies included.
	chartDigest string
	// source is where the chart came from: its Git directory or its
	// repository.
	source string
	values map[string]any
	// valuesRaw are the values files and the inline values, for the key.
	valuesRaw [][]byte
}

// key is the digest of the inputs (the release, the chart, the values),
// which the renders are kept by.
func (in *inputs) key() string {
	h := sha256.New()
	spec, _ := json.Marshal(in.rel)
	h.Write(spec)
	h.Write([]byte(in.chartDigest))
	for _, v := range in.valuesRaw {
		fmt.Fprintf(h, "%d:", len(v))
		h.Write(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inputs loads the chart, its dependencies and the values of a release.
func (r *Renderer) inputs(ctx context.Context, fsys fs.FS, rel *Release) (*inputs, error) {
	in := &inputs{rel: rel}
	if rel.Path != "" {
		c, files, err := loadGitChart(fsys, rel.Path, r.cfg.Limits)
		if err != nil {
			return nil, chartError(rel, err)
		}
		in.chart, in.source, in.chartDigest = c, rel.Path, filesDigest(files)
	} else {
		c, digest, err := r.fetch.chart(ctx, rel.Repo, rel.Chart, rel.Version, rel.Digest, rel.PlainHTTP)
		if err != nil {
			return nil, chartError(rel, err)
		}
		in.chart, in.chartDigest, in.source = c, digest, rel.Repo
	}
	vals := map[string]any{}
	for i, f := range rel.ValuesFiles {
		data, err := fs.ReadFile(fsys, f)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &manifest.Error{Origin: rel.Origin, Field: fmt.Sprintf("spec.valuesFiles[%d]", i), Reason: fmt.Sprintf("values file %s does not exist in the commit", f)}
		}
		if err != nil {
			return nil, fmt.Errorf("read values file %s: %w", f, err)
		}
		// The file's own limits (aliases, depth) are checked as for any
		// manifest before Helm reads it.
		if _, err := manifest.ParseDocuments(f, data, r.cfg.Manifest); err != nil {
			return nil, err
		}
		v, err := common.ReadValues(data)
		if err != nil {
			return nil, &manifest.Error{Origin: manifest.Origin{File: f}, Reason: "values of chart " + chartName(rel, in.chart) + ": " + err.Error()}
		}
		in.valuesRaw = append(in.valuesRaw, data)
		vals = util.MergeTables(v, vals)
	}
	if rel.Values != nil {
		inline, err := json.Marshal(rel.Values)
		if err != nil {
			return nil, &manifest.Error{Origin: rel.Origin, Field: "spec.values", Reason: err.Error()}
		}
		in.valuesRaw = append(in.valuesRaw, inline)
		vals = util.MergeTables(copyValues(rel.Values), vals)
	}
	in.values = vals
	if err := r.dependencies(ctx, fsys, rel, in); err != nil {
		return nil, err
	}
	return in, nil
}

// filesDigest is a digest of a chart's files.
func filesDigest(files []*archive.BufferedFile) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// copyValues returns a deep copy of values, which Helm's merges change in
// place.
func copyValues(v map[string]any) map[string]any {
	data, _ := json.Marshal(v)
	out := map[string]any{}
	_ = json.Unmarshal(data, &out)
	return out
}

// render renders the chart of a release twice, to find templates that do
// not render the same each time, and splits the output.
func (r *Renderer) render(rel *Release, in *inputs) (*manifest.ChartOutput, error) {
	caps, err := r.capabilities()
	if err != nil {
		return nil, fmt.Errorf("read the cluster's capabilities for chart %s: %w", chartName(rel, in.chart), err)
	}
	first, err := r.renderOnce(rel, in, caps)
	if err != nil {
		return nil, err
	}
	second, err := r.renderOnce(rel, in, caps)
	if err != nil {
		return nil, err
	}
	out, err := r.split(rel, in, first)
	if err != nil {
		return nil, err
	}
	out.Warnings = append(out.Warnings, nondeterminism(rel, in.chart, first, second)...)
	return out, nil
}

// renderOnce runs Helm's engine once; it returns the rendered templates by
// name.
func (r *Renderer) renderOnce(rel *Release, in *inputs, caps *common.Capabilities) (files map[string]string, err error) {
	defer func() {
		if p := recover(); p != nil {
			files, err = nil, &manifest.Error{Origin: rel.Origin, Reason: fmt.Sprintf("chart %s: the template engine failed: %v", chartName(rel, in.chart), p)}
		}
	}()
	// Helm changes the chart while it works out dependencies; each render
	// works on its own copy.
	c := copyChart(in.chart)
	vals := copyValues(in.values)
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, &manifest.Error{Origin: rel.Origin, Reason: fmt.Sprintf("chart %s: dependencies: %v", chartName(rel, c), err)}
	}
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	top, err := util.ToRenderValues(c, vals, opts, caps)
	if err != nil {
		return nil, &manifest.Error{Origin: rel.Origin, Field: valuesField(rel), Reason: fmt.Sprintf("chart %s: %v", chartName(rel, c), err)}
	}
	e := engine.Engine{}
	if rel.Lookup && r.cfg.REST != nil {
		e = engine.New(readOnly(r.cfg.REST))
	}
	files, err = e.Render(c, top)
	if err != nil {
		return nil, &manifest.Error{Origin: rel.Origin, Reason: fmt.Sprintf("chart %s: render: %v", chartName(rel, c), err)}
	}
	crds := map[string]string{}
	if rel.CRDs != CRDSkip {
		for _, crd := range c.CRDObjects() {
			crds[crd.Filename] = string(crd.File.Data)
		}
	}
	for name, data := range crds {
		files[crdPrefix+name] = data
	}
	return files, nil
}

// crdPrefix marks the files of crds/ among the rendered templates.
const crdPrefix = "crds:"

// valuesField names the release field the values come from.
func valuesField(rel *Release) string {
	if rel.Origin.File == "" || len(rel.ValuesFiles)+len(rel.Values) == 0 {
		return ""
	}
	return "spec.values"
}

// chartName names a release's chart for messages: "web (podinfo 6.5.4)".
func chartName(rel *Release, c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		if rel.Chart != "" {
			return fmt.Sprintf("%s (%s %s)", rel.Name, rel.Chart, rel.Version)
		}
		return fmt.Sprintf("%s (%s)", rel.Name, rel.Path)
	}
	return fmt.Sprintf("%s (%s %s)", rel.Name, c.Metadata.Name, c.Metadata.Version)
}

// chartError makes a loading or fetching error name the release: bad
// input (an archive that leaves its folder, a chart over the limits, a
// version the repository does not have) as a *manifest.Error of the
// release document.
func chartError(rel *Release, err error) error {
	var me *manifest.Error
	if errors.As(err, &me) && me.Origin.File != "" {
		return err
	}
	var unreachable *UnreachableError
	if errors.As(err, &unreachable) {
		return fmt.Errorf("%s: chart %s: %w", rel.Origin, chartName(rel, nil), err)
	}
	field := "spec.path"
	if rel.Path == "" {
		field = "spec.chart"
	}
	if rel.Origin.File == "" || strings.HasSuffix(rel.Origin.File, "/Chart.yaml") || rel.Origin.File == "Chart.yaml" {
		field = ""
	}
	reason := err.Error()
	if me != nil {
		reason = me.Reason
	}
	return &manifest.Error{Origin: rel.Origin, Field: field, Reason: fmt.Sprintf("chart %s: %s", chartName(rel, nil), reason)}
}

// capabilities reads the cluster's version and API versions once per
// sync.
func (r *Renderer) capabilities() (*common.Capabilities, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.caps != nil {
		return r.caps, nil
	}
	caps := common.DefaultCapabilities.Copy()
	if r.cfg.Discovery == nil {
		r.caps = caps
		return caps, nil
	}
	v, err := r.cfg.Discovery.ServerVersion()
	if err != nil {
		return nil, err
	}
	kv, err := common.ParseKubeVersion(v.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("parse the cluster's version %q: %w", v.GitVersion, err)
	}
	caps.KubeVersion = *kv
	_, lists, err := r.cfg.Discovery.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	versions := common.VersionSet{}
	for _, l := range lists {
		versions = append(versions, l.GroupVersion)
		for _, res := range l.APIResources {
			if !strings.Contains(res.Name, "/") {
				versions = append(versions, l.GroupVersion+"/"+res.Kind)
			}
		}
	}
	slices.Sort(versions)
	caps.APIVersions = slices.Compact(versions)
	r.caps = caps
	return caps, nil
}

// readOnly returns a copy of cfg whose requests are refused unless they
// only read, for lookup.
func readOnly(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return readOnlyTransport{next: rt}
	})
	return c
}

// readOnlyTransport refuses every request but GET.
type readOnlyTransport struct{ next http.RoundTripper }

func (t readOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("lookup may only read: %s %s refused", req.Method, req.URL.Path)
	}
	return t.next.RoundTrip(req)
}

// copyChart returns a copy of c deep enough for a render: Helm's
// dependency processing changes the chart's metadata, values and list of
// dependencies.
func copyChart(c *chart.Chart) *chart.Chart {
	cp := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dc := *d
			md.Dependencies[i] = &dc
		}
		cp.Metadata = &md
	}
	cp.Values = copyValues(c.Values)
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, copyChart(d))
	}
	cp.SetDependencies(deps...)
	return &cp
}

// copyOutput returns a copy of a render whose objects the sync may change
// (Validate sets namespaces, the applier labels).
func copyOutput(out *manifest.ChartOutput) *manifest.ChartOutput {
	cp := *out
	cp.Objects = make([]manifest.Object, len(out.Objects))
	for i, o := range out.Objects {
		o.Obj = o.Obj.DeepCopy()
		cp.Objects[i] = o
	}
	cp.Hooks = make([]manifest.Hook, len(out.Hooks))
	for i, h := range out.Hooks {
		h.Obj = h.Obj.DeepCopy()
		cp.Hooks[i] = h
	}
	return &cp
}
