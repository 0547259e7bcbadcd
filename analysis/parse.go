package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// argName is what an argument's name may be: a letter, then letters,
// digits, '-' and '_' (so that "name=value, ..." stays unambiguous).
var argName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// headerName is an HTTP header name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Parse reads the analysis that cm holds: the YAML document in its data key
// analysis.yaml. It refuses, with an error naming the field
// (`data["analysis.yaml"]: metrics[2].count: must be at least 1`), a
// document that does not parse or has unknown fields, no metrics, two
// metrics of one name, a metric with no provider or several, a bad
// duration, a negative limit, a count below 1, a prometheus or web metric
// without a condition, a condition that does not compile, a query that is
// not PromQL, a URL that is not http(s), a method other than GET and POST,
// a header with both or neither of value and valueFrom, a Job without
// containers, and an {{args.NAME}} that names no argument.
//
// Arguments are checked with stand-in values: a declared argument's
// default, or "1" when it has none; the built-ins' look-alikes. Check then
// checks each Deployment's values.
func Parse(cm *corev1.ConfigMap) (*Template, error) {
	if cm == nil {
		return nil, errors.New("parse analysis: no ConfigMap")
	}
	data, ok := cm.Data[contract.AnalysisKey]
	if !ok {
		return nil, fmt.Errorf("%s: missing: an analysis ConfigMap holds its document in this key", dataField)
	}
	t, err := parseDocument(cm.Name, []byte(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dataField, err)
	}
	return t, nil
}

// parseDocument reads and checks the document of the analysis name.
func parseDocument(name string, data []byte) (*Template, error) {
	var doc document
	if err := decodeDocument(data, &doc); err != nil {
		return nil, err
	}
	t := &Template{Name: name}
	declared := map[string]bool{}
	for i, a := range doc.Args {
		path := fmt.Sprintf("args[%d].name", i)
		n := string(a.Name)
		switch {
		case n == "":
			return nil, at(path, errors.New("required"))
		case !argName.MatchString(n):
			return nil, at(path, fmt.Errorf("%q is not an argument name (a letter, then letters, digits, '-' or '_')", n))
		case isBuiltin(n):
			return nil, at(path, fmt.Errorf("%q is built in (%s): plimsoll gives its value", n, strings.Join(builtins, ", ")))
		case declared[n]:
			return nil, at(path, fmt.Errorf("%q is declared twice", n))
		}
		declared[n] = true
		arg := Arg{Name: n, Required: a.Value == nil}
		if a.Value != nil {
			arg.Value = string(*a.Value)
		}
		t.Args = append(t.Args, arg)
	}
	if len(doc.Metrics) == 0 {
		return nil, at("metrics", errors.New("none: an analysis needs at least one metric"))
	}
	sc := t.standIn()
	seen := map[string]int{}
	for i, dm := range doc.Metrics {
		path := fmt.Sprintf("metrics[%d]", i)
		m, err := parseMetric(name, dm)
		if err != nil {
			return nil, at(path, err)
		}
		if j, dup := seen[m.Name]; dup {
			return nil, at(path+".name", fmt.Errorf("%q is also the name of metrics[%d]", m.Name, j))
		}
		seen[m.Name] = i
		if _, err := bindMetric(m, sc); err != nil {
			return nil, at(path, err)
		}
		t.Metrics = append(t.Metrics, m)
	}
	return t, nil
}

// parseMetric reads one metric of the analysis named analysis, defaults
// applied. What depends on the arguments' values is checked by bindMetric.
func parseMetric(analysis string, dm docMetric) (Metric, error) {
	m := Metric{
		Name:             string(dm.Name),
		SuccessCondition: strings.TrimSpace(string(dm.SuccessCondition)),
		FailureCondition: strings.TrimSpace(string(dm.FailureCondition)),
	}
	if m.Name == "" {
		return m, at("name", errors.New("required"))
	}
	if msgs := validation.IsDNS1123Label(m.Name); len(msgs) > 0 {
		return m, at("name", fmt.Errorf("%q is not a DNS-1123 label: %s", m.Name, strings.Join(msgs, "; ")))
	}
	spec := strategies.MetricSpec{Name: analysis + "/" + m.Name}
	var err error
	if spec.InitialDelay, err = duration("initialDelay", dm.InitialDelay, 0, false); err != nil {
		return m, err
	}
	if spec.Interval, err = duration("interval", dm.Interval, defaultInterval, true); err != nil {
		return m, err
	}
	if m.Timeout, err = duration("timeout", dm.Timeout, defaultTimeout, true); err != nil {
		return m, err
	}
	if spec.Count, err = limit("count", dm.Count, defaultCount, 1); err != nil {
		return m, err
	}
	if spec.FailureLimit, err = limit("failureLimit", dm.FailureLimit, 0, 0); err != nil {
		return m, err
	}
	if spec.InconclusiveLimit, err = limit("inconclusiveLimit", dm.InconclusiveLimit, 0, 0); err != nil {
		return m, err
	}
	if spec.ConsecutiveErrorLimit, err = limit("consecutiveErrorLimit", dm.ConsecutiveErrorLimit, defaultConsecutiveErrorLimit, 0); err != nil {
		return m, err
	}
	m.Spec = spec

	var providers []string
	if dm.Prometheus != nil {
		providers = append(providers, providerPrometheus)
	}
	if dm.Web != nil {
		providers = append(providers, providerWeb)
	}
	if dm.Job != nil {
		providers = append(providers, providerJob)
	}
	if len(providers) != 1 {
		return m, fmt.Errorf("exactly one provider of %s, %s, %s", providerPrometheus, providerWeb, providerJob)
	}
	provider := providers[0]
	switch {
	case provider == providerJob && m.SuccessCondition != "":
		return m, at("successCondition", errors.New("a job metric is judged by its Job succeeding or failing: it takes no condition"))
	case provider == providerJob && m.FailureCondition != "":
		return m, at("failureCondition", errors.New("a job metric is judged by its Job succeeding or failing: it takes no condition"))
	case provider != providerJob && m.SuccessCondition == "" && m.FailureCondition == "":
		return m, fmt.Errorf("a %s metric needs successCondition or failureCondition", provider)
	}

	switch provider {
	case providerPrometheus:
		m.Prometheus = &Prometheus{Query: strings.TrimSpace(string(dm.Prometheus.Query))}
		if m.Prometheus.Query == "" {
			return m, at("prometheus.query", errors.New("required"))
		}
	case providerWeb:
		w, err := parseWeb(dm.Web)
		if err != nil {
			return m, at("web", err)
		}
		m.Web = w
	case providerJob:
		if err := checkJob(dm); err != nil {
			return m, at("job.template.spec", err)
		}
		m.Job = dm.Job.DeepCopy()
	}
	return m, nil
}

// duration reads the duration field name: def when not given; zero only
// when not positive.
func duration(name string, t text, def time.Duration, positive bool) (time.Duration, error) {
	if t == "" {
		return def, nil
	}
	d, err := time.ParseDuration(string(t))
	switch {
	case err != nil:
		return 0, at(name, err)
	case d < 0:
		return 0, at(name, fmt.Errorf("%s must not be negative", d))
	case d == 0 && positive:
		return 0, at(name, errors.New("must be more than 0"))
	}
	return d, nil
}

// limit reads the count field name: def when not given; at least least.
func limit(name string, v *int, def, least int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < least {
		if least == 0 {
			return 0, at(name, fmt.Errorf("%d must not be negative", *v))
		}
		return 0, at(name, fmt.Errorf("must be at least %d", least))
	}
	return *v, nil
}

// parseWeb reads a web provider.
func parseWeb(dw *docWeb) (*Web, error) {
	w := &Web{
		URL:      strings.TrimSpace(string(dw.URL)),
		Method:   strings.ToUpper(strings.TrimSpace(string(dw.Method))),
		Body:     string(dw.Body),
		JSONPath: strings.TrimSpace(string(dw.JSONPath)),
	}
	if w.URL == "" {
		return nil, at("url", errors.New("required"))
	}
	switch w.Method {
	case "":
		w.Method = methodGet
	case methodGet, methodPost:
	default:
		return nil, at("method", fmt.Errorf("%q is neither %s nor %s", w.Method, methodGet, methodPost))
	}
	if w.Body != "" && w.Method != methodPost {
		return nil, at("body", fmt.Errorf("only a %s sends a body", methodPost))
	}
	for i, dh := range dw.Headers {
		h, err := parseHeader(dh)
		if err != nil {
			return nil, at(fmt.Sprintf("headers[%d]", i), err)
		}
		w.Headers = append(w.Headers, h)
	}
	if w.JSONPath != "" {
		if _, err := compileJSONPath(w.JSONPath); err != nil {
			return nil, at("jsonPath", err)
		}
	}
	return w, nil
}

// parseHeader reads one header of a web provider.
func parseHeader(dh docHeader) (Header, error) {
	h := Header{Name: strings.TrimSpace(string(dh.Name))}
	switch {
	case h.Name == "":
		return h, at("name", errors.New("required"))
	case !headerName.MatchString(h.Name):
		return h, at("name", fmt.Errorf("%q is not an HTTP header name", h.Name))
	case (dh.Value == nil) == (dh.ValueFrom == nil):
		return h, errors.New("exactly one of value and valueFrom")
	case dh.Value != nil:
		h.Value = string(*dh.Value)
		return h, nil
	case dh.ValueFrom.SecretKeyRef == nil:
		return h, at("valueFrom.secretKeyRef", errors.New("required: a header takes credentials from a Secret"))
	}
	ref := SecretKeyRef{Name: string(dh.ValueFrom.SecretKeyRef.Name), Key: string(dh.ValueFrom.SecretKeyRef.Key)}
	if msgs := validation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
		return h, at("valueFrom.secretKeyRef.name", fmt.Errorf("%q is not a Secret name: %s", ref.Name, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsConfigMapKey(ref.Key); len(msgs) > 0 {
		return h, at("valueFrom.secretKeyRef.key", fmt.Errorf("%q is not a Secret key: %s", ref.Key, strings.Join(msgs, "; ")))
	}
	h.Secret = &ref
	return h, nil
}

// checkJob checks what the API server would refuse only when the first
// measurement creates the Job: no containers, a container without a name
// or image, a restart policy a Job cannot have.
func checkJob(dm docMetric) error {
	pod := dm.Job.Template.Spec
	if len(pod.Containers) == 0 {
		return at("containers", errors.New("a Job needs at least one container"))
	}
	for i, c := range pod.Containers {
		switch {
		case c.Name == "":
			return at(fmt.Sprintf("containers[%d].name", i), errors.New("required"))
		case c.Image == "":
			return at(fmt.Sprintf("containers[%d].image", i), errors.New("required"))
		}
	}
	switch pod.RestartPolicy {
	case "", corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
		return nil
	}
	return at("restartPolicy", fmt.Errorf("%q: a Job's pods restart %s or %s", pod.RestartPolicy, corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure))
}

// isBuiltin reports whether name is a built-in argument.
func isBuiltin(name string) bool {
	for _, b := range builtins {
		if b == name {
			return true
		}
	}
	return false
}

// fieldError is an error at a field of the document: its path, e.g.
// "metrics[0].web.headers[1].name".
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// at puts path in front of the path of err: at("metrics[0]",
// at("count", err)) is at "metrics[0].count", at("web", at("headers[1]",
// err)) at "web.headers[1]".
func at(path string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		sep := "."
		if strings.HasPrefix(fe.path, "[") {
			sep = ""
		}
		return &fieldError{path: path + sep + fe.path, err: fe.err}
	}
	return &fieldError{path: path, err: err}
}
