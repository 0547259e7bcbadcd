package rollout

import (
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// inputError is a workload's configuration that cannot be rolled out as it
// is (a missing Service, a bad steps string): the workload is marked
// Degraded with it and nothing else changes until Git does.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// isInputError reports whether err is, or wraps, an inputError.
func isInputError(err error) bool {
	var ie *inputError
	return errors.As(err, &ie)
}

// checkAnnotations checks the input annotations of a workload in Git: the
// strategy is known, the strategy's Service names are set, and every value
// parses. The first problem is returned as an inputError naming the
// annotation.
func checkAnnotations(a map[string]string) error {
	for _, key := range []string{contract.AnnotationAutoRollback, contract.AnnotationAutoPromote} {
		if v, ok := a[key]; ok && v != "true" && v != "false" {
			return &inputError{fmt.Sprintf("annotation %s: %q is neither \"true\" nor \"false\"", key, v)}
		}
	}
	switch strategy := a[contract.AnnotationStrategy]; strategy {
	case "", contract.StrategyRolling:
		return nil
	case contract.StrategyBlueGreen:
		if a[contract.AnnotationActiveService] == "" {
			return &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", contract.AnnotationActiveService, strategy)}
		}
		_, err := scaleDownDelay(a)
		return err
	case contract.StrategyCanary:
		if a[contract.AnnotationService] == "" {
			return &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", contract.AnnotationService, strategy)}
		}
		_, err := canarySteps(a)
		return err
	default:
		return &inputError{fmt.Sprintf("annotation %s: unknown strategy %q (want %s, %s or %s)",
			contract.AnnotationStrategy, strategy, contract.StrategyRolling, contract.StrategyBlueGreen, contract.StrategyCanary)}
	}
}

// workloadDeployments names the Deployments a progressive workload runs
// as: the colors for blue-green, <name> and <name>-canary for canary.
func workloadDeployments(git *appsv1.Deployment) []string {
	if git.Annotations[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
		return []string{git.Name + contract.SuffixBlue, git.Name + contract.SuffixGreen}
	}
	return []string{git.Name, git.Name + contract.SuffixCanary}
}

// scaleDownDelay reads plimsoll.dev/scale-down-delay, DefaultScaleDownDelay
// when absent.
func scaleDownDelay(a map[string]string) (time.Duration, error) {
	v, ok := a[contract.AnnotationScaleDownDelay]
	if !ok {
		return DefaultScaleDownDelay, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, &inputError{fmt.Sprintf("annotation %s: %q is not a duration like 30s or 5m", contract.AnnotationScaleDownDelay, v)}
	}
	return d, nil
}

// canarySteps parses plimsoll.dev/steps, strategies.DefaultSteps when absent.
func canarySteps(a map[string]string) ([]strategies.Step, error) {
	v, ok := a[contract.AnnotationSteps]
	if !ok {
		v = strategies.DefaultSteps
	}
	steps, err := strategies.ParseSteps(v)
	if err != nil {
		return nil, &inputError{fmt.Sprintf("annotation %s: %v", contract.AnnotationSteps, err)}
	}
	return steps, nil
}

// missingService is the input error of a Service that annotation key
// names and that does not exist in namespace ns.
func missingService(key, name, ns string) error {
	return &inputError{fmt.Sprintf("annotation %s: Service %q does not exist in namespace %s", key, name, ns)}
}

// serviceOf returns the Service annotation key of a workload names, from
// the workload's observed Services: an unnamed or missing Service is an
// input error naming both, for the workload's message.
func serviceOf(w *workload, annotations map[string]string, key string) (*corev1.Service, error) {
	name := annotations[key]
	if name == "" {
		return nil, &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", key, annotations[contract.AnnotationStrategy])}
	}
	svc := w.services[name]
	if svc == nil {
		return nil, missingService(key, name, w.ns)
	}
	return svc, nil
}
