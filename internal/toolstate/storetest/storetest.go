// Package storetest is the storage suite every toolstate.Store backend
// runs (in memory, SQLite, PostgreSQL): round trips of every field, the
// first-use race between two stores on one database, observations,
// approvals bound to the definition hash, holds and releases, the version
// counter, ordering, Close, and values with unusual bytes.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// Open opens a new Store on the database of the test t: every call with
// the same t opens another Store on one database (two gateways sharing
// it), each t (each subtest of Run) gets a fresh, empty database. The
// suite closes every Store it opens.
type Open func(t *testing.T) toolstate.Store

// PerTest returns an Open that creates one database per test with newDB
// (called once per t) and opens every Store on it with open.
func PerTest[D any](newDB func(t *testing.T) D, open func(t *testing.T, db D) toolstate.Store) Open {
	var mu sync.Mutex
	dbs := map[*testing.T]D{}
	return func(t *testing.T) toolstate.Store {
		mu.Lock()
		db, ok := dbs[t]
		if !ok {
			db = newDB(t)
			dbs[t] = db
			t.Cleanup(func() {
				mu.Lock()
				delete(dbs, t)
				mu.Unlock()
			})
		}
		mu.Unlock()
		return open(t, db)
	}
}

// Run runs the suite against the backend open opens.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		f    func(t *testing.T, open func() toolstate.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"UnusualBytes", testUnusualBytes},
		{"Empty", testEmpty},
		{"FirstUseKeeps", testFirstUseKeeps},
		{"FirstUseRace", testFirstUseRace},
		{"ObserveReplaces", testObserveReplaces},
		{"Approve", testApprove},
		{"ApproveReleasesAutomaticHold", testApproveReleases},
		{"ApproveRace", testApproveRace},
		{"HoldRelease", testHoldRelease},
		{"AutomaticHoldKeepsPersons", testAutomaticHoldKeepsPersons},
		{"Version", testVersion},
		{"VersionConcurrent", testVersionConcurrent},
		{"ToolsSorted", testToolsSorted},
		{"Invalid", testInvalid},
		{"Close", testClose},
		{"CloseConcurrent", testCloseConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f(t, func() toolstate.Store {
				s := open(t)
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

var ctx = context.Background()

// at is a time as stores keep it (UTC, microseconds), in another zone.
func at(sec int) time.Time {
	return time.Date(2026, 11, 30, 18, 38, sec, 123456000, time.FixedZone("X", 3600))
}

// def returns a canonical-looking definition of tool name, version v.
func def(name string, v int) []byte {
	return fmt.Appendf(nil, `{"description":"version %d","inputSchema":{"type":"object"},"name":%q}`, v, name)
}

func baseline(server, tool string, v int) toolstate.Baseline {
	d := def(tool, v)
	return toolstate.Baseline{ServerID: server, Tool: tool, Hash: toolstate.DefinitionHash(d), Definition: d,
		Origin: toolstate.OriginFirstUse, By: "gw-1", At: at(1)}
}

func observation(server, tool string, v int) toolstate.Observation {
	d := def(tool, v)
	return toolstate.Observation{ServerID: server, Tool: tool, Hash: toolstate.DefinitionHash(d), Definition: d,
		Severity: "none", By: "gw-1", At: at(2)}
}

// normTime returns v with its times in UTC for comparison with what a
// store returns (they must be Equal first).
func normTime(t *testing.T, what string, got, want *time.Time) {
	t.Helper()
	if !got.Equal(*want) {
		t.Errorf("%s: time %v, want %v", what, *got, *want)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s: time %v not in UTC", what, *got)
	}
	*want = *got
}

// same fails t unless got equals want, times compared with Equal.
func same(t *testing.T, what string, got, want toolstate.ToolState) {
	t.Helper()
	if (got.Baseline == nil) != (want.Baseline == nil) || (got.Observed == nil) != (want.Observed == nil) || (got.Quarantine == nil) != (want.Quarantine == nil) {
		t.Fatalf("%s: got\n%+v\nwant\n%+v", what, dump(got), dump(want))
	}
	w := want
	if got.Baseline != nil {
		b := *want.Baseline
		normTime(t, what+" baseline", &got.Baseline.At, &b.At)
		w.Baseline = &b
	}
	if got.Observed != nil {
		o := *want.Observed
		normTime(t, what+" observation", &got.Observed.At, &o.At)
		w.Observed = &o
	}
	if got.Quarantine != nil {
		q := *want.Quarantine
		normTime(t, what+" quarantine", &got.Quarantine.At, &q.At)
		w.Quarantine = &q
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("%s: got\n%s\nwant\n%s", what, dump(got), dump(w))
	}
}

func dump(s toolstate.ToolState) string {
	out := fmt.Sprintf("%q/%q", s.ServerID, s.Tool)
	if s.Baseline != nil {
		out += fmt.Sprintf("\n  baseline %+v def=%q", *s.Baseline, s.Baseline.Definition)
	}
	if s.Observed != nil {
		out += fmt.Sprintf("\n  observed %+v def=%q", *s.Observed, s.Observed.Definition)
	}
	if s.Quarantine != nil {
		out += fmt.Sprintf("\n  quarantine %+v", *s.Quarantine)
	}
	return out
}

func tool(t *testing.T, s toolstate.Store, server, name string) toolstate.ToolState {
	t.Helper()
	st, err := s.Tool(ctx, server, name)
	if err != nil {
		t.Fatalf("Tool(%q, %q): %v", server, name, err)
	}
	return st
}

func version(t *testing.T, s toolstate.Store) int64 {
	t.Helper()
	v, err := s.Version(ctx)
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	return v
}

func mustErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// testRoundTrip: every field of a baseline, an observation and a hold
// comes back as written, from the store that wrote it and from another.
func testRoundTrip(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	bl := baseline("srv", "read_file", 1)
	bl.Reason = "first seen"
	got, won, err := a.FirstUse(ctx, bl)
	if err != nil || !won {
		t.Fatalf("FirstUse: %v, won %v", err, won)
	}
	same(t, "FirstUse result", toolstate.ToolState{Baseline: &got}, toolstate.ToolState{Baseline: &bl})

	ob := observation("srv", "read_file", 2)
	ob.Severity = "critical"
	ob.Changes = []string{"externality_changed_to_external", "effect_added_share", "scope_added_external_share"}
	ob.By = "gw-2"
	q := toolstate.Quarantine{ServerID: "srv", Tool: "read_file", Hash: ob.Hash, Automatic: true,
		Severity: "critical", Changes: []string{"effect_added_share"}, By: "gw-2", Rule: "high_risk_externality_drift", Reason: "critical drift", At: at(3)}
	if err := a.Observe(ctx, []toolstate.Observation{ob}); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if err := a.Hold(ctx, q); err != nil {
		t.Fatalf("Hold: %v", err)
	}
	want := toolstate.ToolState{ServerID: "srv", Tool: "read_file", Baseline: &bl, Observed: &ob, Quarantine: &q}
	for _, s := range []toolstate.Store{a, b} {
		same(t, "Tool", tool(t, s, "srv", "read_file"), want)
		all, err := s.Tools(ctx, "")
		if err != nil || len(all) != 1 {
			t.Fatalf("Tools: %v, %d states", err, len(all))
		}
		same(t, "Tools", all[0], want)
	}
	if st := tool(t, b, "srv", "read_file").Status(); st != toolstate.StatusQuarantined {
		t.Errorf("Status %q, want quarantined", st)
	}

	// A manual hold by name, with no hash, severity or changes.
	m := toolstate.Quarantine{ServerID: "srv", Tool: "read_file", By: "alice", Reason: "", At: at(4)}
	if err := b.Hold(ctx, m); err != nil {
		t.Fatalf("Hold: %v", err)
	}
	want.Quarantine = &m
	same(t, "manual hold", tool(t, a, "srv", "read_file"), want)
}

// testUnusualBytes: names with quotes, backslashes, SQL and unicode, and
// a definition with bytes no text column keeps, are kept exactly.
func testUnusualBytes(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	server := `srv "x" 'y'; DROP TABLE tool_baselines; --`
	names := []string{`工具 "q" \ '`, "tool\u2028\U0001F527", "%_*", "a\tb\nc", "\u00e9t\u00e9", "e\u0301te"}
	defs := [][]byte{
		[]byte("{\"name\":\"\\u0000\",\"x\":\"\xff\xfe\x00\x01\"}"),
		{0},
		[]byte("  spaces kept  \r\n"),
		[]byte(`{"description":"'; DROP TABLE tool_observations; --"}`),
		[]byte("\xe2\x80"),
		[]byte("\u00e9"),
	}
	for i, name := range names {
		d := defs[i]
		bl := toolstate.Baseline{ServerID: server, Tool: name, Hash: toolstate.DefinitionHash(d), Definition: d,
			By: "gw \"1\" ü", Reason: "reason 'quoted' \\ 🔧", At: at(i)}
		if _, won, err := a.FirstUse(ctx, bl); err != nil || !won {
			t.Fatalf("FirstUse(%q): %v, won %v", name, err, won)
		}
		ob := toolstate.Observation{ServerID: server, Tool: name, Hash: bl.Hash, Definition: d,
			Severity: "none", Changes: []string{`kind "quoted"`, "ü"}, By: "gw", At: at(i)}
		if err := a.Observe(ctx, []toolstate.Observation{ob}); err != nil {
			t.Fatalf("Observe(%q): %v", name, err)
		}
		bl.Origin = toolstate.OriginFirstUse
		same(t, name, tool(t, b, server, name), toolstate.ToolState{ServerID: server, Tool: name, Baseline: &bl, Observed: &ob})
	}
	all, err := b.Tools(ctx, server)
	if err != nil || len(all) != len(names) {
		t.Fatalf("Tools: %v, %d states, want %d", err, len(all), len(names))
	}
	if _, err := b.Tool(ctx, server[:3], names[0]); !errors.Is(err, toolstate.ErrNotFound) {
		t.Fatalf("Tool of a prefix of the server id: %v, want ErrNotFound", err)
	}
	if got, err := b.Tools(ctx, "%"); err != nil || len(got) != 0 {
		t.Fatalf("Tools(%%): %v, %d states (a pattern character matched)", err, len(got))
	}
}

// testEmpty: a fresh store holds nothing.
func testEmpty(t *testing.T, open func() toolstate.Store) {
	s := open()
	all, err := s.Tools(ctx, "")
	if err != nil || len(all) != 0 {
		t.Fatalf("Tools: %v, %d states", err, len(all))
	}
	_, err = s.Tool(ctx, "srv", "x")
	mustErr(t, "Tool", err, toolstate.ErrNotFound)
	if err := s.Observe(ctx, nil); err != nil {
		t.Fatalf("Observe(nil): %v", err)
	}
}

// testFirstUseKeeps: a second FirstUse leaves the first baseline and
// returns it.
func testFirstUseKeeps(t *testing.T, open func() toolstate.Store) {
	s := open()
	first := baseline("srv", "t", 1)
	if _, won, err := s.FirstUse(ctx, first); err != nil || !won {
		t.Fatalf("FirstUse: %v, won %v", err, won)
	}
	v := version(t, s)
	second := baseline("srv", "t", 2)
	second.By = "gw-2"
	got, won, err := s.FirstUse(ctx, second)
	if err != nil || won {
		t.Fatalf("second FirstUse: %v, won %v", err, won)
	}
	same(t, "second FirstUse", toolstate.ToolState{Baseline: &got}, toolstate.ToolState{Baseline: &first})
	if v2 := version(t, s); v2 != v {
		t.Errorf("Version %d after a FirstUse that changed nothing, was %d", v2, v)
	}
	// An origin left empty is first_use.
	e := baseline("srv", "u", 1)
	e.Origin = ""
	got, _, err = s.FirstUse(ctx, e)
	if err != nil || got.Origin != toolstate.OriginFirstUse {
		t.Fatalf("FirstUse without origin: %v, origin %q", err, got.Origin)
	}
}

// testFirstUseRace: goroutines on two stores race to take one tool's
// baseline; exactly one wins and every one gets the winner's.
func testFirstUseRace(t *testing.T, open func() toolstate.Store) {
	stores := []toolstate.Store{open(), open()}
	const n = 16
	type res struct {
		b   toolstate.Baseline
		won bool
		err error
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := baseline("srv", "raced", i)
			b.By = fmt.Sprintf("gw-%d", i)
			<-start
			out[i].b, out[i].won, out[i].err = stores[i%2].FirstUse(ctx, b)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("FirstUse %d: %v", i, r.err)
		}
		if r.won {
			if winner >= 0 {
				t.Fatalf("FirstUse %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no FirstUse won")
	}
	w := out[winner].b
	if w.By != fmt.Sprintf("gw-%d", winner) {
		t.Fatalf("the winner %d got the baseline of %q", winner, w.By)
	}
	for i, r := range out {
		same(t, fmt.Sprintf("FirstUse %d", i), toolstate.ToolState{Baseline: &r.b}, toolstate.ToolState{Baseline: &w})
	}
	for _, s := range stores {
		st := tool(t, s, "srv", "raced")
		same(t, "stored", toolstate.ToolState{Baseline: st.Baseline}, toolstate.ToolState{Baseline: &w})
	}
}

// testObserveReplaces: an observation replaces the tool's earlier one;
// the statuses follow.
func testObserveReplaces(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	o1 := observation("srv", "t", 1)
	if err := a.Observe(ctx, []toolstate.Observation{o1, observation("srv", "other", 1)}); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if st := tool(t, b, "srv", "t"); st.Status() != toolstate.StatusNew {
		t.Errorf("observed without baseline: status %q, want new", st.Status())
	}
	bl := baseline("srv", "t", 1)
	if _, _, err := b.FirstUse(ctx, bl); err != nil {
		t.Fatal(err)
	}
	if st := tool(t, a, "srv", "t"); st.Status() != toolstate.StatusApproved {
		t.Errorf("observed == baseline: status %q, want approved", st.Status())
	}
	o2 := observation("srv", "t", 2)
	o2.Severity, o2.Changes, o2.By, o2.At = "minor", []string{"description_changed"}, "gw-2", at(9)
	if err := b.Observe(ctx, []toolstate.Observation{o2}); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	st := tool(t, a, "srv", "t")
	same(t, "replaced", st, toolstate.ToolState{ServerID: "srv", Tool: "t", Baseline: &bl, Observed: &o2})
	if st.Status() != toolstate.StatusChanged {
		t.Errorf("status %q, want changed", st.Status())
	}
	if st := tool(t, a, "srv", "other"); st.Observed == nil || st.Observed.Hash != observation("srv", "other", 1).Hash {
		t.Errorf("the other tool's observation changed: %s", dump(st))
	}
	rm := toolstate.Observation{ServerID: "srv", Tool: "t", Removed: true, Severity: "moderate", Changes: []string{"tool_removed"}, By: "gw-1", At: at(10)}
	if err := a.Observe(ctx, []toolstate.Observation{rm}); err != nil {
		t.Fatalf("Observe removed: %v", err)
	}
	st = tool(t, b, "srv", "t")
	same(t, "removed", st, toolstate.ToolState{ServerID: "srv", Tool: "t", Baseline: &bl, Observed: &rm})
	if st.Status() != toolstate.StatusRemoved {
		t.Errorf("status %q, want removed", st.Status())
	}
}

// testApprove: an approval of the definition shown makes it the baseline;
// one of a definition that changed since is refused; so is one of a tool
// never observed or removed.
func testApprove(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	bl := baseline("srv", "t", 1)
	if _, _, err := a.FirstUse(ctx, bl); err != nil {
		t.Fatal(err)
	}
	_, err := a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: bl.Hash, By: "alice"})
	mustErr(t, "Approve with a baseline but nothing observed", err, toolstate.ErrNotFound)
	_, err = a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "nothing", ExpectHash: bl.Hash, By: "alice"})
	mustErr(t, "Approve of an unknown tool", err, toolstate.ErrNotFound)

	shown := observation("srv", "t", 2)
	shown.Severity, shown.Changes = "critical", []string{"effect_added_share"}
	if err := a.Observe(ctx, []toolstate.Observation{shown}); err != nil {
		t.Fatal(err)
	}
	// It changes again after the diff was shown.
	now := observation("srv", "t", 3)
	now.Severity, now.Changes = "critical", []string{"effect_added_share"}
	if err := b.Observe(ctx, []toolstate.Observation{now}); err != nil {
		t.Fatal(err)
	}
	v := version(t, a)
	_, err = a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: shown.Hash, By: "alice"})
	mustErr(t, "Approve of a definition that changed since", err, toolstate.ErrChanged)
	_, err = a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", By: "alice"})
	mustErr(t, "Approve without a hash", err, toolstate.ErrChanged)
	same(t, "after refused approvals", tool(t, b, "srv", "t"), toolstate.ToolState{ServerID: "srv", Tool: "t", Baseline: &bl, Observed: &now})
	if v2 := version(t, a); v2 != v {
		t.Errorf("Version %d after refused approvals, was %d", v2, v)
	}

	ap := toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: now.Hash, By: "alice", Reason: "reviewed: export is intended", At: at(20)}
	got, err := a.Approve(ctx, ap)
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	want := toolstate.Baseline{ServerID: "srv", Tool: "t", Hash: now.Hash, Definition: now.Definition,
		Origin: toolstate.OriginApproval, By: "alice", Reason: ap.Reason, At: ap.At}
	same(t, "Approve result", toolstate.ToolState{Baseline: &got.Baseline, Quarantine: got.Released}, toolstate.ToolState{Baseline: &want})
	same(t, "Approve's replaced baseline", toolstate.ToolState{Baseline: got.Previous}, toolstate.ToolState{Baseline: &bl})
	obs := now
	obs.Severity, obs.Changes = toolstate.SeverityNone, nil
	st := tool(t, b, "srv", "t")
	same(t, "approved", st, toolstate.ToolState{ServerID: "srv", Tool: "t", Baseline: &want, Observed: &obs})
	if st.Status() != toolstate.StatusApproved {
		t.Errorf("status %q, want approved", st.Status())
	}
	if v2 := version(t, b); v2 <= v {
		t.Errorf("Version %d after Approve, was %d", v2, v)
	}

	// A new tool (no baseline) is approved the same way; a removed one
	// cannot be.
	n := observation("srv", "new", 1)
	rm := toolstate.Observation{ServerID: "srv", Tool: "gone", Removed: true, Severity: "moderate"}
	if err := b.Observe(ctx, []toolstate.Observation{n, rm}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "new", ExpectHash: n.Hash, By: "bob"}); err != nil || got.Hash != n.Hash {
		t.Fatalf("Approve of a new tool: %v, %+v", err, got)
	}
	_, err = a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "gone", ExpectHash: "", By: "bob"})
	mustErr(t, "Approve of a removed tool", err, toolstate.ErrNotFound)
}

// testApproveReleases: an approval lifts a hold the gateway placed, not
// one a person placed.
// testApproveRace: approvals of one held tool racing from two stores (two
// people's gatehouse tools approve) each report what they replaced, read
// in their transaction: exactly one lifted the hold and replaced the
// first-use baseline; the others replaced an approval.
func testApproveRace(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	bl := baseline("srv", "t", 1)
	if _, _, err := a.FirstUse(ctx, bl); err != nil {
		t.Fatal(err)
	}
	o := observation("srv", "t", 2)
	if err := a.Observe(ctx, []toolstate.Observation{o}); err != nil {
		t.Fatal(err)
	}
	if err := a.Hold(ctx, toolstate.Quarantine{ServerID: "srv", Tool: "t", Hash: o.Hash, Automatic: true, Severity: "critical", By: "gw-1", Reason: "drift"}); err != nil {
		t.Fatal(err)
	}
	const n = 4
	outs, errs := make([]toolstate.Approved, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: o.Hash, By: fmt.Sprint("person", i)})
		}()
	}
	wg.Wait()
	released, fromFirstUse := 0, 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Approve %d: %v", i, errs[i])
		}
		if outs[i].Released != nil {
			released++
		}
		if p := outs[i].Previous; p == nil {
			t.Errorf("Approve %d replaced no baseline", i)
		} else if p.Origin == toolstate.OriginFirstUse {
			fromFirstUse++
		}
	}
	if released != 1 || fromFirstUse != 1 {
		t.Errorf("%d approvals lifted the hold and %d replaced the first-use baseline, want 1 and 1", released, fromFirstUse)
	}
}

func testApproveReleases(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	for _, name := range []string{"auto", "manual"} {
		if _, _, err := a.FirstUse(ctx, baseline("srv", name, 1)); err != nil {
			t.Fatal(err)
		}
		if err := a.Observe(ctx, []toolstate.Observation{observation("srv", name, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	auto := toolstate.Quarantine{ServerID: "srv", Tool: "auto", Hash: observation("srv", "auto", 2).Hash, Automatic: true, Severity: "critical", By: "gw-1", Reason: "drift"}
	manual := toolstate.Quarantine{ServerID: "srv", Tool: "manual", By: "alice", Reason: "under review", At: at(5)}
	if err := a.Hold(ctx, auto); err != nil {
		t.Fatal(err)
	}
	if err := a.Hold(ctx, manual); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"auto", "manual"} {
		if _, err := b.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: name, ExpectHash: observation("srv", name, 2).Hash, By: "alice"}); err != nil {
			t.Fatalf("Approve(%s): %v", name, err)
		}
	}
	if st := tool(t, a, "srv", "auto"); st.Quarantine != nil || st.Status() != toolstate.StatusApproved {
		t.Errorf("automatic hold after Approve: %s", dump(st))
	}
	st := tool(t, a, "srv", "manual")
	if st.Quarantine == nil {
		t.Fatalf("manual hold lifted by Approve: %s", dump(st))
	}
	same(t, "manual hold", toolstate.ToolState{Quarantine: st.Quarantine}, toolstate.ToolState{Quarantine: &manual})
	if st.Baseline.Hash != observation("srv", "manual", 2).Hash {
		t.Errorf("the baseline of the held tool is not the approved one: %s", dump(st))
	}
}

// testHoldRelease: a hold by name on a tool the store knows nothing else
// about, replacing a hold, releasing, and releasing what is not held.
func testHoldRelease(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	_, err := a.Release(ctx, "srv", "t")
	mustErr(t, "Release of an unknown tool", err, toolstate.ErrNotQuarantined)
	q1 := toolstate.Quarantine{ServerID: "srv", Tool: "t", By: "alice", Reason: "suspicious", At: at(1)}
	if err := a.Hold(ctx, q1); err != nil {
		t.Fatal(err)
	}
	st := tool(t, b, "srv", "t")
	same(t, "held by name", st, toolstate.ToolState{ServerID: "srv", Tool: "t", Quarantine: &q1})
	if st.Status() != toolstate.StatusQuarantined {
		t.Errorf("status %q, want quarantined", st.Status())
	}
	q2 := toolstate.Quarantine{ServerID: "srv", Tool: "t", Hash: "sha256:00", Severity: "high", Changes: []string{"x"}, By: "bob", Reason: "incident", At: at(2)}
	if err := b.Hold(ctx, q2); err != nil {
		t.Fatal(err)
	}
	got, err := a.Release(ctx, "srv", "t")
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	same(t, "released", toolstate.ToolState{Quarantine: &got}, toolstate.ToolState{Quarantine: &q2})
	_, err = b.Release(ctx, "srv", "t")
	mustErr(t, "second Release", err, toolstate.ErrNotQuarantined)
	_, err = b.Tool(ctx, "srv", "t")
	mustErr(t, "Tool after the only hold was released", err, toolstate.ErrNotFound)

	// Release keeps the rest of the state.
	bl := baseline("srv", "u", 1)
	if _, _, err := a.FirstUse(ctx, bl); err != nil {
		t.Fatal(err)
	}
	if err := a.Hold(ctx, q1Of("u")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, "srv", "u"); err != nil {
		t.Fatal(err)
	}
	same(t, "released, baseline kept", tool(t, a, "srv", "u"), toolstate.ToolState{ServerID: "srv", Tool: "u", Baseline: &bl})
}

// testAutomaticHoldKeepsPersons: a gateway's automatic hold (drift) does
// not replace a hold a person placed (a gateway that had not yet polled
// it): the person's reason stays, and an Approve, which releases only
// automatic holds, leaves it. The refused replacement leaves the version.
// A person's hold replaces an automatic one.
func testAutomaticHoldKeepsPersons(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	person := toolstate.Quarantine{ServerID: "srv", Tool: "t", By: "oncall", Reason: "incident 42", At: at(1)}
	if err := a.Hold(ctx, person); err != nil {
		t.Fatal(err)
	}
	v := version(t, a)
	auto := toolstate.Quarantine{ServerID: "srv", Tool: "t", Hash: "sha256:00", Automatic: true, Severity: "critical", Changes: []string{"x"}, By: "gw", Rule: "drift", Reason: "drift", At: at(2)}
	if err := b.Hold(ctx, auto); err != nil {
		t.Fatal(err)
	}
	same(t, "a person's hold after an automatic Hold", tool(t, a, "srv", "t"), toolstate.ToolState{ServerID: "srv", Tool: "t", Quarantine: &person})
	if got := version(t, a); got != v {
		t.Errorf("version %d after a refused replacement, want %d", got, v)
	}
	// The other way round: a person's hold replaces a gateway's.
	if err := b.Hold(ctx, toolstate.Quarantine{ServerID: "srv", Tool: "u", Hash: "sha256:00", Automatic: true, By: "gw", Rule: "drift", Reason: "drift", At: at(2)}); err != nil {
		t.Fatal(err)
	}
	pu := q1Of("u")
	if err := a.Hold(ctx, pu); err != nil {
		t.Fatal(err)
	}
	same(t, "a person's hold over an automatic one", tool(t, b, "srv", "u"), toolstate.ToolState{ServerID: "srv", Tool: "u", Quarantine: &pu})
}

func q1Of(name string) toolstate.Quarantine {
	return toolstate.Quarantine{ServerID: "srv", Tool: name, By: "alice", Reason: "r", At: at(1)}
}

// testVersion: every change grows the version, seen from the other store;
// a read or a refused change does not.
func testVersion(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	last := version(t, b)
	if va := version(t, a); va != last {
		t.Fatalf("Version %d and %d on one database", va, last)
	}
	step := func(what string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v := version(t, b)
		if v <= last {
			t.Fatalf("Version %d after %s, was %d", v, what, last)
		}
		if va := version(t, a); va != v {
			t.Fatalf("Version %d and %d on one database after %s", va, v, what)
		}
		last = v
	}
	unchanged := func(what string) {
		t.Helper()
		if v := version(t, b); v != last {
			t.Fatalf("Version %d after %s, was %d", v, what, last)
		}
	}
	step("FirstUse", func() error { _, _, err := a.FirstUse(ctx, baseline("srv", "t", 1)); return err })
	a.FirstUse(ctx, baseline("srv", "t", 2))
	unchanged("a FirstUse that lost")
	step("Observe", func() error { return a.Observe(ctx, []toolstate.Observation{observation("srv", "t", 2)}) })
	step("Hold", func() error { return a.Hold(ctx, q1Of("t")) })
	a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: "sha256:no"})
	unchanged("a refused Approve")
	step("Approve", func() error {
		_, err := a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: observation("srv", "t", 2).Hash})
		return err
	})
	step("Release", func() error { _, err := a.Release(ctx, "srv", "t"); return err })
	a.Release(ctx, "srv", "t")
	unchanged("a refused Release")
	a.Tools(ctx, "")
	a.Tool(ctx, "srv", "t")
	unchanged("reads")
}

// testVersionConcurrent: n concurrent changes on two stores grow the
// version by n (no increment is lost).
func testVersionConcurrent(t *testing.T, open func() toolstate.Store) {
	stores := []toolstate.Store{open(), open()}
	v0 := version(t, stores[0])
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[i%2]
			var err error
			switch i % 4 {
			case 0:
				err = s.Hold(ctx, q1Of(fmt.Sprint("h", i)))
			case 1:
				_, _, err = s.FirstUse(ctx, baseline("srv", fmt.Sprint("f", i), i))
			default:
				err = s.Observe(ctx, []toolstate.Observation{observation("srv", fmt.Sprint("o", i), i)})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v := version(t, stores[1]); v != v0+n {
		t.Fatalf("Version %d after %d changes from %d", v, n, v0)
	}
	all, err := stores[0].Tools(ctx, "srv")
	if err != nil || len(all) != n {
		t.Fatalf("Tools: %v, %d states, want %d", err, len(all), n)
	}
}

// testToolsSorted: Tools sorts by server then tool in byte order and
// filters by server.
func testToolsSorted(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	keys := [][2]string{{"b", "z"}, {"a", "é"}, {"b", "a"}, {"a", "Z"}, {"a", "z"}, {"B", "m"}, {"a", "_x"}, {"a", "a b"}, {"a", "ab"}}
	for i, k := range keys {
		var err error
		switch i % 3 {
		case 0:
			_, _, err = a.FirstUse(ctx, baseline(k[0], k[1], i))
		case 1:
			err = a.Observe(ctx, []toolstate.Observation{observation(k[0], k[1], i)})
		default:
			err = a.Hold(ctx, toolstate.Quarantine{ServerID: k[0], Tool: k[1], By: "x", Reason: "y"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	names := func(states []toolstate.ToolState) [][2]string {
		var out [][2]string
		for _, s := range states {
			out = append(out, [2]string{s.ServerID, s.Tool})
		}
		return out
	}
	all, err := b.Tools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"B", "m"}, {"a", "Z"}, {"a", "_x"}, {"a", "a b"}, {"a", "ab"}, {"a", "z"}, {"a", "é"}, {"b", "a"}, {"b", "z"}}
	if got := names(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("Tools:\n%q\nwant\n%q", got, want)
	}
	only, err := b.Tools(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(only); !reflect.DeepEqual(got, want[7:]) {
		t.Fatalf("Tools(b): %q, want %q", got, want[7:])
	}
}

// testInvalid: values a store cannot keep exactly, or that would unbind a
// baseline from its hash, are refused with ErrInvalid and write nothing.
func testInvalid(t *testing.T, open func() toolstate.Store) {
	s := open()
	v := version(t, s)
	bad := baseline("srv", "t", 1)
	bad.Hash = toolstate.DefinitionHash(def("t", 2))
	noServer := baseline("", "t", 1)
	noTool := baseline("srv", "", 1)
	nul := baseline("srv", "t\x00", 1)
	utf := baseline("srv", "t", 1)
	utf.Reason = "\xff"
	origin := baseline("srv", "t", 1)
	origin.Origin = "guess"
	for i, b := range []toolstate.Baseline{bad, noServer, noTool, nul, utf, origin} {
		_, _, err := s.FirstUse(ctx, b)
		mustErr(t, fmt.Sprint("FirstUse ", i), err, toolstate.ErrInvalid)
	}
	o := observation("srv", "t", 1)
	badObs := o
	badObs.Tool, badObs.Definition = "u", def("t", 9)
	removedWithDef := o
	removedWithDef.Removed = true
	for i, obs := range [][]toolstate.Observation{{o, badObs}, {removedWithDef}, {o, o}} {
		mustErr(t, fmt.Sprint("Observe ", i), s.Observe(ctx, obs), toolstate.ErrInvalid)
	}
	mustErr(t, "Hold", s.Hold(ctx, toolstate.Quarantine{ServerID: "srv"}), toolstate.ErrInvalid)
	_, err := s.Approve(ctx, toolstate.Approval{Tool: "t"})
	mustErr(t, "Approve", err, toolstate.ErrInvalid)
	if all, err := s.Tools(ctx, ""); err != nil || len(all) != 0 {
		t.Fatalf("Tools after refused writes: %v, %d states", err, len(all))
	}
	if v2 := version(t, s); v2 != v {
		t.Fatalf("Version %d after refused writes, was %d", v2, v)
	}
}

// testClose: every call after Close returns ErrClosed; another store on
// the database goes on.
func testClose(t *testing.T, open func() toolstate.Store) {
	a, b := open(), open()
	if _, _, err := a.FirstUse(ctx, baseline("srv", "t", 1)); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := map[string]func() error{
		"Tools":    func() error { _, err := a.Tools(ctx, ""); return err },
		"Tool":     func() error { _, err := a.Tool(ctx, "srv", "t"); return err },
		"FirstUse": func() error { _, _, err := a.FirstUse(ctx, baseline("srv", "u", 1)); return err },
		"Observe":  func() error { return a.Observe(ctx, []toolstate.Observation{observation("srv", "t", 1)}) },
		"Approve": func() error {
			_, err := a.Approve(ctx, toolstate.Approval{ServerID: "srv", Tool: "t", ExpectHash: observation("srv", "t", 1).Hash})
			return err
		},
		"Hold":    func() error { return a.Hold(ctx, q1Of("t")) },
		"Release": func() error { _, err := a.Release(ctx, "srv", "t"); return err },
		"Version": func() error { _, err := a.Version(ctx); return err },
	}
	for name, f := range calls {
		mustErr(t, name+" after Close", f(), toolstate.ErrClosed)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := tool(t, b, "srv", "t"); st.Baseline == nil {
		t.Fatalf("the other store lost the baseline: %s", dump(st))
	}
	if err := b.Hold(ctx, q1Of("t")); err != nil {
		t.Fatalf("the other store after Close: %v", err)
	}
}

// testCloseConcurrent: calls racing Close succeed or fail with ErrClosed,
// nothing else.
func testCloseConcurrent(t *testing.T, open func() toolstate.Store) {
	s := open()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				var err error
				switch j % 3 {
				case 0:
					err = s.Hold(ctx, q1Of(fmt.Sprint("c", i)))
				case 1:
					_, err = s.Tools(ctx, "")
				default:
					_, err = s.Version(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, toolstate.ErrClosed) {
			t.Errorf("a call racing Close: %v, want ErrClosed", err)
		}
	}
}
