package inventory

import (
	"maps"
	"testing"
)

// FuzzParseInventory: any text either fails to parse with an error or
// parses into an inventory that encodes and parses back to itself.
func FuzzParseInventory(f *testing.F) {
	f.Add("aa apps/v1 Deployment default web\nbb v1 Namespace - team-a\n")
	f.Add("aa v1 ConfigMap default app")
	f.Add("not an entry\n")
	f.Add("\n\n  \n")
	f.Fuzz(func(t *testing.T, text string) {
		inv, err := ParseInventory(text)
		if err != nil {
			if inv != nil {
				t.Errorf("ParseInventory(%q) returned an inventory with its error", text)
			}
			return
		}
		again, err := ParseInventory(inv.String())
		if err != nil {
			t.Fatalf("ParseInventory(String()) of %q: %v", text, err)
		}
		if !maps.Equal(again, inv) {
			t.Errorf("round trip of %q:\n %v\n %v", text, inv, again)
		}
	})
}
