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
