package analysis

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/util/jsonpath"

	"plimsoll.dev/plimsoll/internal/redact"
)

// argRef is a reference to an argument: {{args.NAME}}, spaces allowed
// inside the braces.
var argRef = regexp.MustCompile(`\{\{\s*args\.([^{}\s]*)\s*\}\}`)

// scope is the arguments of one analysis and their values.
type scope struct {
	values   map[string]string
	declared []string
}

// expand replaces every {{args.NAME}} of s by the value of NAME. A
// reference to no argument is an error that lists the arguments there are.
func (sc scope) expand(s string) (string, error) {
	var err error
	out := argRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := argRef.FindStringSubmatch(ref)[1]
		v, ok := sc.values[name]
		if !ok && err == nil {
			declared := "none"
			if len(sc.declared) > 0 {
				declared = strings.Join(sc.declared, ", ")
			}
			err = fmt.Errorf("%s is not an argument (declared: %s; built in: %s)", ref, declared, strings.Join(builtins, ", "))
		}
		return v
	})
	return out, err
}

// standIn is the scope Parse checks t's metrics in, before any Deployment
// gives values: each declared argument's default, or "1" when it has none
// (a number, a word and a PromQL duration in seconds all at once), and
// look-alikes of the built-ins.
func (t *Template) standIn() scope {
	return t.scope(nil, standInBuiltins, "1")
}

// scope is the scope of t's metrics: declared defaults, overridden by the
// given values of the arguments t declares, overridden by the built-ins.
// An argument that has no value at all gets missing, if that is not empty.
func (t *Template) scope(given map[string]string, b Builtins, missing string) scope {
	sc := scope{values: map[string]string{}}
	for _, a := range t.Args {
		sc.declared = append(sc.declared, a.Name)
		v, ok := given[a.Name]
		switch {
		case ok:
			sc.values[a.Name] = v
		case !a.Required:
			sc.values[a.Name] = a.Value
		case missing != "":
			sc.values[a.Name] = missing
		}
	}
	sc.values[ArgWorkload] = b.Workload
	sc.values[ArgNamespace] = b.Namespace
	sc.values[ArgService] = b.Service
	sc.values[ArgRevision] = strconv.FormatInt(b.Revision, 10)
	sc.values[ArgHash] = b.Hash
	sc.values[ArgStableHash] = b.StableHash
	return sc
}

// Bind makes the metrics of templates measurable for one revision: it
// gives each argument its value (the declared default, overridden by the
// value given in plimsoll.dev/analysis-args, overridden by builtins),
// substitutes them, and compiles the conditions. A given value that an
// analysis does not declare is not used by it. It fails when an argument
// without a default is not given, or when a value makes a condition, a
// query or a URL invalid: "analysis error-rate: metrics[0].successCondition:
// ...". The Bounds come in the order of templates and their metrics.
func Bind(templates []*Template, given map[string]string, builtins Builtins) ([]Bound, error) {
	var out []Bound
	for _, t := range templates {
		for _, a := range t.Args {
			if _, ok := given[a.Name]; a.Required && !ok {
				return nil, fmt.Errorf("analysis %s: argument %q is required and not given", t.Name, a.Name)
			}
		}
		sc := t.scope(given, builtins, "")
		for i, m := range t.Metrics {
			b, err := bindMetric(m, sc)
			if err != nil {
				return nil, fmt.Errorf("analysis %s: %w", t.Name, at(fmt.Sprintf("metrics[%d]", i), err))
			}
			b.Analysis, b.Hash = t.Name, builtins.Hash
			out = append(out, b)
		}
	}
	return out, nil
}

// bindMetric substitutes the arguments of sc into m and checks what
// depends on their values: the conditions compile, the query parses as
// PromQL, the URL is absolute http(s).
func bindMetric(m Metric, sc scope) (Bound, error) {
	b := Bound{Metric: m}
	expand := func(field string, s *string) error {
		v, err := sc.expand(*s)
		if err != nil {
			return at(field, err)
		}
		*s = v
		return nil
	}
	for _, c := range []struct {
		field  string
		source *string
		into   **condition
	}{
		{"successCondition", &b.SuccessCondition, &b.success},
		{"failureCondition", &b.FailureCondition, &b.failure},
	} {
		if *c.source == "" {
			continue
		}
		written := *c.source
		if err := expand(c.field, c.source); err != nil {
			return b, err
		}
		cond, err := compileCondition(*c.source)
		if err != nil {
			if *c.source != written {
				err = fmt.Errorf("%w (as written: %q)", err, written)
			}
			return b, at(c.field, err)
		}
		*c.into = cond
	}
	switch {
	case m.Prometheus != nil:
		p := *m.Prometheus
		if err := expand("prometheus.query", &p.Query); err != nil {
			return b, err
		}
		if err := parsePromQL(p.Query); err != nil {
			return b, at("prometheus.query", err)
		}
		b.Prometheus = &p
	case m.Web != nil:
		w := *m.Web
		w.Headers = slices.Clone(m.Web.Headers)
		if err := expand("web.url", &w.URL); err != nil {
			return b, err
		}
		if err := checkURL(w.URL); err != nil {
			return b, at("web.url", err)
		}
		if err := expand("web.body", &w.Body); err != nil {
			return b, err
		}
		for i := range w.Headers {
			if err := expand(fmt.Sprintf("web.headers[%d].value", i), &w.Headers[i].Value); err != nil {
				return b, err
			}
		}
		b.Web = &w
	case m.Job != nil:
		spec, err := expandJob(m.Job, sc)
		if err != nil {
			return b, at("job", err)
		}
		b.Job = spec
	}
	return b, nil
}

// expandJob substitutes the arguments of sc into every string of spec.
func expandJob(spec *batchv1.JobSpec, sc scope) (*batchv1.JobSpec, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode the job spec: %w", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("decode the job spec: %w", err)
	}
	tree, err = expandTree(tree, sc, "")
	if err != nil {
		return nil, err
	}
	if raw, err = json.Marshal(tree); err != nil {
		return nil, fmt.Errorf("encode the job spec: %w", err)
	}
	var out batchv1.JobSpec
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode the job spec: %w", err)
	}
	return &out, nil
}

// expandTree substitutes the arguments of sc into the strings of v, a
// decoded JSON value at path; map keys are walked in order, so that the
// first error is always the same.
func expandTree(v any, sc scope, path string) (any, error) {
	switch x := v.(type) {
	case string:
		s, err := sc.expand(x)
		if err != nil {
			return nil, at(strings.TrimPrefix(path, "."), err)
		}
		return s, nil
	case []any:
		for i := range x {
			e, err := expandTree(x[i], sc, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = e
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e, err := expandTree(x[k], sc, path+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = e
		}
	}
	return v, nil
}

// parsePromQL checks that q parses as PromQL, with every feature flag of
// the parser on: the Prometheus that runs the query decides which it
// allows.
func parsePromQL(q string) error {
	p := parser.NewParser(parser.Options{
		EnableExperimentalFunctions:  true,
		ExperimentalDurationExpr:     true,
		EnableExtendedRangeSelectors: true,
		EnableBinopFillModifiers:     true,
	})
	_, err := p.ParseExpr(q)
	return err
}

// checkURL checks that s is an absolute http or https URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return redact.Error(err) // *url.Error quotes s
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", redact.URL(s))
	}
	return nil
}

// compileJSONPath parses a JSONPath in client-go's syntax; a bare
// ".status.ratio" is read as "{.status.ratio}", as kubectl does.
func compileJSONPath(path string) (*jsonpath.JSONPath, error) {
	if !strings.Contains(path, "{") {
		path = "{" + path + "}"
	}
	jp := jsonpath.New("result")
	if err := jp.Parse(path); err != nil {
		return nil, err
	}
	return jp, nil
}
