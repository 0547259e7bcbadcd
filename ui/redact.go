package ui

import (
	"html/template"
	"reflect"
	"text/template/parse"

	"plimsoll.dev/plimsoll/internal/redact"
)

// printedFunc is the template function every printed value passes
// through (see redactPrinted).
const printedFunc = "redactValue"

// redactPrinted makes every value the templates of t print pass through
// redactValue first, as if each action {{X}} were {{X | redactPrinted}}:
// the view shows messages, Events and measurements that the daemon
// redacted already, and this is the last line before a page should any
// still hold a credential in a URL. It must run before t first executes,
// when html/template adds its escapers after it.
func redactPrinted(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			redactActions(tt.Tree.Root)
		}
	}
}

// redactActions appends the call of printedFunc to every action under n
// that prints; a declaration ({{$x := ...}}) prints nothing, and the
// templates that {{template}} calls are walked on their own.
func redactActions(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			redactActions(c)
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) == 0 {
			n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
				Args: []parse.Node{parse.NewIdentifier(printedFunc).SetPos(n.Pos)}})
		}
	case *parse.IfNode:
		redactActions(n.List)
		redactActions(n.ElseList)
	case *parse.RangeNode:
		redactActions(n.List)
		redactActions(n.ElseList)
	case *parse.WithNode:
		redactActions(n.List)
		redactActions(n.ElseList)
	}
}

// redactValue is v with the credentials of its URLs redacted when v is a
// string (or of a string type) holding any, and v itself otherwise. The
// typed content of html/template (the page's main part, already rendered
// by these templates) is left as it is.
func redactValue(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.String || rv.Type().PkgPath() == "html/template" {
		return v
	}
	if clean := redact.Text(rv.String()); clean != rv.String() {
		return clean
	}
	return v
}
