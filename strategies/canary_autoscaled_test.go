package strategies

import (
	"slices"
	"testing"
	"time"
)

// TestPlanCanaryAutoscaled works the canary of a workload whose stable
// Deployment an HPA scales: the HPA's count is the total, the stable's
// count is never written, and the canary's share is made in the Service.
// At 25% of 6: ceil(1.5) = 2 canary pods serve, and ceil(4.5) = 5 of the 6
// stable pods.
func TestPlanCanaryAutoscaled(t *testing.T) {
	six := []Pod{serving("s0"), serving("s1"), serving("s2"), serving("s3"), serving("s4"), serving("s5")}
	desired := canaryDesired(6, "25%, pause")
	desired.Autoscaled = true
	observe := func(stable []Pod, canary ...Pod) CanaryObserved {
		return CanaryObserved{
			Stable: stableDeploy(v3, sized(6)), Canary: canaryDeploy(v4, sized(int32(len(canary)))),
			Pods: canary, StablePods: stable, ServiceSelectsServing: true, StepSince: t0, Now: at(time.Second),
		}
	}
	tests := []autoscaledCase{
		{
			name: "the canary pods are not Ready: every stable pod serves",
			o:    observe(six, starting("c0"), starting("c1")), canary: 2,
			words: []string{"going to 25% (2/6 pods)"},
		},
		{
			name: "two canary pods Ready: they join, then one stable pod leaves",
			o:    observe(six, ready("c0"), ready("c1")), canary: 2,
			label: []string{"c0", "c1"}, unlabel: []string{"s5"},
			words: []string{"(2/6 pods serving)"},
		},
		{
			// s6 and s7 are the HPA's new pods, not Ready yet: s4 and s5,
			// out of the Service, serve again (ceil(75*8/100) = 6).
			name: "the HPA scaled 6 to 8 mid-step: ceil(25*8/100) = 2 canary pods, 6 stable pods serve",
			o: func() CanaryObserved {
				o := observe(append(slices.Clone(six[:4]), ready("s4"), ready("s5"), servingNotReady("s6"), servingNotReady("s7")), serving("c0"), serving("c1"))
				o.Stable = stableDeploy(v3, sized(8))
				return o
			}(),
			canary: 2, label: []string{"s4", "s5"},
			words: []string{"(2/8 pods serving)"},
		},
		{
			name: "abort: the canary leaves, the stable pods taken out come back first",
			o: func() CanaryObserved {
				o := observe(append(slices.Clone(six[:4]), ready("s4"), ready("s5")), serving("c0"), serving("c1"))
				o.Abort = true
				return o
			}(),
			label: []string{"s4", "s5"}, unlabel: []string{"c0", "c1"},
			noCount: true,
		},
	}
	tests = append(tests, autoscaledCase{
		// 3 canary pods serve at 50%, 3 of the 6 stable pods are out.
		name: "100%: the stable pods out of the Service come back before the stable is replaced",
		o: func() CanaryObserved {
			o := observe(append(slices.Clone(six[:3]), ready("s3"), ready("s4"), ready("s5")), serving("c0"), serving("c1"), serving("c2"))
			o.Promote = true
			return o
		}(),
		label: []string{"s3", "s4", "s5"}, noCount: true,
		words: []string{"every stable pod serving again before the promotion"},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := desired
			if tt.o.Stable.Spec.Replicas != nil {
				n := *tt.o.Stable.Spec.Replicas
				d.Replicas = &n
			}
			plan := PlanCanary(d, progressing4, tt.o)
			if plan.StableReplicas != nil {
				t.Errorf("stable count %d written, want none: the HPA owns it", *plan.StableReplicas)
			}
			if !slices.Equal(plan.Label, tt.label) || !slices.Equal(plan.Unlabel, tt.unlabel) {
				t.Errorf("label %v, unlabel %v; want label %v, unlabel %v", plan.Label, plan.Unlabel, tt.label, tt.unlabel)
			}
			if !tt.noCount && (plan.CanaryReplicas == nil || *plan.CanaryReplicas != tt.canary) {
				t.Errorf("canary count %v, want %d", replicasOrNil(plan.CanaryReplicas), tt.canary)
			}
			checkMessage(t, plan.Status.Message, tt.words)
			// Pods join the Service before others leave it.
			var order []string
			for _, a := range plan.Actions {
				if a.Kind == ActionLabel || a.Kind == ActionUnlabel {
					order = append(order, a.Pod)
				}
			}
			if want := append(slices.Clone(tt.label), tt.unlabel...); !slices.Equal(order, want) {
				t.Errorf("pod label order %v, want %v", order, want)
			}
		})
	}
}

// autoscaledCase is one plan of TestPlanCanaryAutoscaled: the labels it
// must set and remove, the canary count (unless noCount), and words of its
// message.
type autoscaledCase struct {
	name           string
	o              CanaryObserved
	label, unlabel []string
	canary         int32
	words          []string
	noCount        bool
}
