// Package pipeline is the decision pipeline of one tools/call: the stages
// a call passes through, compiled once at start-up into a Chain, the
// verdicts they give and how verdicts merge, and the Sequencer that keeps
// frames in order while some wait for their evidence.
//
// A Chain holds three kinds of stage, found by type assertion on each
// Stage given to Compile:
//
//   - Deciders run before the call is forwarded, in the order given. Each
//     may Decide a Verdict; verdicts merge by severity (Allow < Monitor <
//     Redact < Quarantine < Deny): the most severe wins, and among equals
//     the first. After a Deny no later Decider runs (nothing can change
//     the outcome). A Decider wrapped in Shadowed runs in shadow: what it
//     decides is recorded as a would-have verdict, never enforced.
//   - Filters run on the response, in reverse order (the last Decider's
//     concern is the first to see the answer).
//   - A stage given to Compile wrapped in InShadow keeps its kinds but
//     runs in shadow as a Decider and as a Filter alike: its verdicts are
//     recorded (Call.Shadows, Response.Shadows), its rewrites dropped, its
//     failures recorded as would-have denials; as a Recorder it records
//     as usual. This is the gateway's global shadow mode.
//   - Recorders run exactly once per call and phase (PhaseDecision before
//     the call's effect, PhaseOutcome after its response), denied calls
//     included, and return a Future that resolves only once the record is
//     durable.
//
// The shape is that of tool_pre_invoke/tool_post_invoke hooks, not free
// middleware: the Chain, not the stages, guarantees that recorders always
// run and that a deny always beats an allow.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// Action is what the gateway does with a call, ordered by severity
// (../shared/spec/evidence.md §5): a higher value is more severe.
type Action uint8

// The actions, least severe first.
const (
	// Allow forwards the call unchanged.
	Allow Action = iota
	// Monitor forwards the call and flags the decision for review.
	Monitor
	// Redact forwards the call with sensitive values rewritten.
	Redact
	// Quarantine holds the tool: no call reaches it until a person
	// releases it.
	Quarantine
	// Deny answers the call with a denial; it never reaches the server.
	Deny
)

var actionNames = [...]string{Allow: "allow", Monitor: "monitor", Redact: "redact", Quarantine: "quarantine", Deny: "deny"}

// String returns the action's name in the policy vocabulary ("allow",
// "monitor", "redact", "quarantine", "deny").
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// ErrUnknownAction is returned (wrapped) by ParseAction for a name outside
// the vocabulary.
var ErrUnknownAction = errors.New("unknown action")

// ParseAction returns the Action named s, exactly as String spells it. It
// returns an error wrapping ErrUnknownAction for any other string.
func ParseAction(s string) (Action, error) {
	for i, n := range actionNames {
		if n == s {
			return Action(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (one of %s)", ErrUnknownAction, s, strings.Join(actionNames[:], ", "))
}

// Forwards reports whether a call with this action reaches the server:
// Allow, Monitor and Redact do; Quarantine and Deny do not.
func (a Action) Forwards() bool { return a <= Redact }

// Verdict is one stage's judgement of a call.
type Verdict struct {
	// Action is what the stage asks for.
	Action Action
	// Stage names the stage that gave the verdict (set by the Chain when
	// the stage leaves it empty).
	Stage string
	// Rule names the rule within the stage, "" when the stage has none.
	Rule string
	// ReasonCode is a stable machine-readable reason; Reason a
	// human-readable one. Both name fields and rules, never values.
	ReasonCode, Reason string
	// Code is the JSON-RPC error code the client gets when the gateway
	// answers the call itself (Quarantine, Deny); 0 lets the front end
	// choose its default.
	Code int
}

// Phase is when a Recorder runs.
type Phase uint8

const (
	// PhaseDecision is before the call's effect: it is forwarded or
	// answered only once the decision's records are durable.
	PhaseDecision Phase = iota
	// PhaseOutcome is after the server's response (or the gateway's
	// answer), before the response reaches the client.
	PhaseOutcome
)

// String returns "decision" or "outcome".
func (p Phase) String() string {
	if p == PhaseOutcome {
		return "outcome"
	}
	return "decision"
}

// SessionInfo is who is calling and which server the call goes to: data
// of the session, so that many sessions can share one process.
type SessionInfo struct {
	// PrincipalID and Role identify the caller (--principal, --role).
	PrincipalID, Role string
	// ServerID names the server (--server-id).
	ServerID string
}

// Call is one tools/call request (or notification) on its way through the
// Chain. Byte slices alias the frame it was read from and are valid only
// while the Chain runs, unless the front end retained the frame.
type Call struct {
	// Session is the calling session.
	Session SessionInfo
	// ID is the JSON-RPC id; absent for a tools/call notification.
	ID jsonrpc.ID
	// Name, Arguments and Meta are params.name, params.arguments and
	// params._meta (the raw JSON; nil when absent).
	Name            string
	Arguments, Meta []byte
	// Tool is the tool's definition as the server listed it; Known is
	// false when the gateway has not seen it listed (Tool is then zero),
	// or when the catalog is stale.
	Tool  mcp.Tool
	Known bool
	// Received is when the gateway read the request.
	Received time.Time
	// Response is the server's response to the forwarded call while the
	// Recorders run for PhaseOutcome, nil otherwise; its slices alias the
	// response frame.
	Response *Response
	// State carries what the session's own stages share about the call
	// (for example the catalog generation a cached decision belongs to).
	State any

	verdict   Verdict
	decided   bool
	shadowing string // the stage running in shadow, "" when none
	shadows   []Verdict
	forward   []byte
}

// Decide merges v into the call's verdict: v replaces the current verdict
// only when it is more severe (equals keep the first). While a Shadowed
// stage runs, v is recorded as a shadow verdict instead and never
// enforced.
func (c *Call) Decide(v Verdict) {
	if c.shadowing != "" {
		if v.Stage == "" {
			v.Stage = c.shadowing
		}
		c.shadows = append(c.shadows, v)
		return
	}
	if !c.decided || v.Action > c.verdict.Action {
		c.verdict, c.decided = v, true
	}
}

// Shadow records v as a would-have verdict: evaluated and recorded, not
// enforced (evidence.md §5, shadow mode).
func (c *Call) Shadow(v Verdict) { c.shadows = append(c.shadows, v) }

// Verdict returns the merged verdict, and whether any stage decided; a
// call no stage decided is allowed.
func (c *Call) Verdict() (Verdict, bool) { return c.verdict, c.decided }

// Shadows returns the shadow verdicts in the order they were given.
func (c *Call) Shadows() []Verdict { return c.shadows }

// Shadowing reports whether the stage now deciding c runs in shadow: its
// verdicts are recorded, not enforced, and its rewrites dropped. A stage
// may skip work whose only point is the effect (preparing a redaction).
func (c *Call) Shadowing() bool { return c.shadowing != "" }

// Rewrite sets the bytes to forward instead of the received frame (a
// redaction): a whole frame, terminator included. While a Shadowed stage
// runs, a rewrite is dropped (a shadow stage changes nothing).
func (c *Call) Rewrite(frame []byte) {
	if c.shadowing == "" {
		c.forward = frame
	}
}

// Rewritten returns the bytes set by Rewrite, nil when the call is
// forwarded as received.
func (c *Call) Rewritten() []byte { return c.forward }

// Response is the server's response to a forwarded call, on its way back
// through the Filters.
type Response struct {
	// ID is the response's id; Result and Error its raw members (one of
	// them nil).
	ID            jsonrpc.ID
	Result, Error []byte
	// Raw is the exact frame received, terminator included.
	Raw []byte

	verdict   Verdict
	decided   bool
	shadowing string // the filter running in shadow, "" when none
	shadows   []Verdict
	forward   []byte
}

// Decide merges v into the response's verdict, as Call.Decide does;
// while a filter runs in shadow (InShadow), v is recorded as a shadow
// verdict instead.
func (r *Response) Decide(v Verdict) {
	if r.shadowing != "" {
		if v.Stage == "" {
			v.Stage = r.shadowing
		}
		r.shadows = append(r.shadows, v)
		return
	}
	if !r.decided || v.Action > r.verdict.Action {
		r.verdict, r.decided = v, true
	}
}

// Shadow records v as a would-have verdict on the response (a matching
// shadow response rule): recorded, not enforced.
func (r *Response) Shadow(v Verdict) { r.shadows = append(r.shadows, v) }

// Shadows returns the response's shadow verdicts in the order given.
func (r *Response) Shadows() []Verdict { return r.shadows }

// Shadowing reports whether the filter now running runs in shadow.
func (r *Response) Shadowing() bool { return r.shadowing != "" }

// Verdict returns the response's merged verdict and whether any filter
// decided.
func (r *Response) Verdict() (Verdict, bool) { return r.verdict, r.decided }

// Rewrite sets the bytes to relay to the client instead of Raw; it is
// dropped while a filter runs in shadow.
func (r *Response) Rewrite(frame []byte) {
	if r.shadowing == "" {
		r.forward = frame
	}
}

// Rewritten returns the bytes set by Rewrite, nil when the response is
// relayed as received.
func (r *Response) Rewritten() []byte { return r.forward }

// Stage is one step of the Chain. Name is unique within a Chain and
// appears in verdicts and diagnostics.
type Stage interface {
	Name() string
}

// Decider is a Stage that judges a call before it is forwarded. An error
// means the stage could not judge: the Chain then denies the call (fail
// closed) with rule "stage_failed", naming the stage; the error's text is
// for diagnostics and must not hold argument values.
type Decider interface {
	Stage
	Decide(ctx context.Context, c *Call) error
}

// Filter is a Stage that judges (and may rewrite) the response to a
// forwarded call before it reaches the client. An error withholds the
// response (fail closed).
type Filter interface {
	Stage
	Filter(ctx context.Context, c *Call, r *Response) error
}

// Future resolves a Recorder's record: it blocks until the record is
// durable (nil) or cannot be (an error: the call is then not recorded,
// and an allowed call is refused unless configured to fail open). Each
// Future is called exactly once.
type Future func() error

// Recorder is a Stage that records a call, exactly once per call and
// phase. Record must not block on durability: it queues the record and
// returns the Future that waits for it.
type Recorder interface {
	Stage
	Record(ctx context.Context, c *Call, p Phase) Future
}

// RuleStageFailed is the rule of the Deny a Chain gives a call whose
// Decider returned an error.
const RuleStageFailed = "stage_failed"

// Chain is a compiled, immutable sequence of stages. It is safe for
// concurrent use by many sessions when its stages are.
type Chain struct {
	deciders  []Decider
	filters   []Filter
	recorders []Recorder
	names     []string
}

// Compile checks stages and builds a Chain: every stage has a non-empty
// name, unique in the chain, and is a Decider, a Filter or a Recorder (or
// more than one). It returns an error naming the first stage that is not.
// A stage wrapped in InShadow is compiled as its Decider in shadow
// (Shadowed), its Filter in shadow, and its Recorder as is.
func Compile(stages ...Stage) (*Chain, error) {
	ch := &Chain{}
	seen := map[string]bool{}
	for i, s := range stages {
		inShadow := false
		if w, ok := s.(shadowStage); ok {
			s, inShadow = w.s, true
		}
		if s == nil {
			return nil, fmt.Errorf("pipeline: stage %d is nil", i)
		}
		n := s.Name()
		if n == "" {
			return nil, fmt.Errorf("pipeline: stage %d (%T) has no name", i, s)
		}
		if seen[n] {
			return nil, fmt.Errorf("pipeline: two stages are named %q", n)
		}
		seen[n] = true
		kinds := 0
		if d, ok := s.(Decider); ok {
			if inShadow {
				d = Shadowed(d)
			}
			ch.deciders = append(ch.deciders, d)
			kinds++
		}
		if f, ok := s.(Filter); ok {
			if inShadow {
				f = shadowedFilter{f}
			}
			ch.filters = append(ch.filters, f)
			kinds++
		}
		if r, ok := s.(Recorder); ok {
			ch.recorders = append(ch.recorders, r)
			kinds++
		}
		if kinds == 0 {
			return nil, fmt.Errorf("pipeline: stage %q (%T) is neither a Decider, a Filter nor a Recorder", n, s)
		}
		ch.names = append(ch.names, n)
	}
	return ch, nil
}

// HasFilters reports whether the chain has a Filter: without one, a
// response need not be handed to Filter at all.
func (ch *Chain) HasFilters() bool { return len(ch.filters) > 0 }

// Stages returns the names of the chain's stages in the order given to
// Compile.
func (ch *Chain) Stages() []string { return append([]string(nil), ch.names...) }

// Decide runs the Deciders on c in order, merging their verdicts, and
// stops after the first Deny. A Decider's error denies the call with
// RuleStageFailed. It returns the merged verdict; a call no stage decided
// gets Allow.
func (ch *Chain) Decide(ctx context.Context, c *Call) Verdict {
	for _, d := range ch.deciders {
		if err := d.Decide(ctx, c); err != nil {
			c.Decide(Verdict{Action: Deny, Stage: d.Name(), Rule: RuleStageFailed, ReasonCode: RuleStageFailed,
				Reason: "stage " + d.Name() + " could not decide; refused (fail closed)"})
		}
		if v, ok := c.Verdict(); ok {
			if v.Stage == "" {
				v.Stage = d.Name()
				c.verdict = v
			}
			if v.Action == Deny {
				break
			}
		}
	}
	v, _ := c.Verdict()
	return v
}

// Filter runs the Filters on r in reverse order. The first error stops
// the run and is returned, wrapped with the stage's name: the response is
// then withheld.
func (ch *Chain) Filter(ctx context.Context, c *Call, r *Response) error {
	for i := len(ch.filters) - 1; i >= 0; i-- {
		f := ch.filters[i]
		if err := f.Filter(ctx, c, r); err != nil {
			return fmt.Errorf("pipeline: filter %s: %w", f.Name(), err)
		}
		if v, ok := r.Verdict(); ok && v.Stage == "" {
			v.Stage = f.Name()
			r.verdict = v
		}
	}
	return nil
}

// Record runs every Recorder for phase p of c, in order, and returns one
// Future that resolves when all of theirs have: nil when every record is
// durable, else the first error in stage order (wrapped with the stage's
// name). Every Recorder's Future is called, even after one failed.
func (ch *Chain) Record(ctx context.Context, c *Call, p Phase) Future {
	if len(ch.recorders) == 0 {
		return func() error { return nil }
	}
	futures := make([]Future, len(ch.recorders))
	for i, r := range ch.recorders {
		futures[i] = r.Record(ctx, c, p)
	}
	return func() error {
		var first error
		for i, f := range futures {
			if f == nil {
				continue
			}
			if err := f(); err != nil && first == nil {
				first = fmt.Errorf("pipeline: recorder %s (%s): %w", ch.recorders[i].Name(), p, err)
			}
		}
		return first
	}
}

// Shadowed returns d running in shadow: its verdicts are recorded on the
// call as shadow verdicts (Call.Shadows) and never enforced, its rewrites
// dropped, and an error it returns recorded as the would-have Deny with
// RuleStageFailed that the Chain would have given (a shadow stage cannot
// deny). The returned stage has d's name.
func Shadowed(d Decider) Decider { return shadowed{d} }

type shadowed struct{ d Decider }

func (s shadowed) Name() string { return s.d.Name() }

func (s shadowed) Decide(ctx context.Context, c *Call) error {
	prev := c.shadowing
	c.shadowing = s.d.Name()
	defer func() { c.shadowing = prev }()
	if err := s.d.Decide(ctx, c); err != nil {
		c.shadows = append(c.shadows, Verdict{Action: Deny, Stage: s.d.Name(), Rule: RuleStageFailed, ReasonCode: RuleStageFailed,
			Reason: "stage " + s.d.Name() + " could not decide; would have been refused (fail closed)"})
	}
	return nil
}

// InShadow marks s to be compiled in shadow (Compile): as a Decider
// Shadowed, as a Filter likewise (its verdicts recorded on the response as
// Response.Shadows, its rewrites dropped, a failure recorded as the
// would-have Deny with RuleStageFailed instead of withholding the
// response), as a Recorder unchanged. It is how a gateway runs every
// stage in shadow, including stages it does not know.
func InShadow(s Stage) Stage { return shadowStage{s} }

// shadowStage is a Stage marked by InShadow; Compile unwraps it.
type shadowStage struct{ s Stage }

func (w shadowStage) Name() string {
	if w.s == nil {
		return ""
	}
	return w.s.Name()
}

// shadowedFilter is a Filter running in shadow (InShadow).
type shadowedFilter struct{ f Filter }

func (s shadowedFilter) Name() string { return s.f.Name() }

func (s shadowedFilter) Filter(ctx context.Context, c *Call, r *Response) error {
	prev := r.shadowing
	r.shadowing = s.f.Name()
	defer func() { r.shadowing = prev }()
	if err := s.f.Filter(ctx, c, r); err != nil {
		r.shadows = append(r.shadows, Verdict{Action: Deny, Stage: s.f.Name(), Rule: RuleStageFailed, ReasonCode: RuleStageFailed,
			Reason: "filter " + s.f.Name() + " could not judge the response; it would have been withheld (fail closed)"})
	}
	return nil
}
