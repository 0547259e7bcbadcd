package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plimsoll.dev/plimsoll/notify"
	"plimsoll.dev/plimsoll/rollout"
	psync "plimsoll.dev/plimsoll/sync"
)

// referencePath is the reference, from this package's directory.
var referencePath = filepath.Join("..", "..", "docs", "reference.md")

// The sections of docs/reference.md the test reads.
const (
	sectionCommands    = "Commands"
	sectionFlags       = "Flags"
	sectionAnnotations = "Annotations"
	sectionLabels      = "Labels"
	sectionKinds       = "Kinds read from Git"
	sectionStatus      = "Status output"
	sectionEvents      = "Events"
	sectionMetrics     = "Metrics"
)

// internalKeys are plimsoll.dev/ keys in the source that no object in a
// cluster carries, and so are not in the reference.
var internalKeys = map[string]string{
	"plimsoll.dev/metadata-hash": "kept on the sync's in-memory copies of the objects it watches, never written",
	"plimsoll.dev/writers-hash":  "kept on the sync's in-memory copies of the objects it watches, never written",
	"plimsoll.dev/steering-hash": "kept on the sync's in-memory copies of the objects it watches, never written",
}

// reference is docs/reference.md read into the rows of its tables and its
// code spans, by ## section (### subsections belong to their section).
type reference struct {
	rows  map[string][][]string
	spans map[string][]string
}

// cellSplit splits a table row on the | that are not escaped.
var cellSplit = regexp.MustCompile(`(^|[^\\])\|`)

// codeSpan matches a code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

func readReference(t *testing.T) reference {
	t.Helper()
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("read the reference: %v", err)
	}
	ref := reference{rows: map[string][][]string{}, spans: map[string][]string{}}
	section := ""
	for line := range strings.SplitSeq(string(raw), "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.TrimSpace(title)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			ref.spans[section] = append(ref.spans[section], m[1])
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		marked := cellSplit.ReplaceAllString(strings.Trim(strings.TrimSpace(line), "|"), "$1\x00")
		var cells []string
		for c := range strings.SplitSeq(marked, "\x00") {
			cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), `\|`, "|"))
		}
		ref.rows[section] = append(ref.rows[section], cells)
	}
	return ref
}

// spansOf returns the code spans of a cell.
func spansOf(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// keyed returns the rows of section whose first cell's first code span is
// key.
func (r reference) keyed(section, key string) [][]string {
	var out [][]string
	for _, row := range r.rows[section] {
		if s := spansOf(row[0]); len(s) > 0 && s[0] == key {
			out = append(out, row)
		}
	}
	return out
}

// mentions reports whether a code span of section ("" for any) holds s.
func (r reference) mentions(section, s string) bool {
	for sec, spans := range r.spans {
		if section != "" && sec != section {
			continue
		}
		for _, span := range spans {
			if strings.Contains(span, s) {
				return true
			}
		}
	}
	return false
}

// commands lists the command tree below root, by path.
func commands(root *cobra.Command) map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root {
			out[c.CommandPath()] = c
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// TestReferenceListsEveryName checks docs/reference.md against the names
// plimsoll answers to: each command and flag of the binary's command tree
// (with its default), each annotation and label key, value and Event
// reason in the source, each metric as registered and each field of the
// status output. A name without a line fails, with the line to add; so
// does a line that names what no longer exists.
func TestReferenceListsEveryName(t *testing.T) {
	// --cache-dir defaults to $TMPDIR/plimsoll: the reference gives it for
	// the usual TMPDIR.
	t.Setenv("TMPDIR", "/tmp")
	ref := readReference(t)
	cmds := commands(newRootCommand())
	t.Run("commands", func(t *testing.T) { checkCommands(t, ref, cmds) })
	t.Run("flags", func(t *testing.T) { checkFlags(t, ref, cmds) })
	t.Run("keys", func(t *testing.T) { checkKeys(t, ref) })
	t.Run("metrics", func(t *testing.T) { checkMetrics(t, ref) })
	t.Run("status", func(t *testing.T) {
		checkFields(t, ref, reflect.TypeFor[statusReport](), reflect.TypeFor[buildInfo]())
	})
}

func checkCommands(t *testing.T, ref reference, cmds map[string]*cobra.Command) {
	named := map[string]bool{}
	for _, row := range ref.rows[sectionCommands] {
		spans := spansOf(row[0])
		if len(spans) == 0 {
			continue
		}
		// "plimsoll trace WORKLOAD" names plimsoll trace.
		words := strings.Fields(spans[0])
		for n := len(words); n > 0; n-- {
			if path := strings.Join(words[:n], " "); cmds[path] != nil {
				named[path] = true
				break
			} else if n == 1 {
				t.Errorf("docs/reference.md, %s: the row of %q names no command of plimsoll; remove it", sectionCommands, spans[0])
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(cmds)) {
		if !named[path] {
			t.Errorf("docs/reference.md, %s: no row for %q; add:\n| `%s` | %s |", sectionCommands, path, cmds[path].UseLine(), cmds[path].Short)
		}
	}
}

func checkFlags(t *testing.T, ref reference, cmds map[string]*cobra.Command) {
	rows := ref.rows[sectionFlags]
	for _, path := range slices.Sorted(maps.Keys(cmds)) {
		cmd := cmds[path]
		name := strings.TrimPrefix(path, "plimsoll ")
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			var ofFlag, row []string
			for _, r := range rows {
				if len(r) < 4 || !slices.Contains(spansOf(r[0]), "--"+f.Name) {
					continue
				}
				ofFlag = append(ofFlag, r[1])
				if slices.Contains(listed(r[1]), name) {
					row = r
				}
			}
			switch {
			case ofFlag == nil:
				t.Errorf("docs/reference.md, %s: no row for --%s of %q; add:\n%s", sectionFlags, f.Name, path, flagRow(f, name))
				return
			case row == nil:
				t.Errorf("docs/reference.md, %s: the rows of --%s list %q, not %s: add %s to the row that holds for it, or a row of its own:\n%s",
					sectionFlags, f.Name, ofFlag, name, name, flagRow(f, name))
				return
			}
			if f.Shorthand != "" && !slices.Contains(spansOf(row[0]), "-"+f.Shorthand) {
				t.Errorf("docs/reference.md, %s: the row of --%s for %s does not give its shorthand `-%s`", sectionFlags, f.Name, name, f.Shorthand)
			}
			if msg := checkDefault(f, row[2]); msg != "" {
				t.Errorf("docs/reference.md, %s: --%s of %q: %s", sectionFlags, f.Name, path, msg)
			}
		})
	}
	// And the other way: every flag a row names, on every command it lists.
	for _, r := range rows {
		if len(r) < 4 {
			continue
		}
		for _, span := range spansOf(r[0]) {
			flag, ok := strings.CutPrefix(span, "--")
			if !ok {
				continue
			}
			for _, name := range listed(r[1]) {
				cmd := cmds["plimsoll "+name]
				if cmd == nil || cmd.LocalFlags().Lookup(flag) == nil {
					t.Errorf("docs/reference.md, %s: the row of --%s lists %s, which has no such flag", sectionFlags, flag, name)
				}
			}
		}
	}
}

// listed splits a cell of comma-separated command names.
func listed(cell string) []string {
	var out []string
	for name := range strings.SplitSeq(cell, ",") {
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

// flagRow is the row to add for flag f of command name.
func flagRow(f *pflag.Flag, name string) string {
	flag := "`--" + f.Name + "`"
	if f.Shorthand != "" {
		flag += ", `-" + f.Shorthand + "`"
	}
	def := "none"
	if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "false" {
		def = "`" + f.DefValue + "`"
	}
	return fmt.Sprintf("| %s | %s | %s | %s |", flag, name, def, f.Usage)
}

// checkDefault compares flag f's default with its row's default cell: the
// first code span there, for a flag whose default is a value (a duration
// compares as one). An empty, false or empty-list default is said in
// words.
func checkDefault(f *pflag.Flag, cell string) string {
	if f.DefValue == "" || f.DefValue == "[]" || f.DefValue == "false" {
		return ""
	}
	spans := spansOf(cell)
	if len(spans) == 0 {
		return fmt.Sprintf("defaults to `%s`; its row says %q", f.DefValue, cell)
	}
	if f.Value.Type() == "duration" {
		want, _ := time.ParseDuration(f.DefValue)
		if got, err := time.ParseDuration(spans[0]); err == nil && got == want {
			return ""
		}
	} else if spans[0] == f.DefValue {
		return ""
	}
	return fmt.Sprintf("defaults to `%s`; its row says `%s`", f.DefValue, spans[0])
}

// sourceNames are the names the source gives keys, values and reasons.
type sourceNames struct {
	// consts are the string constants named Annotation*, Label* and
	// Reason*, by "<dir>.<name>", with their values.
	consts map[string]string
	// literals are the plimsoll.dev/ keys written as literals.
	literals map[string]string
	// contract are the string constants of package contract, evaluated.
	contract map[string]string
}

// pluckKey matches a plimsoll.dev/ key (not an import path).
var pluckKey = regexp.MustCompile(`^plimsoll\.dev/[a-z0-9-]+$`)

// readSource reads the names from the module's non-test Go files.
func readSource(t *testing.T) sourceNames {
	t.Helper()
	root := filepath.Join("..", "..")
	names := sourceNames{consts: map[string]string{}, literals: map[string]string{}, contract: map[string]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if path != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "bin") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (hack/tools/...)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if v, ok := stringValue(n); ok && pluckKey.MatchString(v) {
					names.literals[v] = fset.Position(n.Pos()).String()
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if i >= len(n.Values) || !(strings.HasPrefix(id.Name, "Annotation") || strings.HasPrefix(id.Name, "Label") || strings.HasPrefix(id.Name, "Reason")) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok {
						if v, ok := stringValue(lit); ok {
							names.consts[filepath.ToSlash(rel)+"."+id.Name] = v
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("read the source: %v", err)
	}
	names.contract = contractConstants(t, filepath.Join(root, "contract"))
	return names
}

// stringValue is the value of a string literal.
func stringValue(lit *ast.BasicLit) (string, bool) {
	if lit.Kind != token.STRING {
		return "", false
	}
	v := constant.MakeFromLiteral(lit.Value, lit.Kind, 0)
	if v.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(v), true
}

// contractConstants type-checks package contract (it imports nothing) and
// returns its string constants, evaluated ("-" + ColorBlue is "-blue").
func contractConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := new(types.Config).Check("plimsoll.dev/plimsoll/contract", fset, files, nil)
	if err != nil {
		t.Fatalf("type-check package contract: %v", err)
	}
	out := map[string]string{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok && c.Val().Kind() == constant.String {
			out[name] = constant.StringVal(c.Val())
		}
	}
	return out
}

func checkKeys(t *testing.T, ref reference) {
	src := readSource(t)
	for _, id := range slices.Sorted(maps.Keys(src.consts)) {
		value := src.consts[id]
		name := id[strings.LastIndex(id, ".")+1:]
		switch {
		case strings.HasPrefix(name, "Annotation"):
			if ref.keyed(sectionAnnotations, value) == nil {
				t.Errorf("docs/reference.md, %s: no row for %s (%s); add to the table of its kind:\n| `%s` | <values> | <default> | <meaning> |", sectionAnnotations, value, id, value)
			}
		case strings.HasPrefix(name, "Label"):
			if ref.keyed(sectionLabels, value) == nil {
				t.Errorf("docs/reference.md, %s: no row for %s (%s); add:\n| `%s` | <on> | <values> | <meaning> |", sectionLabels, value, id, value)
			}
		case strings.HasPrefix(name, "Reason"):
			if !ref.mentions(sectionEvents, value) {
				t.Errorf("docs/reference.md, %s: no line for the reason %s (%s); add:\n| `%s` | <on> | <when> |", sectionEvents, value, id, value)
			}
		}
	}
	checked := map[string]bool{} // the values of the constants above
	for _, v := range src.consts {
		checked[v] = true
	}
	for _, key := range slices.Sorted(maps.Keys(src.literals)) {
		if _, ok := internalKeys[key]; ok || checked[key] {
			continue
		}
		if ref.keyed(sectionAnnotations, key) == nil && ref.keyed(sectionLabels, key) == nil && !ref.mentions(sectionKinds, key) {
			t.Errorf("docs/reference.md: no row for the key %s (%s) under %s or %s (or, an apiVersion, under %s); add one (and define it in package contract)",
				key, src.literals[key], sectionAnnotations, sectionLabels, sectionKinds)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(src.contract)) {
		if !checked[src.contract[name]] && !ref.mentions("", src.contract[name]) {
			t.Errorf("docs/reference.md: contract.%s, %q, is in no code span; say where it is used", name, src.contract[name])
		}
	}
	// And the other way: every plimsoll.dev/ key a row names exists.
	known := maps.Clone(checked)
	for _, v := range src.contract {
		known[v] = true
	}
	for _, section := range []string{sectionAnnotations, sectionLabels} {
		for _, row := range ref.rows[section] {
			if s := spansOf(row[0]); len(s) > 0 && strings.HasPrefix(s[0], "plimsoll.dev/") && !known[s[0]] {
				t.Errorf("docs/reference.md, %s: %s is no key of plimsoll's; remove its row", section, s[0])
			}
		}
	}
}

// descRecorder is a prometheus.Registerer that records the metrics
// registered with it.
type descRecorder struct{ descs []*prometheus.Desc }

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		r.descs = append(r.descs, d)
	}
	return nil
}

func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *descRecorder) Unregister(prometheus.Collector) bool { return true }

// descParts reads a metric's name and label names from its description,
// the only place client_golang gives them.
var descParts = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

func checkMetrics(t *testing.T, ref reference) {
	rec := &descRecorder{}
	rollout.NewMetrics(rec)
	psync.NewMetrics(rec)
	notify.NewMetrics(rec)
	if len(rec.descs) == 0 {
		t.Fatal("no metric registered")
	}
	names := map[string]bool{}
	for _, d := range rec.descs {
		m := descParts.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("read the metric %s: unknown form", d)
		}
		name, labels := m[1], strings.Fields(strings.ReplaceAll(m[2], ",", " "))
		names[name] = true
		rows := ref.keyed(sectionMetrics, name)
		if rows == nil {
			t.Errorf("docs/reference.md, %s: no row for %s; add:\n| `%s` | %s | <meaning> |", sectionMetrics, name, name, strings.Join(labels, ", "))
			continue
		}
		if got := spansOf(rows[0][1]); !slices.Equal(got, labels) {
			t.Errorf("docs/reference.md, %s: %s has the labels %q; its row says %q", sectionMetrics, name, labels, got)
		}
	}
	for _, row := range ref.rows[sectionMetrics] {
		if s := spansOf(row[0]); len(s) > 0 && !names[s[0]] {
			t.Errorf("docs/reference.md, %s: %s is no metric of plimsoll's; remove its row", sectionMetrics, s[0])
		}
	}
}

// checkFields checks that each JSON field of the output types has a row
// under the status section, named by its path (workloads[].analysis.hash),
// and that each row names a field.
func checkFields(t *testing.T, ref reference, outputs ...reflect.Type) {
	paths := map[string]bool{}
	for _, typ := range outputs {
		jsonPaths(typ, "", paths)
	}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		if ref.keyed(sectionStatus, path) == nil {
			t.Errorf("docs/reference.md, %s: no row for the field %s; add:\n| `%s` | <meaning> |", sectionStatus, path, path)
		}
	}
	for _, row := range ref.rows[sectionStatus] {
		if s := spansOf(row[0]); len(s) > 0 && !paths[s[0]] {
			t.Errorf("docs/reference.md, %s: %s is no field of the output; remove its row", sectionStatus, s[0])
		}
	}
}

// jsonPaths adds the paths of the JSON fields of typ, below prefix.
func jsonPaths(typ reflect.Type, prefix string, into map[string]bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Time]() {
		return
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		path := prefix + name
		into[path] = true
		elem := f.Type
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Slice {
			jsonPaths(elem.Elem(), path+"[].", into)
			continue
		}
		jsonPaths(elem, path+".", into)
	}
}
