package rollout

import "plimsoll.dev/plimsoll/contract"

// The reasons of the controller's Events, every one (docs/reference.md
// lists them).
const (
	// ReasonRolledBack is the Event reason of an automatic rollback.
	ReasonRolledBack = "RolledBack"
	// ReasonRolloutFailed is the Event reason of a failed revision that is
	// not rolled back.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonCommand is the Event reason of a command acted on, which the
	// CLI reads back.
	ReasonCommand = contract.ReasonCommand
	// ReasonPhase is the Event reason of a phase change.
	ReasonPhase = "PhaseChanged"
	// ReasonAnalysis is the Event reason of an analysis run that started
	// or reached its verdict.
	ReasonAnalysis = "Analysis"
	// ReasonScaleRestored is the Warning Event of a Deployment whose count,
	// set outside Git (kubectl scale), the controller wrote back.
	ReasonScaleRestored = "ScaleRestored"
	// ReasonScalingReplicaSet is the Event of a Deployment whose
	// ReplicaSet the controller scaled in the Deployment controller's
	// place (see Controller.mirror), the reason that controller gives its
	// own.
	ReasonScalingReplicaSet = "ScalingReplicaSet"
	// ReasonAdopted is the Event reason of a Deployment that ran before
	// Git named it (created by kubectl or Helm) and that the controller
	// took over.
	ReasonAdopted = "Adopted"
	// ReasonTemplateRestored is the Event reason when the controller
	// writes Git's template again over one changed by hand.
	ReasonTemplateRestored = "TemplateRestored"
	// ReasonPodReplaced is the Event reason when the controller deletes a
	// pod of a StatefulSet's or DaemonSet's failed template that never
	// became Ready, so that its controller creates it from the stable one.
	ReasonPodReplaced = "PodReplaced"
	// ReasonWriteRefused is the reason of the Warning Event a workload
	// gets when the API server refuses a write of its rollout (see
	// reportRefusal).
	ReasonWriteRefused = "WriteRefused"
	// ReasonSelectorRefused is the Warning Event of a selector write the
	// controller refused: it would have left the Service fewer ready
	// endpoints than the strategy keeps.
	ReasonSelectorRefused = "SelectorRefused"
	// ReasonSelectorRepaired is the Warning Event of a selector put back
	// after it was changed outside the controller.
	ReasonSelectorRepaired = "SelectorRepaired"
)
