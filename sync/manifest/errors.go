package manifest

import (
	"errors"
	"strconv"
	"strings"
)

// ErrUnknownKind is wrapped by a Scope's error when the cluster does not
// serve a kind.
var ErrUnknownKind = errors.New("unknown kind")

// Error is bad input: it names the file, the document and, where one is at
// fault, the field. Its text never holds the value of a Secret.
type Error struct {
	// Origin is the file and document at fault.
	Origin Origin
	// Field is the path of the field at fault, such as "metadata.name" or
	// "spec.containers[0].image"; empty when no single field is.
	Field string
	// Reason says what is wrong, for people.
	Reason string
}

// Error formats the problem as
// "apps/web.yaml, document 2: field metadata.name: is required", leaving out
// the field part when Field is empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Origin.String())
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// childField returns the path of key inside the map at parent. Keys that are
// not plain identifiers, such as annotation keys, are quoted:
// metadata.annotations["plimsoll.dev/strategy"].
func childField(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// indexField returns the path of item i of the list at parent.
func indexField(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// plainKey reports whether key can be written bare in a field path.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}
