package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// checkRemote searches the kustomization in dir, the kustomizations it
// uses from the repository, and their generator and transformer
// configurations, for references that kustomize would fetch over the network
// (an http(s) URL, a git repository), and refuses the first one with an
// *Error naming the file and field. kustomize fetches such references itself
// and offers no way to turn that off, so nothing reaches it that holds one.
//
// The search is a superset of what kustomize treats as remote, made on
// kustomize's own reading of each document as well as on this package's:
// kustomize decodes through JSON, whose field names match whatever their
// case, and decodes !!binary values. Files it cannot read are left for the
// build to report.
func checkRemote(fsys fs.FS, dir string, lim Limits) error {
	c := &remoteCheck{fsys: fsys, lim: lim, seen: map[visit]bool{}}
	return c.kustomization(dir, false)
}

// remoteCheck holds the state of one search.
type remoteCheck struct {
	fsys fs.FS
	lim  Limits
	// seen holds the kustomizations searched, by directory and by whether
	// their resources are plugin configurations.
	seen map[visit]bool
}

// visit is one kustomization searched in one role.
type visit struct {
	dir     string
	plugins bool
}

// readings is one document read both ways, with its origin.
type readings struct {
	origin Origin
	values []map[string]any
}

// read parses data into documents, each read by this package and as
// kustomize reads it. A kustomization file is also read whole, as kustomize
// reads it, into its first document. Errors are those of the parser and the
// limits, as *Error.
func (c *remoteCheck) read(file string, data []byte, whole bool) ([]readings, error) {
	var docs []readings
	err := eachNode(file, data, c.lim, func(doc int, root *yaml.Node) error {
		r := readings{origin: Origin{File: file, Doc: doc}}
		if v, err := convertDocument(root); err == nil && v != nil {
			r.values = append(r.values, v)
		}
		if out, err := yaml.Marshal(root); err == nil {
			if v := kustomizeReading(out); v != nil {
				r.values = append(r.values, v)
			}
		}
		docs = append(docs, r)
		return nil
	})
	var pe *parseError
	if errors.As(err, &pe) {
		return nil, pe.err
	}
	if err != nil {
		return nil, err
	}
	if v := kustomizeReading(data); whole && v != nil && len(docs) > 0 {
		docs[0].values = append(docs[0].values, v)
	}
	return docs, nil
}

// kustomizeReading reads data as kustomize reads a kustomization or a
// plugin configuration: YAML turned into JSON. It returns nil when that
// fails, in which case kustomize fails too.
func kustomizeReading(data []byte) map[string]any {
	j, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	var v map[string]any
	if json.Unmarshal(j, &v) != nil {
		return nil
	}
	return v
}

// kustomization searches the kustomization in dir, and those it uses. When
// plugins is set, the kustomization was named as a generator, transformer or
// validator, and its resources are plugin configurations.
func (c *remoteCheck) kustomization(dir string, plugins bool) error {
	if c.seen[visit{dir, plugins}] {
		return nil
	}
	c.seen[visit{dir, plugins}] = true
	kfile, ok := kustomizationAt(c.fsys, dir)
	if !ok {
		return nil
	}
	data, err := fs.ReadFile(c.fsys, kfile)
	if err != nil {
		return nil
	}
	docs, err := c.read(kfile, data, true)
	if err != nil {
		return err
	}
	for _, d := range docs {
		for _, v := range d.values {
			if err := c.scan(d.origin, "", "", v); err != nil {
				return err
			}
		}
	}
	for _, d := range docs {
		for _, v := range d.values {
			if err := c.follow(d.origin, dir, v, plugins); err != nil {
				return err
			}
		}
	}
	return nil
}

// follow searches what a kustomization's resources, components and plugin
// lists point to in the repository: kustomizations, and generator,
// transformer and validator configurations, in files or written inline.
func (c *remoteCheck) follow(origin Origin, dir string, value map[string]any, plugins bool) error {
	for _, key := range slices.Sorted(maps.Keys(value)) {
		if !oneOf(key, "resources", "bases", "components", "generators", "transformers", "validators") {
			continue
		}
		list, _ := value[key].([]any)
		configs := isPluginKey(key) || (plugins && oneOf(key, "resources"))
		for i, item := range list {
			ref, ok := item.(string)
			if !ok {
				continue
			}
			if configs && strings.Contains(ref, "\n") {
				if err := c.config(origin, indexField(key, i), []byte(ref)); err != nil {
					return err
				}
				continue
			}
			if isRemote(ref) {
				// scan has refused it already.
				continue
			}
			target := inRepo(dir, ref)
			if _, ok := kustomizationAt(c.fsys, target); ok {
				if err := c.kustomization(target, configs); err != nil {
					return err
				}
				continue
			}
			if !configs {
				continue
			}
			data, err := fs.ReadFile(c.fsys, target)
			if err != nil {
				continue
			}
			if err := c.config(Origin{File: target}, "", data); err != nil {
				return err
			}
		}
	}
	return nil
}

// config searches a generator, transformer or validator configuration, read
// from a file (origin.File, field empty) or written inline in a
// kustomization (origin, at field). A configuration that cannot be searched
// is refused: kustomize parses it with the same parser.
func (c *remoteCheck) config(origin Origin, field string, data []byte) error {
	docs, err := c.read(origin.File, data, false)
	if err != nil {
		return err
	}
	for _, d := range docs {
		o := origin
		if field == "" {
			o = d.origin
		}
		for _, v := range d.values {
			if err := c.scan(o, field, "", v); err != nil {
				return err
			}
		}
	}
	return nil
}

// scan refuses the first remote reference in value, the value of key found
// at field.
func (c *remoteCheck) scan(origin Origin, field, key string, value any) error {
	switch v := value.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := c.scan(origin, childField(field, k), k, v[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := c.scan(origin, indexField(field, i), key, item); err != nil {
				return err
			}
		}
	case string:
		if !isPathKey(key) || (isInlineKey(key) && strings.Contains(v, "\n")) {
			return nil
		}
		remote := isRemote(v)
		if _, file, ok := strings.Cut(v, "="); ok && oneOf(key, "files") {
			remote = remote || isRemote(file)
		}
		if remote {
			return &Error{Origin: origin, Field: field, Reason: fmt.Sprintf(
				"refers to the remote location %q: a kustomization may use only files in the repository",
				hideUserinfo(v))}
		}
	}
	return nil
}

// oneOf reports whether key is one of names as kustomize matches field
// names: JSON decoding ignores case, under Unicode folding.
func oneOf(key string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// isPathKey reports whether the string values of key name files,
// directories or repositories that kustomize loads.
func isPathKey(key string) bool {
	return oneOf(key, "resources", "bases", "components", "crds", "configurations",
		"generators", "transformers", "validators", "patchesStrategicMerge",
		"path", "files", "envs", "env", "targetFilePath",
		"valuesFile", "additionalValuesFiles", "repo", "chartRepoUrl",
		"chartHome", "configHome", "helmHome")
}

// isPluginKey reports whether key lists generator, transformer or validator
// configurations.
func isPluginKey(key string) bool {
	return oneOf(key, "generators", "transformers", "validators")
}

// isInlineKey reports whether the entries of key may be YAML written
// inline rather than a path.
func isInlineKey(key string) bool {
	return isPluginKey(key) || oneOf(key, "patchesStrategicMerge")
}

// isRemote reports whether kustomize could take ref for a remote file or
// repository: a URL with any scheme, a "git::" address, an scp-style
// "user@host:path", or a path on github.com.
func isRemote(ref string) bool {
	s := strings.ToLower(strings.TrimSpace(ref))
	if strings.HasPrefix(s, "git::") || strings.Contains(s, "://") ||
		strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "github.com:") {
		return true
	}
	user, _, ok := strings.Cut(s, "@")
	if !ok || user == "" || user[0] < 'a' || user[0] > 'z' {
		return false
	}
	for _, r := range user {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// hideUserinfo masks the user and password of a remote reference, which may
// be a token.
func hideUserinfo(ref string) string {
	prefix, rest := "", ref
	if i := strings.Index(ref, "://"); i >= 0 {
		prefix, rest = ref[:i+3], ref[i+3:]
	}
	host := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host = rest[:i]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		rest = "***" + rest[at:]
	}
	return prefix + rest
}

// inRepo joins a reference of the kustomization in dir to dir, as a slash
// path of the repository: ".." stops at the root, as it does in repoFS.
func inRepo(dir, ref string) string {
	p := strings.TrimPrefix(path.Clean("/"+path.Join(dir, ref)), "/")
	if p == "" {
		return "."
	}
	return p
}
