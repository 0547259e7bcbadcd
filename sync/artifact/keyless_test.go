package artifact_test

import (
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// The OIDC identity the keyless tests trust, as a CI's workflow signs.
const (
	issuer   = "https://token.actions.example"
	identity = "https://git.example/team/app/.github/workflows/release.yaml@refs/heads/main"
)

// keylessKeys trusts the keyless identity above, from sigstore's trusted
// root, beside the cosign keys keys (nil: none).
func keylessKeys(t *testing.T, sigstore *artifacttest.Sigstore, keys *artifact.Keys) *artifact.Keys {
	t.Helper()
	k, err := keys.WithKeyless(sigstore.TrustedRoot(t), issuer, `https://git\.example/team/app/.*@refs/heads/main`)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeylessSignatures: keyless signatures, in cosign's classic layout
// and as sigstore bundles, count when the trusted identity made them and
// they verify offline against the trusted root; any other is refused
// naming who signed and why.
func TestKeylessSignatures(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	sigstore, elsewhere := artifacttest.NewSigstore(t), artifacttest.NewSigstore(t)
	key, _, keys := artifacttest.NewKeys(t)
	s := newSource(t, reg, "app", keylessKeys(t, sigstore, keys))
	n := 0
	push := func() string {
		n++
		return reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent,
			helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: deployYAML + strings.Repeat("#", n) + "\n"}), nil)
	}
	accepted := func(what, digest string) {
		t.Helper()
		if _, snap, err := poll(t, s); err != nil || snap.Commit.Hash != digest {
			t.Fatalf("%s: %v; want %s applied", what, err, digest)
		}
	}

	classic := push()
	reg.SignKeyless(t, sigstore, "app", classic, issuer, identity)
	accepted("classic keyless signature by the trusted identity", classic)

	bundled := push()
	reg.SignBundleKeyless(t, sigstore, "app", bundled, issuer, identity)
	accepted("keyless bundle by the trusted identity", bundled)

	// A key's signature still counts beside the keyless identity.
	byKey := push()
	reg.Sign(t, "app", byKey, key)
	accepted("a trusted key's signature", byKey)

	for _, c := range []struct {
		name   string
		sign   func(digest string)
		reason string
	}{
		{"another subject", func(d string) {
			reg.SignBundleKeyless(t, sigstore, "app", d, issuer, "https://git.example/team/other/x.yaml@refs/heads/main")
		},
			`signed keylessly by https://git.example/team/other/x.yaml@refs/heads/main (issuer ` + issuer + `), not by an identity the sync trusts`},
		{"another issuer", func(d string) { reg.SignKeyless(t, sigstore, "app", d, "https://accounts.example", identity) },
			"(issuer https://accounts.example), not by an identity the sync trusts"},
		// The expression matches the whole subject: a branch whose name
		// starts with main is not main.
		{"a longer subject", func(d string) { reg.SignKeyless(t, sigstore, "app", d, issuer, identity+"-evil") },
			"not by an identity the sync trusts"},
		{"another Sigstore's certificate", func(d string) { reg.SignBundleKeyless(t, elsewhere, "app", d, issuer, identity) },
			"does not verify against the trusted root"},
		{"classic, another Sigstore's", func(d string) { reg.SignKeyless(t, elsewhere, "app", d, issuer, identity) },
			"does not verify against the trusted root"},
		{"another artifact's bundle copied", func(d string) { reg.SignBundleKeylessOf(t, sigstore, "app", d, classic, issuer, identity) },
			"a trusted signer signed another artifact in bundle"},
	} {
		d := push()
		c.sign(d)
		_, _, err := poll(t, s)
		refused(t, err, d, c.reason)
	}

	// A sync that trusts keys only refuses a keyless signature, saying
	// what it would take.
	keyless := push()
	reg.SignKeyless(t, sigstore, "app", keyless, issuer, identity)
	_, _, err := poll(t, newSource(t, reg, "app", keys))
	refused(t, err, keyless, "signed keylessly (a Fulcio certificate), and the sync trusts keys only")
}

func TestWithKeyless(t *testing.T) {
	root := artifacttest.NewSigstore(t).TrustedRoot(t)
	_, pub := artifacttest.NewKey(t)
	keys, _ := artifact.ReadKeys(pub)
	a, err := keys.WithKeyless(root, issuer, identity)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() == keys.ID() || a.Len() != 1 {
		t.Errorf("keys with a keyless identity: ID %s (keys alone %s), %d keys; want another ID, the 1 key kept", a.ID(), keys.ID(), a.Len())
	}
	b, _ := keys.WithKeyless(root, issuer, identity+".*")
	if b.ID() == a.ID() {
		t.Error("another identity has the same ID")
	}
	if only, err := (*artifact.Keys)(nil).WithKeyless(root, issuer, identity); err != nil || only.Len() != 0 || only.ID() == "" {
		t.Errorf("keyless alone: %v, %v", only, err)
	}
	for _, c := range []struct {
		root             []byte
		issuer, identity string
		want             string
	}{
		{[]byte("{"), issuer, identity, "trusted root:"},
		{[]byte(`{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), issuer, identity, "lists no certificate authority"},
		{root, "", identity, "need the OIDC issuer"},
		{root, issuer, "", "need the identity"},
		{root, issuer, "team/(app", `identity "team/(app" is not a regular expression`},
		{root, "[", identity, `issuer "[" is not a regular expression`},
	} {
		if _, err := keys.WithKeyless(c.root, c.issuer, c.identity); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WithKeyless(%.20q, %q, %q) = %v; want %q", c.root, c.issuer, c.identity, err, c.want)
		}
	}
}
