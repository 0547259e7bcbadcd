package window

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "deny nightly", in: "deny 0 22 * * * 8h", want: "deny 0 22 * * * 8h0m0s"},
		{name: "allow descriptor", in: "allow @daily 1h30m", want: "allow @daily 1h30m0s"},
		{name: "extra spaces", in: "  deny  0 22 * * *   8h ", want: "deny 0 22 * * * 8h0m0s"},
		{name: "unknown kind", in: "block 0 22 * * * 8h", wantErr: `kind "block" is neither "deny" nor "allow"`},
		{name: "bad cron", in: "deny 0 25 * * * 8h", wantErr: `cron expression "0 25 * * *"`},
		{name: "bad duration", in: "deny 0 22 * * * eight", wantErr: `duration "eight"`},
		{name: "zero duration", in: "deny 0 22 * * * 0s", wantErr: "must be positive"},
		{name: "too short", in: "deny 8h", wantErr: `want "deny|allow CRON DURATION"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if w.String() != tt.want {
				t.Errorf("Parse(%q) = %q, want %q", tt.in, w.String(), tt.want)
			}
		})
	}
}

func TestHeld(t *testing.T) {
	at := func(s string) time.Time {
		ts, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	tests := []struct {
		name       string
		windows    []string
		now        string
		wantHeld   bool
		wantUntil  string
		wantReason string
	}{
		{name: "no windows", now: "2026-11-22 12:00"},
		{name: "inside a nightly deny window after midnight", windows: []string{"deny 0 22 * * * 8h"},
			now: "2026-11-22 03:00", wantHeld: true, wantUntil: "2026-11-22 06:00", wantReason: `deny window "deny 0 22 * * * 8h0m0s" is open`},
		{name: "inside a nightly deny window before midnight", windows: []string{"deny 0 22 * * * 8h"},
			now: "2026-11-22 22:30", wantHeld: true, wantUntil: "2026-11-23 06:00"},
		{name: "deny window closes exactly at its end", windows: []string{"deny 0 22 * * * 8h"},
			now: "2026-11-22 06:00"},
		{name: "outside the deny window", windows: []string{"deny 0 22 * * * 8h"}, now: "2026-11-22 12:00"},
		{name: "at the activation minute", windows: []string{"deny 0 22 * * * 8h"},
			now: "2026-11-22 22:00", wantHeld: true, wantUntil: "2026-11-23 06:00"},
		{name: "two deny windows: the later close wins", windows: []string{"deny 0 22 * * * 8h", "deny 0 23 * * * 9h"},
			now: "2026-11-23 01:00", wantHeld: true, wantUntil: "2026-11-23 08:00"},
		{name: "overlapping activations: the latest one decides the close", windows: []string{"deny * * * * * 1h"},
			now: "2026-11-22 12:30", wantHeld: true, wantUntil: "2026-11-22 13:30"},
		{name: "inside an allow window", windows: []string{"allow 0 9 * * * 8h"}, now: "2026-11-22 10:00"},
		{name: "outside every allow window", windows: []string{"allow 0 9 * * * 8h", "allow 0 20 * * * 1h"},
			now: "2026-11-22 18:00", wantHeld: true, wantUntil: "2026-11-22 20:00", wantReason: "no allow window is open"},
		{name: "deny beats allow", windows: []string{"allow 0 0 * * * 24h", "deny 0 12 * * * 1h"},
			now: "2026-11-22 12:30", wantHeld: true, wantUntil: "2026-11-22 13:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := ParseAll(tt.windows)
			if err != nil {
				t.Fatal(err)
			}
			held, until, reason := ws.Held(at(tt.now))
			if held != tt.wantHeld {
				t.Fatalf("Held(%s) = %v (%s), want %v", tt.now, held, reason, tt.wantHeld)
			}
			if tt.wantUntil != "" && !until.Equal(at(tt.wantUntil)) {
				t.Errorf("Held(%s) until %s, want %s", tt.now, until.Format("2006-01-02 15:04"), tt.wantUntil)
			}
			if tt.wantReason != "" && reason != tt.wantReason {
				t.Errorf("Held(%s) reason %q, want %q", tt.now, reason, tt.wantReason)
			}
		})
	}
}
