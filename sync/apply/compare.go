package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"plimsoll.dev/plimsoll/internal/fields"
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
		if !ignoredTopLevel[k] && !fields.Hold(live[k], want) {
			return false
		}
	}
	return true
}
