package strategies

import (
	"maps"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/contract"
)

func TestReadStatus(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Status
		wantErr     string
	}{
		{
			name:        "never written",
			annotations: map[string]string{"kubernetes.io/change-cause": "abc1234 Bump web"},
			want:        Status{},
		},
		{
			name: "every key",
			annotations: map[string]string{
				contract.AnnotationPhase:        "Degraded",
				contract.AnnotationRevision:     "4",
				contract.AnnotationTemplateHash: "7c4e1a2b9f",
				contract.AnnotationFailedHash:   "7c4e1a2b9f",
				contract.AnnotationCommit:       commitV4,
				contract.AnnotationMessage:      "revision 4 failed: progress deadline exceeded after 10s; auto-rollback is off",
			},
			want: Status{
				Phase: PhaseDegraded, Revision: 4, Hash: "7c4e1a2b9f", FailedHash: "7c4e1a2b9f", Commit: commitV4,
				Message: "revision 4 failed: progress deadline exceeded after 10s; auto-rollback is off",
			},
		},
		{
			name:        "revision not a number",
			annotations: map[string]string{contract.AnnotationRevision: "four"},
			wantErr:     `read annotation plimsoll.dev/revision: "four" is not a non-negative integer`,
		},
		{
			name:        "negative revision",
			annotations: map[string]string{contract.AnnotationRevision: "-1"},
			wantErr:     "plimsoll.dev/revision",
		},
		{
			name:        "unknown phase",
			annotations: map[string]string{contract.AnnotationPhase: "Succeeded"},
			wantErr:     `read annotation plimsoll.dev/phase: unknown phase "Succeeded"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadStatus(tt.annotations)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadStatus error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadStatus: %v", err)
			}
			if got != tt.want {
				t.Errorf("ReadStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStatusAnnotationsRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		status Status
		want   map[string]string
	}{
		{
			name:   "healthy, nothing failed",
			status: Status{Phase: PhaseHealthy, Revision: 3, Hash: "5d9f01c2aa", Commit: commitV3, Message: "4/4 available"},
			want: map[string]string{
				contract.AnnotationPhase: "Healthy", contract.AnnotationRevision: "3", contract.AnnotationTemplateHash: "5d9f01c2aa",
				contract.AnnotationCommit: commitV3, contract.AnnotationMessage: "4/4 available",
			},
		},
		{
			name:   "zero status writes nothing",
			status: Status{},
			want:   map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.status.Annotations()
			if !maps.Equal(got, tt.want) {
				t.Errorf("Annotations = %v, want %v", got, tt.want)
			}
			back, err := ReadStatus(got)
			if err != nil || back != tt.status {
				t.Errorf("ReadStatus(Annotations) = %+v, %v; want %+v", back, err, tt.status)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name     string
		recorded Status
		want     Status
	}{
		{
			name:     "degraded: failed hash cleared, still degraded until progress",
			recorded: Status{Phase: PhaseDegraded, Revision: 4, Hash: "7c4e1a2b9f", FailedHash: "7c4e1a2b9f", Message: "rolled back"},
			want:     Status{Phase: PhaseDegraded, Revision: 4, Hash: "7c4e1a2b9f", Message: "retrying revision 4"},
		},
		{
			name:     "healthy with an old failure: only the failed hash goes",
			recorded: Status{Phase: PhaseHealthy, Revision: 5, Hash: "0b3e66d1c8", FailedHash: "7c4e1a2b9f", Message: "4/4 available"},
			want:     Status{Phase: PhaseHealthy, Revision: 5, Hash: "0b3e66d1c8", Message: "4/4 available"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retry(tt.recorded); got != tt.want {
				t.Errorf("Retry = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAtRest(t *testing.T) {
	for phase, want := range map[Phase]bool{
		PhaseHealthy: true, PhaseDegraded: true,
		PhaseProgressing: false, PhasePaused: false, "": false,
	} {
		if got := (Status{Phase: phase}).AtRest(); got != want {
			t.Errorf("phase %q: AtRest() = %v, want %v", phase, got, want)
		}
	}
}
