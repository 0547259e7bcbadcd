package manifest

import (
	"errors"
	"strings"
	"testing"
)

func TestRenderKustomize(t *testing.T) {
	base := map[string]string{
		"base/kustomization.yaml": "resources:\n- deploy.yaml\n- cm.yaml\n",
		"base/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      labels: {app: web}\n",
		"base/cm.yaml":            configMap("settings"),
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name   string
		files  map[string]string
		dir    string
		want   []string
		labels map[string]string // labels every object must carry
	}{
		{
			name:  "resources",
			files: base,
			dir:   "base",
			want: []string{
				"base/kustomization.yaml, document 1: apps/Deployment web",
				"base/kustomization.yaml, document 2: ConfigMap settings",
			},
		},
		{
			name: "an overlay with a base elsewhere in the repository, a prefix, labels and a namespace",
			files: with(map[string]string{
				"overlays/prod/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: prod-\nnamespace: shop\ncommonLabels:\n  env: prod\n",
			}),
			dir: "overlays/prod",
			want: []string{
				"overlays/prod/kustomization.yaml, document 1: apps/Deployment shop/prod-web",
				"overlays/prod/kustomization.yaml, document 2: ConfigMap shop/prod-settings",
			},
			labels: map[string]string{"env": "prod"},
		},
		{
			name: "a configMapGenerator",
			files: map[string]string{
				"app/kustomization.yaml": "configMapGenerator:\n- name: settings\n  files: [app.properties]\n  literals: [MODE=fast]\n",
				"app/app.properties":     "color=blue\n",
			},
			dir:  "app",
			want: []string{"app/kustomization.yaml, document 1: ConfigMap settings-6td8h67hmt"},
		},
		{
			name: "a kustomization found by the walk; its subdirectories are not read on their own",
			files: map[string]string{
				"a.yaml":                     configMap("plain"),
				"k/Kustomization":            "resources:\n- used.yaml\n",
				"k/used.yaml":                configMap("used"),
				"k/unused.yaml":              configMap("unused"),
				"k/sub/ignored.yaml":         configMap("ignored"),
				"z/kustomization.yml":        "resources:\n- z.yaml\n",
				"z/z.yaml":                   configMap("z"),
				"zz/after-the-kustomize.yml": configMap("after"),
			},
			want: []string{
				"a.yaml, document 1: ConfigMap plain",
				"k/Kustomization, document 1: ConfigMap used",
				"z/kustomization.yml, document 1: ConfigMap z",
				"zz/after-the-kustomize.yml, document 1: ConfigMap after",
			},
		},
		{
			name: "the repository root is a kustomization",
			files: map[string]string{
				"kustomization.yaml":      "resources:\n- apps\n",
				"apps/kustomization.yaml": "resources:\n- cm.yaml\n",
				"apps/cm.yaml":            configMap("root"),
				"stray.yaml":              configMap("stray"),
			},
			want: []string{"kustomization.yaml, document 1: ConfigMap root"},
		},
		{
			name: "a component and a patch from the repository",
			files: with(map[string]string{
				"overlays/dev/kustomization.yaml": "resources:\n- ../../base\ncomponents:\n- ../../components/debug\n" +
					"patches:\n- path: replicas.yaml\n",
				"overlays/dev/replicas.yaml":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n",
				"components/debug/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- debug.yaml\n",
				"components/debug/debug.yaml":         configMap("debug"),
			}),
			dir: "overlays/dev",
			want: []string{
				"overlays/dev/kustomization.yaml, document 1: apps/Deployment web",
				"overlays/dev/kustomization.yaml, document 2: ConfigMap settings",
				"overlays/dev/kustomization.yaml, document 3: ConfigMap debug",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = "."
			}
			objs, err := Render(tree(tt.files), dir, Limits{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			wantList(t, describe(objs), tt.want)
			for _, o := range objs {
				labels := o.Obj.GetLabels()
				for k, v := range tt.labels {
					if labels[k] != v {
						t.Errorf("%s: label %s = %q, want %q", o.Key(), k, labels[k], v)
					}
				}
			}
		})
	}
}

func TestRenderKustomizeGeneratedData(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml": "configMapGenerator:\n- name: settings\n  files: [app.properties]\n  literals: [MODE=fast]\n",
		"app/app.properties":     "color=blue\n",
	}
	objs, err := Render(tree(files), "app", Limits{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	data := objs[0].Obj.Object["data"].(map[string]any)
	if data["MODE"] != "fast" || data["app.properties"] != "color=blue\n" {
		t.Errorf("data = %v", data)
	}
}

func TestRenderKustomizeRefusesRemote(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		dir   string
		want  string
	}{
		{
			name:  "an https resource",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- cm.yaml\n- https://example.com/manifests/cm.yaml\n", "k/cm.yaml": configMap("a")},
			want:  `k/kustomization.yaml, document 1: field resources[1]: refers to the remote location "https://example.com/manifests/cm.yaml": a kustomization may use only files in the repository`,
		},
		{
			name:  "a git repository on github.com",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- github.com/example/repo//deploy?ref=v1\n"},
			want:  `k/kustomization.yaml, document 1: field resources[0]: refers to the remote location "github.com/example/repo//deploy?ref=v1": a kustomization may use only files in the repository`,
		},
		{
			name:  "an scp-style git address",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- git@gitlab.example.com:team/repo.git/deploy\n"},
			want:  `k/kustomization.yaml, document 1: field resources[0]: refers to the remote location "***@gitlab.example.com:team/repo.git/deploy": a kustomization may use only files in the repository`,
		},
		{
			name:  "a token in the address is hidden",
			files: map[string]string{"k/kustomization.yaml": "bases:\n- git::https://user:s3cr3t-token@example.com/repo.git\n"},
			want:  `k/kustomization.yaml, document 1: field bases[0]: refers to the remote location "git::https://***@example.com/repo.git": a kustomization may use only files in the repository`,
		},
		{
			name: "a remote resource in a base of the kustomization",
			files: map[string]string{
				"overlay/kustomization.yaml": "resources:\n- ../base\n",
				"base/kustomization.yaml":    "resources:\n- ssh://git@example.com/repo\n",
			},
			dir:  "overlay",
			want: `base/kustomization.yaml, document 1: field resources[0]: refers to the remote location "ssh://***@example.com/repo": a kustomization may use only files in the repository`,
		},
		{
			name:  "a remote component",
			files: map[string]string{"k/kustomization.yaml": "components:\n- https://example.com/component\n"},
			want:  `k/kustomization.yaml, document 1: field components[0]: refers to the remote location "https://example.com/component": a kustomization may use only files in the repository`,
		},
		{
			name:  "a remote patch",
			files: map[string]string{"k/kustomization.yaml": "patches:\n- path: http://example.com/patch.yaml\n"},
			want:  `k/kustomization.yaml, document 1: field patches[0].path: refers to the remote location "http://example.com/patch.yaml": a kustomization may use only files in the repository`,
		},
		{
			name:  "a remote generator file",
			files: map[string]string{"k/kustomization.yaml": "configMapGenerator:\n- name: c\n  files: [conf=https://example.com/conf]\n"},
			want:  `k/kustomization.yaml, document 1: field configMapGenerator[0].files[0]: refers to the remote location "conf=https://example.com/conf": a kustomization may use only files in the repository`,
		},
		{
			name: "a remote path in a transformer configuration file",
			files: map[string]string{
				"k/kustomization.yaml": "transformers:\n- patch.yaml\n",
				"k/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: https://example.com/patch.yaml\n",
			},
			want: `k/patch.yaml, document 1: field path: refers to the remote location "https://example.com/patch.yaml": a kustomization may use only files in the repository`,
		},
		{
			name: "a remote path in an inline generator configuration",
			files: map[string]string{
				"k/kustomization.yaml": "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata:\n    name: c\n  envs: [https://example.com/env]\n",
			},
			want: `k/kustomization.yaml, document 1: field generators[0].envs[0]: refers to the remote location "https://example.com/env": a kustomization may use only files in the repository`,
		},
		{
			name:  "a field name in capitals, which kustomize accepts",
			files: map[string]string{"k/kustomization.yaml": "RESOURCES:\n- https://example.invalid/x.yaml\n"},
			want:  `k/kustomization.yaml, document 1: field RESOURCES[0]: refers to the remote location "https://example.invalid/x.yaml": a kustomization may use only files in the repository`,
		},
		{
			name:  "a field name spelled with a long s, which Unicode folds to s",
			files: map[string]string{"k/kustomization.yaml": "re\u017fources:\n- https://example.invalid/x.yaml\n"},
			want:  `k/kustomization.yaml, document 1: field ["reſources"][0]: refers to the remote location "https://example.invalid/x.yaml": a kustomization may use only files in the repository`,
		},
		{
			name:  "a location hidden in a !!binary value, which kustomize decodes",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- !!binary aHR0cHM6Ly9leGFtcGxlLmludmFsaWQveC55YW1s\n"},
			want:  `k/kustomization.yaml, document 1: field resources[0]: refers to the remote location "https://example.invalid/x.yaml": a kustomization may use only files in the repository`,
		},
		{
			name: "a remote path in a configuration listed by a kustomization of transformers",
			files: map[string]string{
				"k/kustomization.yaml":            "resources:\n- cm.yaml\ntransformers:\n- ../transformers\n",
				"k/cm.yaml":                       configMap("a"),
				"transformers/kustomization.yaml": "resources:\n- replace.yaml\n",
				"transformers/replace.yaml":       "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata:\n  name: r\nreplacements:\n- path: https://example.com/r.yaml\n",
			},
			dir:  "k",
			want: `transformers/replace.yaml, document 1: field replacements[0].path: refers to the remote location "https://example.com/r.yaml": a kustomization may use only files in the repository`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = "."
			}
			_, err := Render(tree(tt.files), dir, Limits{})
			wantError(t, err, tt.want)
		})
	}
}

func TestRenderKustomizeAcceptsURLsThatAreNotReferences(t *testing.T) {
	files := map[string]string{
		"k/kustomization.yaml": "resources:\n- cm.yaml\ncommonAnnotations:\n  docs: https://example.com/docs\n" +
			"configMapGenerator:\n- name: links\n  literals: [HOME=https://example.com]\n",
		"k/cm.yaml": configMap("a"),
	}
	objs, err := Render(tree(files), ".", Limits{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %v, want two objects", describe(objs))
	}
}

func TestRenderKustomizeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "a missing resource",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- missing.yaml\n"},
			want:  "k/kustomization.yaml: kustomize build: accumulating resources: accumulation err='accumulating resources from 'missing.yaml': open k/missing.yaml: file does not exist': must build at directory: not a valid directory: open k/missing.yaml: file does not exist",
		},
		{
			name: "a file outside the kustomization's tree",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- ../shared/cm.yaml\n",
				"shared/cm.yaml":       configMap("shared"),
			},
			want: "k/kustomization.yaml: kustomize build: accumulating resources: accumulation err='accumulating resources from '../shared/cm.yaml': security; file '/shared/cm.yaml' is not in or below '/k'': must build at directory: '/shared/cm.yaml': file is not directory",
		},
		{
			name:  "a path above the repository root stays inside it",
			files: map[string]string{"k/kustomization.yaml": "resources:\n- ../../../../etc\n"},
			want:  "k/kustomization.yaml: kustomize build: accumulating resources: accumulation err='accumulating resources from '../../../../etc': open etc: file does not exist': must build at directory: not a valid directory: open etc: file does not exist",
		},
		{
			name: "the same object twice in one build",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
				"k/a.yaml":             configMap("same"),
				"k/b.yaml":             configMap("same"),
			},
			want: "k/kustomization.yaml: kustomize build: accumulating resources: accumulation err='merging resources from 'b.yaml': may not add resource with an already registered id: ConfigMap.v1.[noGrp]/same.[noNs]': must build at directory: '/k/b.yaml': file is not directory",
		},
		{
			name:  "an invalid kustomization",
			files: map[string]string{"k/kustomization.yaml": "resources: [a.yaml\n"},
			want:  "k/kustomization.yaml, document 1: invalid YAML: line 1: did not find expected ',' or ']'",
		},
		{
			name:  "Helm is off",
			files: map[string]string{"k/kustomization.yaml": "helmCharts:\n- name: chart\n  version: 1.0.0\n"},
			want:  "k/kustomization.yaml: kustomize build: trouble configuring builtin HelmChartInflationGenerator with config: `\nname: chart\nversion: 1.0.0\n`: must specify --enable-helm",
		},
		{
			name: "an alias bomb in a resource",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- bomb.yaml\n",
				"k/bomb.yaml":          billionLaughs(9),
			},
			want: "k/bomb.yaml, document 1: line 10: YAML aliases expand the document by more than 10000 values; refusing it as a possible alias bomb",
		},
		{
			name: "a kustomization that is itself too deep",
			files: map[string]string{
				"k/kustomization.yaml": "resources: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
			},
			want: "k/kustomization.yaml, document 1: line 1: maps and lists nest more than 64 levels deep",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tree(tt.files), ".", Limits{})
			wantError(t, err, tt.want)
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}

func TestRenderKustomizeFileSystemErrors(t *testing.T) {
	base := tree(map[string]string{
		"k/kustomization.yaml": "resources:\n- big.yaml\n",
		"k/big.yaml":           configMap("big"),
	})
	_, err := Render(refusingFS{base: base, refuse: map[string]bool{"k/big.yaml": true}}, ".", Limits{})
	wantError(t, err, "read k/big.yaml: open k/big.yaml: file exceeds the size limit")
	if !errors.Is(err, errTooLarge) {
		t.Errorf("error %v does not wrap the file system's error", err)
	}
}

func TestRenderKustomizeKeepsSecretsOutOfErrors(t *testing.T) {
	const canary = "canary-51d0e2"
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: " + canary + "\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string // the whole message, where it matters
	}{
		{
			name: "a replacement into a Secret value dumps the node",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- secret.yaml\nreplacements:\n- source: {kind: Secret, name: s, fieldPath: metadata.name}\n" +
					"  targets:\n  - select: {kind: Secret}\n    fieldPaths: [stringData.password.deeper]\n",
				"k/secret.yaml": secret,
			},
			want: `k/kustomization.yaml: kustomize build: unable to find field "stringData.password.deeper" in replacement target: wrong node kind: expected MappingNode but got ScalarNode: node contents withheld`,
		},
		{
			name: "a replacement from a Secret value names the value",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- secret.yaml\nreplacements:\n- source: {kind: Secret, name: s, fieldPath: stringData.password, options: {delimiter: '-', index: 9}}\n" +
					"  targets:\n  - select: {kind: Secret}\n    fieldPaths: [metadata.annotations.copy]\n",
				"k/secret.yaml": secret,
			},
			want: "k/kustomization.yaml: kustomize build: options.index 9 is out of bounds for value [redacted]",
		},
		{
			name: "a Secret without a name",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- secret.yaml\n",
				"k/secret.yaml":        strings.Replace(secret, "  name: s\n", "  labels: {app: x}\n", 1),
			},
		},
		{
			name: "a broken generated Secret",
			files: map[string]string{
				"k/kustomization.yaml": "secretGenerator:\n- name: s\n  literals: [password=" + canary + "]\n  envs: [missing.env]\n",
			},
		},
		{
			name: "a Secret that breaks later in its document",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- secret.yaml\n",
				"k/secret.yaml":        secret + "  other: [unclosed\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tree(tt.files), ".", Limits{})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("the error shows the Secret value: %v", err)
			}
			if tt.want != "" {
				wantError(t, err, tt.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	reads := map[string][]byte{
		"k/kustomization.yaml": []byte("secretGenerator:\n- name: s\n  literals: [token=literal-secret]\n  files: [key=key.pem]\n  envs: [creds.env]\n"),
		"k/key.pem":            []byte("-----BEGIN KEY-----\nkey-line-secret\n-----END KEY-----\n"),
		"k/creds.env":          []byte("# comment\nUSER=env-secret\n"),
		"k/s.yaml":             []byte("apiVersion: v1\nkind: Secret\ndata:\n  a: ZGF0YS1zZWNyZXQ=\nstringData:\n  b: string-secret\n  c: abc\n"),
	}
	secrets := collectSecrets(reads, Limits{}.withDefaults())
	tests := []struct {
		name, msg, want string
	}{
		{"a literal", "bad value literal-secret here", "bad value [redacted] here"},
		{"a line of a file", "near key-line-secret", "near [redacted]"},
		{"an env value", "env: env-secret.", "env: [redacted]."},
		{"data, encoded and decoded", "ZGF0YS1zZWNyZXQ= is data-secret", "[redacted] is [redacted]"},
		{"stringData and its encoding", "string-secret c3RyaW5nLXNlY3JldA==", "[redacted] [redacted]"},
		{"values too short to search for", "abc", "abc"},
		{"a node dump", "wrong node kind: node contents:\nanything: here\n", "wrong node kind: node contents withheld"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact(tt.msg, secrets); got != tt.want {
				t.Errorf("redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}
