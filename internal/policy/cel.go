package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/toolmeta"
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// evalBudget bounds the time one Evaluate call may spend in conditions that
// iterate (the comprehension macros all, exists, exists_one, map, filter).
// Arguments are chosen by the caller and may hold millions of elements, so
// such a condition must not take unbounded time: running out of budget is a
// run-time condition error, which denies the call. Conditions without
// comprehensions run in time linear in the size of the expression and of the
// values they touch and are not bounded further.
//
// This is a time budget, not cel.CostLimit: cel-go v0.31's runtime cost
// tracker slows comprehensions down quadratically in the number of
// iterations (an exists over 100,000 elements took 52 s with tracking and
// 50 ms without), which turns the guard into the attack.
const evalBudget = 100 * time.Millisecond

// interruptCheckFrequency is how many comprehension iterations run between
// two checks of the evaluation deadline.
const interruptCheckFrequency = 100

// CEL variable names (docs/policy.md, "Conditions").
const (
	varPrincipal = "principal"
	varServer    = "server"
	varTool      = "tool"
	varArguments = "arguments"
	varMeta      = "meta"
	varReceipt   = "receipt"
	varArgScan   = "argument_scan"
	varRespScan  = "response_scan"
	varDrift     = "drift"
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
		cel.Variable(varReceipt, dynMap),
		cel.Variable(varArgScan, dynMap),
		cel.Variable(varRespScan, dynMap),
		cel.Variable(varDrift, dynMap),
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

// fixedFields are the members of the condition variables whose keys are
// fixed (docs/policy.md, "Conditions"); arguments and meta hold whatever
// the request holds.
var fixedFields = map[string][]string{
	varPrincipal: {"id", "role"},
	varServer:    {"id"},
	varTool: {"name", "known", "title", "description", "annotations",
		"declared_side_effects", "side_effect", "data_classes", "externality", "required_scopes",
		"metadata_confidence", "sources", "metadata_conflicts", "findings"},
	varReceipt:     {"status", "conflicts"},
	varArgScan:     {"status", "findings", "classes"},
	varRespScan:    {"status", "findings", "classes"},
	varDrift:       {"status", "severity", "action", "changes", "all_changes"},
	"tool.sources": toolmeta.Fields,
}

// checkFields refuses an access to a member that principal, server or
// tool never has ("tool.side_efect"): CEL types them as maps, so such a
// typo would otherwise compile and then make the condition fail on every
// call, or, through the optional syntax (tool.?side_efect.orValue(...)),
// silently take its default. Checked: selection (x.f, has(x.f)), optional
// selection (x.?f), indexing and optional indexing with a constant
// (x["f"], x[?"f"]), membership of a constant ("f" in x), each also through
// dyn(x). A key computed at run time cannot be checked. Inside a
// comprehension whose variable shadows one of these names, accesses to
// that variable are its own. The error is "line:column: ..." within the
// condition.
func checkFields(a *celast.AST) error {
	shadowed := shadowedNames(a)
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.AllMatcher()) {
		var operand celast.Expr
		field, ok := "", false
		switch e.Kind() {
		case celast.SelectKind:
			operand, field, ok = e.AsSelect().Operand(), e.AsSelect().FieldName(), true
		case celast.CallKind:
			call := e.AsCall()
			args := call.Args()
			if len(args) != 2 {
				continue
			}
			switch call.FunctionName() {
			case operators.Index, operators.OptIndex, operators.OptSelect:
				operand = args[0]
				field, ok = constString(args[1])
			case operators.In:
				operand = args[1]
				field, ok = constString(args[0])
			}
		}
		if !ok {
			continue
		}
		name, isVar := fieldPath(operand, shadowed)
		if !isVar {
			continue
		}
		fields, fixed := fixedFields[name]
		if !fixed || slices.Contains(fields, field) {
			continue
		}
		loc := a.SourceInfo().GetStartLocation(e.ID())
		return fmt.Errorf("%d:%d: %s has no field %q (it has %s)", loc.Line(), loc.Column()+1, name, field, strings.Join(fields, ", "))
	}
	return nil
}

// fieldPath returns the path e names: a policy variable ("tool"), or a
// member of one selected with a constant (tool.sources or
// tool["sources"]: "tool.sources"), also through dyn(). ok is false for
// anything else, including a variable a comprehension shadows.
func fieldPath(e celast.Expr, shadowed map[scopedName]bool) (path string, ok bool) {
	return fieldPathDepth(e, shadowed, 2)
}

// fieldPathDepth is fieldPath for paths of at most depth selections.
func fieldPathDepth(e celast.Expr, shadowed map[scopedName]bool, depth int) (path string, ok bool) {
	if name, isVar := variable(e); isVar {
		return name, !shadowed[scopedName{e.ID(), name}]
	}
	if depth == 0 {
		return "", false
	}
	var operand celast.Expr
	var f string
	switch {
	case e.Kind() == celast.SelectKind && !e.AsSelect().IsTestOnly():
		operand, f = e.AsSelect().Operand(), e.AsSelect().FieldName()
	case e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.Index && len(e.AsCall().Args()) == 2:
		if f, ok = constString(e.AsCall().Args()[1]); !ok {
			return "", false
		}
		operand = e.AsCall().Args()[0]
	default:
		return "", false
	}
	name, ok := fieldPathDepth(operand, shadowed, depth-1)
	if !ok {
		return "", false
	}
	return name + "." + f, true
}

// scopedName is a variable name at one expression (by id).
type scopedName struct {
	id   int64
	name string
}

// shadowedNames returns the (expression, name) pairs where name is a
// comprehension's own iteration variable, not the policy variable.
func shadowedNames(a *celast.AST) map[scopedName]bool {
	shadowed := map[scopedName]bool{}
	mark := func(names []string, subs ...celast.Expr) {
		for _, sub := range subs {
			for _, d := range celast.MatchDescendants(celast.NavigateExpr(a, sub), celast.AllMatcher()) {
				for _, n := range names {
					shadowed[scopedName{d.ID(), n}] = true
				}
			}
		}
	}
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.ComprehensionKind)) {
		c := e.AsComprehension()
		names := []string{c.IterVar()}
		if c.HasIterVar2() {
			names = append(names, c.IterVar2())
		}
		// The iteration variables are bound in the loop condition and
		// step; the accumulator also in the result, which is where
		// optMap and optFlatMap bind their variable.
		mark(names, c.LoopCondition(), c.LoopStep())
		mark([]string{c.AccuVar()}, c.LoopCondition(), c.LoopStep(), c.Result())
	}
	return shadowed
}

// fieldTypes are the CEL types of the fixed fields that hold a string, a
// bool, a number or a list, fieldValues the values of those with a
// vocabulary (for a list: of its elements).
var (
	fieldTypes = map[string]string{
		"principal.id": "string", "principal.role": "string", "server.id": "string",
		"tool.name": "string", "tool.known": "bool", "tool.title": "string", "tool.description": "string",
		"tool.declared_side_effects": "list", "tool.side_effect": "string", "tool.data_classes": "list",
		"tool.externality": "string", "tool.required_scopes": "list", "tool.metadata_confidence": "double",
		"tool.metadata_conflicts": "list",
		"receipt.status":          "string", "receipt.conflicts": "int",
		"tool.findings":        "list",
		"argument_scan.status": "string", "argument_scan.findings": "list", "argument_scan.classes": "list",
		"response_scan.status": "string", "response_scan.findings": "list", "response_scan.classes": "list",
		"drift.status": "string", "drift.severity": "string", "drift.action": "string", "drift.changes": "list", "drift.all_changes": "list",
	}
	fieldValues = map[string][]string{
		"tool.declared_side_effects": toolmeta.Effects,
		"tool.side_effect":           toolmeta.SideEffects,
		"tool.externality":           toolmeta.Externalities,
		"tool.metadata_conflicts":    toolmeta.Fields,
		"receipt.status":             ReceiptStatuses,
		"argument_scan.status":       ScanStatuses,
		"response_scan.status":       ScanStatuses,
		"argument_scan.classes":      FindingClasses,
		"response_scan.classes":      FindingClasses,
		"drift.status":               DriftStatuses,
		"drift.severity":             DriftSeverities,
		"drift.action":               {string(ActionAllow), string(ActionMonitor), string(ActionDeny), string(ActionQuarantine)},
	}
)

func init() {
	for _, f := range toolmeta.Fields {
		fieldTypes["tool.sources."+f] = "string"
		fieldValues["tool.sources."+f] = toolmeta.Sources
	}
}

// checkComparisons refuses a comparison that can never hold, or always
// holds, because a fixed field is compared with a literal it can never
// equal: a literal of another type (tool.known == "true": CEL's equality
// across types is simply false), or a value outside the field's vocabulary
// (tool.side_effect == "read-only"). Such a typo in a deny rule would fail
// open without a word. Checked: ==, != and in with a list literal, the
// field on either side, selected as x.f or x["f"]. The error is
// "line:column: ..." within the condition.
func checkComparisons(a *celast.AST) error {
	shadowed := shadowedNames(a)
	field := func(e celast.Expr) (string, bool) {
		path, ok := fieldPath(e, shadowed)
		if !ok || !strings.Contains(path, ".") {
			return "", false
		}
		_, typed := fieldTypes[path]
		return path, typed
	}
	check := func(at celast.Expr, path string, lit celast.Expr, op string) error {
		if lit.Kind() != celast.LiteralKind {
			return nil
		}
		loc := a.SourceInfo().GetStartLocation(at.ID())
		v := lit.AsLiteral().Value()
		want := fieldTypes[path]
		if want == "list" {
			if op != "element" {
				return fmt.Errorf("%d:%d: %s is a list: %s %s can never hold (test an element with \"in\")", loc.Line(), loc.Column()+1, path, op, literalText(v))
			}
			if _, isString := v.(string); !isString {
				return fmt.Errorf("%d:%d: %s is a list of strings: %s in it can never hold", loc.Line(), loc.Column()+1, path, literalText(v))
			}
			if vocab, ok := fieldValues[path]; ok && !slices.Contains(vocab, v.(string)) {
				return fmt.Errorf("%d:%d: %s holds only %s: %q in it can never hold", loc.Line(), loc.Column()+1, path, strings.Join(vocab, ", "), v)
			}
			if (path == "drift.changes" || path == "drift.all_changes") && !drift.ValidKind(v.(string)) {
				return fmt.Errorf("%d:%d: %s holds change kinds (docs/drift.md, \"Severity rules\"): %q is none, so in it can never hold", loc.Line(), loc.Column()+1, path, v)
			}
			return nil
		}
		got := ""
		switch v.(type) {
		case string:
			got = "string"
		case bool:
			got = "bool"
		case int64:
			got = "int"
			if want == "double" {
				got = "double"
			}
		case uint64, float64:
			// CEL compares numbers across types: 1.0 and 1u can
			// equal an int, 1 a double.
			switch want {
			case "int", "double":
				got = want
			default:
				got = "number"
			}
		default:
			got = fmt.Sprintf("%T", v)
		}
		if got != want {
			article := "a"
			if want == "int" {
				article = "an"
			}
			return fmt.Errorf("%d:%d: %s is %s %s: %s %s can never hold (compare it with %s %s)", loc.Line(), loc.Column()+1, path, article, want, op, literalText(v), article, want)
		}
		if vocab, ok := fieldValues[path]; ok && !strings.ContainsAny(op, "<>") && !slices.Contains(vocab, v.(string)) {
			return fmt.Errorf("%d:%d: %s is one of %s: %s %q can never hold", loc.Line(), loc.Column()+1, path, strings.Join(vocab, ", "), op, v)
		}
		return nil
	}
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.CallKind)) {
		call := e.AsCall()
		args := call.Args()
		if len(args) != 2 {
			continue
		}
		switch fn := call.FunctionName(); fn {
		case operators.Equals, operators.NotEquals:
			op := "=="
			if fn == operators.NotEquals {
				op = "!="
			}
			for _, pair := range [2][2]celast.Expr{{args[0], args[1]}, {args[1], args[0]}} {
				if path, ok := field(pair[0]); ok {
					if err := check(e, path, pair[1], op); err != nil {
						return err
					}
				}
			}
		case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			for _, pair := range [2][2]celast.Expr{{args[0], args[1]}, {args[1], args[0]}} {
				if path, ok := field(pair[0]); ok {
					if err := check(e, path, pair[1], ordering[fn]); err != nil {
						return err
					}
				}
			}
		case operators.In:
			if path, ok := field(args[1]); ok && fieldTypes[path] == "list" {
				// "write" in tool.declared_side_effects
				if err := check(e, path, args[0], "element"); err != nil {
					return err
				}
				continue
			}
			path, ok := field(args[0])
			if !ok || args[1].Kind() != celast.ListKind {
				continue
			}
			for _, el := range args[1].AsList().Elements() {
				if err := check(e, path, el, "in"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ordering names the ordering operators checkComparisons checks.
var ordering = map[string]string{
	operators.Less: "<", operators.LessEquals: "<=", operators.Greater: ">", operators.GreaterEquals: ">=",
}

// literalText is a literal as a message shows it: strings quoted.
func literalText(v any) string {
	if str, ok := v.(string); ok {
		return strconv.Quote(str)
	}
	return fmt.Sprint(v)
}

// variable returns the name of the identifier e is, also through dyn(e).
func variable(e celast.Expr) (string, bool) {
	for e.Kind() == celast.CallKind && e.AsCall().FunctionName() == "dyn" && len(e.AsCall().Args()) == 1 {
		e = e.AsCall().Args()[0]
	}
	if e.Kind() != celast.IdentKind {
		return "", false
	}
	return e.AsIdent(), true
}

// constString returns the value of a string literal.
func constString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	v, ok := e.AsLiteral().Value().(string)
	return v, ok
}

// compileCondition compiles and type-checks src. The error text is the
// "<cel error>" part of "policy FILE:LINE: rule ID: condition: <cel error>":
// one line, each CEL issue as "line:column: message" (positions within the
// condition text, 1-based), separated by "; ".
//
// loops reports whether the program contains comprehensions, which are
// evaluated under the evalBudget deadline; ph when the rule is decided:
// phaseReceipt when it reads `receipt`, phaseResponse when it reads
// `response_scan` (both evaluated on the response), else phaseRequest.
func compileCondition(src string) (prg cel.Program, loops bool, ph phase, err error) {
	env, err := celEnv()
	if err != nil {
		return nil, false, 0, fmt.Errorf("CEL environment: %v", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			msgs = append(msgs, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return nil, false, 0, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		hint := ""
		if t.IsExactType(types.DynType) {
			hint = " (compare explicitly, e.g. arguments.flag == true)"
		}
		return nil, false, 0, fmt.Errorf("type is %s, want bool%s", t, hint)
	}
	if err := checkFields(ast.NativeRep()); err != nil {
		return nil, false, 0, err
	}
	if err := checkComparisons(ast.NativeRep()); err != nil {
		return nil, false, 0, err
	}
	native := ast.NativeRep()
	receipt, response := reads(native, varReceipt), reads(native, varRespScan)
	switch {
	case receipt && response:
		return nil, false, 0, errors.New("a condition reads either receipt or response_scan, not both: they are decided at different points of the response (put them in two rules)")
	case receipt:
		ph = phaseReceipt
	case response:
		ph = phaseResponse
	}
	if ph != phaseRequest {
		v := varReceipt
		if response {
			v = varRespScan
		}
		if reads(native, varArguments) || reads(native, varMeta) || reads(native, varArgScan) {
			// Decided when the response arrives; the request's arguments
			// and _meta are not kept until then.
			return nil, false, 0, fmt.Errorf("a condition that reads %s runs on the response and cannot read arguments, meta or argument_scan", v)
		}
		if err := checkResponseDisjunctions(native, v); err != nil {
			return nil, false, 0, err
		}
	}
	loops = len(celast.MatchDescendants(celast.NavigateAST(native), celast.KindMatcher(celast.ComprehensionKind))) > 0
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if loops {
		opts = append(opts, cel.InterruptCheckFrequency(interruptCheckFrequency))
	}
	prg, err = env.Program(ast, opts...)
	if err != nil {
		return nil, false, 0, err
	}
	return prg, loops, ph, nil
}

// checkResponseDisjunctions refuses, in a rule decided on the response
// (one that reads v: receipt or response_scan), an || one side of which
// does not read v: that side could match on its own, and such a rule is
// decided after the server has run the call ("tool.name == \"delete\" ||
// receipt.status == \"tampered\"" would let the delete run). Such a
// condition belongs in two rules.
func checkResponseDisjunctions(a *celast.AST, v string) error {
	shadowed := shadowedNames(a)
	readsReceipt := func(e celast.Expr) bool {
		for _, d := range celast.MatchDescendants(celast.NavigateExpr(a, e), celast.KindMatcher(celast.IdentKind)) {
			if d.AsIdent() == v && !shadowed[scopedName{d.ID(), v}] {
				return true
			}
		}
		return false
	}
	// The || that exists() and similar macros write into their loop step
	// (accumulator || element) is not the user's.
	accus := map[string]bool{}
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.ComprehensionKind)) {
		accus[e.AsComprehension().AccuVar()] = true
	}
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && accus[e.AsIdent()] }
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.CallKind)) {
		call := e.AsCall()
		if call.FunctionName() != operators.LogicalOr || len(call.Args()) != 2 || isAccu(call.Args()[0]) || isAccu(call.Args()[1]) {
			continue
		}
		l, r := readsReceipt(call.Args()[0]), readsReceipt(call.Args()[1])
		if l != r {
			loc := a.SourceInfo().GetStartLocation(e.ID())
			return fmt.Errorf("%d:%d: one side of this || does not read %s, yet a rule that reads %s is decided on the response, after the server has run the call: put that side in a rule of its own, decided before the call", loc.Line(), loc.Column()+1, v, v)
		}
	}
	return nil
}

// reads reports whether the condition refers to the variable name anywhere
// outside a comprehension that binds that name itself.
func reads(a *celast.AST, name string) bool {
	shadowed := shadowedNames(a)
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.IdentKind)) {
		if e.AsIdent() == name && !shadowed[scopedName{e.ID(), name}] {
			return true
		}
	}
	return false
}

// eval runs the rule's condition. ok is false when evaluation failed (an
// error value, the time budget, or, defensively, a non-bool result).
func (r *rule) eval(a *activation) (match, ok bool) {
	var out ref.Val
	var err error
	if r.loops {
		out, _, err = r.prg.ContextEval(a.context(), a)
	} else {
		out, _, err = r.prg.Eval(a)
	}
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

// ToolView is the value conditions see as the variable `tool` for one
// [Tool], built once by [NewToolView] for a caller that evaluates many
// calls of one tool definition (the gateway keeps one per catalogued
// definition): Evaluate then builds no map of the tool per call. It is
// immutable and safe for concurrent use.
type ToolView struct{ m map[string]any }

// NewToolView returns the view of t, with the presentation defaults of
// [Tool] applied (an empty side_effect is "destructive", ...). t's maps and
// slices are shared, not copied: the caller must not modify them.
func NewToolView(t Tool) *ToolView { return &ToolView{m: toolMap(&t)} }

// toolMap is the CEL map of variable `tool` for t.
func toolMap(t *Tool) map[string]any {
	ann := t.Annotations
	if ann == nil {
		ann = emptyMap
	}
	se := t.SideEffect
	if se == "" {
		se = mcp.SideEffectDestructive
	}
	ext := t.Externality
	if ext == "" {
		ext = "external"
	}
	sources := t.Sources
	if len(sources) < len(toolmeta.Fields) {
		sources = make(map[string]string, len(toolmeta.Fields))
		for _, f := range toolmeta.Fields {
			sources[f] = toolmeta.SourceUnknown
			if s, ok := t.Sources[f]; ok {
				sources[f] = s
			}
		}
	}
	return map[string]any{
		"name":                  t.Name,
		"known":                 t.Known,
		"title":                 t.Title,
		"description":           t.Description,
		"annotations":           ann,
		"declared_side_effects": listOrEmpty(t.DeclaredSideEffects),
		"side_effect":           se,
		"data_classes":          listOrEmpty(t.DataClasses),
		"externality":           ext,
		"required_scopes":       listOrEmpty(t.RequiredScopes),
		"metadata_confidence":   t.MetadataConfidence,
		"sources":               sources,
		"metadata_conflicts":    listOrEmpty(t.MetadataConflicts),
		"findings":              findingMaps(t.Findings),
	}
}

// listOrEmpty is l, or an empty list for nil. CEL never writes to it.
func listOrEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// activation resolves the CEL variables of one Evaluate call. The small maps
// for principal, server and tool are built on first use and reused by every
// condition of the call.
type activation struct {
	in                      *Input
	principal, server, tool map[string]any

	// ctx carries the evalBudget deadline shared by all the comprehension
	// conditions of the call; created on first use.
	ctx    context.Context
	cancel context.CancelFunc
}

func newActivation(in *Input) *activation { return &activation{in: in} }

func (a *activation) context() context.Context {
	if a.ctx == nil {
		a.ctx, a.cancel = context.WithTimeout(context.Background(), evalBudget)
	}
	return a.ctx
}

// close releases the deadline's timer, if any.
func (a *activation) close() {
	if a.cancel != nil {
		a.cancel()
	}
}

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
			if v := a.in.ToolView; v != nil {
				a.tool = v.m
			} else {
				a.tool = toolMap(&a.in.Tool)
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
	case varReceipt:
		if a.in.Receipt == nil {
			return emptyMap, true
		}
		return map[string]any{"status": a.in.Receipt.Status, "conflicts": int64(a.in.Receipt.Conflicts)}, true
	case varArgScan:
		return scanMap(a.in.ArgumentScan), true
	case varRespScan:
		return scanMap(a.in.ResponseScan), true
	case varDrift:
		return driftMap(a.in.Drift), true
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
