package decrypt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/sync/decrypt/decrypttest"
)

func TestDecryptFormats(t *testing.T) {
	id := newAge(t)
	keys := mustKeys(t, ageSecret(id))
	for _, tc := range []struct {
		name, file string
		plain      []byte
		regex      string
		// want are strings the plaintext holds after decryption.
		want []string
	}{
		{"YAML whole file", "db.yaml", secretYAML("db", "hunter2-yaml"), "", []string{"password: hunter2-yaml", "kind: Secret"}},
		{"YAML with encrypted_regex", "db.yaml", secretYAML("db", "hunter2-regex"), "^(data|stringData)$", []string{"password: hunter2-regex"}},
		{"YAML of two documents", "two.yaml", append(secretYAML("a", "first-pass"), append([]byte("---\n"), secretYAML("b", "second-pass")...)...), "", []string{"first-pass", "second-pass"}},
		{"JSON", "db.json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"stringData":{"password":"hunter2-json"}}`), "", []string{`"password": "hunter2-json"`}},
		{"dotenv", "db.env", []byte("PASSWORD=hunter2-env\nUSER=app\n"), "", []string{"PASSWORD=hunter2-env", "USER=app"}},
		{"binary", "tls.key", []byte("-----BEGIN KEY-----\nhunter2-binary\n"), "", []string{"-----BEGIN KEY-----\nhunter2-binary\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sealed := sealFile(t, tc.file, tc.plain, encOptions{regex: tc.regex, age: []*age25519{id}})
			if !Encrypted(tc.file, sealed) {
				t.Fatalf("Encrypted(%s) = false for\n%s", tc.file, sealed)
			}
			if Encrypted(tc.file, tc.plain) {
				t.Fatalf("Encrypted(%s) = true for the plaintext", tc.file)
			}
			for _, w := range tc.want {
				if tc.regex == "" && bytes.Contains(sealed, []byte(w)) && !strings.Contains(w, "kind") {
					t.Fatalf("the encrypted file holds %q in plain text", w)
				}
			}
			got, err := Decrypt(tc.file, sealed, keys)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("plaintext lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(string(got), "sops") {
				t.Errorf("plaintext keeps SOPS's metadata:\n%s", got)
			}
		})
	}
}

func TestDecryptRegexLeavesOtherFieldsPlain(t *testing.T) {
	id := newAge(t)
	sealed := sealFile(t, "db.yaml", secretYAML("db-regex", "s3cret-value"), encOptions{regex: "^stringData$", age: []*age25519{id}})
	if !bytes.Contains(sealed, []byte("name: db-regex")) {
		t.Fatalf("metadata.name was encrypted too:\n%s", sealed)
	}
	if bytes.Contains(sealed, []byte("s3cret-value")) {
		t.Fatalf("stringData left in plain text:\n%s", sealed)
	}
	got, err := Decrypt("db.yaml", sealed, mustKeys(t, ageSecret(id)))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(got, &obj); err != nil {
		t.Fatal(err)
	}
	if obj["stringData"].(map[string]any)["password"] != "s3cret-value" {
		t.Errorf("stringData.password = %v", obj["stringData"])
	}
}

func TestDecryptOpenPGP(t *testing.T) {
	e, armored := newOpenPGP(t)
	sealed := sealFile(t, "db.yaml", secretYAML("db", "pgp-pass"), encOptions{pgp: []*pgpEntity{e}})
	keys := mustKeys(t, map[string][]byte{"sops.asc": armored})
	got, err := Decrypt("db.yaml", sealed, keys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "password: pgp-pass") {
		t.Errorf("plaintext:\n%s", got)
	}
	// A file for both kinds decrypts with either.
	id := newAge(t)
	both := sealFile(t, "db.yaml", secretYAML("db", "either-pass"), encOptions{age: []*age25519{newAge(t)}, pgp: []*pgpEntity{e}})
	if _, err := Decrypt("db.yaml", both, mustKeys(t, map[string][]byte{"a.agekey": ageSecret(id)["identity.agekey"], "b.asc": armored})); err != nil {
		t.Errorf("a file for another age key and this OpenPGP key: %v", err)
	}
}

func TestDecryptRefusals(t *testing.T) {
	id, other := newAge(t), newAge(t)
	sealed := sealFile(t, "db.yaml", secretYAML("db", "tamper-me"), encOptions{age: []*age25519{id}})
	tamperedValue := decrypttest.Tamper(sealed)
	// With encrypted_regex, the fields left plain are under the MAC.
	partial := sealFile(t, "db.yaml", secretYAML("db", "tamper-me"), encOptions{regex: "^stringData$", age: []*age25519{id}})
	renamed := tamper(t, partial, func(obj map[string]any) {
		obj["metadata"].(map[string]any)["name"] = "other"
	})
	badMeta := tamper(t, sealed, func(obj map[string]any) {
		obj["sops"].(map[string]any)["lastmodified"] = "yesterday"
	})
	for _, tc := range []struct {
		name string
		data []byte
		keys *Keys
		want []string
	}{
		{"wrong key", sealed, mustKeys(t, ageSecret(other)), []string{"SOPS-encrypted for age " + id.Recipient().String(), "no key of Secret test/keys decrypts it", "it holds age " + other.Recipient().String()}},
		{"tampered value", tamperedValue, mustKeys(t, ageSecret(id)), []string{"a value does not decrypt", "changed after it was encrypted"}},
		{"plain field changed", renamed, mustKeys(t, ageSecret(id)), []string{"MAC does not match its content", "changed after it was encrypted"}},
		{"unreadable metadata", badMeta, mustKeys(t, ageSecret(id)), []string{"SOPS metadata cannot be read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decrypt("db.yaml", tc.data, tc.keys)
			if err == nil {
				t.Fatal("decrypted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "tamper-me") || strings.Contains(err.Error(), id.String()) {
				t.Errorf("error %q quotes a secret", err)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	id := newAge(t)
	e, armored := newOpenPGP(t)
	var pub bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		t.Fatal(err)
	}
	k, err := ParseKeys("Secret ns/keys", map[string][]byte{"a.agekey": ageSecret(id)["identity.agekey"], "b.asc": armored, "other": []byte("ignored")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "age " + id.Recipient().String() + ", OpenPGP " + fingerprint(e); k.Public() != want {
		t.Errorf("Public() = %q, want %q", k.Public(), want)
	}
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"no key", map[string][]byte{"token": []byte("x")}, "Secret ns/keys holds no key"},
		{"not an age key", map[string][]byte{"x.agekey": []byte("AGE-SECRET-KEY-1NOTAKEY\n")}, "read key x.agekey of Secret ns/keys: line 1 is not an age identity"},
		{"empty age key", map[string][]byte{"x.agekey": []byte("# nothing\n")}, "holds no age identity"},
		{"not OpenPGP", map[string][]byte{"x.asc": []byte("hello")}, "read key x.asc of Secret ns/keys: not an armored OpenPGP key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKeys("Secret ns/keys", tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "NOTAKEY") {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

// tamper changes a field of an encrypted YAML file.
func tamper(t *testing.T, sealed []byte, change func(map[string]any)) []byte {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(sealed, &obj); err != nil {
		t.Fatal(err)
	}
	change(obj)
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncryptedIgnoresLookalikes(t *testing.T) {
	for _, tc := range []struct{ file, data string }{
		{"values.yaml", "sops: enabled\n"},
		{"values.yaml", "sops:\n  version: 3\n"},
		{"cfg.json", `{"sops": "x"}`},
		{"a.env", "SOPS=1\n"},
		{"notes.txt", "sops mac"},
		{"broken.yaml", "sops: [\n"},
	} {
		if Encrypted(tc.file, []byte(tc.data)) {
			t.Errorf("Encrypted(%s, %q) = true", tc.file, tc.data)
		}
	}
	raw, _ := json.Marshal(map[string]any{"data": "x", "sops": map[string]any{"mac": "m"}})
	if !Encrypted("blob.bin", raw) {
		t.Errorf("the binary envelope is not seen as encrypted")
	}
}
