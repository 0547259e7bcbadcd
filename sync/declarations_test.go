package sync

import (
	"context"
	"slices"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/declare"
)

// clusterSays is a Declarations of namespace plimsoll where only the
// Secrets in secrets exist and only the ServiceAccounts in accounts may
// be acted as.
type clusterSays struct {
	secrets, accounts []string
}

func (c clusterSays) Namespace() string { return "plimsoll" }

func (c clusterSays) Check(_ context.Context, spec *declare.Spec, inCommit func(kind, namespace, name string) bool) error {
	if n := spec.Credentials; n != "" && !slices.Contains(c.secrets, n) && !inCommit("Secret", c.Namespace(), n) {
		return &declare.FieldError{Field: declare.FieldCredentials, Reason: "no Secret " + n}
	}
	if !slices.Contains(c.accounts, spec.ServiceAccount.String()) {
		return &declare.FieldError{Field: declare.FieldServiceAccount, Reason: "may not act as " + spec.ServiceAccount.String()}
	}
	return nil
}

// declarationDoc is the declaration name in namespace ns holding body.
func declarationDoc(ns, name, body string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  labels: {plimsoll.dev/sync-declaration: "true"}
data:
  sync.yaml: |
` + indent(body, "    ")
}

func TestCheckDeclarations(t *testing.T) {
	good := "repository: https://git.example/a.git\nserviceAccount: team-a/deployer\ncredentials: git\n"
	cluster := clusterSays{secrets: []string{"git"}, accounts: []string{"team-a/deployer"}}
	tests := []struct {
		name  string
		decls Declarations
		docs  []string
		words []string // in the error; none: no error
	}{
		{name: "a good declaration", decls: cluster, docs: []string{declarationDoc("plimsoll", "team-a", good)}},
		{
			name:  "a daemon that takes none",
			docs:  []string{declarationDoc("plimsoll", "team-a", good)},
			words: []string{"analysis.yaml, document 1", "declared sync team-a", "takes no sync declarations"},
		},
		{
			name:  "another namespace",
			decls: cluster,
			docs:  []string{declarationDoc("team-a", "team-a", good)},
			words: []string{"declared in namespace team-a", "only from namespace plimsoll"},
		},
		{
			name:  "itself",
			decls: cluster,
			docs:  []string{declarationDoc("plimsoll", "root", good)},
			words: []string{"cannot declare itself"},
		},
		{
			name:  "a bad field",
			decls: cluster,
			docs:  []string{declarationDoc("plimsoll", "team-a", good+"interval: soon\n")},
			words: []string{`field data["sync.yaml"].interval`, `"soon" is not a duration`},
		},
		{
			name:  "a missing Secret",
			decls: cluster,
			docs:  []string{declarationDoc("plimsoll", "team-a", strings.Replace(good, "credentials: git", "credentials: gone", 1))},
			words: []string{`field data["sync.yaml"].credentials`, "no Secret gone"},
		},
		{
			name:  "a Secret the commit brings",
			decls: cluster,
			docs: []string{declarationDoc("plimsoll", "team-a", strings.Replace(good, "credentials: git", "credentials: new", 1)),
				"apiVersion: v1\nkind: Secret\nmetadata: {name: new, namespace: plimsoll}\n"},
		},
		{
			name:  "an identity it may not use",
			decls: cluster,
			docs:  []string{declarationDoc("plimsoll", "team-a", strings.Replace(good, "team-a/deployer", "kube-system/admin", 1))},
			words: []string{`field data["sync.yaml"].serviceAccount`, "may not act as kube-system/admin"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{Name: "root", Declarations: tt.decls})
			err := s.checkDeclarations(context.Background(), objectsOf(t, tt.docs...))
			if len(tt.words) == 0 {
				if err != nil {
					t.Fatalf("checkDeclarations = %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkDeclarations passed, want %q", tt.words)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
