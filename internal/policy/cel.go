package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// costLimit bounds the CEL runtime cost of one condition evaluation
// (cel.CostLimit units, roughly one per operation and per element or
// character touched). Arguments are chosen by the caller, so a condition that
// iterates over them must not be able to take unbounded time: exceeding the
// limit is a run-time condition error, which denies the call.
const costLimit = 1_000_000

// CEL variable names (docs/policy.md, "Conditions").
const (
	varPrincipal = "principal"
	varServer    = "server"
	varTool      = "tool"
	varArguments = "arguments"
	varMeta      = "meta"
)

// celEnv is the one environment all conditions compile in. Library versions
// are pinned so that a cel-go upgrade cannot silently change what a policy
// means.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	dynMap := cel.MapType(cel.StringType, cel.DynType)
	base, err := cel.NewEnv(
		cel.Variable(varPrincipal, dynMap),
		cel.Variable(varServer, dynMap),
		cel.Variable(varTool, dynMap),
		cel.Variable(varArguments, dynMap),
		cel.Variable(varMeta, dynMap),
		ext.Strings(ext.StringsVersion(5)),
		cel.OptionalTypes(cel.OptionalTypesVersion(2)),
		cel.CrossTypeNumericComparisons(true),
		cel.ExtendedValidations(),
	)
	if err != nil {
		return nil, err
	}
	return base.Extend(cel.CustomTypeAdapter(jsonAdapter{base.CELTypeAdapter()}))
})

// compileCondition compiles and type-checks src. The error text is the
// "<cel error>" part of "policy FILE:LINE: rule ID: condition: <cel error>":
// one line, each CEL issue as "line:column: message" (positions within the
// condition text, 1-based), separated by "; ".
func compileCondition(src string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %v", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			msgs = append(msgs, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		hint := ""
		if t.IsExactType(types.DynType) {
			hint = " (compare explicitly, e.g. arguments.flag == true)"
		}
		return nil, fmt.Errorf("type is %s, want bool%s", t, hint)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	return prg, nil
}

// eval runs the rule's condition. ok is false when evaluation failed (an
// error value, the cost limit, or, defensively, a non-bool result).
func (r *rule) eval(a *activation) (match, ok bool) {
	out, _, err := r.prg.Eval(a)
	if err != nil {
		return false, false
	}
	b, isBool := out.(types.Bool)
	if !isBool {
		return false, false
	}
	return bool(b), true
}

// emptyMap stands in for absent maps. CEL never writes to it.
var emptyMap = map[string]any{}

// activation resolves the CEL variables of one Evaluate call. The small maps
// for principal, server and tool are built on first use and reused by every
// condition of the call.
type activation struct {
	in                     *Input
	principal, server, tool map[string]any
}

func newActivation(in *Input) *activation { return &activation{in: in} }

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varPrincipal:
		if a.principal == nil {
			a.principal = map[string]any{"id": a.in.Principal.ID, "role": a.in.Principal.Role}
		}
		return a.principal, true
	case varServer:
		if a.server == nil {
			a.server = map[string]any{"id": a.in.ServerID}
		}
		return a.server, true
	case varTool:
		if a.tool == nil {
			t := &a.in.Tool
			ann := t.Annotations
			if ann == nil {
				ann = emptyMap
			}
			se := t.SideEffect
			if se == "" {
				se = "destructive"
			}
			a.tool = map[string]any{
				"name":        t.Name,
				"known":       t.Known,
				"title":       t.Title,
				"description": t.Description,
				"annotations": ann,
				"side_effect": se,
			}
		}
		return a.tool, true
	case varArguments:
		if a.in.Arguments == nil {
			return emptyMap, true
		}
		return a.in.Arguments, true
	case varMeta:
		if a.in.Meta == nil {
			return emptyMap, true
		}
		return a.in.Meta, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// jsonAdapter converts Go values to CEL values like the default adapter, and
// also accepts json.Number (decoded with json.Decoder.UseNumber): an integral
// number that fits is an int, any other finite number a double. Without it a
// json.Number would be a string in CEL and `arguments.n == 5` would be
// silently false. It wraps map[string]any and []any itself so that nested
// values go through it too.
type jsonAdapter struct{ base types.Adapter }

func (a jsonAdapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return types.Int(i)
		}
		if f, err := v.Float64(); err == nil {
			return types.Double(f)
		}
		return types.NewErr("number out of range")
	case map[string]any:
		return types.NewStringInterfaceMap(a, v)
	case []any:
		return types.NewDynamicList(a, v)
	}
	return a.base.NativeToValue(v)
}
