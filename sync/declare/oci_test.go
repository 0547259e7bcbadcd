package declare

import (
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
)

func TestParseOCI(t *testing.T) {
	_, pub := artifacttest.NewKey(t)
	doc := "repository: oci://registry.example/team-a/manifests\noci: {semver: '>=1.0.0 <2.0.0', plainHTTP: true}\n" +
		"verify:\n  cosign: |\n    " + strings.ReplaceAll(strings.TrimSpace(string(pub)), "\n", "\n    ") + "\nserviceAccount: team-a/deployer\n"
	s, err := Parse(declaration("team-a", doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.OCI == nil || s.OCI.Repository != "registry.example/team-a/manifests" || s.OCI.SemVer != ">=1.0.0 <2.0.0" || !s.PlainHTTP ||
		s.CosignKeys == nil || s.CosignKeys.Len() != 1 || s.Branch != "" || s.Verify[2] == "" {
		t.Fatalf("Parse = %+v", s)
	}
	plain, err := Parse(declaration("team-a", "repository: oci://registry.example/a\nserviceAccount: a/b\n"))
	if err != nil || plain.OCI == nil || plain.OCI.Tag != "latest" || plain.CosignKeys != nil {
		t.Fatalf("an OCI repository alone: %+v, %v; want tag latest, unverified", plain, err)
	}
	if git, err := Parse(declaration("team-a", minimal)); err != nil || git.OCI != nil {
		t.Errorf("a Git declaration: %+v, %v; want no OCI reference", git, err)
	}
	keyless, err := Parse(declaration("team-a", "repository: oci://registry.example/a\nserviceAccount: a/b\n"+keylessVerify(t, "")))
	if err != nil || keyless.CosignKeys == nil || keyless.CosignKeys.Len() != 0 || keyless.Verify[2] == "" {
		t.Fatalf("a keyless identity alone: %+v, %v", keyless, err)
	}
	other, _ := Parse(declaration("team-a", "repository: oci://registry.example/a\nserviceAccount: a/b\n"+keylessVerify(t, "")+"  cosign: |\n    "+strings.ReplaceAll(strings.TrimSpace(string(pub)), "\n", "\n    ")+"\n"))
	if other == nil || other.CosignKeys.Len() != 1 || other.Verify[2] == keyless.Verify[2] {
		t.Errorf("a key beside the keyless identity: %+v; want 1 key and another Verify text", other)
	}
}

// keylessVerify is a verify field trusting a keyless identity, without
// the field named leave.
func keylessVerify(t *testing.T, leave string) string {
	root := strings.ReplaceAll(string(artifacttest.NewSigstore(t).TrustedRoot(t)), "'", "''")
	doc := "verify:\n"
	for _, f := range []struct{ name, value string }{{"trustedRoot", "'" + root + "'"}, {"issuer", "https://token\\.actions\\.example"}, {"identity", "https://git\\.example/team-a/.*"}} {
		if f.name != leave {
			doc += "  " + f.name + ": " + f.value + "\n"
		}
	}
	return doc
}

func TestParseOCIRefuses(t *testing.T) {
	const oci = "repository: oci://registry.example/a\nserviceAccount: a/b\n"
	for _, tc := range []struct{ name, doc, field, want string }{
		{"oci with Git", minimal + "oci: {tag: v1}\n", "oci", "is for an OCI repository"},
		{"cosign with Git", minimal + "verify: {cosign: x}\n", "verify.cosign", "checks OCI artifacts"},
		{"branch with OCI", oci + "branch: main\n", "branch", "has no branches"},
		{"openpgp with OCI", oci + "verify: {openpgp: x}\n", "verify.openpgp", "use verify.cosign"},
		{"unknown oci field", oci + "oci: {branch: x}\n", "oci.branch", "unknown field"},
		{"tag and digest", oci + "oci: {tag: v1, digest: 'sha256:ab'}\n", "oci", "not several"},
		{"bad semver", oci + "oci: {semver: '>=1 <<2'}\n", "oci.semver", `semver range ">=1 <<2"`},
		{"bad digest", oci + "oci: {digest: 'sha256:ab'}\n", "oci.digest", `OCI digest "sha256:ab"`},
		{"bad tag", oci + "oci: {tag: 'a b'}\n", "oci.tag", "is not a tag"},
		{"tag in the URL", "repository: oci://registry.example/a:v1\nserviceAccount: a/b\n", "repository", "names a tag or digest"},
		{"bad cosign key", oci + "verify: {cosign: not a key}\n", "verify.cosign", "no PEM public key"},
		{"oci not a mapping", oci + "oci: v1\n", "oci", "want a mapping"},
		{"keyless with Git", minimal + keylessVerify(t, ""), "verify.trustedRoot", "checks OCI artifacts"},
		{"keyless without identity", oci + keylessVerify(t, "identity"), "verify.identity", "is required with the other keyless fields"},
		{"keyless without root", oci + keylessVerify(t, "trustedRoot"), "verify.trustedRoot", "is required with the other keyless fields"},
		{"bad trusted root", oci + "verify: {trustedRoot: '{}', issuer: a, identity: b}\n", "verify.trustedRoot", "trusted root:"},
		{"bad identity", oci + strings.Replace(keylessVerify(t, ""), "team-a/.*", "team-a/(", 1), "verify.identity", "is not a regular expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(declaration("team-a", tc.doc))
			fe, ok := err.(*FieldError)
			if !ok {
				t.Fatalf("Parse error = %v (%T), want a *FieldError", err, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Error(), tc.want) {
				t.Errorf("Parse error = %q (field %q), want field %q and %q", fe.Error(), fe.Field, tc.field, tc.want)
			}
		})
	}
}
