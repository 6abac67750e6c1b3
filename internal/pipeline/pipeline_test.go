package pipeline

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestActionOrderAndNames(t *testing.T) {
	order := []Action{Allow, Monitor, Redact, Quarantine, Deny}
	for i, a := range order {
		got, err := ParseAction(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAction(%q) = %v, %v", a.String(), got, err)
		}
		if i > 0 && !(order[i-1] < a) {
			t.Errorf("%v is not more severe than %v", a, order[i-1])
		}
	}
	for _, a := range []Action{Allow, Monitor, Redact} {
		if !a.Forwards() {
			t.Errorf("%v does not forward", a)
		}
	}
	for _, a := range []Action{Quarantine, Deny} {
		if a.Forwards() {
			t.Errorf("%v forwards", a)
		}
	}
	for _, s := range []string{"", "Allow", "block", "deny "} {
		if _, err := ParseAction(s); !errors.Is(err, ErrUnknownAction) {
			t.Errorf("ParseAction(%q): %v, want ErrUnknownAction", s, err)
		}
	}
}

// decider is a test Decider: it decides v (unless zero action and !set),
// records that it ran, and returns err.
type decider struct {
	name string
	v    *Verdict
	err  error
	ran  *[]string
	rw   []byte
}

func (d decider) Name() string { return d.name }
func (d decider) Decide(_ context.Context, c *Call) error {
	*d.ran = append(*d.ran, d.name)
	if d.v != nil {
		c.Decide(*d.v)
	}
	if d.rw != nil {
		c.Rewrite(d.rw)
	}
	return d.err
}

func TestChainDecideMergesBySeverity(t *testing.T) {
	v := func(a Action, rule string) *Verdict { return &Verdict{Action: a, Rule: rule} }
	for _, tc := range []struct {
		name      string
		verdicts  []*Verdict
		errs      []error
		wantRule  string
		wantStage string
		wantAct   Action
		wantRan   int
	}{
		{"nobody decides: allow", []*Verdict{nil, nil}, nil, "", "", Allow, 2},
		{"monitor beats allow", []*Verdict{v(Allow, "a"), v(Monitor, "m")}, nil, "m", "s1", Monitor, 2},
		{"allow does not undo monitor", []*Verdict{v(Monitor, "m"), v(Allow, "a")}, nil, "m", "s0", Monitor, 2},
		{"equal severity keeps the first", []*Verdict{v(Monitor, "m1"), v(Monitor, "m2")}, nil, "m1", "s0", Monitor, 2},
		{"deny stops the chain", []*Verdict{v(Deny, "d"), v(Quarantine, "q"), v(Allow, "a")}, nil, "d", "s0", Deny, 1},
		{"quarantine beats redact", []*Verdict{v(Redact, "r"), v(Quarantine, "q")}, nil, "q", "s1", Quarantine, 2},
		{"a failing stage denies", []*Verdict{v(Allow, "a"), nil, v(Allow, "b")}, []error{nil, errors.New("boom"), nil}, RuleStageFailed, "s1", Deny, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			var stages []Stage
			for i, vv := range tc.verdicts {
				d := decider{name: "s" + string(rune('0'+i)), v: vv, ran: &ran}
				if tc.errs != nil {
					d.err = tc.errs[i]
				}
				stages = append(stages, d)
			}
			ch, err := Compile(stages...)
			if err != nil {
				t.Fatal(err)
			}
			c := &Call{}
			got := ch.Decide(context.Background(), c)
			if got.Action != tc.wantAct || got.Rule != tc.wantRule || got.Stage != tc.wantStage {
				t.Errorf("verdict %+v, want %v rule %q stage %q", got, tc.wantAct, tc.wantRule, tc.wantStage)
			}
			if len(ran) != tc.wantRan {
				t.Errorf("ran %v, want %d stages", ran, tc.wantRan)
			}
		})
	}
}

func TestShadowedNeverEnforces(t *testing.T) {
	var ran []string
	deny := &Verdict{Action: Deny, Rule: "would_deny"}
	ch, err := Compile(
		decider{name: "policy", v: &Verdict{Action: Allow, Rule: "ok"}, ran: &ran},
		Shadowed(decider{name: "scan", v: deny, rw: []byte("redacted\n"), err: errors.New("ignored"), ran: &ran}),
		decider{name: "last", ran: &ran},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{}
	got := ch.Decide(context.Background(), c)
	if got.Action != Allow || got.Rule != "ok" {
		t.Fatalf("enforced %+v, want the policy's allow", got)
	}
	if want := []Verdict{{Action: Deny, Rule: "would_deny", Stage: "scan"},
		{Action: Deny, Stage: "scan", Rule: RuleStageFailed, ReasonCode: RuleStageFailed, Reason: "stage scan could not decide; would have been refused (fail closed)"}}; !reflect.DeepEqual(c.Shadows(), want) {
		t.Fatalf("shadows %+v, want %+v", c.Shadows(), want)
	}
	if c.Rewritten() != nil {
		t.Fatalf("a shadow stage rewrote the call: %q", c.Rewritten())
	}
	if !reflect.DeepEqual(ran, []string{"policy", "scan", "last"}) {
		t.Fatalf("ran %v: a shadow deny must not stop the chain", ran)
	}
}

type onlyName string

func (n onlyName) Name() string { return string(n) }

func TestCompileRefuses(t *testing.T) {
	var ran []string
	for _, tc := range []struct {
		name   string
		stages []Stage
		want   string
	}{
		{"nil", []Stage{nil}, "stage 0 is nil"},
		{"no name", []Stage{decider{ran: &ran}}, "has no name"},
		{"duplicate", []Stage{decider{name: "a", ran: &ran}, decider{name: "a", ran: &ran}}, `two stages are named "a"`},
		{"no kind", []Stage{onlyName("x")}, `"x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.stages...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	ch, err := Compile(decider{name: "a", ran: &ran}, onlyFilter{name: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Stages(); !reflect.DeepEqual(got, []string{"a", "f"}) {
		t.Fatalf("Stages %v", got)
	}
}

type onlyFilter struct {
	name string
	ran  *[]string
	v    *Verdict
	err  error
}

func (f onlyFilter) Name() string { return f.name }
func (f onlyFilter) Filter(_ context.Context, _ *Call, r *Response) error {
	if f.ran != nil {
		*f.ran = append(*f.ran, f.name)
	}
	if f.v != nil {
		r.Decide(*f.v)
	}
	return f.err
}

func TestFilterRunsInReverse(t *testing.T) {
	var ran []string
	ch, _ := Compile(onlyFilter{name: "first", ran: &ran}, onlyFilter{name: "second", ran: &ran, v: &Verdict{Action: Redact, Rule: "r"}})
	r := &Response{}
	if err := ch.Filter(context.Background(), &Call{}, r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ran, []string{"second", "first"}) {
		t.Fatalf("ran %v, want the last stage first", ran)
	}
	if v, _ := r.Verdict(); v.Stage != "second" || v.Action != Redact {
		t.Fatalf("verdict %+v", v)
	}
	ran = nil
	ch, _ = Compile(onlyFilter{name: "a", ran: &ran}, onlyFilter{name: "b", ran: &ran, err: errors.New("boom")})
	if err := ch.Filter(context.Background(), &Call{}, &Response{}); err == nil || !strings.Contains(err.Error(), "filter b") {
		t.Fatalf("Filter: %v, want an error naming filter b", err)
	}
	if len(ran) != 1 {
		t.Fatalf("ran %v after a failure, want it to stop", ran)
	}
}

type recorder struct {
	name  string
	err   error
	calls *[]string
}

func (r recorder) Name() string { return r.name }
func (r recorder) Record(_ context.Context, _ *Call, p Phase) Future {
	*r.calls = append(*r.calls, r.name+":record:"+p.String())
	return func() error {
		*r.calls = append(*r.calls, r.name+":wait")
		return r.err
	}
}

func TestRecordResolvesEveryFuture(t *testing.T) {
	var calls []string
	ch, _ := Compile(recorder{name: "log", calls: &calls}, recorder{name: "ledger", err: errors.New("disk full"), calls: &calls}, recorder{name: "third", err: errors.New("later"), calls: &calls})
	fut := ch.Record(context.Background(), &Call{}, PhaseOutcome)
	want := []string{"log:record:outcome", "ledger:record:outcome", "third:record:outcome"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("before waiting: %v, want %v (records queued, nothing waited)", calls, want)
	}
	err := fut()
	if err == nil || !strings.Contains(err.Error(), "recorder ledger (outcome)") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Future: %v, want the first failure, named", err)
	}
	want = append(want, "log:wait", "ledger:wait", "third:wait")
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("after waiting: %v, want every future waited once: %v", calls, want)
	}
	empty, _ := Compile(decider{name: "d", ran: new([]string)})
	if err := empty.Record(context.Background(), &Call{}, PhaseDecision)(); err != nil {
		t.Fatalf("no recorders: %v", err)
	}
}

// TestInShadow: a stage compiled InShadow keeps each of its kinds, runs
// where it stood, and neither enforces nor rewrites anything, on the call
// or on the response; a failure is a would-have deny, not a withheld
// response; a Recorder in it records as usual.
func TestInShadow(t *testing.T) {
	var ran []string
	both := &bothStage{name: "scan", ran: &ran}
	var calls []string
	rec := recorder{name: "log", calls: &calls}
	ch, err := Compile(InShadow(decider{name: "unknown", v: &Verdict{Action: Deny, Rule: "unknown_tool"}, ran: &ran}), InShadow(both), InShadow(rec))
	if err != nil {
		t.Fatal(err)
	}
	if !ch.HasFilters() || !reflect.DeepEqual(ch.Stages(), []string{"unknown", "scan", "log"}) {
		t.Fatalf("stages %v, filters %v", ch.Stages(), ch.HasFilters())
	}
	c := &Call{}
	if got := ch.Decide(context.Background(), c); got.Action != Allow || got.Rule != "" {
		t.Fatalf("enforced %+v, want allow", got)
	}
	if _, decided := c.Verdict(); decided {
		t.Fatal("a shadow stage decided the call")
	}
	wantCall := []Verdict{{Action: Deny, Rule: "unknown_tool", Stage: "unknown"}, {Action: Redact, Rule: "scanning", Stage: "scan"}}
	if !reflect.DeepEqual(c.Shadows(), wantCall) || c.Rewritten() != nil {
		t.Fatalf("shadows %+v rewritten %q, want %+v and nothing rewritten", c.Shadows(), c.Rewritten(), wantCall)
	}
	r := &Response{}
	if err := ch.Filter(context.Background(), c, r); err != nil {
		t.Fatalf("Filter: %v (a shadow filter's failure withholds nothing)", err)
	}
	if _, decided := r.Verdict(); decided || r.Rewritten() != nil {
		t.Fatal("a shadow filter decided or rewrote the response")
	}
	wantResp := []Verdict{{Action: Deny, Rule: "resp_rule", Stage: "scan"},
		{Action: Deny, Stage: "scan", Rule: RuleStageFailed, ReasonCode: RuleStageFailed, Reason: "filter scan could not judge the response; it would have been withheld (fail closed)"}}
	if !reflect.DeepEqual(r.Shadows(), wantResp) {
		t.Fatalf("response shadows %+v, want %+v", r.Shadows(), wantResp)
	}
	if err := ch.Record(context.Background(), c, PhaseDecision)(); err != nil || len(calls) != 2 {
		t.Fatalf("Record: %v, %v", err, calls)
	}
	if !reflect.DeepEqual(ran, []string{"unknown", "scan", "scan/filter"}) {
		t.Fatalf("ran %v", ran)
	}
}

// bothStage is a Decider and a Filter that asks for a redaction on the
// call and a deny on the response, rewriting both, and fails the filter.
type bothStage struct {
	name string
	ran  *[]string
}

func (b *bothStage) Name() string { return b.name }
func (b *bothStage) Decide(_ context.Context, c *Call) error {
	*b.ran = append(*b.ran, b.name)
	if !c.Shadowing() {
		return errors.New("not shadowing")
	}
	c.Decide(Verdict{Action: Redact, Rule: "scanning"})
	c.Rewrite([]byte("redacted\n"))
	return nil
}
func (b *bothStage) Filter(_ context.Context, c *Call, r *Response) error {
	*b.ran = append(*b.ran, b.name+"/filter")
	if !r.Shadowing() {
		return errors.New("not shadowing")
	}
	r.Decide(Verdict{Action: Deny, Rule: "resp_rule"})
	r.Rewrite([]byte("x\n"))
	return errors.New("boom")
}
