package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Limits bound what one render may read. Zero or negative values take the
// defaults.
type Limits struct {
	// MaxDocuments bounds the YAML documents and List items of the whole
	// render, kustomize output included; default DefaultMaxDocuments.
	MaxDocuments int
	// MaxDepth bounds how deeply maps and lists nest in one document,
	// counting through aliases; default DefaultMaxDepth.
	MaxDepth int
	// MaxAliasNodes bounds the values that YAML aliases may add to one
	// document once expanded, the guard against "billion laughs" alias
	// bombs; default DefaultMaxAliasNodes.
	MaxAliasNodes int
}

// withDefaults fills in the defaults.
func (l Limits) withDefaults() Limits {
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = DefaultMaxDocuments
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxAliasNodes <= 0 {
		l.MaxAliasNodes = DefaultMaxAliasNodes
	}
	return l
}

// Render reads every *.yaml, *.yml and *.json file under dir ("." is the
// root of fsys), recursively and in lexical order, and returns the objects
// they hold in that order.
//
// A YAML file may hold many documents; a JSON file holds one object. Empty
// documents are skipped, and a v1 List is expanded into its items. A
// directory that holds a kustomization (kustomization.yaml,
// kustomization.yml or Kustomization) is built with kustomize instead of
// being read file by file, and its subdirectories are not read on their
// own; the build reads only fsys, and a kustomization that refers to a
// remote resource is refused. Files and directories whose names start with
// "." are skipped, as are files of other types.
//
// Render does not check the objects beyond their being objects: that is
// Validate's work. An empty tree gives an empty slice and no error. Errors
// about the input are *Error, joined when several files are at fault; an
// error from fsys stops the render and is returned wrapped, naming the file.
func Render(fsys fs.FS, dir string, limits Limits) ([]Object, error) {
	out, err := RenderTree(context.Background(), fsys, dir, limits, nil)
	if err != nil {
		return nil, err
	}
	return out.Objects, nil
}

// RenderTree is Render, with the Helm charts of the tree rendered by
// charts: a directory holding a Chart.yaml is a chart (its files are not
// read as manifests), and a document of kind ChartReleaseKind in a plain
// file declares a chart release. Charts are rendered once the walk has
// ended, and a chart directory that a release document renders is not
// rendered again on its own. With a nil charts, a tree holding a chart is
// an error.
func RenderTree(ctx context.Context, fsys fs.FS, dir string, limits Limits, charts Charts) (*Rendered, error) {
	r := &renderer{fsys: fsys, lim: limits.withDefaults(), objs: []Object{}, chartRenderer: charts}
	root := path.Clean(dir)
	if !fs.ValidPath(root) {
		return nil, &Error{Origin: Origin{File: dir}, Reason: "the path is not a directory inside the repository"}
	}
	err := fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if name != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return r.directory(name)
		}
		if !isManifest(d.Name()) {
			return nil
		}
		return r.file(name)
	})
	if err != nil {
		r.errs = append(r.errs, err)
	} else {
		r.renderCharts(ctx)
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return &Rendered{Objects: r.objs, Charts: r.rendered}, nil
}

// renderer holds the state of one Render.
type renderer struct {
	fsys fs.FS
	lim  Limits
	objs []Object
	// errs collects the files' errors, so that one render reports them all.
	errs []error
	// docs counts the documents and List items read so far.
	docs int
	// chartRenderer renders the charts; nil when the render reads none.
	chartRenderer Charts
	// charts are the charts found by the walk, rendered once it ends.
	charts []ChartSource
	// rendered are the charts rendered.
	rendered []*ChartOutput
}

// isManifest reports whether a file name has an extension Render reads.
func isManifest(name string) bool {
	for _, ext := range manifestExtensions {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// directory notes dir for a chart render if it holds a Chart.yaml, or
// builds it with kustomize if it is a kustomization, and then tells the
// walk to skip what is inside.
func (r *renderer) directory(dir string) error {
	isChart, err := chartDir(r.fsys, dir)
	if err != nil {
		return err
	}
	if isChart {
		r.charts = append(r.charts, ChartSource{Dir: dir, Origin: Origin{File: path.Join(dir, chartFile)}})
		return fs.SkipDir
	}
	kfile, err := findKustomization(r.fsys, dir)
	if err != nil || kfile == "" {
		return err
	}
	if err := r.kustomization(dir, kfile); err != nil {
		if err := r.keep(err); err != nil {
			return err
		}
	}
	return fs.SkipDir
}

// findKustomization returns the path of the kustomization file in dir, or ""
// when dir is not a kustomization.
func findKustomization(fsys fs.FS, dir string) (string, error) {
	for _, name := range kustomizationFiles {
		file := path.Join(dir, name)
		info, err := fs.Stat(fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", file, err)
		}
		if !info.IsDir() {
			return file, nil
		}
	}
	return "", nil
}

// file reads the objects of one manifest file.
func (r *renderer) file(name string) error {
	data, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	isJSON := strings.HasSuffix(name, ".json")
	err = documents(name, data, r.lim, func(doc int, value map[string]any) error {
		if isJSON && doc > 1 {
			return &Error{Origin: Origin{File: name, Doc: doc}, Reason: "a JSON file holds a single object or List"}
		}
		if isChartRelease(value) {
			r.charts = append(r.charts, ChartSource{Release: value, Origin: Origin{File: name, Doc: doc}})
			return r.count(Origin{File: name, Doc: doc})
		}
		return r.add(Origin{File: name, Doc: doc}, value)
	})
	return r.keep(err)
}

// keep records an error about the input, so that the walk goes on to find
// the others; it passes on the errors that stop the render: those of the
// file system, and going over the document limit.
func (r *renderer) keep(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && r.docs <= r.lim.MaxDocuments {
		r.errs = append(r.errs, err)
		return nil
	}
	return err
}

// add counts one document and appends its objects: none for an empty
// document, the items of a List, or the document itself.
func (r *renderer) add(origin Origin, value map[string]any) error {
	if err := r.count(origin); err != nil {
		return err
	}
	if value == nil {
		return nil
	}
	if value["kind"] != kindList || value["apiVersion"] != listAPIVersion {
		r.objs = append(r.objs, Object{Obj: &unstructured.Unstructured{Object: value}, Origin: origin})
		return nil
	}
	raw, ok := value["items"]
	if !ok || raw == nil {
		return nil
	}
	items, ok := raw.([]any)
	if !ok {
		return &Error{Origin: origin, Field: "items", Reason: "must be a list"}
	}
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			return &Error{Origin: origin, Field: indexField("items", i), Reason: "must be an object (a map)"}
		}
		itemOrigin := origin
		itemOrigin.Item = i + 1
		if err := r.count(itemOrigin); err != nil {
			return err
		}
		r.objs = append(r.objs, Object{Obj: &unstructured.Unstructured{Object: obj}, Origin: itemOrigin})
	}
	return nil
}

// count counts one document or List item against MaxDocuments.
func (r *renderer) count(origin Origin) error {
	r.docs++
	if r.docs > r.lim.MaxDocuments {
		return &Error{Origin: origin, Reason: fmt.Sprintf("the tree holds more than %d documents", r.lim.MaxDocuments)}
	}
	return nil
}
