package helm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// scanYAMLIndex reads a YAML index line by line and parses only the
// version entries of chart name, each alone. It follows the block
// structure by indentation, as `helm repo index` writes it:
//
//	apiVersion: v1
//	entries:
//	  web:                  <- a chart: a key of entries
//	  - version: 1.0.0      <- a version entry: an item of the chart's list
//	    urls:
//	    - web-1.0.0.tgz
//	    description: a plain scalar folded onto lines
//	      more indented than its key
//	  db: []
//	generated: "2024-01-01T00:00:00Z"
//
// Any indentation of the levels does, and the list of a chart may be
// indented under its key. Comments and blank lines count for nothing,
// and lines more indented than a level belong to the node above them. A
// line at the top level or among the charts must be a key, plain or
// quoted without escapes; entries must be a block mapping and the chart
// asked for a block list ({}, [] and null read as empty). What the lines
// cannot tell (a merge key, an alias or a flow collection where those are
// needed) is refused as not parsing rather than guessed at; the lines of
// the other charts are not read further than their indentation. A quoted
// or flow value that goes on over lines must go on indented under its
// key, as YAML requires: go-yaml also takes such lines at any
// indentation, which lines alone cannot follow (a line at the margin
// inside a quoted description would read as a key of the top level).
func scanYAMLIndex(r io.Reader, name string) ([]indexVersion, bool, error) {
	s := &lineScanner{name: name, rootIndent: -1, chartIndent: -1, itemIndent: -1}
	br := bufio.NewReaderSize(r, 64<<10)
	midLine := false
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			var failed error
			if midLine {
				failed = s.more(piece)
			} else {
				s.line++
				failed = s.start(piece)
			}
			if failed != nil {
				return nil, false, fmt.Errorf("line %d: %w", s.line, failed)
			}
		}
		midLine = errors.Is(err, bufio.ErrBufferFull)
		switch {
		case midLine:
		case errors.Is(err, io.EOF):
			if err := s.closeChart(); err != nil {
				return nil, false, err
			}
			return s.versions, s.found, nil
		case err != nil:
			return nil, false, err
		}
	}
}

// lineScanner is the state of scanYAMLIndex between lines.
type lineScanner struct {
	name string
	line int
	// rootIndent, chartIndent and itemIndent are the indentation of the
	// top-level keys, of the charts and of the asked chart's list, -1
	// until seen.
	rootIndent, chartIndent, itemIndent int
	// inEntries is set among the charts, inChart once one is open, and
	// target while it is the asked one.
	inEntries, inChart, target bool
	// ended is set past the end of the first document, which alone counts.
	ended bool
	// inItem is set while a version entry is read into item, from line
	// itemLine; copying while the line being read belongs to it.
	inItem, copying bool
	item            []byte
	itemLine        int
	found           bool
	versions        []indexVersion
}

// start reads the first piece of a line (all of it unless it is longer
// than the reader's buffer).
func (s *lineScanner) start(piece []byte) error {
	s.copying = false
	if s.ended {
		return nil
	}
	if s.line == 1 {
		piece = bytes.TrimPrefix(piece, []byte(byteOrderMark))
	}
	text := bytes.TrimRight(piece, "\r\n")
	body := bytes.TrimLeft(text, " ")
	indent := len(text) - len(body)
	if trimmed := bytes.TrimLeft(body, " \t"); len(trimmed) == 0 || trimmed[0] == '#' {
		// A blank line or a comment, kept in an entry for its block scalars.
		s.copying = s.inItem
		return s.more(piece)
	}
	if indent == 0 && isDocumentMarker(body) {
		if s.rootIndent < 0 && bytes.HasPrefix(body, []byte("---")) {
			return nil
		}
		s.ended = true
		return s.closeChart()
	}
	if s.rootIndent < 0 {
		if body[0] == '%' {
			return nil // a directive
		}
		s.rootIndent = indent
	}
	switch {
	case indent < s.rootIndent:
		return errors.New("a line less indented than the index's top level")
	case indent == s.rootIndent:
		return s.rootKey(body)
	case !s.inEntries:
		return nil
	}
	if s.chartIndent < 0 {
		s.chartIndent = indent
	}
	switch {
	case indent < s.chartIndent:
		return errors.New("a line less indented than the charts of entries")
	case indent == s.chartIndent && !isListItem(body):
		return s.chartKey(body)
	case !s.inChart:
		return errors.New("entries is a list, not a mapping")
	case !s.target:
		return nil
	}
	return s.itemStart(indent, body, piece)
}

// more reads a piece of a line that belongs to whatever start decided.
func (s *lineScanner) more(piece []byte) error {
	if !s.copying {
		return nil
	}
	if len(s.item)+len(piece) > maxIndexParseBytes {
		return fmt.Errorf("the entry of chart %s at line %d is larger than %d bytes, the most of an index parsed at once", s.name, s.itemLine, maxIndexParseBytes)
	}
	s.item = append(s.item, piece...)
	return nil
}

// rootKey reads a key of the top level: entries, or one to skip.
func (s *lineScanner) rootKey(body []byte) error {
	if err := s.closeChart(); err != nil {
		return err
	}
	s.inEntries, s.inChart = false, false
	key, value, ok := splitKey(body)
	if !ok || key == mergeKey {
		return errors.New("a top-level line that is not a plain or simply quoted key")
	}
	if key != "entries" {
		return nil
	}
	// A later entries key replaces an earlier one, as in a parse.
	s.found, s.versions, s.chartIndent = false, nil, -1
	switch value {
	case "":
		s.inEntries = true
	case "{}", "null", "~":
	default:
		return fmt.Errorf("entries is %q, not a block mapping", value)
	}
	return nil
}

// chartKey reads the key of a chart among the entries.
func (s *lineScanner) chartKey(body []byte) error {
	if err := s.closeChart(); err != nil {
		return err
	}
	key, value, ok := splitKey(body)
	if !ok || key == mergeKey {
		return errors.New("a chart of entries that is not a plain or simply quoted key")
	}
	s.inChart = true
	if key != s.name {
		return nil
	}
	s.found, s.versions = true, nil
	switch value {
	case "":
		s.target = true
	case "[]", "null", "~":
	default:
		return fmt.Errorf("chart %s is %q, not a block list", key, value)
	}
	return nil
}

// itemStart reads a line of the asked chart: a new version entry, or a
// line of the one being read.
func (s *lineScanner) itemStart(indent int, body, piece []byte) error {
	if s.itemIndent < 0 {
		if !isListItem(body) {
			return fmt.Errorf("chart %s is not a block list", s.name)
		}
		s.itemIndent = indent
	}
	switch {
	case indent == s.itemIndent && isListItem(body):
		if err := s.flush(); err != nil {
			return err
		}
		s.inItem, s.item, s.itemLine = true, s.item[:0], s.line
	case indent <= s.itemIndent:
		return fmt.Errorf("a line of chart %s that is not an item of its list", s.name)
	}
	s.copying = true
	return s.more(piece)
}

// closeChart ends the chart being read, and its last version entry.
func (s *lineScanner) closeChart() error {
	err := s.flush()
	s.target, s.itemIndent = false, -1
	return err
}

// flush parses the version entry read, if any.
func (s *lineScanner) flush() error {
	if !s.inItem {
		return nil
	}
	s.inItem = false
	v, err := parseVersion(s.item, s.name, s.itemLine)
	if err != nil {
		return err
	}
	s.versions = append(s.versions, v)
	return nil
}

// mergeKey is YAML's merge key, which may bring in keys from elsewhere.
const mergeKey = "<<"

// isListItem reports whether a line (from its first character) starts an
// item of a block list.
func isListItem(body []byte) bool {
	return body[0] == '-' && (len(body) == 1 || body[1] == ' ' || body[1] == '\t')
}

// isDocumentMarker reports whether a line starts or ends a YAML document.
func isDocumentMarker(body []byte) bool {
	return (bytes.HasPrefix(body, []byte("---")) || bytes.HasPrefix(body, []byte("..."))) &&
		(len(body) == 3 || body[3] == ' ' || body[3] == '\t')
}

// splitKey reads a line of a block mapping (from its first character):
// its key, plain or quoted without escapes, and its value with any
// comment left out. ok is false for anything else.
func splitKey(body []byte) (key, value string, ok bool) {
	var rest []byte
	switch q := body[0]; q {
	case '"', '\'':
		end := bytes.IndexByte(body[1:], q)
		if end < 0 {
			return "", "", false
		}
		k := body[1 : 1+end]
		rest = body[2+end:]
		if q == '"' && bytes.IndexByte(k, '\\') >= 0 || q == '\'' && len(rest) > 0 && rest[0] == '\'' {
			return "", "", false
		}
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) == 0 || rest[0] != ':' {
			return "", "", false
		}
		key, rest = string(k), rest[1:]
	default:
		if strings.IndexByte("\t?:,[]{}#&*!|>%@`", q) >= 0 {
			return "", "", false
		}
		i := keyColon(body)
		if i < 0 {
			return "", "", false
		}
		key, rest = string(bytes.TrimRight(body[:i], " \t")), body[i+1:]
	}
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false
	}
	return key, withoutComment(string(rest)), true
}

// keyColon is where the colon that ends a plain key is: the first
// followed by a space, a tab or the end of the line; -1 when there is
// none, or a comment comes first.
func keyColon(body []byte) int {
	for i, c := range body {
		switch {
		case c == ':' && (i+1 == len(body) || body[i+1] == ' ' || body[i+1] == '\t'):
			return i
		case c == '#' && i > 0 && (body[i-1] == ' ' || body[i-1] == '\t'):
			return -1
		}
	}
	return -1
}

// withoutComment is a value with any comment after it left out, and the
// blanks around it.
func withoutComment(value string) string {
	value = strings.TrimSpace(value)
	for i := 0; i < len(value); i++ {
		if value[i] == '#' && (i == 0 || value[i-1] == ' ' || value[i-1] == '\t') {
			return strings.TrimSpace(value[:i])
		}
	}
	return value
}
