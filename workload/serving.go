package workload

import (
	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Lookup returns Deployment name of a workload's namespace, nil when it
// does not exist: a cache's copy, a listed one, or one read from the API
// server.
type Lookup func(name string) (*appsv1.Deployment, error)

// colorSuffixes are the suffixes of a blue-green workload's colors.
var colorSuffixes = []string{contract.SuffixBlue, contract.SuffixGreen}

// Serving returns the Deployment that serves workload name, the one place
// that question is answered (the status, the HPA's target, plimsoll diff
// and a canary taking over from blue-green all ask it). The role
// annotation tells, in this order:
//
//  1. <name> when its role is primary (rolling) or stable (canary). It
//     has one only while Git's strategy is rolling or canary: blue-green
//     makes it idle as it takes over, before a color goes live. So while
//     a workload switches from blue-green, <name> serves as soon as its
//     strategy has made it, though the old color is still active.
//  2. Else the color whose role is active (blue-green).
//  3. Else nil: a blue-green workload before its first color went live,
//     or a Deployment plimsoll has not rolled.
func Serving(name string, get Lookup) (*appsv1.Deployment, error) {
	d, err := get(name)
	if err != nil {
		return nil, err
	}
	switch role(d) {
	case contract.RolePrimary, contract.RoleStable:
		return d, nil
	}
	return ActiveColor(name, get)
}

// ActiveColor returns the color of blue-green workload name whose role is
// active, nil when none is.
func ActiveColor(name string, get Lookup) (*appsv1.Deployment, error) {
	for _, suffix := range colorSuffixes {
		d, err := get(name + suffix)
		if err != nil {
			return nil, err
		}
		if role(d) == contract.RoleActive {
			return d, nil
		}
	}
	return nil, nil
}

// ServingRole is the role of the Deployment that serves a workload of
// strategy: primary for rolling, stable for canary, active for blue-green.
func ServingRole(strategy string) string {
	switch strategy {
	case contract.StrategyCanary:
		return contract.RoleStable
	case contract.StrategyBlueGreen:
		return contract.RoleActive
	}
	return contract.RolePrimary
}

// role is d's plimsoll.dev/role, "" for nil.
func role(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	return d.Annotations[contract.AnnotationRole]
}

// among is a Lookup over deploys.
func among(deploys []*appsv1.Deployment) Lookup {
	return func(name string) (*appsv1.Deployment, error) {
		for _, d := range deploys {
			if d.Name == name {
				return d, nil
			}
		}
		return nil, nil
	}
}

// newest returns the Deployment of deploys with the highest recorded
// revision, the first of them on a tie.
func newest(deploys []*appsv1.Deployment) *appsv1.Deployment {
	var out *appsv1.Deployment
	best := int64(-1)
	for _, d := range deploys {
		if st, _ := strategies.ReadStatus(d.Annotations); st.Revision > best {
			out, best = d, st.Revision
		}
	}
	return out
}
