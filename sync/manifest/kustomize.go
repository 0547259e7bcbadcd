package manifest

import (
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
)

// kustomization builds the kustomization in dir, whose file is kfile, and
// adds the objects of its output, each with kfile as its origin and its
// 1-based position in the output as its document.
//
// The build sees only the repository, through repoFS; it may read bases
// elsewhere in the repository (../base) but no file outside a
// kustomization's own tree, as with the kustomize command's default load
// restrictions. Plugins and Helm are off. Remote resources would make
// kustomize fetch them, so the kustomizations are searched for them first
// and refused.
func (r *renderer) kustomization(dir, kfile string) error {
	if err := checkRemote(r.fsys, dir, r.lim); err != nil {
		return err
	}
	repo := newRepoFS(r.fsys, r.lim)
	out, err := runKustomize(repo, dir)
	if repo.err != nil {
		// kustomize may have reported this failure in its own words, or
		// swallowed it while probing; the cause is the one to report.
		return repo.err
	}
	if err != nil {
		secrets := collectSecrets(repo.reads, r.lim)
		return &Error{Origin: Origin{File: kfile}, Reason: "kustomize build: " + redact(err.Error(), secrets)}
	}
	yamlOut, err := out.AsYaml()
	if err != nil {
		return &Error{Origin: Origin{File: kfile}, Reason: "kustomize build: write the output: " + redact(err.Error(), collectSecrets(repo.reads, r.lim))}
	}
	return documents(kfile, yamlOut, r.lim, func(doc int, value map[string]any) error {
		if isChartRelease(value) {
			return &Error{Origin: Origin{File: kfile, Doc: doc}, Field: "kind", Reason: "a " + ChartReleaseKind + " is read from a plain file, not from a kustomization's output"}
		}
		return r.add(Origin{File: kfile, Doc: doc}, value)
	})
}

// runKustomize builds dir, turning a panic inside kustomize into an error
// so that no repository can bring the daemon down.
func runKustomize(repo *repoFS, dir string) (out resmap.ResMap, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the build failed unexpectedly: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	return krusty.MakeKustomizer(opts).Run(repo, absPath(path.Clean(dir)))
}

// absPath returns the absolute form, rooted at "/", of a slash path
// relative to the repository root.
func absPath(name string) string {
	if name == "." {
		return "/"
	}
	return "/" + name
}

// kustomizationAt reports whether dir is a kustomization, for the search of
// remote references; file system errors are left for the build to report.
func kustomizationAt(fsys fs.FS, dir string) (string, bool) {
	kfile, err := findKustomization(fsys, dir)
	return kfile, err == nil && kfile != ""
}
