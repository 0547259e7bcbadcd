package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
)

// ignoredTopLevel are the fields of a desired object that never count as
// drift: status belongs to controllers, not to Git.
var ignoredTopLevel = map[string]bool{"status": true}

// Hash is a short, stable digest of a desired object: the same object always
// gives the same hash, whatever the key order of the manifest it came from
// (encoding/json writes map keys sorted). The inventory stores it so that a
// later sync knows whether Git changed the object.
func Hash(obj map[string]any) (string, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode object for hashing: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:hashBytes]), nil
}

// InSync reports whether the live object still holds every field of the
// desired one with the same value: the test for drift. Fields the live
// object has beyond the desired ones (defaults, other managers' fields,
// metadata the API server sets) do not matter, as with server-side apply,
// which only owns the fields it was given.
//
// Lists must match element by element and in length: apply replaces a list
// it owns. Numbers compare by value, so 3 and 3.0 are equal (JSON decoding
// gives int64 for one and float64 for the other). A desired null matches a
// missing field.
func InSync(live, desired map[string]any) bool {
	for k, want := range desired {
		if !ignoredTopLevel[k] && !holds(live, k, want) {
			return false
		}
	}
	return true
}

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
