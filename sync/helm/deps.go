package helm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// dependencies adds to the chart of a release the dependencies its
// Chart.yaml names and its charts/ folder does not hold: a file://
// dependency from the repository, the others fetched from their
// repository at the version Chart.lock pins. A dependency that its
// condition or tags disable is not fetched.
func (r *Renderer) dependencies(ctx context.Context, fsys fs.FS, rel *Release, in *inputs) error {
	c := in.chart
	if c.Metadata == nil || len(c.Metadata.Dependencies) == 0 {
		return nil
	}
	vendored := map[string]bool{}
	for _, d := range c.Dependencies() {
		vendored[d.Name()] = true
	}
	vals, err := util.CoalesceValues(c, copyValues(in.values))
	if err != nil {
		return &manifest.Error{Origin: rel.Origin, Field: valuesField(rel), Reason: fmt.Sprintf("chart %s: %v", chartName(rel, c), err)}
	}
	origin := rel.Origin
	if rel.Path != "" {
		origin = manifest.Origin{File: path.Join(rel.Path, "Chart.yaml")}
	}
	fetched := map[string]bool{}
	for i, dep := range c.Metadata.Dependencies {
		if dep == nil || vendored[dep.Name] || !enabled(dep, vals) {
			continue
		}
		field := fmt.Sprintf("dependencies[%d]", i)
		fail := func(reason string) error {
			return &manifest.Error{Origin: origin, Field: field, Reason: fmt.Sprintf("chart %s: dependency %s: %s", chartName(rel, c), dep.Name, reason)}
		}
		key := dep.Repository + "\x00" + dep.Name
		if fetched[key] {
			continue // a second use of one chart, by alias: Helm copies it
		}
		var sub *chart.Chart
		switch {
		case strings.HasPrefix(dep.Repository, "file://"):
			if rel.Path == "" {
				return fail("a file:// dependency of a chart from a repository cannot be read: vendor it under charts/")
			}
			dir := path.Clean(path.Join(rel.Path, strings.TrimPrefix(dep.Repository, "file://")))
			if !fs.ValidPath(dir) {
				return fail(fmt.Sprintf("%s leaves the repository", dep.Repository))
			}
			loaded, files, err := loadGitChart(fsys, dir, r.cfg.Limits)
			if err != nil {
				return fail(err.Error())
			}
			sub = loaded
			in.chartDigest += "+" + filesDigest(files)
		case strings.HasPrefix(dep.Repository, "https://"), strings.HasPrefix(dep.Repository, "http://"), strings.HasPrefix(dep.Repository, "oci://"):
			version, err := lockedVersion(c, dep)
			if err != nil {
				return fail(err.Error())
			}
			loaded, digest, err := r.fetch.chart(ctx, dep.Repository, dep.Name, version, "", rel.PlainHTTP)
			if err != nil {
				if me, ok := err.(*manifest.Error); ok {
					return fail(me.Reason)
				}
				return fmt.Errorf("%s: chart %s: dependency %s: %w", origin, chartName(rel, c), dep.Name, err)
			}
			sub = loaded
			in.chartDigest += "+" + digest
		default:
			return fail(fmt.Sprintf("is not under charts/ and its repository %q cannot be fetched: use an https://, oci:// or file:// repository, or vendor it (helm dependency build)", dep.Repository))
		}
		fetched[key] = true
		c.AddDependency(sub)
	}
	return nil
}

// lockedVersion returns the version Chart.lock pins for a dependency,
// checking it against the range in Chart.yaml.
func lockedVersion(c *chart.Chart, dep *chart.Dependency) (string, error) {
	if c.Lock == nil {
		return "", fmt.Errorf("is not vendored under charts/ and the chart has no Chart.lock pinning its version (run helm dependency update and commit Chart.lock)")
	}
	for _, l := range c.Lock.Dependencies {
		if l == nil || l.Name != dep.Name || l.Repository != dep.Repository {
			continue
		}
		v, err := semver.NewVersion(l.Version)
		if err != nil {
			return "", fmt.Errorf("the version %q that Chart.lock pins is not a version", l.Version)
		}
		if dep.Version != "" {
			con, err := semver.NewConstraint(dep.Version)
			if err != nil {
				return "", fmt.Errorf("version %q is not a version range", dep.Version)
			}
			if !con.Check(v) {
				return "", fmt.Errorf("the Chart.lock pins %s, outside the range %s of Chart.yaml: Chart.lock is out of date (run helm dependency update)", l.Version, dep.Version)
			}
		}
		return l.Version, nil
	}
	return "", errors.New("the chart's Chart.lock does not pin it (run helm dependency update and commit Chart.lock)")
}

// enabled reports whether a dependency's condition and tags leave it on,
// as Helm decides: the first condition path that holds a boolean decides;
// without one, the tags do (on when any is true, off when all are false);
// without either, it is on.
func enabled(dep *chart.Dependency, vals common.Values) bool {
	if dep.Condition != "" {
		for _, p := range strings.Split(dep.Condition, ",") {
			v, err := vals.PathValue(strings.TrimSpace(p))
			if err != nil {
				continue
			}
			if b, ok := v.(bool); ok {
				return b
			}
		}
	}
	if len(dep.Tags) == 0 {
		return true
	}
	tags, _ := vals["tags"].(map[string]any)
	seen := false
	for _, t := range dep.Tags {
		if b, ok := tags[t].(bool); ok {
			if b {
				return true
			}
			seen = true
		}
	}
	return !seen
}
