package analysis

import (
	"math"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/strategies"
)

// bound is a Bound with the given conditions compiled ("" for none).
func bound(t *testing.T, success, failure string) Bound {
	t.Helper()
	var b Bound
	for _, c := range []struct {
		src  string
		into **condition
	}{{success, &b.success}, {failure, &b.failure}} {
		if c.src == "" {
			continue
		}
		cond, err := compileCondition(c.src)
		if err != nil {
			t.Fatalf("compile %q: %v", c.src, err)
		}
		*c.into = cond
	}
	return b
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name             string
		success, failure string
		result           any
		want             strategies.Outcome
		message          string // a part of the message
	}{
		// With success "result < 0.01" and failure "result >= 0.05":
		// 0.001 passes, 0.02 is between, 0.1 fails.
		{"success true", "result < 0.01", "result >= 0.05", 0.001, strategies.OutcomeSuccessful, ""},
		{"between the two", "result < 0.01", "result >= 0.05", 0.02, strategies.OutcomeInconclusive,
			"neither successCondition result < 0.01 nor failureCondition result >= 0.05 is true"},
		{"failure true", "result < 0.01", "result >= 0.05", 0.1, strategies.OutcomeFailed, "failureCondition result >= 0.05 is true"},
		{"failure wins over success", "result > 0", "result > 0.05", 0.1, strategies.OutcomeFailed, "failureCondition"},
		{"success alone, false", "result < 0.01", "", 0.02, strategies.OutcomeFailed, "successCondition result < 0.01 is false"},
		{"success alone, true", "result < 0.01", "", 0.001, strategies.OutcomeSuccessful, ""},
		{"failure alone, false", "", "result >= 0.05", 0.02, strategies.OutcomeSuccessful, ""},
		{"failure alone, true", "", "result >= 0.05", 0.07, strategies.OutcomeFailed, "failureCondition"},
		{"string equality", `result == "ok"`, "", "ok", strategies.OutcomeSuccessful, ""},
		{"bool result", "result", "", true, strategies.OutcomeSuccessful, ""},
		{"map field", "result.healthy && result.ratio < 0.5", "", map[string]any{"healthy": true, "ratio": 0.2}, strategies.OutcomeSuccessful, ""},
		{"list of numbers", "all(result, {# < 0.1})", "", []float64{0.01, 0.09}, strategies.OutcomeSuccessful, ""},
		{"list of numbers, one too high", "all(result, {# < 0.1})", "", []float64{0.01, 0.2}, strategies.OutcomeFailed, ""},
		{"len and max", "len(result) == 2 && max(result) < 1", "", []float64{0.5, 0.7}, strategies.OutcomeSuccessful, ""},
		{"index", "result[1] > 0.5", "", []float64{0.5, 0.7}, strategies.OutcomeSuccessful, ""},
		{"isNaN", "!isNaN(result)", "", math.NaN(), strategies.OutcomeFailed, ""},
		{"isInf", "", "isInf(result)", math.Inf(1), strategies.OutcomeFailed, ""},
		{"+Inf judged by the condition", "result < 0.01", "", math.Inf(1), strategies.OutcomeFailed, ""},
		{"-Inf judged by the condition", "result < 0.01", "", math.Inf(-1), strategies.OutcomeSuccessful, ""},
		{"type error", "result < 0.01", "", "fine", strategies.OutcomeError, `evaluate "result < 0.01": invalid operation: string < float64`},
		{"type error in failure", "result < 0.01", "result > 1", "fine", strategies.OutcomeError, `evaluate "result > 1"`},
		{"null", "result < 0.01", "", nil, strategies.OutcomeError, "evaluate"},
		{"not a bool", "result", "", 0.5, strategies.OutcomeError, `evaluate "result": gave 0.5, of type float64, not a bool`},
		{"index out of range", "result[3] < 1", "", []float64{0.5}, strategies.OutcomeError, "index out of range"},
		{"no condition (not bound)", "", "", 0.5, strategies.OutcomeError, "no compiled condition"},
		{"isNaN of a string", "isNaN(result)", "", "x", strategies.OutcomeError, "isNaN takes a number, not a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := judge(bound(t, tc.success, tc.failure), tc.result)
			if got != tc.want || !strings.Contains(msg, tc.message) {
				t.Errorf("judge(%v) = %s %q, want %s with %q", tc.result, got, msg, tc.want, tc.message)
			}
		})
	}
}

func TestCompileCondition(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // error; "" to compile
	}{
		{"comparison", "result < 0.01", ""},
		{"bare result", "result", ""},
		{"helpers", "isNaN(result) || isInf(result)", ""},
		{"builtins", "len(result) > 0 && any(result, {# > 1})", ""},
		{"incomplete", "result <", `parse "result <": unexpected token EOF`},
		{"not a bool", "result + 1 > 0 ? 1 : 2", `its type is int, not bool`},
		{"string", `"ok"`, `its type is string, not bool`},
		{"unknown name", "reslt < 1", `unknown name reslt`},
		{"unknown function", "isNull(result)", `unknown name isNull`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileCondition(tc.src)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("compile %q: %v", tc.src, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("compile %q = %v, want %q", tc.src, err, tc.want)
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"small", 0.0132, "0.0132"},
		{"rounded", 0.0123456, "0.01235"},
		{"integer", 3.0, "3"},
		{"large", 1234567.0, "1.235e+06"},
		{"+Inf", math.Inf(1), "+Inf"},
		{"vector", []float64{0.01, 0.2}, "[0.01 0.2]"},
		{"string", "ok", "ok"},
		{"bool", true, "true"},
		{"map", map[string]any{"a": 1.0}, `{"a":1}`},
		{"null", nil, "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatValue(tc.v); got != tc.want {
				t.Errorf("formatValue(%v) = %q, want %q", tc.v, got, tc.want)
			}
		})
	}
}
