package manifest

import (
	"cmp"
	"encoding/base64"
	"maps"
	"path"
	"slices"
	"strings"

	// Named apart: this package's own redact is the function above.
	urlredact "plimsoll.dev/plimsoll/internal/redact"
)

// redact makes a message from kustomize safe to show: it cuts off a dump of
// a YAML node, replaces every Secret value in secrets with a marker, and
// redacts the credentials of the URLs it quotes (a remote resource's
// "https://user:token@host/..." above all).
func redact(msg string, secrets []string) string {
	if i := strings.Index(msg, nodeDumpMarker); i >= 0 {
		msg = msg[:i] + "node contents withheld"
	}
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	return urlredact.Text(msg)
}

// collectSecrets finds the Secret values in the files a build read: the
// data and stringData of Secret manifests, and the literals, files and env
// files of the secretGenerators of kustomizations, each also base64-encoded
// and decoded, as kustomize may show either. They come longest first, so
// that a value is replaced before any shorter value inside it.
func collectSecrets(reads map[string][]byte, lim Limits) []string {
	found := map[string]bool{}
	add := func(v string) {
		for _, s := range []string{v, strings.TrimSpace(v), base64.StdEncoding.EncodeToString([]byte(v))} {
			if len(s) >= minRedactLen {
				found[s] = true
			}
		}
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil && len(dec) >= minRedactLen {
			found[string(dec)] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(reads)) {
		_ = documents(name, reads[name], lim, func(_ int, value map[string]any) error {
			if value["kind"] == kindSecret {
				for _, field := range []string{"data", "stringData"} {
					m, _ := value[field].(map[string]any)
					for _, v := range m {
						if s, ok := v.(string); ok {
							add(s)
						}
					}
				}
			}
			if isKustomizationFile(name) {
				generatedSecrets(path.Dir(name), value, reads, add)
			}
			return nil
		})
	}
	return slices.SortedFunc(maps.Keys(found), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
}

// generatedSecrets passes to add the values of the secretGenerators of the
// kustomization in dir: literals, the content and lines of files, and the
// values of env files, as far as the build read them.
func generatedSecrets(dir string, kustomization map[string]any, reads map[string][]byte, add func(string)) {
	generators, _ := kustomization["secretGenerator"].([]any)
	for _, g := range generators {
		gen, _ := g.(map[string]any)
		for _, l := range stringList(gen["literals"]) {
			if _, v, ok := strings.Cut(l, "="); ok {
				add(v)
			}
		}
		for _, f := range stringList(gen["files"]) {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			data, ok := reads[inRepo(dir, f)]
			if !ok {
				continue
			}
			add(string(data))
			for line := range strings.Lines(string(data)) {
				add(line)
			}
		}
		envs := stringList(gen["envs"])
		if env, ok := gen["env"].(string); ok {
			envs = append(envs, env)
		}
		for _, f := range envs {
			for line := range strings.Lines(string(reads[inRepo(dir, f)])) {
				if _, v, ok := strings.Cut(line, "="); ok {
					add(v)
				}
			}
		}
	}
}

// stringList returns the strings of a list value.
func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// isKustomizationFile reports whether the file's name makes it a
// kustomization.
func isKustomizationFile(name string) bool {
	return slices.Contains(kustomizationFiles[:], path.Base(name))
}
