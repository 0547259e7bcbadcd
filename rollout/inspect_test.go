package rollout

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// dep is a Deployment of workload web named name, with a role, a
// revision, a phase, and a color label when color is set.
func dep(name, role, revision, phase, color string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels: map[string]string{contract.LabelWorkload: "web"},
		Annotations: map[string]string{contract.AnnotationRole: role, contract.AnnotationRevision: revision,
			contract.AnnotationPhase: phase}}}
	if color != "" {
		d.Spec.Template.Labels = map[string]string{contract.LabelColor: color}
	}
	return d
}

// TestDescribeWorkload tells the strategy and the primary Deployment from
// the roles the controller records.
func TestDescribeWorkload(t *testing.T) {
	tests := []struct {
		name            string
		deploys         []*appsv1.Deployment
		strategy, prime string
	}{
		{"rolling", []*appsv1.Deployment{dep("web", "primary", "3", "Healthy", "")}, contract.StrategyRolling, "web"},
		{"rolling before roles", []*appsv1.Deployment{dep("web", "", "3", "Healthy", "")}, contract.StrategyRolling, "web"},
		{"canary", []*appsv1.Deployment{dep("web-canary", "canary", "4", "Paused", ""), dep("web", "stable", "4", "Paused", "")}, contract.StrategyCanary, "web"},
		{"blue-green, green active", []*appsv1.Deployment{dep("web-blue", "idle", "4", "Progressing", "blue"),
			dep("web-green", "active", "4", "Progressing", "green")}, contract.StrategyBlueGreen, "web-green"},
		{"blue-green, first revision going out", []*appsv1.Deployment{dep("web-blue", "preview", "1", "Progressing", "blue")}, contract.StrategyBlueGreen, "web-blue"},
		{"back to rolling, colors not retired yet", []*appsv1.Deployment{dep("web-blue", "active", "4", "Healthy", "blue"),
			dep("web", "primary", "5", "Progressing", "")}, contract.StrategyRolling, "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := describeWorkload("ns", "web", tt.deploys)
			if !ok || w.Strategy != tt.strategy || w.Primary != tt.prime {
				t.Errorf("got strategy %s, primary %s (ok %v); want %s, %s", w.Strategy, w.Primary, ok, tt.strategy, tt.prime)
			}
		})
	}
	if _, ok := describeWorkload("ns", "web", nil); ok {
		t.Error("a workload without Deployments was described")
	}
}

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
