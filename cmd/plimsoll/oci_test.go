package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// TestOCIFlags: the flags name one source, with only its flags; a bad
// reference, range, digest or key file is refused naming the flag.
func TestOCIFlags(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(priv, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--repo (a Git repository) or --oci-repository (an OCI artifact) is required"},
		{[]string{"--repo=https://git.example/a.git", "--oci-repository=oci://r.example/a"}, "not both"},
		{[]string{"--repo=https://git.example/a.git", "--oci-tag=v1"}, "--oci-tag goes with --oci-repository"},
		{[]string{"--oci-repository=oci://r.example/a", "--verify-key=keys.asc"}, "--verify-key goes with --repo"},
		{[]string{"--oci-repository=oci://r.example/a", "--hold-rewinds"}, "--hold-rewinds goes with --repo"},
		{[]string{"--oci-repository=https://r.example/a"}, "--oci-repository: OCI repository \"https://r.example/a\": want oci://"},
		{[]string{"--oci-repository=oci://r.example/a", "--oci-semver=>=1 <<2"}, `semver range ">=1 <<2"`},
		{[]string{"--oci-repository=oci://r.example/a", "--oci-digest=sha256:12"}, `OCI digest "sha256:12"`},
		{[]string{"--oci-repository=oci://r.example/a", "--oci-tag=v1", "--oci-digest=sha256:12"}, "not several"},
		{[]string{"--oci-repository=oci://r.example/a", "--oci-verify-key=" + filepath.Join(dir, "missing.pub")}, "read --oci-verify-key: open " + filepath.Join(dir, "missing.pub")},
		{[]string{"--oci-repository=oci://r.example/a", "--oci-verify-key=" + priv}, "read --oci-verify-key " + priv + ": PEM block 1 is a private key"},
	} {
		o := &sourceOptions{}
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o.addFlags(fs)
		o.addHoldRewindsFlag(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := o.newSource(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}

	o := &sourceOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse([]string{"--oci-repository=oci://r.example/team/app", "--oci-semver=~1.4"}); err != nil {
		t.Fatal(err)
	}
	src, err := o.newSource()
	if err != nil {
		t.Fatalf("a good OCI source: %v", err)
	}
	if _, ok := src.(*artifact.Source); !ok {
		t.Errorf("source %T, want an *artifact.Source", src)
	}
}

// TestDeclaredOCI: a declared sync's artifact is keyed by its reference,
// tag included, and opened with the credentials of its Secret; a bad
// .dockerconfigjson is refused naming the Secret and key.
func TestDeclaredOCI(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	digest := reg.Push(t, "team/app", "v1", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: "kind: ConfigMap\n"}), nil)
	parse := func(doc string) *declare.Spec {
		t.Helper()
		spec, err := declare.Parse(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Data: map[string]string{"sync.yaml": doc}})
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	v1 := parse("repository: " + reg.URL("team/app") + "\noci: {tag: v1, plainHTTP: true}\ncredentials: registry\nserviceAccount: a/b\n")
	v2 := parse("repository: " + reg.URL("team/app") + "\noci: {tag: v2, plainHTTP: true}\ncredentials: registry\nserviceAccount: a/b\n")
	if declaredKey(v1) == declaredKey(v2) {
		t.Errorf("two tags of one repository share the key %+v", declaredKey(v1))
	}
	m := &many{o: &runOptions{syncsNamespace: "plimsoll"}}
	src, err := m.openArtifact(v1, map[string][]byte{credentialUsername: []byte("ci"), credentialToken: []byte("t0ken")})
	if err != nil {
		t.Fatal(err)
	}
	if head, err := src.Head(context.Background()); err != nil || head != digest {
		t.Errorf("Head = %s, %v; want %s", head, err, digest)
	}
	_, err = m.openArtifact(v1, map[string][]byte{credentialDockerConfig: []byte("{not json")})
	if err == nil || !strings.Contains(err.Error(), "Secret plimsoll/registry key .dockerconfigjson") {
		t.Errorf("a bad .dockerconfigjson: %v; want it named", err)
	}
}

// TestHelmVerifyKeyFlag: --helm-verify-key gives the chart renderers its
// keys; a file that is not a public key is refused naming the flag.
func TestHelmVerifyKeyFlag(t *testing.T) {
	dir := t.TempDir()
	_, pub := artifacttest.NewKey(t)
	good, bad := filepath.Join(dir, "cosign.pub"), filepath.Join(dir, "keys.asc")
	if err := os.WriteFile(good, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&sourceOptions{helmVerify: cosignTrust{prefix: "helm", keyFile: good}}).helmConfig()
	if err != nil || cfg.VerifyKeys == nil || cfg.VerifyKeys.Len() != 1 {
		t.Fatalf("a cosign key: %+v, %v", cfg.VerifyKeys, err)
	}
	_, err = (&sourceOptions{helmVerify: cosignTrust{prefix: "helm", keyFile: bad}}).helmConfig()
	if err == nil || !strings.Contains(err.Error(), "read --helm-verify-key "+bad+": PEM block 1 is a PGP PUBLIC KEY BLOCK, not a PUBLIC KEY") {
		t.Errorf("an OpenPGP key: %v", err)
	}
}

// TestKeylessFlags: the keyless flags read the trusted root and the
// identity, beside the keys or alone; one missing, or a root that does
// not parse, is refused naming the flag.
func TestKeylessFlags(t *testing.T) {
	dir := t.TempDir()
	_, pub := artifacttest.NewKey(t)
	keyFile, rootFile, badRoot := filepath.Join(dir, "cosign.pub"), filepath.Join(dir, "trusted_root.json"), filepath.Join(dir, "bad.json")
	for file, text := range map[string][]byte{keyFile: pub, rootFile: artifacttest.NewSigstore(t).TrustedRoot(t), badRoot: []byte("{}")} {
		if err := os.WriteFile(file, text, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const issuer, identity = "https://token.actions.example", "https://git.example/.*"
	keys, err := (&cosignTrust{prefix: "oci", keyFile: keyFile, rootFile: rootFile, issuer: issuer, identity: identity}).read()
	if err != nil || keys.Len() != 1 {
		t.Fatalf("a key and a keyless identity: %v, %v", keys, err)
	}
	keyOnly, _ := (&cosignTrust{prefix: "oci", keyFile: keyFile}).read()
	if keyOnly.ID() == keys.ID() {
		t.Error("a keyless identity does not change the keys' ID")
	}
	if keys, err := (&cosignTrust{prefix: "oci", rootFile: rootFile, issuer: issuer, identity: identity}).read(); err != nil || keys == nil || keys.Len() != 0 {
		t.Errorf("a keyless identity alone: %v, %v", keys, err)
	}
	if keys, err := (&cosignTrust{prefix: "oci"}).read(); err != nil || keys != nil {
		t.Errorf("no flag: %v, %v; want no keys", keys, err)
	}
	for _, c := range []struct {
		flags cosignTrust
		want  string
	}{
		{cosignTrust{prefix: "oci", rootFile: rootFile, issuer: issuer}, "--oci-verify-identity is required with the other keyless flags"},
		{cosignTrust{prefix: "helm", identity: identity}, "--helm-verify-trusted-root is required with the other keyless flags"},
		{cosignTrust{prefix: "oci", rootFile: badRoot, issuer: issuer, identity: identity}, "read --oci-verify-trusted-root " + badRoot + ": trusted root:"},
		{cosignTrust{prefix: "oci", rootFile: rootFile, issuer: issuer, identity: "(x"}, `identity "(x" is not a regular expression`},
	} {
		if _, err := c.flags.read(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.flags, err, c.want)
		}
	}
	o := &sourceOptions{repo: "https://git.example/x", oci: ociOptions{verify: cosignTrust{issuer: issuer}}}
	if _, err := o.isOCI(); err == nil || !strings.Contains(err.Error(), "--oci-verify-issuer goes with --oci-repository") {
		t.Errorf("--oci-verify-issuer with a Git repository: %v", err)
	}
}
