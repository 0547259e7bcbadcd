// Package intern keeps one copy of the short strings that many cached
// objects repeat: label and annotation keys, and values such as a
// ReplicaSet's pod-template-hash on each of its pods or a phase on every
// Deployment. A decoded object holds copies of its own; a cache of
// thousands of objects holds thousands of copies of the same few hundred
// strings.
package intern

import "sync"

// Limits of a Table.
const (
	// maxValue is the longest value a Table keeps one copy of: keys,
	// hashes, names and phases are shorter, messages are not, and a
	// message seldom repeats.
	maxValue = 64
	// maxEntries bounds a Table. Hashes and names come and go over a
	// daemon's life; a full table starts empty again, and the strings it
	// handed out stay valid where they are held.
	maxEntries = 1 << 14
)

// Table is a set of strings, one copy of each, safe for concurrent use.
type Table struct {
	mu sync.Mutex
	m  map[string]string
}

// New returns an empty Table.
func New() *Table { return &Table{m: map[string]string{}} }

// get returns the table's copy of s, adding s when the table has none.
// t.mu must be held.
func (t *Table) get(s string) string {
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) >= maxEntries {
		clear(t.m)
	}
	t.m[s] = s
	return s
}

// Map replaces, in place, every key of m and every value no longer than
// maxValue with the table's copy. Setting a map entry stores the key it
// is given, even over an equal one (the Go runtime copies string keys on
// an overwrite), so that the decoded key's bytes are no longer held.
func (t *Table) Map(m map[string]string) {
	if len(m) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range m {
		if len(v) <= maxValue {
			v = t.get(v)
		}
		m[t.get(k)] = v
	}
}
