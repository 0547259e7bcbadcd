package declare

import (
	"strings"
	"testing"
)

func TestParseDecryption(t *testing.T) {
	s, err := Parse(declaration("team-a", minimal+"decryption:\n  secret: sops-age\n  required: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Decryption != (Decryption{Secret: "sops-age", Required: true}) {
		t.Errorf("Decryption = %+v", s.Decryption)
	}
	if s, err := Parse(declaration("team-b", minimal)); err != nil || s.Decryption != (Decryption{}) {
		t.Errorf("no decryption: %+v, %v", s, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"decryption:\n  secret: Not_A_Name\n", "field decryption.secret: \"Not_A_Name\" is not a Secret name"},
		{"decryption:\n  secretRef: x\n", "field decryption.secretRef: unknown field"},
		{"decryption: sops-age\n", "field decryption: want a mapping of fields"},
		{"decryption:\n  required: maybe\n", "field decryption: line 4: want a mapping of secret (a Secret's name) and required (true or false)"},
	} {
		_, err := Parse(declaration("team-c", minimal+tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}
