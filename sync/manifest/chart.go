package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"time"
)

// Charts renders the Helm charts of a tree: the directories holding a
// Chart.yaml and the chart release documents (ChartAPIVersion,
// ChartReleaseKind). Package helm implements it; Render reads no chart
// without one.
//
// RenderChart renders one chart. For a chart directory found by the walk,
// src.Dir names it and src.Release is nil: it is rendered as `helm
// template` would, with the chart's own values, the directory's name as the
// release name and the sync's default namespace. For a release document,
// src.Release holds the document and src.Origin where it was read. Errors
// about the input are *Error naming the release file or the chart's files;
// other errors (a chart repository that cannot be reached) are returned
// wrapped, naming the chart.
type Charts interface {
	RenderChart(ctx context.Context, fsys fs.FS, src ChartSource) (*ChartOutput, error)
}

// ChartSource is one chart for Charts to render.
type ChartSource struct {
	// Dir is the slash path of a chart directory in the repository, for a
	// chart found by the walk; empty for a release document.
	Dir string
	// Release is the release document, nil for a chart directory.
	Release map[string]any
	// Origin is where the release document was read; for a chart
	// directory, the directory's Chart.yaml.
	Origin Origin
}

// ChartOutput is what one chart release rendered.
type ChartOutput struct {
	// Release names the release, the chart and its version.
	Release ChartRelease
	// Objects are the rendered objects, hooks and tests left out, in the
	// order Helm installs them; the CustomResourceDefinitions of the
	// chart's crds/ folders are among them unless the release skips them.
	Objects []Object
	// Hooks are the rendered Helm hooks the sync runs around the apply,
	// test hooks left out.
	Hooks []Hook
	// ValuesFiles are the files of the repository the release read as
	// values: they are not read as manifests.
	ValuesFiles []string
	// GitDir is the chart directory in the repository a release document
	// renders, so that the walk does not render it a second time on its
	// own; empty for a chart fetched from a repository.
	GitDir string
	// Warnings are findings that do not stop the sync, such as a template
	// that renders differently each time; the sync's status shows them.
	Warnings []string
	// HookTimeout bounds how long a sync waits for each hook.
	HookTimeout time.Duration
}

// Key identifies the release: "namespace/name".
func (r ChartRelease) Key() string { return r.Namespace + "/" + r.Name }

// ChartRelease identifies a chart release for status messages and hooks.
type ChartRelease struct {
	// Name and Namespace are the release's.
	Name, Namespace string
	// Chart and Version are the chart's name and version, from its
	// Chart.yaml.
	Chart, Version string
	// Source is where the chart came from: the Git directory, or the
	// repository URL.
	Source string
	// File is the release document's file, or the chart directory.
	File string
}

// String names the release for people: "web (podinfo 6.5.4)".
func (r ChartRelease) String() string {
	return fmt.Sprintf("%s (%s %s)", r.Name, r.Chart, r.Version)
}

// Hook is one rendered Helm hook: an object applied around the sync's
// apply at the events it names, rather than kept like the others.
type Hook struct {
	Object
	// Events are the hook's Helm events among HookPreInstall,
	// HookPostInstall, HookPreUpgrade and HookPostUpgrade; the others
	// (delete and rollback hooks) are not run by a sync.
	Events []string
	// Weight orders the hooks of one event, lowest first.
	Weight int
	// DeletePolicies are the hook's Helm delete policies:
	// before-hook-creation (the default when none is given),
	// hook-succeeded and hook-failed.
	DeletePolicies []string
}

// Rendered is what RenderTree read from a tree.
type Rendered struct {
	// Objects are the plain objects and the objects of every chart, in the
	// order read (the charts after the files of the walk).
	Objects []Object
	// Charts are the chart releases rendered, each with its own objects
	// and hooks.
	Charts []*ChartOutput
}

// chartDir reports whether dir holds a Chart.yaml.
func chartDir(fsys fs.FS, dir string) (bool, error) {
	info, err := fs.Stat(fsys, path.Join(dir, chartFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path.Join(dir, chartFile), err)
	}
	return !info.IsDir(), nil
}

// isChartRelease reports whether a document is a chart release document.
func isChartRelease(value map[string]any) bool {
	return value["apiVersion"] == ChartAPIVersion && value["kind"] == ChartReleaseKind
}

// renderCharts renders the charts the walk found once it has ended, so
// that every release document is known: release documents first, then the
// chart directories that no release renders. The files that releases read
// as values are then taken out of the plain objects.
func (r *renderer) renderCharts(ctx context.Context) {
	if len(r.charts) == 0 {
		return
	}
	if r.chartRenderer == nil {
		for _, src := range r.charts {
			r.errs = append(r.errs, &Error{Origin: src.Origin, Reason: "holds a Helm chart, and this render reads none"})
		}
		return
	}
	var dirs []ChartSource
	used := map[string]bool{}
	for _, src := range r.charts {
		if src.Release == nil {
			dirs = append(dirs, src)
			continue
		}
		out := r.renderChart(ctx, src)
		if out != nil && out.GitDir != "" {
			used[out.GitDir] = true
		}
	}
	for _, src := range dirs {
		if !used[src.Dir] {
			r.renderChart(ctx, src)
		}
	}
	values := map[string]bool{}
	for _, out := range r.rendered {
		for _, f := range out.ValuesFiles {
			values[f] = true
		}
	}
	if len(values) > 0 {
		r.objs = slices.DeleteFunc(r.objs, func(o Object) bool { return o.Release == nil && values[o.Origin.File] })
	}
}

// renderChart renders one chart and adds its objects; a failure is kept
// with the render's other errors.
func (r *renderer) renderChart(ctx context.Context, src ChartSource) *ChartOutput {
	out, err := r.chartRenderer.RenderChart(ctx, r.fsys, src)
	if err != nil {
		r.errs = append(r.errs, err)
		return nil
	}
	r.docs += len(out.Objects) + len(out.Hooks)
	if r.docs > r.lim.MaxDocuments {
		r.errs = append(r.errs, &Error{Origin: src.Origin, Reason: fmt.Sprintf("the tree holds more than %d documents, chart %s included", r.lim.MaxDocuments, out.Release)})
		return nil
	}
	r.objs = append(r.objs, out.Objects...)
	r.rendered = append(r.rendered, out)
	return out
}

// ParseDocuments reads data, a stream of YAML documents, into objects
// whose origin is file and the document's 1-based index, within lim, as
// Render reads a manifest file: empty documents are skipped and a v1 List
// is expanded. Charts use it to read what their templates rendered.
func ParseDocuments(file string, data []byte, lim Limits) ([]Object, error) {
	r := &renderer{lim: lim.withDefaults(), objs: []Object{}}
	err := documents(file, data, r.lim, func(doc int, value map[string]any) error {
		return r.add(Origin{File: file, Doc: doc}, value)
	})
	if err != nil {
		return nil, err
	}
	return r.objs, nil
}

// ChartsOf returns the names of the chart releases of a render, sorted:
// "web (podinfo 6.5.4)".
func ChartsOf(rendered []*ChartOutput) []string {
	names := make([]string, 0, len(rendered))
	for _, c := range rendered {
		names = append(names, c.Release.String())
	}
	slices.Sort(names)
	return names
}
