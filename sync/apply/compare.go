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

// stateDigest is a digest of what live object obj holds that a write of
// the sync can change: all of it but its status, its resourceVersion and
// its managed fields, which its controller's status writes move too. An
// apply that finds the object as the plan read it, but for those, has
// written nothing, whatever its resourceVersion says: a DaemonSet whose
// controller reported its pods between the plan's read and the apply is
// no change of the sync's. "" when it cannot be encoded.
func stateDigest(obj map[string]any) string {
	top := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" {
			top[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		kept := make(map[string]any, len(md))
		for k, v := range md {
			if k != "resourceVersion" && k != "managedFields" {
				kept[k] = v
			}
		}
		top["metadata"] = kept
	}
	h, err := Hash(top)
	if err != nil {
		return ""
	}
	return h
}
