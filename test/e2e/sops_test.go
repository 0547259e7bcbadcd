//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/sync/decrypt/decrypttest"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// sopsTree is a repository holding a SOPS-encrypted Secret (its values
// encrypted, its name readable) and a chart in Git whose release reads an
// encrypted values file into a Secret of its own. dbKey is the key the
// Secret is encrypted for, valuesKey the values file's.
func sopsTree(t *testing.T, dbPass, token string, dbKey, valuesKey *age.X25519Identity) map[string]string {
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: %s\n", dbPass)
	return map[string]string{
		"deploy/db.yaml": string(decrypttest.Seal(t, "db.yaml", []byte(secret),
			decrypttest.Options{EncryptedRegex: "^(data|stringData)$", Age: []*age.X25519Identity{dbKey}})),
		"charts/token/Chart.yaml": "apiVersion: v2\nname: token\nversion: 1.0.0\n",
		"charts/token/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\n" +
			"data:\n  token: {{ .Values.token | b64enc | quote }}\n",
		"apps/api.yaml": "apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata:\n  name: api\nspec:\n  path: ../charts/token\n  valuesFiles: [values/api.yaml]\n",
		"apps/values/api.yaml": string(decrypttest.Seal(t, "api.yaml", []byte("token: "+token+"\n"),
			decrypttest.Options{Age: []*age.X25519Identity{valuesKey}})),
	}
}

// TestSOPSSecrets syncs an age-encrypted Secret and an encrypted Helm
// values file: without a key the commit is refused saying so; with the
// decryption Secret the Secrets in the cluster hold the plaintext;
// `plimsoll diff` of a changed password names the key, not the values; a
// tampered file and a wrong key each refuse their commit with their
// reason, applying nothing of it. The daemon's log, the Events, the sync
// status, the diff and the web view's pages hold no plaintext, and after
// the run no file under the daemon's cache or temp dir does.
func TestSOPSSecrets(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	id, other := decrypttest.NewAge(t), decrypttest.NewAge(t)
	pass1, token, pass2 := "db-pass-"+randomHex(t), "api-token-"+randomHex(t), "db-pass-"+randomHex(t)
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: s.ns}, Data: decrypttest.AgeSecret(id)}
	if _, err := suite.client.CoreV1().Secrets(s.ns).Create(context.Background(), keys, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	decryption := []string{"--decryption-secret", s.ns + "/sops-keys"}
	s.repo.Commit("db and api, encrypted", sopsTree(t, pass1, token, id, id))

	t.Log("1. without a key, the encrypted file is refused, saying so")
	out, code := s.syncOnce(t)
	if code == 0 || !strings.Contains(out, "apps/values/api.yaml: SOPS-encrypted, and no decryption key is configured for this sync") {
		t.Fatalf("sync --once without a key exited %d:\n%s", code, out)
	}

	t.Log("2. with the key, the Secrets hold the plaintext")
	s.mustSync(t, decryption...)
	checkSecretValue(t, s.ns, "db", "password", pass1)
	checkSecretValue(t, s.ns, "api-token", "token", token)

	t.Log("3. plimsoll diff of a new password names the key, not the values")
	second := s.repo.Commit("db: new password", sopsTree(t, pass2, token, id, id))
	diff, code := runPlimsoll(t, append([]string{"diff"}, s.flags(decryption...)...)...)
	if code != 1 || !strings.Contains(diff, "-  password: '[redacted: old value]'") || !strings.Contains(diff, "+  password: '[redacted: new value]'") {
		t.Fatalf("plimsoll diff exited %d, want 1 and the password's key:\n%s", code, diff)
	}

	t.Log("4. the daemon applies it")
	tmp := t.TempDir()
	uiAddr := kit.FreeAddr(t)
	d := startDaemonWithTemp(t, s, tmp, append([]string{"--interval", "1s", "--ui-listen", uiAddr, "--watch-namespace", s.ns}, decryption...)...)
	s.waitForCommit(t, second)
	checkSecretValue(t, s.ns, "db", "password", pass2)

	t.Log("5. a tampered file and a wrong key each refuse their commit, applying nothing of it")
	marker := map[string]string{"deploy/marker.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: marker\n"}
	tampered := sopsTree(t, pass2, token, id, id)
	tampered["deploy/db.yaml"] = string(decrypttest.Tamper([]byte(tampered["deploy/db.yaml"])))
	for _, bad := range []struct {
		name   string
		files  map[string]string
		reason string
	}{
		{"tampered", tampered, "deploy/db.yaml: SOPS-encrypted, and a value does not decrypt with the file's data key: the file was changed after it was encrypted"},
		{"wrong key", sopsTree(t, pass2, token, other, id), fmt.Sprintf("deploy/db.yaml: SOPS-encrypted for age %s, and no key of decryption Secret %s/sops-keys decrypts it: it holds age %s",
			other.Recipient(), s.ns, id.Recipient())},
	} {
		head := s.repo.Commit(bad.name, merge(bad.files, marker))
		var msg string
		waitFor(t, "commit "+head[:7]+" ("+bad.name+") to be refused", func(ctx context.Context) (bool, error) {
			st := s.statusAnnotations(ctx)
			msg = st["plimsoll.dev/message"]
			return st["plimsoll.dev/fetched-commit"] == head && st["plimsoll.dev/sync-status"] == "Failed" && st["plimsoll.dev/commit"] == second, nil
		})
		if !strings.Contains(msg, bad.reason) {
			t.Errorf("%s: status message %q lacks %q", bad.name, msg, bad.reason)
		}
		waitFor(t, "a SyncFailed Event saying "+bad.reason, func(context.Context) (bool, error) {
			return strings.Contains(strings.Join(eventMessages(s.events(t), "SyncFailed"), "\n"), bad.reason), nil
		})
		if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "marker", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: ConfigMap marker of the refused commit: %v, want not found", bad.name, err)
		}
		checkSecretValue(t, s.ns, "db", "password", pass2)
	}

	t.Log("6. no plaintext in the log, the Events, the status, the diff or the web view")
	var events []string
	for _, e := range s.events(t) {
		events = append(events, e.Reason+": "+e.Message)
	}
	texts := map[string]string{"the daemon's log": d.Log(), "the Events": strings.Join(events, "\n"),
		"the sync status": fmt.Sprint(s.status(t)), "plimsoll diff": diff}
	for _, page := range []string{"/", "/workloads"} {
		texts["web view page "+page] = httpGet(t, "http://"+uiAddr+page, nil)
	}
	plain := []string{pass1, pass2, token}
	for where, text := range texts {
		checkNoPlaintext(t, where, text, plain)
	}

	t.Log("7. nor on disk, under the daemon's cache and temp dirs")
	d.Stop(t)
	for _, dir := range []string{s.cacheDir, tmp} {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			checkNoPlaintext(t, p, string(data), plain)
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
}

// startDaemonWithTemp is kit.StartDaemon with TMPDIR set to tmp, so that
// what the daemon writes to its temp dir can be read after it.
func startDaemonWithTemp(t *testing.T, s *syncTarget, tmp string, extra ...string) *kit.Daemon {
	t.Helper()
	addr := kit.FreeAddr(t)
	bin, flags := s.RunFlags(extra...)
	d := kit.Start(t, kit.Process{Bin: bin, Args: append([]string{"run", "--listen", addr}, flags...), Env: []string{"TMPDIR=" + tmp}})
	d.Addr = addr
	d.WaitReady(t)
	return d
}

// checkSecretValue checks that key of Secret ns/name holds want.
func checkSecretValue(t *testing.T, ns, name, key, want string) {
	t.Helper()
	sec, err := suite.client.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read Secret %s/%s: %v", ns, name, err)
	}
	if got := string(sec.Data[key]); got != want {
		t.Errorf("Secret %s/%s key %s holds %d bytes, not the plaintext from Git", ns, name, key, len(got))
	}
}

// checkNoPlaintext fails the test when text holds any of plain, as it is
// or base64-encoded.
func checkNoPlaintext(t *testing.T, where, text string, plain []string) {
	t.Helper()
	for _, p := range plain {
		if strings.Contains(text, p) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(p))) {
			t.Errorf("%s holds the plaintext %q", where, p)
		}
	}
}
