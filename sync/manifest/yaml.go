package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// parserLine picks the line number and message out of a parser error such
// as "yaml: line 7: did not find expected node content".
var parserLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// parseError is input the YAML parser refused, as opposed to a document
// that parsed but breaks a limit.
type parseError struct {
	err *Error
}

func (p *parseError) Error() string { return p.err.Error() }
func (p *parseError) Unwrap() error { return p.err }

// documents parses data, a stream of YAML documents, and calls fn with the
// 1-based index and the value of each, in order. Documents that are empty or
// null have a nil value. Aliases and nesting are measured on the parsed tree
// before anything is expanded, so an alias bomb costs no more than its size
// in bytes. Errors about the input are *Error naming file; an error from fn
// stops the reading and is returned as it is.
func documents(file string, data []byte, lim Limits, fn func(doc int, value map[string]any) error) error {
	err := eachNode(file, data, lim, func(doc int, root *yaml.Node) error {
		value, err := convertDocument(root)
		if err != nil {
			err.Origin = Origin{File: file, Doc: doc}
			return err
		}
		return fn(doc, value)
	})
	var pe *parseError
	if errors.As(err, &pe) {
		return pe.err
	}
	return err
}

// eachNode parses data and calls fn with the root node of each document
// that stays within lim. A parse error is a parseError.
func eachNode(file string, data []byte, lim Limits, fn func(doc int, root *yaml.Node) error) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		root, err := decodeNode(dec)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &parseError{describeParseError(file, data, doc, err)}
		}
		if err := measure(root, lim); err != nil {
			err.Origin = Origin{File: file, Doc: doc}
			return err
		}
		if err := fn(doc, root); err != nil {
			return err
		}
	}
}

// decodeNode reads the next document, turning a panic of the parser into an
// error so that no input can bring the daemon down.
func decodeNode(dec *yaml.Decoder) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, errors.New("yaml: the parser failed on this input")
		}
	}()
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		return nil, err
	}
	return &n, nil
}

// describeParseError turns a parser error, met while reading document next,
// into an *Error. The parser names the line, from which the document is
// counted again: the parser reads ahead, so next can be one too high.
// Parser messages name tokens, anchors and lines, never values.
func describeParseError(file string, data []byte, next int, err error) *Error {
	msg := err.Error()
	doc := next
	if m := parserLine.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			if zeroBasedLine(m[2]) {
				line++
			}
			// At the end of the stream the parser points past the last line.
			line = min(line, lineCount(data))
			doc = documentAtLine(data, line)
			msg = "line " + strconv.Itoa(line) + ": " + m[2]
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Error{Origin: Origin{File: file, Doc: doc}, Reason: "invalid YAML: " + msg}
}

// zeroBasedLine reports whether the parser counted the line of problem from
// zero: go.yaml.in/yaml/v3 adds one to the line of scanner errors only, and
// these are the problems its parser, not its scanner, reports.
func zeroBasedLine(problem string) bool {
	switch problem {
	case "did not find expected ',' or ']'",
		"did not find expected ',' or '}'",
		"did not find expected '-' indicator",
		"did not find expected <document start>",
		"did not find expected <stream-start>",
		"did not find expected key",
		"did not find expected node content",
		"found duplicate %TAG directive",
		"found duplicate %YAML directive",
		"found incompatible YAML document",
		"found undefined tag handle":
		return true
	}
	return false
}

// documentAtLine returns the 1-based index of the document holding line,
// counting "---" markers at the start of a line the way the parser does: a
// marker with nothing but comments, blank lines and directives before it
// opens the first document instead of a second one.
func documentAtLine(data []byte, line int) int {
	doc := 1
	sawMarker, sawContent := false, false
	for n, text := range bytes.Split(data, []byte("\n")) {
		if n+1 > line {
			break
		}
		text = bytes.TrimRight(text, "\r")
		switch {
		case isDocumentMarker(text):
			if sawMarker || sawContent {
				doc++
			}
			sawMarker = true
		case len(bytes.TrimSpace(text)) == 0, text[0] == '#', text[0] == '%':
		default:
			sawContent = true
		}
	}
	return doc
}

// lineCount returns the number of lines in data, counting a last line
// without a line break.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return max(n, 1)
}

// isDocumentMarker reports whether a line starts a new YAML document.
func isDocumentMarker(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t'
}

// measurer walks a parsed document once, following aliases through a memo,
// to find how large and deep the document would be once expanded.
type measurer struct {
	lim Limits
	// size and height memoize the expanded size and nesting height of
	// anchored nodes; sizes saturate at sizeCap.
	size   map[*yaml.Node]int
	height map[*yaml.Node]int
	// open holds the anchored nodes being walked, to find an alias inside
	// the node it names.
	open map[*yaml.Node]bool
	// added counts the values aliases add to the document.
	added int
}

// measure refuses a document whose aliases would add more than
// lim.MaxAliasNodes values, or whose maps and lists nest deeper than
// lim.MaxDepth, counting through aliases. Its cost is linear in the size of
// the parsed document whatever the aliases expand to.
func measure(root *yaml.Node, lim Limits) *Error {
	m := &measurer{lim: lim, size: map[*yaml.Node]int{}, height: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	_, _, err := m.walk(root, 0)
	return err
}

// walk returns the expanded size and nesting height of n, found at depth
// (the number of maps and lists around it).
func (m *measurer) walk(n *yaml.Node, depth int) (size, height int, err *Error) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if size, height, err = m.walk(c, depth); err != nil {
				return 0, 0, err
			}
		}
		return size, height, nil
	case yaml.AliasNode:
		return m.alias(n, depth)
	case yaml.MappingNode, yaml.SequenceNode:
		if depth+1 > m.lim.MaxDepth {
			return 0, 0, m.tooDeep(n)
		}
		if n.Anchor != "" {
			m.open[n] = true
			defer delete(m.open, n)
		}
		size = 1
		for _, c := range n.Content {
			cs, ch, err := m.walk(c, depth+1)
			if err != nil {
				return 0, 0, err
			}
			size = min(size+cs, sizeCap)
			height = max(height, ch)
		}
		height++
		if n.Anchor != "" {
			m.size[n], m.height[n] = size, height
		}
		return size, height, nil
	default:
		return 1, 0, nil
	}
}

// alias accounts for an alias node: it adds the expanded size of the node it
// names, less the one value it stands in for.
func (m *measurer) alias(n *yaml.Node, depth int) (size, height int, err *Error) {
	target := n.Alias
	if target == nil {
		return 1, 0, nil
	}
	if m.open[target] {
		return 0, 0, &Error{Reason: fmt.Sprintf("invalid YAML: line %d: alias *%s refers to a node that contains it", n.Line, n.Value)}
	}
	size, height = 1, 0
	if target.Kind == yaml.MappingNode || target.Kind == yaml.SequenceNode {
		var ok bool
		if size, ok = m.size[target]; ok {
			height = m.height[target]
		} else if size, height, err = m.walk(target, depth); err != nil {
			// An alias always follows its anchor, which the walk has
			// measured already; walking it here is only a guard.
			return 0, 0, err
		}
	}
	if depth+height > m.lim.MaxDepth {
		return 0, 0, m.tooDeep(n)
	}
	m.added = min(m.added+size-1, sizeCap)
	if m.added > m.lim.MaxAliasNodes {
		return 0, 0, &Error{Reason: fmt.Sprintf(
			"line %d: YAML aliases expand the document by more than %d values; refusing it as a possible alias bomb",
			n.Line, m.lim.MaxAliasNodes)}
	}
	return size, height, nil
}

func (m *measurer) tooDeep(n *yaml.Node) *Error {
	return &Error{Reason: fmt.Sprintf("line %d: maps and lists nest more than %d levels deep", n.Line, m.lim.MaxDepth)}
}

// convertDocument turns a measured document into JSON-compatible values: a
// map for an object, nil for an empty or null document.
func convertDocument(doc *yaml.Node) (map[string]any, *Error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root := resolveAlias(doc.Content[0])
	switch {
	case root.Kind == yaml.MappingNode:
		return convertMapping(root, "")
	case root.Kind == yaml.ScalarNode && root.ShortTag() == tagNull:
		return nil, nil
	case root.Kind == yaml.SequenceNode:
		return nil, &Error{Reason: "a document must be an object (a map), not a list"}
	default:
		return nil, &Error{Reason: "a document must be an object (a map), not a single value"}
	}
}

// resolveAlias follows n to the node it names, if it is an alias.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// convertValue converts the node at field.
func convertValue(n *yaml.Node, field string) (any, *Error) {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		return convertMapping(n, field)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := convertValue(c, indexField(field, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		return convertScalar(n, field)
	default:
		return nil, &Error{Field: field, Reason: fmt.Sprintf("line %d: unsupported YAML node", n.Line)}
	}
}

// convertMapping converts a map. A key set twice is an error, as it is for
// the API server; keys merged in with "<<" give way to keys written out.
func convertMapping(n *yaml.Node, field string) (map[string]any, *Error) {
	out := make(map[string]any, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == tagMerge {
			merges = append(merges, v)
			continue
		}
		key, err := mapKey(k, field)
		if err != nil {
			return nil, err
		}
		if first, dup := lines[key]; dup {
			return nil, &Error{Field: childField(field, key), Reason: fmt.Sprintf("is set twice (lines %d and %d)", first, k.Line)}
		}
		lines[key] = k.Line
		val, err := convertValue(v, childField(field, key))
		if err != nil {
			return nil, err
		}
		out[key] = val
	}
	for _, m := range merges {
		if err := mergeInto(out, m, field); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeInto adds the keys of a "<<" merge value (a map, or a list of maps
// where earlier maps win) that out does not have yet.
func mergeInto(out map[string]any, merge *yaml.Node, field string) *Error {
	merge = resolveAlias(merge)
	sources := []*yaml.Node{merge}
	if merge.Kind == yaml.SequenceNode {
		sources = merge.Content
	}
	for _, s := range sources {
		s = resolveAlias(s)
		if s.Kind != yaml.MappingNode {
			return &Error{Field: field, Reason: fmt.Sprintf("line %d: a << merge takes a map or a list of maps", merge.Line)}
		}
		m, err := convertMapping(s, field)
		if err != nil {
			return err
		}
		for k, v := range m {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	}
	return nil
}

// mapKey returns the string form of a map key, as JSON needs one.
func mapKey(k *yaml.Node, field string) (string, *Error) {
	if k.Kind != yaml.ScalarNode {
		return "", &Error{Field: field, Reason: fmt.Sprintf("line %d: a map key must be a single value, not a map or list", k.Line)}
	}
	if k.ShortTag() == tagNull {
		return "null", nil
	}
	return k.Value, nil
}

// convertScalar converts a single value to string, int64, float64, bool or
// nil. Timestamps, binary data and unknown tags stay strings as written.
// Errors never quote the value, which may be secret.
func convertScalar(n *yaml.Node, field string) (any, *Error) {
	tag := n.ShortTag()
	switch tag {
	case tagNull:
		return nil, nil
	case tagBool, tagInt, tagFloat:
	default:
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, &Error{Field: field, Reason: fmt.Sprintf("line %d: the value is not a valid %s", n.Line, tag)}
	}
	switch t := v.(type) {
	case bool:
		return t, nil
	case int:
		return int64(t), nil
	case int64:
		return t, nil
	case uint64:
		if t <= math.MaxInt64 {
			return int64(t), nil
		}
		return float64(t), nil
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, &Error{Field: field, Reason: fmt.Sprintf("line %d: infinite and NaN numbers have no JSON form", n.Line)}
		}
		return t, nil
	default:
		return n.Value, nil
	}
}
