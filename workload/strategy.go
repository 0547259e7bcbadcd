package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	"plimsoll.dev/plimsoll/contract"
)

// The strategy of a workload: what Git names, what its Deployments run,
// and what they ran before a switch. These are the one place each is
// answered; the controller, the status and plimsoll diff all ask them.

// NamedStrategy is the strategy annotations name (plimsoll.dev/strategy),
// rolling when they name none: Git's intent, or what a Deployment was
// written for.
func NamedStrategy(annotations map[string]string) string {
	if s := annotations[contract.AnnotationStrategy]; s != "" {
		return s
	}
	return contract.StrategyRolling
}

// StrategyOf tells the strategy workload name's Deployments run, from
// their roles, when no intent from Git says: rolling when <name> is the
// primary, canary when it is a canary's stable one (both also while they
// retire what a previous strategy left), blue-green once the workload has
// a color, canary when <name> was written for canary and is not
// blue-green's idle legacy Deployment, else rolling.
func StrategyOf(name string, get Lookup) (string, error) {
	d, colors, err := namesake(name, get)
	if err != nil {
		return "", err
	}
	switch r := role(d); {
	case r == contract.RolePrimary:
		return contract.StrategyRolling, nil
	case r == contract.RoleStable:
		return contract.StrategyCanary, nil
	case colors:
		return contract.StrategyBlueGreen, nil
	case d != nil && d.Annotations[contract.AnnotationStrategy] == contract.StrategyCanary && r != contract.RoleIdle:
		return contract.StrategyCanary, nil
	}
	return contract.StrategyRolling, nil
}

// PreviousStrategy names the strategy other than target that workload
// name's Deployments were written for: rolling while <name> is a rolling
// workload's primary, blue-green while the workload has a color, canary
// while it has a canary Deployment or <name> is a canary's stable one; ""
// when they run target's alone. A strategy switch retires what it names.
func PreviousStrategy(name string, get Lookup, target string) (string, error) {
	d, colors, err := namesake(name, get)
	if err != nil {
		return "", err
	}
	canary, err := get(name + contract.SuffixCanary)
	if err != nil {
		return "", err
	}
	r := role(d)
	for _, ran := range []struct {
		strategy string
		ran      bool
	}{
		{contract.StrategyRolling, r == contract.RolePrimary},
		{contract.StrategyBlueGreen, colors},
		{contract.StrategyCanary, canary != nil || r == contract.RoleStable},
	} {
		if ran.strategy != target && ran.ran {
			return ran.strategy, nil
		}
	}
	return "", nil
}

// namesake returns workload name's Deployment <name> (nil when none) and
// whether the workload has a color Deployment: what its roles are read
// from.
func namesake(name string, get Lookup) (*appsv1.Deployment, bool, error) {
	d, err := get(name)
	if err != nil {
		return nil, false, err
	}
	colors, err := hasColor(name, get)
	return d, colors, err
}

// hasColor reports whether workload name has a color Deployment.
func hasColor(name string, get Lookup) (bool, error) {
	for _, suffix := range colorSuffixes {
		d, err := get(name + suffix)
		if err != nil || d != nil {
			return d != nil, err
		}
	}
	return false, nil
}
