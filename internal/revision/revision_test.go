package revision

import "testing"

func TestShort(t *testing.T) {
	for _, c := range []struct{ id, want, noun string }{
		{"1a2b3c4d5e6f708192a3b4c5d6e7f80912a3b4c5", "1a2b3c4", "commit"},
		{"sha256:abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", "sha256:abcdef0", "artifact"},
		{"abc", "abc", "commit"},
		{"sha256:ab", "sha256:ab", "artifact"},
		{"", "", "commit"},
	} {
		if got := Short(c.id); got != c.want {
			t.Errorf("Short(%q) = %q, want %q", c.id, got, c.want)
		}
		if got := Noun(c.id); got != c.noun {
			t.Errorf("Noun(%q) = %q, want %q", c.id, got, c.noun)
		}
	}
}

func TestNames(t *testing.T) {
	commit := "1a2b3c4d5e6f708192a3b4c5d6e7f80912a3b4c5"
	digest := "sha256:abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	for _, c := range []struct {
		full, id string
		want     bool
	}{
		{commit, commit, true},
		{commit, "1a2b3c4", true},
		{commit, "1a2b3c", false}, // shorter than git's short form
		{commit, "1a2b3c5", false},
		{commit, commit + "0", false},
		{digest, "sha256:abcdef0", true},
		{digest, "abcdef0", false}, // a digest is named with its algorithm
		{digest, "sha256:abcde", false},
	} {
		if got := Names(c.full, c.id); got != c.want {
			t.Errorf("Names(%q, %q) = %v, want %v", c.full, c.id, got, c.want)
		}
	}
}
