package main

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/decrypt/decrypttest"
)

func TestDecryptionFlags(t *testing.T) {
	id := decrypttest.NewAge(t)
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: flag-pass\n"
	files := fstest.MapFS{"db.yaml": {Data: decrypttest.Seal(t, "db.yaml", []byte(secret), decrypttest.Options{Age: []*decrypttest.AgeIdentity{id}})}}
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "keys", Name: "sops"}, Data: decrypttest.AgeSecret(id)})
	read := func(t *testing.T, fsys fs.FS) (string, error) {
		t.Helper()
		data, err := fs.ReadFile(fsys, "db.yaml")
		return string(data), err
	}

	d, err := (&decryptionOptions{secret: "keys/sops"}).decryptor(client)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := read(t, d.FS(context.Background(), files)); err != nil || !strings.Contains(got, "password: flag-pass") {
		t.Errorf("--decryption-secret keys/sops: %q, %v", got, err)
	}
	d, err = (&decryptionOptions{secret: "keys/gone"}).decryptor(client)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, d.FS(context.Background(), files)); err == nil || !strings.Contains(err.Error(), "decryption Secret keys/gone cannot be read: it does not exist") {
		t.Errorf("a missing Secret: %v", err)
	}
	for _, bad := range []string{"sops", "keys/", "/sops", "Keys/sops", "keys/so_ps"} {
		if _, err := (&decryptionOptions{secret: bad}).decryptor(client); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
			t.Errorf("--decryption-secret %q: %v", bad, err)
		}
	}

	// A declared sync's Secret is in the declarations' namespace.
	if got, err := read(t, declaredDecryptor(client, "keys", declare.Decryption{Secret: "sops"}).FS(context.Background(), files)); err != nil || !strings.Contains(got, "flag-pass") {
		t.Errorf("declared decryption.secret sops: %q, %v", got, err)
	}
	if _, err := read(t, declaredDecryptor(client, "elsewhere", declare.Decryption{Secret: "sops"}).FS(context.Background(), files)); err == nil || !strings.Contains(err.Error(), "Secret elsewhere/sops cannot be read") {
		t.Errorf("a declared Secret looked for outside the declarations' namespace: %v", err)
	}
	if _, err := read(t, declaredDecryptor(client, "keys", declare.Decryption{}).FS(context.Background(), files)); err == nil || !strings.Contains(err.Error(), "no decryption key is configured") {
		t.Errorf("a declaration without decryption: %v", err)
	}
}
