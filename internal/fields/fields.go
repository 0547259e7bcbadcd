// Package fields compares objects as server-side apply sees them: an
// object "holds" a desired one when every field the desired one sets has
// the same value in it. Fields only the live object has (defaults, other
// managers' fields, what the API server sets) do not matter.
package fields

import (
	"encoding/json"
	"math"
)

// Hold reports whether got holds every field of want with the same value:
// maps are compared key by key (keys want lacks do not matter), lists
// element by element and in length, numbers by value (3 and 3.0 are
// equal), and a want of nil matches a missing field.
func Hold(got, want any) bool { return contains(got, want) }

// holds reports whether m holds key with a value that contains want; a
// missing key holds a nil want.
func holds(m map[string]any, key string, want any) bool {
	got, ok := m[key]
	if !ok {
		return want == nil
	}
	return contains(got, want)
}

func contains(got, want any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !holds(g, k, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	case string, bool:
		return got == want
	default:
		wn, wok := number(want)
		gn, gok := number(got)
		return wok && gok && wn == gn
	}
}

// number converts the numeric types JSON decoding produces to float64.
// Integers beyond 2^53 lose precision, which at worst reports drift that is
// not there: the object is applied again, a no-op on the server.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
