package helm

import (
	"errors"
	"testing"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// FuzzParseRelease checks that any release document either parses into a
// release whose paths stay inside the repository, or is refused as bad
// input naming the document, and never panics.
func FuzzParseRelease(f *testing.F) {
	seeds := []string{
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {path: ../charts/web}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web, namespace: shop}\nspec: {repo: https://charts.example, chart: web, version: 1.2.3, valuesFiles: [a.yaml, ../b.yaml]}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: oci://r.example/c, chart: web, version: 1.0.0, digest: sha256:00, crds: Skip, hookTimeout: 1m}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {path: x, postRender: {kustomize: {resources: [a]}}}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: Web_1}\nspec: {path: /abs, values: {a: [1, {b: c}]}, lookup: yes}\n",
		// Paths that leave the repository: refused.
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {path: ../../charts/web}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {path: /etc}\n",
		"apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: https://charts.example, chart: web, version: 1.0.0, valuesFiles: [../../secrets.yaml]}\n",
		"spec: 3\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil || doc == nil {
			return
		}
		origin := manifest.Origin{File: "apps/rel.yaml", Doc: 1}
		rel, err := ParseRelease(origin, doc, "default")
		if err != nil {
			var me *manifest.Error
			if !errors.As(err, &me) || me.Origin != origin {
				t.Fatalf("error %v is not bad input naming %s", err, origin)
			}
			return
		}
		for _, p := range append([]string{rel.Path}, rel.ValuesFiles...) {
			if p == ".." || len(p) > 2 && p[:3] == "../" || len(p) > 0 && p[0] == '/' {
				t.Fatalf("path %q leaves the repository", p)
			}
		}
		if rel.Name == "" || rel.Namespace == "" || (rel.Path == "") == (rel.Repo == "") {
			t.Fatalf("release %+v lacks a name, a namespace or exactly one source", rel)
		}
	})
}
