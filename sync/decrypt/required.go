package decrypt

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// FieldRequired names the setting that makes encryption required, for
// messages: the flag and the declaration's field.
const FieldRequired = "--decryption-required, or decryption.required in a declaration"

// kustomizationFiles are the names of a kustomization file.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// isKustomization reports whether a file is a kustomization.
func isKustomization(name string) bool {
	base := path.Base(name)
	for _, k := range kustomizationFiles {
		if base == k {
			return true
		}
	}
	return false
}

// checkPlain holds a file that is not encrypted to Config.Required: a
// file a secretGenerator reads, or a manifest holding a v1 Secret, is
// refused (the files of Helm charts excepted); a kustomization's
// secretGenerators are noted, and their literals refused.
func (f *decryptFS) checkPlain(name string, data []byte) error {
	if !f.cfg.Required {
		return nil
	}
	if isKustomization(name) {
		return f.noteGenerators(name, data)
	}
	if kfile, ok := f.generated[name]; ok {
		return &Error{File: name, Reason: fmt.Sprintf("not SOPS-encrypted, and it is read by a secretGenerator of %s: this sync requires the Secrets in Git to be encrypted (%s)", kfile, FieldRequired)}
	}
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
	default:
		return nil
	}
	if f.inChart(path.Dir(name)) {
		return nil
	}
	objs, err := manifest.ParseDocuments(name, data, f.cfg.Limits)
	if err != nil {
		// Not a manifest the renderer can read: it says why itself.
		return nil
	}
	for _, o := range objs {
		if o.Obj.GetKind() == "Secret" && o.Obj.GetAPIVersion() == "v1" {
			return &Error{File: name, Reason: fmt.Sprintf("not SOPS-encrypted, and document %d is Secret %s: this sync requires the Secrets in Git to be encrypted (%s)", o.Origin.Doc, o.Obj.GetName(), FieldRequired)}
		}
	}
	return nil
}

// noteGenerators notes the files the secretGenerators of kfile read, so
// that they are refused unless encrypted, and refuses literals: their
// values would be in plain text in Git.
func (f *decryptFS) noteGenerators(kfile string, data []byte) error {
	objs, err := manifest.ParseDocuments(kfile, data, f.cfg.Limits)
	if err != nil || len(objs) != 1 {
		return nil // kustomize says what is wrong with it
	}
	gens, _ := objs[0].Obj.Object["secretGenerator"].([]any)
	dir := path.Dir(kfile)
	for i, g := range gens {
		gen, _ := g.(map[string]any)
		if lits, _ := gen["literals"].([]any); len(lits) > 0 {
			return &Error{File: kfile, Reason: fmt.Sprintf("field secretGenerator[%d].literals: values in plain text, and this sync requires the Secrets in Git to be encrypted (%s): move them to a SOPS-encrypted env file", i, FieldRequired)}
		}
		var inputs []string
		for _, field := range []string{"files", "envs"} {
			list, _ := gen[field].([]any)
			for _, item := range list {
				s, _ := item.(string)
				if _, p, ok := strings.Cut(s, "="); ok && field == "files" {
					s = p
				}
				inputs = append(inputs, s)
			}
		}
		if env, ok := gen["env"].(string); ok {
			inputs = append(inputs, env)
		}
		for _, in := range inputs {
			if in != "" {
				f.generated[path.Join(dir, in)] = kfile
			}
		}
	}
	return nil
}

// inChart reports whether dir is, or is inside, a directory holding a
// Chart.yaml: a chart's templates are not manifests to hold to Required.
func (f *decryptFS) inChart(dir string) bool {
	if is, ok := f.charts[dir]; ok {
		return is
	}
	info, err := fs.Stat(f.base, path.Join(dir, "Chart.yaml"))
	is := err == nil && !info.IsDir()
	if !is && dir != "." && dir != "/" {
		is = f.inChart(path.Dir(dir))
	}
	f.charts[dir] = is
	return is
}
