package declare

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

func declaration(name, doc string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "plimsoll", Labels: map[string]string{contract.LabelSyncDeclaration: "true"}},
		Data:       map[string]string{contract.SyncDeclarationKey: doc},
	}
}

const minimal = "repository: https://git.example/team-a.git\nserviceAccount: team-a/deployer\n"

func TestParse(t *testing.T) {
	full := `repository: ssh://git@git.example/team-a.git
branch: release
path: apps/web/
interval: 2m
credentials: team-a-git
windows: ["deny 0 22 * * * 8h"]
prune: false
namespace: team-a
serviceAccount: team-a/deployer
`
	s, err := Parse(declaration("team-a", full))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "team-a" || s.Repository != "ssh://git@git.example/team-a.git" || s.Branch != "release" || s.Path != "apps/web" ||
		s.Interval != 2*time.Minute || s.Credentials != "team-a-git" || len(s.Windows) != 1 || s.Prune || s.Namespace != "team-a" ||
		s.ServiceAccount != (Identity{Namespace: "team-a", Name: "deployer"}) {
		t.Fatalf("Parse = %+v", s)
	}
	if got := s.ServiceAccount.UserName(); got != "system:serviceaccount:team-a:deployer" {
		t.Errorf("UserName = %q", got)
	}

	d, err := Parse(declaration("team-b", minimal))
	if err != nil {
		t.Fatal(err)
	}
	if d.Branch != "main" || d.Path != "." || d.Interval != 0 || !d.Prune || d.Credentials != "" || d.Keyring != nil {
		t.Errorf("defaults = %+v", d)
	}
	again, _ := Parse(declaration("team-b", minimal))
	other, _ := Parse(declaration("team-c", minimal))
	if again.Digest != d.Digest || other.Digest == d.Digest {
		t.Errorf("digests: %s, again %s, renamed %s", d.Digest, again.Digest, other.Digest)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, cmName, doc string
		// field is the FieldError's field; want is in its text.
		field, want string
	}{
		{name: "unknown field", doc: minimal + "intervall: 1m\n", field: "intervall", want: "unknown field"},
		{name: "field twice", doc: minimal + "path: a\npath: b\n", field: "path", want: "given twice"},
		{name: "unknown verify field", doc: minimal + "verify: {gpg: x}\n", field: "verify.gpg", want: "unknown field"},
		{name: "missing repository", doc: "serviceAccount: a/b\n", field: "repository", want: "required"},
		{name: "credentials in the URL", doc: "repository: https://user:hunter2@git.example/a.git\nserviceAccount: a/b\n", field: "repository", want: "carries credentials"},
		{name: "leading dash", doc: "repository: -upload-pack=x\nserviceAccount: a/b\n", field: "repository", want: `must not begin with "-"`},
		{name: "unsupported scheme", doc: "repository: ftp://git.example/a.git\nserviceAccount: a/b\n", field: "repository", want: "not supported"},
		{name: "bad branch", doc: minimal + "branch: 'a..b'\n", field: "branch", want: "not a valid branch name"},
		{name: "absolute path", doc: minimal + "path: /etc\n", field: "path", want: "absolute"},
		{name: "path leaving", doc: minimal + "path: a/../../b\n", field: "path", want: "leaves the repository"},
		{name: "interval not a duration", doc: minimal + "interval: 1 minute\n", field: "interval", want: `"1 minute" is not a duration`},
		{name: "interval too short", doc: minimal + "interval: 10ms\n", field: "interval", want: "shorter than"},
		{name: "interval a number", doc: minimal + "interval: [1]\n", field: "interval", want: "want a string"},
		{name: "bad credentials name", doc: minimal + "credentials: Team_A\n", field: "credentials", want: "not a Secret name"},
		{name: "bad window", doc: minimal + "windows: ['close 0 22 * * * 8h']\n", field: "windows[0]", want: "neither"},
		{name: "prune not a bool", doc: minimal + "prune: maybe\n", field: "prune", want: "true or false"},
		{name: "bad namespace", doc: minimal + "namespace: Team-A\n", field: "namespace", want: "not a namespace name"},
		{name: "missing identity", doc: "repository: https://git.example/a.git\n", field: "serviceAccount", want: "required"},
		{name: "identity without namespace", doc: "repository: https://git.example/a.git\nserviceAccount: deployer\n", field: "serviceAccount", want: "not namespace/name"},
		{name: "bad openpgp key", doc: minimal + "verify: {openpgp: not a key}\n", field: "verify.openpgp", want: ""},
		{name: "bad ssh signers", doc: minimal + "verify: {ssh: not a key}\n", field: "verify.ssh", want: ""},
		{name: "not a mapping", doc: "- a\n", want: "not a mapping"},
		{name: "two documents", doc: minimal + "---\n" + minimal, want: "more than one YAML document"},
		{name: "empty", doc: "", want: "empty"},
		{name: "bad name", cmName: "Team_A", doc: minimal, want: "not a sync name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.cmName
			if name == "" {
				name = "team-a"
			}
			_, err := Parse(declaration(name, tc.doc))
			fe, ok := err.(*FieldError)
			if !ok {
				t.Fatalf("Parse error = %v (%T), want a *FieldError", err, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Error(), tc.want) {
				t.Errorf("Parse error = %q (field %q), want field %q and %q", fe.Error(), fe.Field, tc.field, tc.want)
			}
			if strings.Contains(fe.Error(), "hunter2") {
				t.Errorf("the error repeats the password: %q", fe.Error())
			}
		})
	}
}

func TestParseWithoutDocument(t *testing.T) {
	cm := declaration("team-a", "")
	delete(cm.Data, contract.SyncDeclarationKey)
	if _, err := Parse(cm); err == nil || !strings.Contains(err.Error(), "sync.yaml is missing") {
		t.Errorf("Parse = %v, want the missing key named", err)
	}
}
