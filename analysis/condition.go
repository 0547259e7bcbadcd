package analysis

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"plimsoll.dev/plimsoll/strategies"
)

// env is what a condition sees: the measured value as result, of any
// type.
type env struct {
	Result any `expr:"result"`
}

// condition is a compiled successCondition or failureCondition.
type condition struct {
	source  string
	program *vm.Program
}

// compileCondition compiles src, an expr expression over result with
// isNaN(x) and isInf(x) besides expr's built-ins. An expression whose type
// is known and is not bool ("result + 1" is not, "result" may be) does not
// compile.
func compileCondition(src string) (*condition, error) {
	program, err := expr.Compile(src,
		expr.Env(env{}),
		expr.Function("isNaN", isNaN),
		expr.Function("isInf", isInf),
	)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %s", src, exprMessage(err))
	}
	if t := program.Node().Type(); t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
		return nil, fmt.Errorf("parse %q: its type is %s, not bool", src, t)
	}
	return &condition{source: src, program: program}, nil
}

// eval evaluates c on result.
func (c *condition) eval(result any) (bool, error) {
	out, err := expr.Run(c.program, env{Result: result})
	if err != nil {
		return false, fmt.Errorf("evaluate %q: %s", c.source, exprMessage(err))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("evaluate %q: gave %s, of type %T, not a bool", c.source, formatValue(out), out)
	}
	return b, nil
}

// judge is what result says under the conditions of b:
//   - failureCondition given and true: Failed;
//   - else successCondition given: true is Successful; false is
//     Inconclusive when failureCondition is given, else Failed;
//   - only failureCondition given, and false: Successful;
//   - a condition that errors or does not give a bool: Error.
//
// With success "result < 0.01" and failure "result >= 0.05": 0.001 is
// Successful, 0.02 Inconclusive, 0.1 Failed. With success alone, 0.02 is
// Failed. The message says which condition decided.
func judge(b Bound, result any) (strategies.Outcome, string) {
	if b.success == nil && b.failure == nil {
		return strategies.OutcomeError, "the metric has no compiled condition: bind it first"
	}
	if b.failure != nil {
		failed, err := b.failure.eval(result)
		if err != nil {
			return strategies.OutcomeError, err.Error()
		}
		if failed {
			return strategies.OutcomeFailed, "failureCondition " + b.failure.source + " is true"
		}
	}
	if b.success == nil {
		return strategies.OutcomeSuccessful, ""
	}
	ok, err := b.success.eval(result)
	switch {
	case err != nil:
		return strategies.OutcomeError, err.Error()
	case ok:
		return strategies.OutcomeSuccessful, ""
	case b.failure != nil:
		return strategies.OutcomeInconclusive, "neither successCondition " + b.success.source + " nor failureCondition " + b.failure.source + " is true"
	}
	return strategies.OutcomeFailed, "successCondition " + b.success.source + " is false"
}

// exprMessage is the first line of an expr error: expr adds the source and
// a caret under the position on the next lines.
func exprMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) && fe.Message != "" {
		return fe.Message
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// isNaN is the condition helper isNaN(x): whether the number x is NaN.
func isNaN(params ...any) (any, error) {
	f, err := number("isNaN", params)
	if err != nil {
		return nil, err
	}
	return math.IsNaN(f), nil
}

// isInf is the condition helper isInf(x): whether the number x is +Inf or
// -Inf.
func isInf(params ...any) (any, error) {
	f, err := number("isInf", params)
	if err != nil {
		return nil, err
	}
	return math.IsInf(f, 0), nil
}

// number is the one numeric argument of the helper fn.
func number(fn string, params []any) (float64, error) {
	if len(params) != 1 {
		return 0, fmt.Errorf("%s takes one number, not %d arguments", fn, len(params))
	}
	switch x := params[0].(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	}
	return 0, fmt.Errorf("%s takes a number, not a %T", fn, params[0])
}
