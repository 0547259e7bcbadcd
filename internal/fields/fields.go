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
// equal), and a want of nil or of a zero value matches a missing field
// (see zero), but for labels and annotations, which the server keeps
// when empty.
func Hold(got, want any) bool { return contains(got, want, "") }

// keepsEmpty are the maps whose entries the API server stores whatever
// their value: a label or an annotation whose value is "" is there.
var keepsEmpty = map[string]bool{"labels": true, "annotations": true}

// contains reports whether got holds want; key is the field want is the
// value of ("" at the top).
func contains(got, want any, key string) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			switch {
			case !ok && (wv == nil || zero(wv) && !keepsEmpty[key]):
			case !ok || !contains(gv, wv, k):
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
			if !contains(g[i], w[i], key) {
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

// zero reports whether want is a zero value: false, "", 0, {} or []. The
// API server does not store a zero value of a field it omits when empty,
// so an object applied with one never shows it: a DaemonSet applied with
// minReadySeconds: 0 (as charts render it) has no minReadySeconds, and
// holding it as drift would apply the object again at every sync, for
// nothing. A field the server keeps at zero is there to compare. The
// cost: a custom resource's zero field removed by hand is not seen as
// drift, and most custom resources read a missing field as its zero.
func zero(want any) bool {
	switch w := want.(type) {
	case bool:
		return !w
	case string:
		return w == ""
	case map[string]any:
		return len(w) == 0
	case []any:
		return len(w) == 0
	}
	n, ok := number(want)
	return ok && n == 0
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
