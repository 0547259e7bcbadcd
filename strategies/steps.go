package strategies

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Step is one step of a canary rollout (plimsoll.dev/steps).
type Step struct {
	// Weight is the share of serving pods the canary gets, 0..100 percent; used when Pause is false.
	Weight int32
	// Pause is true for a pause step.
	Pause bool
	// Duration of a pause; 0 waits for a promote command.
	Duration time.Duration
}

// The default steps and the limits ParseSteps puts on a steps string. The
// limits keep a hostile annotation from costing more than a glance: 1024
// bytes hold 64 steps of "pause 1h30m0s" with room to spare.
const (
	// DefaultSteps is the steps string used when plimsoll.dev/steps is absent.
	DefaultSteps = "25%, pause 30s, 50%, pause 30s, 100%"

	// maxSteps is the most steps a steps string may hold.
	maxSteps = 64
	// maxStepsBytes is the longest steps string, in bytes.
	maxStepsBytes = 1024
	// maxPause is the longest timed pause; a longer wait is a pause without
	// a duration, which waits for a promote.
	maxPause = 24 * time.Hour
	// stepForms says what a step may be, for error messages.
	stepForms = `"N%" (0 to 100) or "pause [duration]"`
)

// ParseSteps reads a steps string: items separated by commas, each with the
// whitespace around it trimmed, case-sensitive. An item is one of
//
//	N%              a canary weight: N is a whole number from 0 to 100,
//	                no sign, no decimals, no spaces ("25%", "100%")
//	pause           wait for a promote command
//	pause DURATION  wait DURATION, a Go duration (time.ParseDuration) over
//	                0 and at most 24h, after one or more spaces ("pause 30s")
//
// DefaultSteps, "25%, pause 30s, 50%, pause 30s, 100%", is five steps:
// weight 25, a 30s pause, weight 50, a 30s pause, weight 100.
//
// A string of more than 1024 bytes or more than 64 steps is refused before
// any step is read. Otherwise the first bad step is reported as one line
// with its 1-based position and the item, as in
//
//	step 2 "pauze": want "N%" (0 to 100) or "pause [duration]"
//
// The error does not name the annotation: the caller adds it. ParseSteps
// checks the form only: the weights need not rise or end at 100. On error
// it returns no steps.
func ParseSteps(s string) ([]Step, error) {
	if len(s) > maxStepsBytes {
		return nil, fmt.Errorf("steps are %d bytes long, at most %d allowed", len(s), maxStepsBytes)
	}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no steps")
	}
	if n := strings.Count(s, ",") + 1; n > maxSteps {
		return nil, fmt.Errorf("%d steps, at most %d allowed", n, maxSteps)
	}
	items := strings.Split(s, ",")
	steps := make([]Step, 0, len(items))
	for i, item := range items {
		step, err := parseStep(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("step %d %q: %w", i+1, strings.TrimSpace(item), err)
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// parseStep reads one trimmed item of a steps string. Its errors say what
// is wrong with the item; ParseSteps adds which step it is.
func parseStep(item string) (Step, error) {
	switch {
	case item == "":
		return Step{}, fmt.Errorf("empty step; want %s", stepForms)
	case strings.HasSuffix(item, "%"):
		weight, ok := parseWeight(strings.TrimSuffix(item, "%"))
		if !ok {
			return Step{}, errors.New(`weight must be a whole number from 0 to 100, as in "25%"`)
		}
		return Step{Weight: weight}, nil
	case item == "pause":
		return Step{Pause: true}, nil
	case strings.HasPrefix(item, "pause "):
		// The item is trimmed, so something other than spaces follows.
		text := strings.TrimLeft(strings.TrimPrefix(item, "pause"), " ")
		d, err := time.ParseDuration(text)
		if err != nil {
			return Step{}, fmt.Errorf(`%q is not a duration such as "30s" or "5m"`, text)
		}
		if d <= 0 || d > maxPause {
			return Step{}, fmt.Errorf(`pause must be over 0 and at most %v; "pause" alone waits for a promote`, maxPause)
		}
		return Step{Pause: true, Duration: d}, nil
	}
	return Step{}, fmt.Errorf("want %s", stepForms)
}

// parseWeight reads the N of "N%": ASCII digits only, at most 100. It stops
// at the first digit that takes the value over 100, so a long run of digits
// cannot overflow; leading zeros are allowed ("007" is 7).
func parseWeight(digits string) (int32, bool) {
	if digits == "" {
		return 0, false
	}
	var n int32
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int32(c-'0')
		if n > 100 {
			return 0, false
		}
	}
	return n, true
}

// String returns the step as ParseSteps reads it: "25%", "pause", or
// "pause " and the duration in time.Duration's String form ("pause 30s",
// "pause 1h30m0s"). Joined with ", ", the strings of parsed steps parse back
// to the same steps, as long as they stay within the 1024-byte limit: the
// String form can be longer than what was parsed ("pause 1h1ns" is 11 bytes,
// "pause 1h0m0.000000001s" 22), so 64 such steps fit as written but not as
// String forms.
func (s Step) String() string {
	switch {
	case !s.Pause:
		return strconv.Itoa(int(s.Weight)) + "%"
	case s.Duration == 0:
		return "pause"
	default:
		return "pause " + s.Duration.String()
	}
}

// CanaryReplicas is the number of canary pods at weight percent of
// replicas: weight% of replicas rounded up, so that any weight above 0 puts
// at least one pod on the canary. Worked through:
//
//	25% of 4    1 pod
//	30% of 4    ceil(1.2)  = 2
//	50% of 3    ceil(1.5)  = 2
//	1% of 10    ceil(0.1)  = 1
//	99% of 100  99
//	99% of 1    ceil(0.99) = 1
//	100% of 4   4
//
// Weight 0, or replicas 0 or fewer, is 0 pods. A weight below 0 counts as 0
// and one above 100 as 100, so the result is never more than replicas. The
// arithmetic is in int64, exact for every int32 input: 99% of
// math.MaxInt32 is (99*2147483647 + 99) / 100 = 2126008811.
func CanaryReplicas(weight, replicas int32) int32 {
	if weight <= 0 || replicas <= 0 {
		return 0
	}
	if weight >= 100 {
		return replicas
	}
	// ceil(w*N/100) = (w*N + 99) / 100 for w*N >= 0.
	return int32((int64(weight)*int64(replicas) + 99) / 100)
}

// StableReplicas is the number of stable pods that serve beside the
// canary at weight percent of replicas: the stable's share, 100-weight
// percent, rounded up as the canary's is, so that below 100% the stable
// always serves. N or N+1 pods serve in all, the canary's share never
// above what the rounding of its own count gives. Worked through:
//
//	25% of 4    3 stable, 1 canary: 4 serve, the canary 1 of 4
//	25% of 1    ceil(0.75) = 1 stable, 1 canary: 2 serve, the canary 1 of 2
//	            (the stable's count left over, 1-1 = 0, gave it all)
//	50% of 3    ceil(1.5)  = 2 stable, 2 canary: 4 serve
//	25% of 10   ceil(7.5)  = 8 stable, 3 canary: 11 serve, 27% (not 30%)
//	100% of 4   0
//
// Weight 0 is every replica; replicas 0 or fewer is 0.
func StableReplicas(weight, replicas int32) int32 {
	if replicas <= 0 {
		return 0
	}
	return CanaryReplicas(100-max(weight, 0), replicas)
}
