package analysis

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"plimsoll.dev/plimsoll/contract"
)

// RefError is what is wrong with a Deployment's reference to analyses:
// the annotation at fault (contract.AnnotationAnalysis or
// contract.AnnotationAnalysisArgs) and why. Names, Args and Check return
// it.
type RefError struct {
	Annotation string
	Reason     string
}

// Error is "<annotation>: <reason>", e.g. `plimsoll.dev/analysis: no
// analysis "latency" ...`.
func (e *RefError) Error() string { return e.Annotation + ": " + e.Reason }

// refErr is a RefError of annotation.
func refErr(annotation, format string, a ...any) *RefError {
	return &RefError{Annotation: annotation, Reason: fmt.Sprintf(format, a...)}
}

// Names reads plimsoll.dev/analysis: the analyses a Deployment names,
// comma-separated ("error-rate, latency"), in the order given. None when
// the annotation is absent or empty. An empty item, a name that is not a
// ConfigMap name or a name given twice is an error.
func Names(annotations map[string]string) ([]string, error) {
	raw := strings.TrimSpace(annotations[contract.AnnotationAnalysis])
	if raw == "" {
		return nil, nil
	}
	var names []string
	for i, item := range strings.Split(raw, ",") {
		name := strings.TrimSpace(item)
		switch {
		case name == "":
			return nil, refErr(contract.AnnotationAnalysis, "item %d is empty: want \"name, name, ...\"", i+1)
		case slices.Contains(names, name):
			return nil, refErr(contract.AnnotationAnalysis, "%q is named twice", name)
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			return nil, refErr(contract.AnnotationAnalysis, "%q is not a ConfigMap name: %s", name, strings.Join(msgs, "; "))
		}
		names = append(names, name)
	}
	return names, nil
}

// Args reads plimsoll.dev/analysis-args: the values a Deployment gives its
// analyses' arguments, comma-separated name=value pairs
// ("threshold=0.02, path=/healthz"). Spaces around names and values are
// dropped; a value may hold '=' but not ','. None when the annotation is
// absent or empty. An item that is not name=value, a bad name or a name
// given twice is an error.
func Args(annotations map[string]string) (map[string]string, error) {
	raw := strings.TrimSpace(annotations[contract.AnnotationAnalysisArgs])
	if raw == "" {
		return nil, nil
	}
	args := map[string]string{}
	for i, item := range strings.Split(raw, ",") {
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok:
			return nil, refErr(contract.AnnotationAnalysisArgs, "item %d %q is not name=value", i+1, strings.TrimSpace(item))
		case !argName.MatchString(name):
			return nil, refErr(contract.AnnotationAnalysisArgs, "item %d: %q is not an argument name (a letter, then letters, digits, '-' or '_')", i+1, name)
		}
		if _, dup := args[name]; dup {
			return nil, refErr(contract.AnnotationAnalysisArgs, "%q is given twice", name)
		}
		args[name] = value
	}
	return args, nil
}

// Check checks a Deployment's reference to analyses before anything of
// its commit is applied: both annotations parse, every analysis named is
// found (find looks one up by name among the commit's analyses in the
// Deployment's namespace), every required argument is given, every
// argument given is declared by an analysis named (a built-in is never
// given), and the values given make valid conditions, queries and URLs.
// The error is a *RefError naming the annotation:
// `plimsoll.dev/analysis: no analysis "latency" (...)`,
// `plimsoll.dev/analysis-args: analysis error-rate: argument "threshold"
// is required and not given`.
func Check(annotations map[string]string, find func(name string) (*Template, bool)) error {
	names, err := Names(annotations)
	if err != nil {
		return err
	}
	given, err := Args(annotations)
	if err != nil {
		return err
	}
	var templates []*Template
	declaredBy := map[string][]string{}
	for _, name := range names {
		t, ok := find(name)
		if !ok || t == nil {
			return refErr(contract.AnnotationAnalysis, "no analysis %q (a ConfigMap of that name labelled %s in the Deployment's namespace)", name, contract.LabelAnalysis)
		}
		templates = append(templates, t)
		for _, a := range t.Args {
			declaredBy[a.Name] = append(declaredBy[a.Name], t.Name)
		}
	}
	for _, name := range sortedKeys(given) {
		switch {
		case isBuiltin(name):
			return refErr(contract.AnnotationAnalysisArgs, "%q is built in: plimsoll gives its value", name)
		case len(names) == 0:
			return refErr(contract.AnnotationAnalysisArgs, "%q is given, but %s names no analysis", name, contract.AnnotationAnalysis)
		case len(declaredBy[name]) == 0:
			return refErr(contract.AnnotationAnalysisArgs, "%q is declared by no analysis named (%s)", name, strings.Join(names, ", "))
		}
	}
	if _, err := Bind(templates, given, standInBuiltins); err != nil {
		return &RefError{Annotation: contract.AnnotationAnalysisArgs, Reason: err.Error()}
	}
	return nil
}

// sortedKeys are the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
