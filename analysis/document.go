package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	sigsjson "sigs.k8s.io/json"
)

// document is analysis.yaml as written. Pointers tell a field left out
// (its default applies) from one given as zero.
type document struct {
	Args    []docArg    `json:"args,omitempty"`
	Metrics []docMetric `json:"metrics,omitempty"`
}

type docArg struct {
	Name  text  `json:"name"`
	Value *text `json:"value,omitempty"`
}

type docMetric struct {
	Name                  text             `json:"name"`
	InitialDelay          text             `json:"initialDelay,omitempty"`
	Interval              text             `json:"interval,omitempty"`
	Count                 *int             `json:"count,omitempty"`
	FailureLimit          *int             `json:"failureLimit,omitempty"`
	InconclusiveLimit     *int             `json:"inconclusiveLimit,omitempty"`
	ConsecutiveErrorLimit *int             `json:"consecutiveErrorLimit,omitempty"`
	Timeout               text             `json:"timeout,omitempty"`
	SuccessCondition      text             `json:"successCondition,omitempty"`
	FailureCondition      text             `json:"failureCondition,omitempty"`
	Prometheus            *docPrometheus   `json:"prometheus,omitempty"`
	Web                   *docWeb          `json:"web,omitempty"`
	Job                   *batchv1.JobSpec `json:"job,omitempty"`
}

type docPrometheus struct {
	Query text `json:"query"`
}

type docWeb struct {
	URL      text        `json:"url"`
	Method   text        `json:"method,omitempty"`
	Body     text        `json:"body,omitempty"`
	Headers  []docHeader `json:"headers,omitempty"`
	JSONPath text        `json:"jsonPath,omitempty"`
}

type docHeader struct {
	Name      text          `json:"name"`
	Value     *text         `json:"value,omitempty"`
	ValueFrom *docValueFrom `json:"valueFrom,omitempty"`
}

type docValueFrom struct {
	SecretKeyRef *docSecretKeyRef `json:"secretKeyRef,omitempty"`
}

type docSecretKeyRef struct {
	Name text `json:"name"`
	Key  text `json:"key"`
}

// text is a string field that also takes a YAML number or bool as
// written: `value: 0.010` is "0.010", not a type error (and not "0.01").
type text string

// UnmarshalJSON takes a JSON string, number or bool; null is "".
func (t *text) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	case len(b) > 0 && b[0] == '{':
		return &json.UnmarshalTypeError{Value: "object", Type: reflect.TypeFor[string]()}
	case len(b) > 0 && b[0] == '[':
		return &json.UnmarshalTypeError{Value: "array", Type: reflect.TypeFor[string]()}
	default:
		*t = text(b)
	}
	return nil
}

// jsonNumber is a number as JSON writes it: "0.010" is one, "010" and
// "0x1F" (YAML ints) are not.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// decodeDocument reads the one YAML document of data into doc, strictly:
// an unknown or repeated field is an error naming its path
// ("metrics[0].sucessCondition").
//
// The YAML is read by yaml.v3, which follows YAML 1.2: `value: yes` is the
// string "yes", as a reader expects, where YAML 1.1 (and so
// sigs.k8s.io/yaml) makes it true.
func decodeDocument(data []byte, doc *document) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("no YAML document")
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	budget := maxNodes
	v, err := nodeValue(&root, &budget, 0)
	if err != nil {
		return err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("convert to JSON: %w", err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, doc, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: want %s, got %s", typeErrorPath(v, te), te.Type, jsonKinds[te.Value])
		}
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}

// nodeValue is the value of a YAML node as JSON would hold it, counting
// each node (aliases expanded) against budget.
func nodeValue(n *yaml.Node, budget *int, depth int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("more than %d YAML nodes (aliases expanded)", maxNodes)
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], budget, depth)
	case yaml.AliasNode:
		return nodeValue(n.Alias, budget, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a string", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q given twice", k.Line, k.Value)
			}
			v, err := nodeValue(n.Content[i+1], budget, depth+1)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	}
	return scalarValue(n)
}

// scalarValue is a YAML scalar as JSON would hold it. A number keeps the
// text it was written with when JSON can hold that text.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return b, nil
	case "!!int", "!!float":
		if jsonNumber.MatchString(n.Value) {
			return json.Number(n.Value), nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return n.Value, nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return n.Value, nil
}

// jsonKinds name JSON's kinds of value as YAML's.
var jsonKinds = map[string]string{
	"array": "a list", "object": "a map", "string": "a string", "number": "a number", "bool": "a bool",
}

// typeErrorPath is the path of the field of te in the document v, with the
// index of the metric or the argument that json leaves out: json says
// "metrics.count", this says "metrics[2].count".
func typeErrorPath(v any, te *json.UnmarshalTypeError) string {
	list, _, _ := strings.Cut(te.Field, ".")
	doc, _ := v.(map[string]any)
	items, _ := doc[list].([]any)
	for i, item := range items {
		raw, err := json.Marshal(item)
		if err != nil {
			break
		}
		var into any = &docMetric{}
		if list == "args" {
			into = &docArg{}
		}
		var ite *json.UnmarshalTypeError
		if errors.As(json.Unmarshal(raw, into), &ite) {
			return fmt.Sprintf("%s[%d].%s", list, i, ite.Field)
		}
	}
	return te.Field
}
