package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// hookStore is a tool-state store that runs beforeObserve once, just
// before an Observe, and can hold a Tools read after it has read
// (toolsRead is closed once the states are read, and the read returns
// when release is closed): another writer's change landing at a chosen
// moment.
type hookStore struct {
	toolstate.Store
	mu            sync.Mutex
	beforeObserve func()
	toolsRead     chan struct{}
	release       chan struct{}
}

func (s *hookStore) Observe(ctx context.Context, obs []toolstate.Observation) error {
	s.mu.Lock()
	f := s.beforeObserve
	s.beforeObserve = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return s.Store.Observe(ctx, obs)
}

func (s *hookStore) Tools(ctx context.Context, server string) ([]toolstate.ToolState, error) {
	states, err := s.Store.Tools(ctx, server)
	s.mu.Lock()
	read, release := s.toolsRead, s.release
	s.toolsRead, s.release = nil, nil
	s.mu.Unlock()
	if read != nil {
		close(read)
		<-release
	}
	return states, err
}

func newTestTracker(t *testing.T, st toolstate.Store, pol *policy.Policy) *driftTracker {
	t.Helper()
	if pol == nil {
		pol = policy.Default()
	}
	return newDriftTracker(Config{Policy: pol, Tools: st, ServerID: "srv", ToolsPoll: time.Hour}, slog.New(slog.DiscardHandler), nil, nil, nil)
}

// pollNow makes a poll due and runs it.
func (d *driftTracker) pollNow() {
	d.mu.Lock()
	d.polled = time.Time{}
	d.mu.Unlock()
	d.poll()
}

func noFacts(string) *toolFacts { return nil }

func hashOf(t *testing.T, tl mcp.Tool) string {
	t.Helper()
	h, err := drift.Hash(tl)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPersonsHoldDuringListingNotMissed: a person quarantines a tool
// (gatehouse tools quarantine) while the gateway records a listing. The
// gateway took the store's version after its own write as the version of
// its copy, so the person's hold, written just before, was never read:
// the tool stayed callable until some other write moved the version.
func TestPersonsHoldDuringListingNotMissed(t *testing.T) {
	mem := toolstate.NewMem()
	st := &hookStore{Store: mem}
	d := newTestTracker(t, st, nil)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	st.beforeObserve = func() {
		if err := mem.Share().Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "lookup", By: "alice", Reason: "incident 42"}); err != nil {
			t.Error(err)
		}
	}
	d.observe(base, true, true, base, noFacts) // the person's hold lands while this listing is recorded
	d.pollNow()
	if cd := d.forCall("lookup", true, hashOf(t, base[0])); cd.verdict.Action != pipeline.Quarantine {
		t.Fatalf("a person's hold placed during a listing is not honoured: %+v", cd.verdict)
	}
}

// TestFirstUseKeptAcrossReload: a first-use baseline the store refused is
// kept in the gateway. It was dropped at the next reload of the store
// (any other writer, another gateway's listing say, moves the version),
// so the tool's drift in a later listing went unfound (taken as an added
// tool, monitored).
func TestFirstUseKeptAcrossReload(t *testing.T) {
	mem := toolstate.NewMem()
	d := newTestTracker(t, failingFirstUse{mem}, nil)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	if err := mem.Share().Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "other", By: "alice", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	d.pollNow()
	cur := []mcp.Tool{driftTool("external")}
	if held := d.observe(cur, true, true, cur, noFacts); !held["lookup"] {
		t.Fatalf("critical drift from a baseline the store refused is not held after a reload: %v", held)
	}
}

// TestPollDoesNotUndoNewerHold: a poll that read the store before the
// gateway held a tool (a call's policy decided quarantine) must not
// install that older state over the hold: the next call to the tool was
// forwarded.
func TestPollDoesNotUndoNewerHold(t *testing.T) {
	mem := toolstate.NewMem()
	st := &hookStore{Store: mem}
	d := newTestTracker(t, st, nil)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	h := hashOf(t, base[0])
	// Another writer moves the version, so that the poll reads the state.
	if err := mem.Share().Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "other", By: "alice", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	read, release := make(chan struct{}), make(chan struct{})
	st.mu.Lock()
	st.toolsRead, st.release = read, release
	st.mu.Unlock()
	done := make(chan struct{})
	go func() { d.pollNow(); close(done) }()
	<-read // the poll has read the state without the hold
	d.holdFromDecision("lookup", h, "exfil_args", "the call's arguments name an external host")
	close(release)
	<-done
	if cd := d.forCall("lookup", true, h); cd.verdict.Action != pipeline.Quarantine {
		t.Fatalf("a hold placed while a poll read the store was undone by it: %+v", cd.verdict)
	}
	// And the next poll reads it from the store.
	d.pollNow()
	if cd := d.forCall("lookup", true, h); cd.verdict.Action != pipeline.Quarantine {
		t.Fatalf("after the next poll: %+v", cd.verdict)
	}
}

// TestApprovedRenameHonoured: a person approves a renamed tool (gatehouse
// tools approve on its new name lifts the gateway's hold and makes its
// definition the baseline). The running gateway reloaded the store but
// kept the tool's "renamed" status, whose drift.renamed action
// (quarantine) held every call again until the client listed the tools
// again, which many clients never do.
func TestApprovedRenameHonoured(t *testing.T) {
	mem := toolstate.NewMem()
	d := newTestTracker(t, mem, nil)
	keep := mcp.Tool{Name: "keep", Description: "Keep a note.", InputSchema: json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"}}}`)}
	old := driftTool("internal")
	renamed := old
	renamed.Name = "lookup_v2"
	l1, l2 := []mcp.Tool{keep, old}, []mcp.Tool{keep, renamed}
	d.observe(l1, true, true, l1, noFacts)
	if held := d.observe(l2, true, true, l2, noFacts); !held["lookup_v2"] {
		t.Fatalf("the rename was not held (drift.renamed: quarantine): %v", held)
	}
	h := hashOf(t, renamed)
	if _, err := mem.Share().Approve(context.Background(), toolstate.Approval{ServerID: "srv", Tool: "lookup_v2", ExpectHash: h, By: "alice", Reason: "renamed on purpose", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	d.pollNow()
	if cd := d.forCall("lookup_v2", true, h); cd.decided {
		t.Fatalf("the approved rename is still refused: %+v", cd.verdict)
	}
}

// TestAddedToolInListingWindowNotForwarded: with drift.added: quarantine
// ("what holds every new tool"), a call to a tool the catalog took from
// a listing the tracker has not compared yet was forwarded: the window
// check refused only a tool with a baseline.
func TestAddedToolInListingWindowNotForwarded(t *testing.T) {
	pol, err := policy.Parse("t.yaml", []byte("name: t\nversion: \"1\"\ndrift: {added: quarantine}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := newTestTracker(t, toolstate.NewMem(), pol)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	added := mcp.Tool{Name: "upload", Description: "Upload a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}}}`)}
	// The catalog has a listing with "upload"; the tracker has not seen it.
	if cd := d.forCall("upload", true, hashOf(t, added)); !cd.decided || cd.verdict.Action == pipeline.Allow {
		t.Fatalf("a call to an added tool in the listing window is forwarded: %+v", cd)
	}
	// Once compared: held as drift.added says.
	l := []mcp.Tool{base[0], added}
	d.observe(l, true, true, l, noFacts)
	if cd := d.forCall("upload", true, hashOf(t, added)); cd.verdict.Action != pipeline.Quarantine {
		t.Fatalf("after the comparison: %+v", cd.verdict)
	}
}

// TestReleasedDriftHoldHeldAgainAtNextCall pins what a person's release
// of the gateway's drift hold does while the tool's listed definition
// still drifts critically from its baseline: the next call (not only the
// next listing, as the release's warning said) is quarantined by the
// drift block's action, and the tool held again in the store.
func TestReleasedDriftHoldHeldAgainAtNextCall(t *testing.T) {
	mem := toolstate.NewMem()
	h := newHarness(t, Config{ServerID: "srv", Tools: mem})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.recv()
	drifted := readSharesExternally(t)
	h.sess.catalog.replace(drifted)
	h.sess.drift.observe(drifted, true, true, drifted, h.sess.catalog.factsFor)
	if _, err := mem.Share().Release(context.Background(), "srv", "read"); err != nil {
		t.Fatal(err)
	}
	h.sess.drift.pollNow()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/tmp/released"}}}` + "\n")
	if got := h.recv(); !strings.Contains(got, `"code":-32084`) {
		t.Fatalf("the call after the release answered %s, want held (-32084)", got)
	}
	st, err := mem.Tool(context.Background(), "srv", "read")
	if err != nil || st.Quarantine == nil || !st.Quarantine.Automatic {
		t.Fatalf("not held again in the store after the call: %+v %v", st.Quarantine, err)
	}
}

// TestShadowStoreEffects pins what shadow mode does with the tool state:
// first-use baselines are still taken (drift can only be found against a
// baseline, and an enforcing gateway later compares with the one the
// trial began with), but nothing is held, and a person's hold already in
// the store is not enforced either: the call is forwarded with the
// would-have quarantine recorded.
func TestShadowStoreEffects(t *testing.T) {
	mem := toolstate.NewMem()
	if err := mem.Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "write", By: "alice", Reason: "incident 42"}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{ServerID: "srv", Tools: mem, Shadow: true})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	if got := h.recv(); strings.Contains(got, "QUARANTINED") {
		t.Fatalf("shadow mode marked the listing: %s", got)
	}
	st, err := mem.Tool(context.Background(), "srv", "read")
	if err != nil || st.Baseline == nil || st.Baseline.Origin != toolstate.OriginFirstUse {
		t.Fatalf("shadow mode took no first-use baseline: %+v %v", st.Baseline, err)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{}}}` + "\n")
	if got := h.recv(); strings.Contains(got, `"error"`) {
		t.Fatalf("shadow mode refused the call: %s", got)
	}
	if !h.waitServerGot(`"id":2`, 2*time.Second) {
		t.Fatalf("shadow mode did not forward the call to the tool a person holds: %v", h.serverGot())
	}
}

// TestCallWaitsForListingWrites pins that a call's drift decision waits
// while a listing's comparison writes to the store (d.mu is held through
// observe, so that no call is decided on a half-applied listing): a slow
// store slows calls during a listing, bounded by storeTimeout per write.
// (The docs said a call never waits for the store; only polls are off
// the call path.)
func TestCallWaitsForListingWrites(t *testing.T) {
	mem := toolstate.NewMem()
	st := &hookStore{Store: mem}
	d := newTestTracker(t, st, nil)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	entered, unblock := make(chan struct{}), make(chan struct{})
	st.beforeObserve = func() { close(entered); <-unblock }
	go d.observe(base, true, true, base, noFacts)
	<-entered
	decided := make(chan struct{})
	go func() { d.forCall("lookup", true, hashOf(t, base[0])); close(decided) }()
	select {
	case <-decided:
		t.Fatal("the call was decided while the listing's observation was being written")
	case <-time.After(100 * time.Millisecond):
	}
	close(unblock)
	<-decided
}

// flakyHolds is a store whose Hold fails while failing is set (a
// database briefly unreachable).
type flakyHolds struct {
	*toolstate.Mem
	failing atomic.Bool
}

func (s *flakyHolds) Hold(ctx context.Context, q toolstate.Quarantine) error {
	if s.failing.Load() {
		return errBroken
	}
	return s.Mem.Hold(ctx, q)
}

// TestUnstoredHoldStoredWhenStoreRecovers: a hold the store could not
// record was kept in the gateway for the rest of the run and never
// written later, so no person could see or release it (tools release
// answered "not quarantined"): the tool stayed held whatever the review
// said. The gateway now writes it at the next poll that finds the store
// working; from then on it is a stored hold like any other.
func TestUnstoredHoldStoredWhenStoreRecovers(t *testing.T) {
	st := &flakyHolds{Mem: toolstate.NewMem()}
	d := newTestTracker(t, st, nil)
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, noFacts)
	h := hashOf(t, base[0])
	st.failing.Store(true)
	d.holdFromDecision("lookup", h, "exfil_args", "the call's arguments name an external host")
	if cd := d.forCall("lookup", true, h); cd.verdict.Action != pipeline.Quarantine {
		t.Fatalf("the unstored hold is not in force: %+v", cd.verdict)
	}
	st.failing.Store(false)
	d.pollNow()
	if s, err := st.Mem.Tool(context.Background(), "srv", "lookup"); err != nil || s.Quarantine == nil {
		t.Fatalf("the hold was not written once the store worked again: %+v %v", s.Quarantine, err)
	}
	if _, err := st.Mem.Share().Release(context.Background(), "srv", "lookup"); err != nil {
		t.Fatalf("a person cannot release it: %v", err)
	}
	d.pollNow()
	if cd := d.forCall("lookup", true, h); cd.decided {
		t.Fatalf("released by a person, still held: %+v", cd.verdict)
	}
}

// TestBaselineReplacedElsewhereReclassifies: a person approves another
// definition of a tool than the one this gateway lists (observed by
// another gateway of the same server id). The reload installed the new
// baseline but kept the listed definition's drift "none" from the old
// one, so its calls were forwarded though it is not the approved
// definition; it is compared with the new baseline at once.
func TestBaselineReplacedElsewhereReclassifies(t *testing.T) {
	mem := toolstate.NewMem()
	d := newTestTracker(t, mem, nil)
	mine := []mcp.Tool{driftTool("external")}
	d.observe(mine, true, true, mine, noFacts) // first use: the external definition
	other := driftTool("internal")
	def, err := drift.Canonical(other)
	if err != nil {
		t.Fatal(err)
	}
	oh := hashOf(t, other)
	b := mem.Share()
	if err := b.Observe(context.Background(), []toolstate.Observation{{ServerID: "srv", Tool: "lookup", Hash: oh, Definition: def, Severity: "critical", By: "gw-2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Approve(context.Background(), toolstate.Approval{ServerID: "srv", Tool: "lookup", ExpectHash: oh, By: "alice", Reason: "the internal one", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	d.pollNow()
	cd := d.forCall("lookup", true, hashOf(t, mine[0]))
	if !cd.decided || cd.verdict.Action != pipeline.Quarantine || cd.result == nil || cd.result.Severity != "critical" {
		t.Fatalf("a definition that is not the approved baseline is called freely: %+v %+v", cd.verdict, cd.result)
	}
}

// TestUncanonicalToolDriftFound: a tool whose definition RFC 8785 cannot
// carry exactly (a number beyond float64's exact integers in its
// inputSchema) has no hash, so it never got a first-use baseline, and
// any later definition of it (external sharing added) was never compared:
// called as a tool with no drift.
func TestUncanonicalToolDriftFound(t *testing.T) {
	d := newTestTracker(t, toolstate.NewMem(), nil)
	mk := func(ext string) mcp.Tool {
		tl := driftTool(ext)
		tl.InputSchema = json.RawMessage(`{"type":"object","properties":{"word":{"type":"integer","maximum":18446744073709551615}}}`)
		return tl
	}
	base := []mcp.Tool{mk("internal")}
	d.observe(base, true, true, base, noFacts)
	cur := []mcp.Tool{mk("external")}
	d.observe(cur, true, true, cur, noFacts)
	h, _ := drift.Hash(cur[0])
	if cd := d.forCall("lookup", true, h); !cd.decided || cd.verdict.Action == pipeline.Allow {
		t.Fatalf("drift of a tool that cannot be canonicalized is not found: %+v", cd)
	}
}
