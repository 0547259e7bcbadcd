package analysis

import (
	"context"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/strategies"
)

func TestMeasureWithoutWhatItNeeds(t *testing.T) {
	tests := []struct {
		name    string
		m       *Measurer
		b       Bound
		message string
	}{
		{"no measurer", nil, Bound{}, "no measurer configured"},
		{"no provider", NewMeasurer(Config{}), Bound{}, "the metric has no provider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.Measure(context.Background(), tc.b, testRun(0))
			if got.Outcome != strategies.OutcomeError || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Measure = %s %q, want Error with %q", got.Outcome, got.Message, tc.message)
			}
		})
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "0.01", 10, "0.01"},
		{"cut", "abcdefghij", 8, "abcde..."},
		{"on a rune", "ééééé", 8, "éé..."}, // each é is 2 bytes
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := clip(tc.s, tc.n); got != tc.want {
				t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	r := &redactor{}
	r.add("Bearer tok<en>1234")
	r.add("abc") // too short to redact
	tests := []struct{ name, in, want string }{
		{"the whole value", "got Bearer tok<en>1234", "got " + redacted},
		{"the credential alone", "token tok<en>1234 refused", "token " + redacted + " refused"},
		{"as JSON quotes it", `{"a":"tok\u003cen\u003e1234"}`, `{"a":"` + redacted + `"}`},
		{"short values stay", "abc", "abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.redact(tc.in); got != tc.want {
				t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSpecs(t *testing.T) {
	bs, err := Bind([]*Template{mustParse(t, "checks", bindDoc)}, map[string]string{"path": "/"}, testBuiltins)
	if err != nil {
		t.Fatal(err)
	}
	specs := Specs(bs)
	if len(specs) != 3 || specs[1] != bs[1].Spec {
		t.Errorf("Specs = %+v", specs)
	}
}
