package workload

import (
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestApplies refuses the commands that cannot apply, with a reason.
func TestApplies(t *testing.T) {
	rolling := Workload{Name: "web", Strategy: contract.StrategyRolling, Phase: "Healthy", Revision: 3}
	paused := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Paused", Revision: 2}
	healthy := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Healthy", Revision: 2}
	failed := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Degraded", Revision: 2, FailedHash: "abc"}
	tests := []struct {
		w    Workload
		cmd  string
		want string // "" when it applies
	}{
		{paused, contract.CommandPromote, ""},
		{paused, contract.CommandAbort, ""},
		{paused, contract.CommandResume, ""},
		{rolling, contract.CommandPause, ""},
		{failed, contract.CommandRetry, ""},
		{rolling, contract.CommandPromote, "promote applies to blue-green and canary workloads; web is rolling"},
		{healthy, contract.CommandAbort, "nothing to abort: api is Healthy at revision 2"},
		{failed, contract.CommandPromote, "nothing to promote: api is Degraded at revision 2"},
		{healthy, contract.CommandRetry, "nothing to retry"},
		{healthy, contract.CommandResume, "nothing to resume: api is Healthy, not Paused"},
		{healthy, "restart", `unknown command "restart"`},
	}
	for _, tt := range tests {
		t.Run(tt.w.Phase+" "+tt.cmd, func(t *testing.T) {
			err := applies(tt.w, tt.cmd)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
