package strategies

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/contract"
)

// parseStepsTest is one row of TestParseSteps; its inputs seed
// FuzzParseSteps.
type parseStepsTest struct {
	name string
	in   string
	// want is the steps in parses to, when wantErr is empty.
	want []Step
	// wantErr holds the fragments the error must contain: the step number
	// and the offending item, or which limit was passed.
	wantErr []string
}

// parseStepsTests is the table of TestParseSteps: the grammar's valid forms
// and the ways a steps string goes wrong.
func parseStepsTests() []parseStepsTest {
	pause30s := Step{Pause: true, Duration: 30 * time.Second}
	// 63 steps of 10% and a last one of 100%.
	sixtyFour := strings.Repeat("10%, ", 63) + "100%"
	sixtyFourSteps := make([]Step, 0, 64)
	for range 63 {
		sixtyFourSteps = append(sixtyFourSteps, Step{Weight: 10})
	}
	sixtyFourSteps = append(sixtyFourSteps, Step{Weight: 100})

	return []parseStepsTest{
		{
			name: "default steps",
			in:   DefaultSteps,
			want: []Step{{Weight: 25}, pause30s, {Weight: 50}, pause30s, {Weight: 100}},
		},
		{
			name: "whitespace around items and between pause and its duration",
			in:   "  25% ,\tpause    30s ,50%\n",
			want: []Step{{Weight: 25}, pause30s, {Weight: 50}},
		},
		{name: "no spaces after the commas", in: "25%,pause 30s,100%", want: []Step{{Weight: 25}, pause30s, {Weight: 100}}},
		{name: "pause without a duration waits for a promote", in: "50%, pause, 100%", want: []Step{{Weight: 50}, {Pause: true}, {Weight: 100}}},
		{name: "pause alone", in: "pause", want: []Step{{Pause: true}}},
		{name: "0%", in: "0%", want: []Step{{Weight: 0}}},
		{name: "100%", in: "100%", want: []Step{{Weight: 100}}},
		{name: "leading zeros are still a decimal integer", in: "007%", want: []Step{{Weight: 7}}},
		{name: "compound duration", in: "pause 1h30m", want: []Step{{Pause: true, Duration: 90 * time.Minute}}},
		{name: "the longest pause, 24h", in: "pause 24h", want: []Step{{Pause: true, Duration: 24 * time.Hour}}},
		{name: "the shortest pause, 1ns", in: "pause 1ns", want: []Step{{Pause: true, Duration: time.Nanosecond}}},
		{name: "weights need not rise or end at 100", in: "50%, 10%", want: []Step{{Weight: 50}, {Weight: 10}}},
		{name: "64 steps, the most allowed", in: sixtyFour, want: sixtyFourSteps},
		{name: "1024 bytes, the most allowed", in: "25%" + strings.Repeat(" ", 1021), want: []Step{{Weight: 25}}},

		{name: "empty", in: "", wantErr: []string{"no steps"}},
		{name: "only whitespace", in: " ", wantErr: []string{"no steps"}},
		{name: "weight without %", in: "25", wantErr: []string{`step 1 "25"`}},
		{name: "space before %", in: "25 %", wantErr: []string{`step 1 "25 %"`, "0 to 100"}},
		{name: "weight over 100", in: "25%, 101%", wantErr: []string{`step 2 "101%"`, "0 to 100"}},
		{name: "negative weight", in: "-1%", wantErr: []string{`step 1 "-1%"`}},
		{name: "plus sign", in: "+5%", wantErr: []string{`step 1 "+5%"`}},
		{name: "decimal weight", in: "2.5%", wantErr: []string{`step 1 "2.5%"`}},
		{name: "a long run of digits does not overflow", in: strings.Repeat("9", 30) + "%", wantErr: []string{"step 1", "0 to 100"}},
		{name: "zero pause", in: "25%, pause 0s", wantErr: []string{`step 2 "pause 0s"`, "over 0"}},
		{name: "negative pause", in: "pause -1s", wantErr: []string{`step 1 "pause -1s"`, "over 0"}},
		{name: "pause over 24h", in: "25%, 50%, pause 25h", wantErr: []string{`step 3 "pause 25h"`, "at most 24h"}},
		{name: "pause with no duration unit", in: "pause 30", wantErr: []string{`step 1 "pause 30"`, "not a duration"}},
		{name: "pause with something not a duration", in: "pause x", wantErr: []string{`step 1 "pause x"`, `"x" is not a duration`}},
		{name: "pause with no space before the duration", in: "pause30s", wantErr: []string{`step 1 "pause30s"`}},
		{name: "misspelt pause", in: "25%, pauze", wantErr: []string{`step 2 "pauze"`, `want "N%" (0 to 100) or "pause [duration]"`}},
		{name: "case-sensitive", in: "Pause", wantErr: []string{`step 1 "Pause"`}},
		{name: "empty item", in: "25%,,50%", wantErr: []string{`step 2 ""`, "empty"}},
		{name: "whitespace-only item", in: "25%, ,50%", wantErr: []string{`step 2 ""`, "empty"}},
		{name: "trailing comma", in: "25%,", wantErr: []string{`step 2 ""`, "empty"}},
		{name: "65 steps", in: sixtyFour + ", 100%", wantErr: []string{"65 steps", "at most 64"}},
		{name: "1025 bytes", in: "25%" + strings.Repeat(" ", 1022), wantErr: []string{"1025 bytes", "at most 1024"}},
	}
}

func TestParseSteps(t *testing.T) {
	for _, tt := range parseStepsTests() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSteps(tt.in)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("ParseSteps(%q): %v", tt.in, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("ParseSteps(%q) = %v, want %v", tt.in, got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseSteps(%q) = %v, want an error", tt.in, got)
			}
			if got != nil {
				t.Errorf("ParseSteps(%q) returned steps %v with its error", tt.in, got)
			}
			for _, fragment := range tt.wantErr {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("ParseSteps(%q) error %q does not contain %q", tt.in, err, fragment)
				}
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), contract.Prefix) {
				t.Errorf("ParseSteps(%q) error %q: want one line without the annotation name", tt.in, err)
			}
		})
	}
}

func TestStepString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want is the parsed steps' strings joined with ", ".
		want string
	}{
		{name: "default steps", in: DefaultSteps, want: DefaultSteps},
		{name: "whitespace is dropped", in: " 25% ,pause   30s,100%", want: "25%, pause 30s, 100%"},
		{name: "pause without a duration", in: "pause", want: "pause"},
		{name: "0% and 100%", in: "0%, 100%", want: "0%, 100%"},
		{name: "leading zeros are dropped", in: "007%", want: "7%"},
		// time.Duration's String form spells every unit down to seconds.
		{name: "compound duration", in: "pause 1h30m", want: "pause 1h30m0s"},
		{name: "24h", in: "pause 24h", want: "pause 24h0m0s"},
		{name: "fractions of a second", in: "pause 1.5s, pause 250ms, pause 1us", want: "pause 1.5s, pause 250ms, pause 1µs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := ParseSteps(tt.in)
			if err != nil {
				t.Fatalf("ParseSteps(%q): %v", tt.in, err)
			}
			got := joinSteps(steps)
			if got != tt.want {
				t.Errorf("steps of %q read %q, want %q", tt.in, got, tt.want)
			}
			again, err := ParseSteps(got)
			if err != nil {
				t.Fatalf("ParseSteps(%q), the String form of %q: %v", got, tt.in, err)
			}
			if !reflect.DeepEqual(again, steps) {
				t.Errorf("ParseSteps(%q) = %v, want %v as parsed from %q", got, again, steps, tt.in)
			}
		})
	}
}

func TestCanaryReplicas(t *testing.T) {
	tests := []struct {
		name     string
		weight   int32
		replicas int32
		want     int32
	}{
		{name: "0% of 1", weight: 0, replicas: 1, want: 0},
		{name: "1% of 1", weight: 1, replicas: 1, want: 1},   // ceil(0.01)
		{name: "25% of 1", weight: 25, replicas: 1, want: 1}, // ceil(0.25)
		{name: "50% of 1", weight: 50, replicas: 1, want: 1}, // ceil(0.5)
		{name: "99% of 1", weight: 99, replicas: 1, want: 1}, // ceil(0.99)
		{name: "100% of 1", weight: 100, replicas: 1, want: 1},

		{name: "0% of 2", weight: 0, replicas: 2, want: 0},
		{name: "1% of 2", weight: 1, replicas: 2, want: 1},   // ceil(0.02)
		{name: "25% of 2", weight: 25, replicas: 2, want: 1}, // ceil(0.5)
		{name: "50% of 2", weight: 50, replicas: 2, want: 1},
		{name: "99% of 2", weight: 99, replicas: 2, want: 2}, // ceil(1.98)
		{name: "100% of 2", weight: 100, replicas: 2, want: 2},

		{name: "0% of 3", weight: 0, replicas: 3, want: 0},
		{name: "1% of 3", weight: 1, replicas: 3, want: 1},   // ceil(0.03)
		{name: "25% of 3", weight: 25, replicas: 3, want: 1}, // ceil(0.75)
		{name: "50% of 3", weight: 50, replicas: 3, want: 2}, // ceil(1.5)
		{name: "99% of 3", weight: 99, replicas: 3, want: 3}, // ceil(2.97)
		{name: "100% of 3", weight: 100, replicas: 3, want: 3},

		{name: "0% of 4", weight: 0, replicas: 4, want: 0},
		{name: "1% of 4", weight: 1, replicas: 4, want: 1}, // ceil(0.04)
		{name: "25% of 4", weight: 25, replicas: 4, want: 1},
		{name: "30% of 4", weight: 30, replicas: 4, want: 2}, // ceil(1.2)
		{name: "50% of 4", weight: 50, replicas: 4, want: 2},
		{name: "99% of 4", weight: 99, replicas: 4, want: 4}, // ceil(3.96)
		{name: "100% of 4", weight: 100, replicas: 4, want: 4},

		{name: "0% of 10", weight: 0, replicas: 10, want: 0},
		{name: "1% of 10", weight: 1, replicas: 10, want: 1},   // ceil(0.1)
		{name: "25% of 10", weight: 25, replicas: 10, want: 3}, // ceil(2.5)
		{name: "50% of 10", weight: 50, replicas: 10, want: 5},
		{name: "99% of 10", weight: 99, replicas: 10, want: 10}, // ceil(9.9)
		{name: "100% of 10", weight: 100, replicas: 10, want: 10},

		{name: "0% of 100", weight: 0, replicas: 100, want: 0},
		{name: "1% of 100", weight: 1, replicas: 100, want: 1},
		{name: "25% of 100", weight: 25, replicas: 100, want: 25},
		{name: "50% of 100", weight: 50, replicas: 100, want: 50},
		{name: "99% of 100", weight: 99, replicas: 100, want: 99},
		{name: "100% of 100", weight: 100, replicas: 100, want: 100},

		{name: "1% of 0", weight: 1, replicas: 0, want: 0},
		{name: "100% of 0", weight: 100, replicas: 0, want: 0},
		{name: "50% of a negative count", weight: 50, replicas: -3, want: 0},
		{name: "a negative weight counts as 0", weight: -5, replicas: 4, want: 0},
		{name: "a weight over 100 counts as 100", weight: 150, replicas: 4, want: 4},

		// 1% of 2147483647 is ceil(21474836.47); 1*N+99 and 99*N+99 fit
		// in int64, not in int32.
		{name: "1% of MaxInt32", weight: 1, replicas: math.MaxInt32, want: 21474837},
		{name: "99% of MaxInt32", weight: 99, replicas: math.MaxInt32, want: 2126008811}, // ceil(2126008810.53)
		{name: "100% of MaxInt32", weight: 100, replicas: math.MaxInt32, want: math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CanaryReplicas(tt.weight, tt.replicas); got != tt.want {
				t.Errorf("CanaryReplicas(%d, %d) = %d, want %d", tt.weight, tt.replicas, got, tt.want)
			}
		})
	}
}

func FuzzParseSteps(f *testing.F) {
	for _, tt := range parseStepsTests() {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := ParseSteps(s)
		if err != nil {
			if steps != nil {
				t.Errorf("ParseSteps(%q) returned steps %v with its error", s, steps)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseSteps(%q) error %q is more than one line", s, err)
			}
			return
		}
		if len(steps) < 1 || len(steps) > maxSteps {
			t.Fatalf("ParseSteps(%q) = %d steps, want 1 to %d", s, len(steps), maxSteps)
		}
		for i, step := range steps {
			switch {
			case !step.Pause && (step.Weight < 0 || step.Weight > 100 || step.Duration != 0):
				t.Errorf("ParseSteps(%q) step %d = %+v: want a weight of 0 to 100 and no duration", s, i+1, step)
			case step.Pause && (step.Weight != 0 || step.Duration < 0 || step.Duration > maxPause):
				t.Errorf("ParseSteps(%q) step %d = %+v: want no weight and a duration of 0 or up to %v", s, i+1, step, maxPause)
			}
			// Each step reads back on its own.
			again, err := ParseSteps(step.String())
			if err != nil || len(again) != 1 || again[0] != step {
				t.Errorf("ParseSteps(%q) = %v, %v; want step %d of %q, %+v", step.String(), again, err, i+1, s, step)
			}
		}
		// The steps read back together, unless their String form outgrows
		// the byte limit: "pause 1h1ns" is 11 bytes but reads back as
		// "pause 1h0m0.000000001s", 22 bytes, so 64 of them fit in the
		// input and not in the String form.
		joined := joinSteps(steps)
		again, err := ParseSteps(joined)
		switch {
		case len(joined) > maxStepsBytes:
			if err == nil {
				t.Errorf("ParseSteps(%q) of %d bytes = %v, want the byte limit's error", joined, len(joined), again)
			}
		case err != nil:
			t.Errorf("ParseSteps(%q), the String form of %q: %v", joined, s, err)
		case !reflect.DeepEqual(again, steps):
			t.Errorf("ParseSteps(%q) = %v, want %v as parsed from %q", joined, again, steps, s)
		}
	})
}

// joinSteps is the steps' String forms joined with ", ", the form
// DefaultSteps is written in.
func joinSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, step := range steps {
		parts[i] = step.String()
	}
	return strings.Join(parts, ", ")
}
