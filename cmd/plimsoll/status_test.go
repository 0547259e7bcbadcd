package main

import (
	"strings"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

func TestMeasured(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 31, 0, time.Local)
	tests := []struct {
		name string
		m    strategies.MetricRun
		want string
	}{
		{"not measured yet", strategies.MetricRun{Name: "error-rate/ratio", Verdict: strategies.VerdictRunning},
			"error-rate/ratio running"},
		{"counts and the last value", strategies.MetricRun{Name: "error-rate/ratio", Verdict: strategies.VerdictRunning,
			Successful: 2, Errors: 1, Value: "0.0012", At: at},
			"error-rate/ratio running, 2 successful, 1 errors, last 0.0012 at 12:00:31"},
		{"a failure with its reason", strategies.MetricRun{Name: "error-rate/ratio", Verdict: strategies.VerdictFailed,
			Failed: 1, Value: "0.1", Message: "failureCondition result >= 0.05 is true", At: at},
			"error-rate/ratio failed, 1 failed, last 0.1 at 12:00:31 (failureCondition result >= 0.05 is true)"},
		{"an error has no value", strategies.MetricRun{Name: "error-rate/ratio", Verdict: strategies.VerdictRunning,
			Errors: 1, Message: "query returned no data", At: at},
			"error-rate/ratio running, 1 errors, last - at 12:00:31 (query returned no data)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := measured(tt.m); got != tt.want {
				t.Errorf("measured = %q\n want %q", got, tt.want)
			}
		})
	}
}

// TestPrintStatusNamesSets names a StatefulSet or DaemonSet workload by
// its kind, as kubectl does, beside a Deployment's by its name.
func TestPrintStatusNamesSets(t *testing.T) {
	var out strings.Builder
	r := statusReport{Workloads: []workload.Workload{
		{Namespace: "shop", Name: "web", Strategy: "rolling", Phase: "Healthy", Revision: 2},
		{Kind: workload.KindStatefulSet, Namespace: "shop", Name: "db", Strategy: "rolling", Phase: "Degraded", Revision: 3, Message: "revision 3 failed"},
	}}
	if err := printStatus(&out, r, false, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nweb ", "\nstatefulset/db ", "revision 3 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
