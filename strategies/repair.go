package strategies

// The selector writes that put back what was changed outside the
// controller: the planners mark them (Action.Repair), and the controller
// reports each as a repair.

// markRepair marks the ActionSelect of the Service of role among actions
// as a repair (see Action.Repair).
func markRepair(actions []Action, role ServiceRole) {
	for i := range actions {
		if actions[i].Kind == ActionSelect && actions[i].Service == role && actions[i].ServiceName == "" {
			actions[i].Repair = true
		}
	}
}

// selectorAstray reports whether the canary's Service no longer selects
// the serving pods though it did before (the workload, recorded so, is at
// rest or past its first step): changed by hand, and selecting them
// again is a repair. A workload switching from blue-green still has its
// colors, and the Service its color key, until it retires them.
func selectorAstray(recorded Status, o CanaryObserved) bool {
	if o.ServiceSelectsServing || o.HasColors {
		return false
	}
	return recorded.Phase == PhaseHealthy || o.Step > 0
}

// markBlueGreenRepairs marks the repairs among a blue-green plan's
// actions: the active Service selects no color while one serves (its key
// was removed by hand); the preview Service selects none while the
// workload has a color (every plan names the color it previews).
func markBlueGreenRepairs(actions []Action, o BlueGreenObserved) {
	if o.Active == "" && o.Serving != "" {
		markRepair(actions, ServiceActive)
	}
	if o.Preview && o.PreviewColor == "" && (o.Blue != nil || o.Green != nil) {
		markRepair(actions, ServicePreview)
	}
}
