package decrypt

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// render renders fsys through d as a sync does.
func render(t *testing.T, d *Decryptor, fsys fstest.MapFS) ([]manifest.Object, error) {
	t.Helper()
	out, err := manifest.RenderTree(context.Background(), d.FS(context.Background(), fsys), ".", manifest.Limits{}, nil)
	if err != nil {
		return nil, err
	}
	return out.Objects, nil
}

// withKeys is a Decryptor reading data as its Secret's, counting reads.
func withKeys(data map[string][]byte, required bool, reads *int) *Decryptor {
	return New(Config{Secret: "plimsoll/sops-keys", Required: required, Load: func(context.Context) (map[string][]byte, error) {
		*reads++
		return data, nil
	}})
}

// secretValue is the value of key in a rendered Secret, stringData or
// data (decoded).
func secretValue(t *testing.T, objs []manifest.Object, name, key string) string {
	t.Helper()
	for _, o := range objs {
		if o.Obj.GetKind() != "Secret" || o.Obj.GetName() != name && !strings.HasPrefix(o.Obj.GetName(), name+"-") {
			continue
		}
		if sd, ok := o.Obj.Object["stringData"].(map[string]any); ok {
			if v, ok := sd[key].(string); ok {
				return v
			}
		}
		if d, ok := o.Obj.Object["data"].(map[string]any); ok {
			v, _ := d[key].(string)
			dec, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatal(err)
			}
			return string(dec)
		}
	}
	t.Fatalf("no Secret %s with key %s among %d objects", name, key, len(objs))
	return ""
}

func TestFSManifestsAndKustomize(t *testing.T) {
	id := newAge(t)
	opts := encOptions{age: []*age25519{id}}
	fsys := fstest.MapFS{
		"deploy/db.yaml":                 {Data: sealFile(t, "db.yaml", secretYAML("db", "manifest-pass"), opts)},
		"deploy/cm.yaml":                 {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  a: b\n")},
		"app/kustomization.yaml":         {Data: []byte("secretGenerator:\n- name: gen\n  envs: [app.env]\n  files: [tls.key=tls.key.enc]\n")},
		"app/app.env":                    {Data: sealFile(t, "app.env", []byte("TOKEN=env-pass\n"), opts)},
		"app/tls.key.enc":                {Data: sealFile(t, "tls.key.enc", []byte("file-pass"), opts)},
		"json/db.json":                   {Data: sealFile(t, "db.json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"js"},"stringData":{"password":"json-pass"}}`), opts)},
		"deploy/partial.yaml":            {Data: sealFile(t, "partial.yaml", secretYAML("partial", "regex-pass"), encOptions{regex: "^stringData$", age: opts.age})},
		"deploy/.hidden/ignored.yaml":    {Data: []byte("not read")},
		"deploy/notes/readme-not-a.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n")},
	}
	reads := 0
	objs, err := render(t, withKeys(ageSecret(id), false, &reads), fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, key, want string }{
		{"db", "password", "manifest-pass"},
		{"js", "password", "json-pass"},
		{"partial", "password", "regex-pass"},
		{"gen", "TOKEN", "env-pass"},
		{"gen", "tls.key", "file-pass"},
	} {
		if got := secretValue(t, objs, c.name, c.key); got != c.want {
			t.Errorf("Secret %s key %s = %q, want %q", c.name, c.key, got, c.want)
		}
	}
	if reads != 1 {
		t.Errorf("the Secret was read %d times in one render, want 1", reads)
	}
}

func TestFSRefusals(t *testing.T) {
	id, other := newAge(t), newAge(t)
	sealed := sealFile(t, "db.yaml", secretYAML("db", "refused-pass"), encOptions{age: []*age25519{id}})
	tree := fstest.MapFS{"deploy/db.yaml": {Data: sealed}}
	reads := 0
	for _, tc := range []struct {
		name string
		d    *Decryptor
		fsys fstest.MapFS
		want []string
	}{
		{"no decryption configured", nil, tree, []string{"read deploy/db.yaml: SOPS-encrypted, and no decryption key is configured for this sync"}},
		{"the zero Decryptor", New(Config{}), tree, []string{"deploy/db.yaml: SOPS-encrypted, and no decryption key is configured"}},
		{"missing Secret", New(Config{Secret: "plimsoll/gone", Load: func(context.Context) (map[string][]byte, error) {
			return nil, errors.New(`secrets "gone" not found`)
		}}), tree, []string{"read deploy/db.yaml: SOPS-encrypted, and decryption Secret plimsoll/gone cannot be read: secrets \"gone\" not found"}},
		{"wrong key", withKeys(ageSecret(other), false, &reads), tree, []string{"read deploy/db.yaml: SOPS-encrypted for age " + id.Recipient().String(), "no key of decryption Secret plimsoll/sops-keys decrypts it"}},
		{"encrypted env file of a kustomization, wrong key", withKeys(ageSecret(other), false, &reads), fstest.MapFS{
			"app/kustomization.yaml": {Data: []byte("secretGenerator:\n- name: gen\n  envs: [app.env]\n")},
			"app/app.env":            {Data: sealFile(t, "app.env", []byte("TOKEN=x-refused\n"), encOptions{age: []*age25519{id}})},
		}, []string{"read app/app.env: SOPS-encrypted for age " + id.Recipient().String()}},
		{"required: plain Secret", withKeys(ageSecret(id), true, &reads), fstest.MapFS{"deploy/db.yaml": {Data: secretYAML("db", "plain-pass")}},
			[]string{"read deploy/db.yaml: not SOPS-encrypted, and document 1 is Secret db: this sync requires the Secrets in Git to be encrypted (--decryption-required"}},
		{"required: generator literals", withKeys(ageSecret(id), true, &reads), fstest.MapFS{
			"app/kustomization.yaml": {Data: []byte("secretGenerator:\n- name: gen\n  literals: [A=plain-pass]\n")},
		}, []string{"app/kustomization.yaml", "field secretGenerator[0].literals: values in plain text"}},
		{"required: plain generator env", withKeys(ageSecret(id), true, &reads), fstest.MapFS{
			"app/kustomization.yaml": {Data: []byte("secretGenerator:\n- name: gen\n  envs: [app.env]\n")},
			"app/app.env":            {Data: []byte("TOKEN=plain-pass\n")},
		}, []string{"read app/app.env: not SOPS-encrypted, and it is read by a secretGenerator of app/kustomization.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.d, tc.fsys)
			if err == nil {
				t.Fatalf("rendered %d objects", len(objs))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			for _, s := range []string{"refused-pass", "plain-pass", "x-refused"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes a value", err)
				}
			}
		})
	}
}

func TestFSRequiredAllows(t *testing.T) {
	id := newAge(t)
	reads := 0
	fsys := fstest.MapFS{
		"deploy/cm.yaml":                     {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n")},
		"deploy/db.yaml":                     {Data: sealFile(t, "db.yaml", secretYAML("db", "ok-pass"), encOptions{age: []*age25519{id}})},
		"chart/Chart.yaml":                   {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"chart/templates/secret.yaml":        {Data: secretYAML("from-chart", "template-pass")},
		"app/kustomization.yaml":             {Data: []byte("secretGenerator:\n- name: gen\n  envs: [app.env]\n")},
		"app/app.env":                        {Data: sealFile(t, "app.env", []byte("TOKEN=gen-pass\n"), encOptions{age: []*age25519{id}})},
		"chart/templates/nested/secret.yaml": {Data: secretYAML("nested", "template-pass")},
	}
	d := withKeys(ageSecret(id), true, &reads)
	dfs := d.FS(context.Background(), fsys)
	for _, name := range []string{"deploy/cm.yaml", "deploy/db.yaml", "chart/templates/secret.yaml", "chart/templates/nested/secret.yaml"} {
		if _, err := dfs.(interface{ ReadFile(string) ([]byte, error) }).ReadFile(name); err != nil {
			t.Errorf("read %s: %v", name, err)
		}
	}
	delete(fsys, "chart/Chart.yaml")
	delete(fsys, "chart/templates/secret.yaml")
	delete(fsys, "chart/templates/nested/secret.yaml")
	objs, err := render(t, d, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got := secretValue(t, objs, "gen", "TOKEN"); got != "gen-pass" {
		t.Errorf("generated TOKEN = %q", got)
	}
}

func TestValuesAreTheEncryptedOnes(t *testing.T) {
	id := newAge(t)
	reads := 0
	fsys := fstest.MapFS{
		"deploy/partial.yaml": {Data: sealFile(t, "partial.yaml", secretYAML("partial-name", "regex-pass"), encOptions{regex: "^stringData$", age: []*age25519{id}})},
		"deploy/values.yaml":  {Data: sealFile(t, "values.yaml", []byte("token: values-token\nlist: [first-item, 12345]\n"), encOptions{age: []*age25519{id}})},
		"app/tls.key":         {Data: sealFile(t, "tls.key", []byte("line-one\nline-two\n"), encOptions{age: []*age25519{id}})},
	}
	dfs := withKeys(ageSecret(id), false, &reads).FS(context.Background(), fsys)
	for name := range fsys {
		if _, err := fs.ReadFile(dfs, name); err != nil {
			t.Fatal(err)
		}
	}
	got := Values(dfs)
	for _, want := range []string{"regex-pass", "values-token", "first-item", "line-one\nline-two\n", "line-one", "line-two"} {
		if !slices.Contains(got, want) {
			t.Errorf("Values() = %q lacks %q", got, want)
		}
	}
	for _, plain := range []string{"partial-name", "Secret", "v1", "12345"} {
		if slices.Contains(got, plain) {
			t.Errorf("Values() = %q holds %q, which was not encrypted", got, plain)
		}
	}
	if Values(fsys) != nil {
		t.Error("Values of another file system is not nil")
	}
}

func TestFSLimitsBeforeSOPS(t *testing.T) {
	// An alias bomb carrying SOPS's metadata reaches the renderer's
	// limits, not SOPS's parser.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		prev := string(i - 1)
		bomb += string(i) + ": &" + string(i) + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
	}
	bomb += "sops: {mac: x, version: 3.13.3}\n"
	reads := 0
	_, err := render(t, withKeys(ageSecret(newAge(t)), false, &reads), fstest.MapFS{"deploy/bomb.yaml": {Data: []byte(bomb)}})
	if err == nil || !strings.Contains(err.Error(), "deploy/bomb.yaml") || strings.Contains(err.Error(), "SOPS") {
		t.Errorf("error %v, want the renderer's refusal of deploy/bomb.yaml", err)
	}
	if reads != 0 {
		t.Errorf("the decryption Secret was read %d times for a file over the limits", reads)
	}
}
