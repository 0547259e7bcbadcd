package helm

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// runEvents are the hook events a sync runs.
var runEvents = []string{manifest.HookPreInstall, manifest.HookPostInstall, manifest.HookPreUpgrade, manifest.HookPostUpgrade}

// split turns what a chart rendered into the objects and hooks of the
// release, in template order; the CRDs of crds/ come first.
func (r *Renderer) split(rel *Release, in *inputs, files map[string]string) (*manifest.ChartOutput, error) {
	c := in.chart
	out := &manifest.ChartOutput{
		Release: manifest.ChartRelease{
			Name: rel.Name, Namespace: rel.Namespace,
			Chart: c.Metadata.Name, Version: c.Metadata.Version,
			Source: in.source, File: rel.Origin.File,
		},
		HookTimeout: rel.HookTimeout,
		ValuesFiles: rel.ValuesFiles,
	}
	if rel.Path != "" && rel.Origin.File != path.Join(rel.Path, "Chart.yaml") {
		out.GitDir = rel.Path
	}
	release := &out.Release
	prefix := fmt.Sprintf("%s (chart %s %s) ", rel.Origin.File, c.Metadata.Name, c.Metadata.Version)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)

	var objs []manifest.Object
	var stream strings.Builder
	for _, name := range names {
		data := files[name]
		if strings.HasSuffix(name, notesSuffix) || strings.TrimSpace(data) == "" {
			continue
		}
		if crd, ok := strings.CutPrefix(name, crdPrefix); ok {
			parsed, err := manifest.ParseDocuments(prefix+crd, []byte(data), r.cfg.Manifest)
			if err != nil {
				return nil, err
			}
			for _, o := range parsed {
				o.Release = release
				o.DefaultNamespace = rel.Namespace
				if rel.CRDs == CRDCreate {
					o.CreateOnly = true
					setAnnotation(o, contract.AnnotationPrune, contract.PruneDisabled)
				}
				out.Objects = append(out.Objects, o)
			}
			continue
		}
		if rel.PostRender != nil {
			fmt.Fprintf(&stream, "---\n# Source: %s\n%s\n", name, data)
			continue
		}
		parsed, err := manifest.ParseDocuments(prefix+name, []byte(data), r.cfg.Manifest)
		if err != nil {
			return nil, err
		}
		objs = append(objs, parsed...)
	}
	if rel.PostRender != nil && stream.Len() > 0 {
		post, err := r.postRender(rel, c, prefix, stream.String())
		if err != nil {
			return nil, err
		}
		objs = post
	}
	for _, o := range objs {
		o.Release = release
		o.DefaultNamespace = rel.Namespace
		hook, isHook, err := hookOf(o)
		if err != nil {
			return nil, err
		}
		if isHook {
			if len(hook.Events) > 0 {
				out.Hooks = append(out.Hooks, hook)
			}
			continue
		}
		out.Objects = append(out.Objects, o)
	}
	if len(out.Objects) == 0 && len(out.Hooks) == 0 {
		return nil, &manifest.Error{Origin: rel.Origin, Reason: fmt.Sprintf("chart %s renders no object: check its values (a chart that renders nothing is refused, as an empty path is)", chartName(rel, c))}
	}
	return out, nil
}

// setAnnotation sets an annotation on an object.
func setAnnotation(o manifest.Object, key, value string) {
	ann := o.Obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	o.Obj.SetAnnotations(ann)
}

// hookOf reads the hook annotations of an object: isHook is false for an
// ordinary object. A hook whose events are all left out by a sync (test,
// delete and rollback hooks) comes back with no Events.
func hookOf(o manifest.Object) (manifest.Hook, bool, error) {
	ann := o.Obj.GetAnnotations()
	events, ok := ann[annotationHook]
	if !ok {
		return manifest.Hook{}, false, nil
	}
	h := manifest.Hook{Object: o}
	for _, e := range strings.Split(events, ",") {
		e = strings.TrimSpace(e)
		if slices.Contains(runEvents, e) && !slices.Contains(h.Events, e) {
			h.Events = append(h.Events, e)
		}
		if e == eventTest || e == eventTestSuccess {
			// A test hook is run by people, never by a sync.
			return manifest.Hook{Object: o}, true, nil
		}
	}
	if w, ok := ann[annotationHookWeight]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil {
			return h, true, &manifest.Error{Origin: o.Origin, Field: `metadata.annotations["` + annotationHookWeight + `"]`, Reason: fmt.Sprintf("%q is not a whole number", w)}
		}
		h.Weight = n
	}
	for _, p := range strings.Split(ann[annotationHookDelete], ",") {
		p = strings.TrimSpace(p)
		switch p {
		case "":
		case DeleteBeforeCreation, DeleteSucceeded, DeleteFailed:
			h.DeletePolicies = append(h.DeletePolicies, p)
		default:
			return h, true, &manifest.Error{Origin: o.Origin, Field: `metadata.annotations["` + annotationHookDelete + `"]`, Reason: fmt.Sprintf("%q is not a delete policy: %s, %s or %s", p, DeleteBeforeCreation, DeleteSucceeded, DeleteFailed)}
		}
	}
	if len(h.DeletePolicies) == 0 {
		h.DeletePolicies = []string{DeleteBeforeCreation}
	}
	return h, true, nil
}

// postRender runs the release's kustomization over what the chart
// rendered, in memory.
func (r *Renderer) postRender(rel *Release, c *chart.Chart, prefix, rendered string) (objs []manifest.Object, err error) {
	origin := manifest.Origin{File: rel.Origin.File, Doc: rel.Origin.Doc}
	defer func() {
		if p := recover(); p != nil {
			objs, err = nil, &manifest.Error{Origin: origin, Field: "spec.postRender.kustomize", Reason: fmt.Sprintf("chart %s: the post-render failed unexpectedly: %v", chartName(rel, c), p)}
		}
	}()
	k := map[string]any{}
	for key, v := range rel.PostRender {
		k[key] = v
	}
	k["resources"] = []any{postRenderInput}
	kdata, err := yaml.Marshal(k)
	if err != nil {
		return nil, &manifest.Error{Origin: origin, Field: "spec.postRender.kustomize", Reason: err.Error()}
	}
	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile("/post/kustomization.yaml", kdata); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/post/"+postRenderInput, []byte(rendered)); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/post")
	if err != nil {
		return nil, &manifest.Error{Origin: origin, Field: "spec.postRender.kustomize", Reason: fmt.Sprintf("chart %s: post-render: %v", chartName(rel, c), err)}
	}
	data, err := res.AsYaml()
	if err != nil {
		return nil, &manifest.Error{Origin: origin, Field: "spec.postRender.kustomize", Reason: fmt.Sprintf("chart %s: post-render: %v", chartName(rel, c), err)}
	}
	return manifest.ParseDocuments(prefix+"post-render", data, r.cfg.Manifest)
}

// nondeterminism compares two renders of the same inputs and names, for
// each template that rendered differently, the first field that differs.
func nondeterminism(rel *Release, c *chart.Chart, first, second map[string]string) []string {
	var names []string
	for name, data := range first {
		if second[name] != data {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		where := "its text"
		a, errA := manifest.ParseDocuments(name, []byte(first[name]), manifest.Limits{})
		b, errB := manifest.ParseDocuments(name, []byte(second[name]), manifest.Limits{})
		if errA == nil && errB == nil && len(a) == len(b) {
			where = ""
			for i := range a {
				if isTestHook(a[i]) {
					continue // never run by a sync
				}
				if field := firstDifference("", a[i].Obj.Object, b[i].Obj.Object); field != "" {
					where = fmt.Sprintf("field %s of %s", field, a[i].Key())
					break
				}
			}
		}
		if where == "" {
			continue
		}
		out = append(out, fmt.Sprintf("chart %s: template %s renders differently each time (a random or time function), at %s; the render is kept until the chart, its values or the release change", chartName(rel, c), name, where))
	}
	return out
}

// firstDifference returns the path of the first field, in key order, that
// differs between a and b; "" when they are equal.
func firstDifference(at string, a, b any) string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := k
			if at != "" {
				child = at + "." + k
			}
			if d := firstDifference(child, am[k], bm[k]); d != "" {
				return d
			}
		}
		return ""
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			if d := firstDifference(fmt.Sprintf("%s[%d]", at, i), al[i], bl[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	if at == "" {
		return "(the whole object)"
	}
	return at
}

// isTestHook reports whether an object is a test hook, which a sync
// neither runs nor applies.
func isTestHook(o manifest.Object) bool {
	for _, e := range strings.Split(o.Obj.GetAnnotations()[annotationHook], ",") {
		if e = strings.TrimSpace(e); e == eventTest || e == eventTestSuccess {
			return true
		}
	}
	return false
}
