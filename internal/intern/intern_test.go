package intern

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// decoded returns a copy of s in memory of its own, as a decoder makes.
func decoded(s string) string { return strings.Clone(s) }

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestMapSharesKeysAndShortValues(t *testing.T) {
	tab := New()
	long := strings.Repeat("m", maxValue+1)
	first := map[string]string{decoded("app"): decoded("web"), decoded("msg"): decoded(long)}
	second := map[string]string{decoded("app"): decoded("web"), decoded("msg"): decoded(long)}
	tab.Map(first)
	tab.Map(second)

	keys := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k := range m {
			out[k] = k
		}
		return out
	}
	k1, k2 := keys(first), keys(second)
	for _, k := range []string{"app", "msg"} {
		if !same(k1[k], k2[k]) {
			t.Errorf("key %q: two copies after Map", k)
		}
	}
	if !same(first["app"], second["app"]) {
		t.Error(`value "web": two copies after Map`)
	}
	if same(first["msg"], second["msg"]) {
		t.Errorf("a value of %d bytes was interned, want only up to %d", len(long), maxValue)
	}
	if first["app"] != "web" || second["msg"] != long || len(first) != 2 || len(second) != 2 {
		t.Errorf("Map changed the maps' contents: %v, %v", first, second)
	}
}

func TestFullTableStartsAgain(t *testing.T) {
	tab := New()
	a := tab.get(decoded("a"))
	if again := tab.get(decoded("a")); !same(a, again) {
		t.Fatal(`"a" asked twice: two copies`)
	}
	for i := range maxEntries {
		tab.get(strconv.Itoa(i))
	}
	if n := len(tab.m); n > maxEntries {
		t.Fatalf("table holds %d strings, want at most %d", n, maxEntries)
	}
	// The table filled up at the last string and started again: "a" is
	// held anew, and still reads "a".
	b := tab.get(decoded("a"))
	if same(a, b) || b != "a" || len(tab.m) != 2 {
		t.Errorf(`after the table filled: "a" shared %v, reads %q, table of %d strings; want a new copy in a table of 2`, same(a, b), b, len(tab.m))
	}
}
