package kit

import (
	"fmt"
	"strings"
)

// AnalysisDoc is an analysis ConfigMap name whose analysis.yaml is body
// (written at the left margin).
func AnalysisDoc(name, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels:\n    plimsoll.dev/analysis: \"true\"\ndata:\n  analysis.yaml: |\n", name)
	for line := range strings.SplitSeq(strings.TrimRight(body, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// SyncDeclaration is a sync declaration: ConfigMap name in namespace,
// labelled plimsoll.dev/sync-declaration, whose sync.yaml is body (the
// fields of docs/syncs.md, written at the left margin).
func SyncDeclaration(name, namespace, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {plimsoll.dev/sync-declaration: \"true\"}\ndata:\n  sync.yaml: |\n", name, namespace)
	for line := range strings.SplitSeq(strings.TrimRight(body, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// AliasBomb is a "billion laughs" document, ConfigMap bomb: nine levels
// of nine aliases would expand to 9^9 strings.
func AliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  a: &a \"lol\"\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "  %s: &%s [", name, name)
		for i := range 9 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = name
	}
	return b.String()
}
