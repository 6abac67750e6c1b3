package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// Rules a drift verdict names when no policy rule decided it
// (docs/drift.md).
const (
	// RuleDrift: the drift block's action for the tool's drift severity
	// (drift.actions), or for an added or renamed tool.
	RuleDrift = "drift"
	// RuleBaselineRequired: --baseline require, and the tool has no
	// approved baseline.
	RuleBaselineRequired = "baseline_required"
	// RuleManualHold: a hold a person placed (gatehouse tools
	// quarantine); gatehouse tools list shows it as "manual" too.
	RuleManualHold = "manual"
	// RuleToolStateUnavailable: the tool-state store has not been read
	// successfully since the session started, so its holds and
	// baselines are unknown: no call is forwarded until they are (fail
	// closed); also the hold of a tool whose stored baseline cannot be
	// read.
	RuleToolStateUnavailable = "tool_state_unavailable"
)

// CodeQuarantined is the JSON-RPC error code of a tools/call the gateway
// answered because the tool is quarantined (docs/drift.md).
const CodeQuarantined = -32084

// ToolRecorder is an Evidence that also records the gateway's own tool
// states in the audit ledger (audit.Recorder): first-use baselines
// (ledger kind tool_baseline, a toolstate.BaselineRecord) and holds
// (tool_quarantine, a toolstate.QuarantineRecord). RecordTools appends
// them as one group (one commit) and returns once they are durable, or the
// error.
type ToolRecorder interface {
	RecordTools(recs []ToolRecord) error
}

// ToolRecord is one record for a ToolRecorder: its ledger kind and its
// payload (encoded RFC 8785 by the recorder).
type ToolRecord struct {
	Kind    string
	Payload any
}

// Ledger kinds of the records a ToolRecorder writes (internal/ledger's
// KindToolBaseline and KindToolQuarantine; the gateway does not import
// the ledger).
const (
	kindToolBaseline   = "tool_baseline"
	kindToolQuarantine = "tool_quarantine"
)

// drift statuses of a listed tool (policy.DriftStatuses).
const (
	driftNone    = "none"
	driftChanged = "changed"
	driftAdded   = "added"
	driftRenamed = "renamed"
)

// driftTracker compares every tools/list the session sees with the
// server's approved baselines (docs/drift.md; evidence.md §7): it
// classifies each listed definition (package drift), takes baselines on
// first use, places holds for the drift actions that quarantine, keeps
// the store's observations current, writes a gatehouse.drift.v1 event per
// change, and answers, per call, what the tool's drift decides.
//
// Baselines and holds live in a toolstate.Store shared with other
// gateways and with the review commands; the tracker keeps a copy and
// reloads it when the store's Version moves (polled at most once per
// pollEvery, on a call or a listing). It is safe for concurrent use.
type driftTracker struct {
	store      toolstate.Store
	serverID   string
	by         string // the gateway's id: first-use baselines, automatic holds
	settings   policy.Drift
	pol        *policy.Policy
	principal  policy.Principal
	shadow     bool
	directives func(mcp.Tool) []string
	log        *slog.Logger
	emit       func(decisionlog.Drift)
	recorder   ToolRecorder // nil without the audit ledger
	changed    func()       // the catalog's cached decisions no longer hold
	pollEvery  time.Duration

	mu        sync.Mutex
	baselines map[string]baselineDef
	holds     map[string]toolstate.Quarantine
	listed    map[string]*toolDrift
	version   int64
	loaded    bool // the store's state was read once (installLocked)
	// firstListing: the listing being read started while the server had
	// no baselines (observe's first page); cleared when it completes.
	firstListing bool
	polled       time.Time
	reported     map[string]string // tool -> what its last drift event said
	polling      atomic.Bool       // a poll runs
	// local counts the tracker's own changes of baselines and holds: a
	// poll that read the store before one of them does not install what
	// it read (it would undo the change until the next poll).
	local uint64
	// unstored are the holds the store could not record: kept in force
	// whatever the store says until a poll writes them (storeUnstored).
	unstored map[string]bool
	// unstoredBase are the first-use baselines the store could not
	// record: kept across reloads while the store has none of the tool.
	unstoredBase map[string]bool
	// records are the ledger records of a listing (or a call's hold)
	// not written yet: flushLocked writes them in one group.
	records []ToolRecord
}

// baselineDef is a baseline with its definition read back.
type baselineDef struct {
	b    toolstate.Baseline
	tool mcp.Tool
}

// toolDrift is a listed tool's drift.
type toolDrift struct {
	tool        mcp.Tool // the listed definition
	hash        string
	status      string // driftNone, driftChanged, driftAdded, driftRenamed
	renamedFrom string
	result      drift.Result
	// viewed is view()'s value, made once (d.mu held): the policy's drift
	// variable is read, never written, by the calls that share it.
	viewed *policy.DriftView
}

// defaultPollEvery is how often a tracker asks the store whether another
// gateway or a review command changed it.
const defaultPollEvery = time.Second

// storeTimeout bounds one store call on the relay path.
const storeTimeout = 5 * time.Second

func newDriftTracker(cfg Config, log *slog.Logger, emit func(decisionlog.Drift), changed func(), directives func(mcp.Tool) []string) *driftTracker {
	st := cfg.Tools
	if st == nil {
		st = toolstate.NewMem()
	}
	settings := cfg.Policy.Drift()
	if cfg.Baseline != "" {
		settings.Baseline = cfg.Baseline
	}
	d := &driftTracker{
		store: st, serverID: cfg.ServerID, by: cfg.GatewayID, settings: settings, pol: cfg.Policy,
		principal: cfg.Principal, shadow: cfg.shadowMode(), directives: directives, log: log, emit: emit, changed: changed,
		pollEvery: cfg.ToolsPoll, baselines: map[string]baselineDef{}, holds: map[string]toolstate.Quarantine{},
		listed: map[string]*toolDrift{}, reported: map[string]string{},
	}
	if d.pollEvery <= 0 {
		d.pollEvery = defaultPollEvery
	}
	d.recorder, _ = cfg.Evidence.(ToolRecorder)
	if d.by == "" {
		d.by = "gatehouse"
	}
	d.mu.Lock()
	d.reloadLocked()
	d.mu.Unlock()
	return d
}

// load reads the server's baselines and holds from the store, with the
// store's version; no lock is held (the store may be a network away).
func (d *driftTracker) load() (v int64, baselines map[string]baselineDef, holds map[string]toolstate.Quarantine, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if v, err = d.store.Version(ctx); err != nil {
		return 0, nil, nil, fmt.Errorf("reading the store's version: %w", err)
	}
	states, err := d.store.Tools(ctx, d.serverID)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading baselines: %w", err)
	}
	baselines = map[string]baselineDef{}
	holds = map[string]toolstate.Quarantine{}
	for _, s := range states {
		if s.Baseline != nil {
			t, err := drift.Parse(s.Baseline.Definition)
			if err != nil {
				// Not a tool without a baseline (that would be added,
				// or taken again on first use): its drift is unknown,
				// so it is held, in this gateway, until a person
				// approves a definition again.
				d.log.Error("tool state: a stored baseline cannot be read; the tool is held until it is approved again", "tool_bytes", len(s.Tool), "err", err)
				holds[s.Tool] = toolstate.Quarantine{ServerID: d.serverID, Tool: s.Tool, Automatic: true, By: d.by, Rule: RuleToolStateUnavailable,
					Reason: "the tool's stored baseline cannot be read; approve it again (gatehouse tools approve)"}
			} else {
				baselines[s.Tool] = baselineDef{b: *s.Baseline, tool: t}
			}
		}
		if s.Quarantine != nil {
			holds[s.Tool] = *s.Quarantine
		}
	}
	return v, baselines, holds, nil
}

// reloadLocked is load installed (d.mu held). A store that cannot be read
// leaves the copy as it was (logged): holds already known stay in force.
func (d *driftTracker) reloadLocked() {
	v, baselines, holds, err := d.load()
	if err != nil {
		d.log.Error("tool state: " + err.Error())
		return
	}
	d.installLocked(v, baselines, holds)
}

// installLocked makes what load read the tracker's copy (d.mu held) and
// classifies the listed tools again against the baselines: a tool whose
// listed definition is now its baseline (approved elsewhere; a renamed
// tool approved under its new name too) has no drift.
func (d *driftTracker) installLocked(v int64, baselines map[string]baselineDef, holds map[string]toolstate.Quarantine) {
	for name := range d.unstored {
		if _, ok := holds[name]; !ok {
			holds[name] = d.holds[name]
		}
	}
	for name := range d.unstoredBase {
		if _, ok := baselines[name]; ok {
			delete(d.unstoredBase, name)
		} else if b, ok := d.baselines[name]; ok {
			baselines[name] = b
		}
	}
	old := d.baselines
	d.baselines, d.holds, d.version, d.loaded = baselines, holds, v, true
	d.polled = time.Now()
	var opts drift.Options
	for name, td := range d.listed {
		b, ok := d.baselines[name]
		if !ok {
			continue
		}
		switch {
		case b.b.Hash == td.hash:
			if td.status == driftChanged || td.status == driftAdded || td.status == driftRenamed {
				td.status, td.renamedFrom, td.result, td.viewed = driftNone, "", drift.Result{Action: drift.ActionAllow}, nil
			}
		case td.hash != "" && td.status != driftRenamed && (old[name].b.Hash != b.b.Hash):
			// The baseline was replaced elsewhere (an approval of
			// another gateway's definition, another's first use): the
			// listed definition is compared with the new one.
			if opts.Actions == nil {
				opts = drift.Options{Actions: d.actions(), Directives: d.directives}
			}
			td.status, td.renamedFrom, td.result, td.viewed = driftChanged, "", compareBaseline(b, td.tool, opts), nil
		}
	}
}

// compareBaseline is drift.Compare of a listed definition whose hash is
// not its baseline's: never "none" (hashes differ but nothing classified,
// a member outside the compared ones: still not the baseline, minor).
func compareBaseline(b baselineDef, t mcp.Tool, opts drift.Options) drift.Result {
	r := drift.Compare(b.tool, t, opts)
	if r.Severity == drift.None {
		r.Severity, r.Action = drift.Minor, opts.Actions[drift.Minor]
		r.Changes = []drift.Change{{Kind: drift.KindDescriptionChanged, Severity: drift.Minor}}
	}
	return r
}

// poll reloads the store's state when another writer changed it, at most
// once per pollEvery, and tells the catalog its cached decisions no longer
// hold. The store is read without d.mu held, so calls are not held up by
// it; one poll runs at a time.
func (d *driftTracker) poll() {
	d.mu.Lock()
	due := time.Since(d.polled) >= d.pollEvery
	if due {
		d.polled = time.Now()
	}
	d.mu.Unlock()
	if !due || !d.polling.CompareAndSwap(false, true) {
		return
	}
	defer d.polling.Store(false)
	d.storeUnstored()
	d.mu.Lock()
	version, loaded, local := d.version, d.loaded, d.local
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	v, err := d.store.Version(ctx)
	cancel()
	if err != nil {
		d.log.Error("tool state: polling the store failed", "err", err)
		return
	}
	if v == version && loaded {
		return
	}
	v, baselines, holds, err := d.load()
	if err != nil {
		d.log.Error("tool state: " + err.Error())
		return
	}
	d.mu.Lock()
	if d.local != local {
		// The tracker changed its copy while the store was read (a hold
		// placed, a baseline taken): what was read may predate it. The
		// next call or listing polls again.
		d.polled = time.Time{}
		d.mu.Unlock()
		return
	}
	if v >= d.version || !d.loaded {
		d.installLocked(v, baselines, holds)
	}
	d.mu.Unlock()
	if d.changed != nil {
		d.changed()
	}
}

// storeUnstored writes again the holds the store could not record (no
// lock held while it writes): once stored, a hold is the store's like any
// other, shown by gatehouse tools list and lifted by a person's release
// or approval.
func (d *driftTracker) storeUnstored() {
	d.mu.Lock()
	var qs []toolstate.Quarantine
	for name := range d.unstored {
		if q, ok := d.holds[name]; ok {
			qs = append(qs, q)
		}
	}
	d.mu.Unlock()
	for _, q := range qs {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err := d.store.Hold(ctx, q)
		cancel()
		if errors.Is(err, toolstate.ErrInvalid) {
			continue // a value no store keeps: held in this gateway only
		}
		if err != nil {
			return // still failing: tried again at the next poll
		}
		d.mu.Lock()
		if cur, ok := d.holds[q.Tool]; ok && cur.At.Equal(q.At) && cur.Rule == q.Rule {
			delete(d.unstored, q.Tool)
		}
		d.mu.Unlock()
	}
}

// pollSoonLocked polls on a goroutine of its own when a poll is due (d.mu
// held): a call never waits for the store; what the poll finds applies
// from the next call on.
func (d *driftTracker) pollSoonLocked() {
	if time.Since(d.polled) >= d.pollEvery && !d.polling.Load() {
		go d.poll()
	}
}

// observe classifies the tools of one tools/list page against the
// baselines, and with complete (the page ends a listing followed from its
// first page; all is that whole listing) also finds renamed and removed
// tools, takes first-use baselines and records the observations. It
// places the holds the drift actions (or a policy rule deciding
// quarantine on the tool alone) call for, writes a drift event per
// change, and returns the names of the page's tools held afterwards.
//
// first says the page starts a listing (no cursor): a listing that starts
// while the server has no baselines is the server's first, and its later
// pages are not "added" for the baselines its earlier pages took.
func (d *driftTracker) observe(page []mcp.Tool, first, complete bool, all []mcp.Tool, facts func(name string) *toolFacts) map[string]bool {
	d.poll()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.flushLocked() // before the page is relayed: the records are durable first
	opts := drift.Options{Actions: d.actions(), Directives: d.directives}
	now := time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()

	if first {
		d.firstListing = len(d.baselines) == 0
	}
	hadBaselines := len(d.baselines) > 0 && !d.firstListing
	if complete {
		defer func() { d.firstListing = false }()
	}
	for _, t := range page {
		hash, err := drift.Hash(t)
		if err != nil {
			d.log.Warn("tools/list: a tool definition cannot be canonicalized; compared as changed", "name_bytes", len(t.Name), "err", err)
		}
		td := &toolDrift{tool: t, hash: hash, status: driftNone, result: drift.Result{Action: drift.ActionAllow}}
		if b, ok := d.baselines[t.Name]; ok {
			if b.b.Hash != hash {
				td.status, td.result = driftChanged, compareBaseline(b, t, opts)
			}
		} else if hadBaselines || d.settings.Baseline == policy.BaselineRequire {
			td.status = driftAdded
			td.result = drift.AddedTool(t, opts)
			td.result.Action = string(d.settings.Added)
			if d.settings.Baseline == policy.BaselineRequire {
				// What its calls get (forCall: baseline_required), so
				// that the drift event and the stderr line say so.
				td.result.Action = string(policy.ActionDeny)
			}
		}
		d.listed[t.Name] = td
	}
	var removed []string
	if complete {
		listedNow := map[string]bool{}
		for _, t := range all {
			listedNow[t.Name] = true
		}
		for name := range d.listed {
			if !listedNow[name] {
				delete(d.listed, name)
			}
		}
		removed = d.renamesLocked(all, opts).Removed
		// First use: every listed tool without a baseline gets one,
		// except a rename (it stays flagged until approved).
		if d.settings.Baseline == policy.BaselineFirstUse {
			d.firstUseLocked(ctx, all, opts, now)
		}
	} else if hadBaselines {
		// A page of a listing not followed to its end (a client that
		// reads the first page only): a tool without a baseline whose
		// definition, name aside, is a baseline not on this page is
		// taken as renamed too, not as added. (A baseline listed on
		// another page under its own name makes that a false rename:
		// held, for a person to release; a complete listing finds
		// renames exactly.)
		d.renamesLocked(page, opts)
	} else if d.settings.Baseline == policy.BaselineFirstUse {
		// A listing the client never completes (it reads the first page
		// only, say) still takes first-use baselines of the tools it
		// lists, so that their drift in a later listing is found. Only
		// while the server has no baselines at all: then no listed tool
		// can be a rename, which only a complete listing could tell.
		d.firstUseLocked(ctx, page, opts, now)
	}

	// Holds, and what the listing says.
	held := map[string]bool{}
	// Added tools last, so that one listing a held definition under a
	// new name finds that hold placed.
	order := make([]mcp.Tool, 0, len(page))
	for _, added := range []bool{false, true} {
		for _, t := range page {
			if td := d.listed[t.Name]; td != nil && (td.status == driftAdded) == added {
				order = append(order, t)
			}
		}
	}
	for _, t := range order {
		td := d.listed[t.Name]
		rule, reason := "", ""
		if td.status != driftNone {
			rule, reason = d.listingDecision(t.Name, td, facts)
		}
		if rule == "" && td.status == driftAdded {
			if h := d.heldCopyLocked(t); h != "" {
				rule, reason = RuleDrift, "the tool is the definition of a quarantined tool under a new name"
			}
		}
		if _, ok := d.holds[t.Name]; !ok && rule != "" && !d.shadow {
			q := toolstate.Quarantine{ServerID: d.serverID, Tool: t.Name, Hash: td.hash, Automatic: true,
				Severity: td.result.Severity.String(), Changes: td.result.Decisive(), By: d.by, Rule: rule, Reason: reason, At: now}
			d.placeLocked(ctx, q)
		}
		if _, ok := d.holds[t.Name]; ok {
			held[t.Name] = true
		}
		if td.status != driftNone {
			d.report(t.Name, td, rule, reason)
		}
	}
	// The observations: of the whole listing when it is complete (the
	// removed tools too), else of the page's tools, so that a client that
	// reads only some pages still leaves definitions to review and
	// approve.
	{
		listedNow := page
		if complete {
			listedNow = all
		}
		obs := make([]toolstate.Observation, 0, len(listedNow)+len(removed))
		for _, t := range listedNow {
			td := d.listed[t.Name]
			if td == nil {
				continue
			}
			def, _ := drift.Canonical(t)
			obs = append(obs, toolstate.Observation{ServerID: d.serverID, Tool: t.Name, Hash: td.hash, Definition: def,
				Severity: td.result.Severity.String(), Changes: kinds(td.result.Changes), By: d.by, At: now})
		}
		for _, name := range removed {
			if _, renamed := renamedTo(d.listed, name); renamed {
				continue
			}
			obs = append(obs, toolstate.Observation{ServerID: d.serverID, Tool: name, Removed: true,
				Severity: drift.RemovedTool(name, opts).Severity.String(), Changes: []string{drift.KindToolRemoved}, By: d.by, At: now})
			d.report(name, &toolDrift{status: "removed", result: drift.RemovedTool(name, opts)}, "", "")
		}
		if err := d.store.Observe(ctx, obs); err != nil {
			d.log.Error("tool state: recording the listing failed", "err", err)
		}
		// d.version is not moved to the store's: a change another writer
		// made since the last load (a person's hold) would then never be
		// loaded; the next poll reloads instead.
	}
	return held
}

// firstUseLocked records a first-use baseline for every listed tool of
// tools without one (d.listed holds their drift), except a rename or a
// definition that cannot be canonicalized (d.mu held), and writes each
// baseline it won to the audit ledger. Another gateway's first use winning
// with another definition makes the tool's drift changed from that
// definition.
func (d *driftTracker) firstUseLocked(ctx context.Context, tools []mcp.Tool, opts drift.Options, now time.Time) {
	for _, t := range tools {
		td := d.listed[t.Name]
		if _, ok := d.baselines[t.Name]; ok || td == nil || td.status == driftRenamed || td.hash == "" {
			continue
		}
		def, err := drift.Canonical(t)
		if err != nil {
			continue
		}
		mine := toolstate.Baseline{ServerID: d.serverID, Tool: t.Name, Hash: td.hash,
			Definition: def, Origin: toolstate.OriginFirstUse, By: d.by, At: now}
		b, won, err := d.store.FirstUse(ctx, mine)
		switch {
		case errors.Is(err, toolstate.ErrInvalid):
			// A value no store keeps (an empty server id): no baseline.
			d.log.Error("tool state: a first-use baseline was refused as invalid", "err", err)
			continue
		case err != nil:
			// The store failed: kept in this gateway all the same (across
			// reloads, until the store has a baseline of the tool), so
			// that the tool's drift in a later listing is still found.
			d.log.Error("tool state: recording a first-use baseline failed; it is kept in this gateway only", "err", err)
			b = mine
			d.unstoredBase = setFlag(d.unstoredBase, t.Name)
		case won:
			d.record(kindToolBaseline, toolstate.BaselineRecord{ServerID: d.serverID, Tool: t.Name, Hash: b.Hash,
				Origin: b.Origin, ApprovedBy: b.By, ApprovedAt: toolstate.LedgerTime(b.At)})
		}
		if bt, err := drift.Parse(b.Definition); err == nil {
			d.baselines[t.Name] = baselineDef{b: b, tool: bt}
			d.local++
		}
		if b.Hash != td.hash {
			// Another gateway's first use won with another
			// definition: this one is drift from it.
			td.status, td.result = driftChanged, drift.Compare(d.baselines[t.Name].tool, t, opts)
		}
	}
}

// renamesLocked marks the tools of listed that are renames of a baseline
// not in listed (drift.CompareListing) as renamed, handled as
// drift.renamed says, and returns the comparison (d.mu held).
func (d *driftTracker) renamesLocked(listed []mcp.Tool, opts drift.Options) drift.Listing {
	base := map[string]mcp.Tool{}
	for n, b := range d.baselines {
		base[n] = b.tool
	}
	lst := drift.CompareListing(base, listed, opts)
	for newName, old := range lst.Renamed {
		if td := d.listed[newName]; td != nil {
			td.status, td.renamedFrom = driftRenamed, old
			td.result = lst.Changed[newName] // tool_renamed, and anything else that changed
			td.result.Action = string(d.settings.Renamed)
		}
	}
	return lst
}

// heldCopyLocked returns the name of a held tool whose listed definition
// is t's but for the name, "" when there is none (d.mu held): a server
// listing a quarantined definition again under a new name, to have it
// called as an added tool.
func (d *driftTracker) heldCopyLocked(t mcp.Tool) string {
	names := make([]string, 0, len(d.holds))
	for name := range d.holds {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		td := d.listed[name]
		if td == nil || td.hash == "" || name == t.Name {
			continue
		}
		c := t
		c.Name = name
		if h, err := drift.Hash(c); err == nil && h == td.hash {
			return name
		}
	}
	return ""
}

// renamedTo reports whether a listed tool is the rename of old.
func renamedTo(listed map[string]*toolDrift, old string) (string, bool) {
	for n, td := range listed {
		if td.status == driftRenamed && td.renamedFrom == old {
			return n, true
		}
	}
	return "", false
}

// listingDecision returns the rule and reason that hold a listed tool
// with drift td, or "" when nothing holds it: a policy rule deciding
// quarantine for the tool alone (no arguments: its conditions see the
// tool, its drift and the session's principal), else the drift block's
// action when it is quarantine (d.mu held).
func (d *driftTracker) listingDecision(name string, td *toolDrift, facts func(string) *toolFacts) (rule, reason string) {
	if f := facts(name); f != nil && d.pol != nil {
		dec := d.pol.Evaluate(&policy.Input{Principal: d.principal, ServerID: d.serverID, Tool: f.policyTool(name),
			ToolView: f.viewFor(name), Drift: td.view()})
		if dec.Action == policy.ActionQuarantine {
			return dec.Rule, dec.Reason
		}
	}
	if td.result.Action == drift.ActionQuarantine {
		return RuleDrift, td.reason()
	}
	return "", ""
}

// report writes the drift event of a tool once per distinct drift.
func (d *driftTracker) report(name string, td *toolDrift, rule, reason string) {
	if d.emit == nil {
		return
	}
	key := td.status + "\x00" + td.hash + "\x00" + td.result.Severity.String()
	if d.reported[name] == key {
		return
	}
	d.reported[name] = key
	ev := decisionlog.Drift{ServerID: d.serverID, Tool: name, Status: td.status, RenamedFrom: td.renamedFrom,
		Severity: td.result.Severity.String(), Action: td.result.Action, Changes: td.result.Decisive(),
		DefinitionHash: td.hash, Method: mcp.MethodToolsList}
	if ev.Changes == nil {
		ev.Changes = []string{}
	}
	for _, c := range td.result.Changes {
		ev.AllChanges = append(ev.AllChanges, decisionlog.DriftChange{Kind: c.Kind, Path: c.Path, Severity: c.Severity.String(), From: c.From, To: c.To})
	}
	if b, ok := d.baselines[name]; ok {
		ev.BaselineHash = b.b.Hash
	}
	if q, ok := d.holds[name]; ok {
		ev.Held, ev.MatchedRule, ev.Reason = true, q.Rule, q.Reason
	} else if rule != "" {
		ev.MatchedRule, ev.Reason = rule, reason
		if d.shadow {
			// What enforcing would have done at this listing: hold the
			// tool for every later call (report shadow counts it).
			ev.ShadowMode = true
			ev.ShadowDecisions = []decisionlog.ShadowDecision{{Action: string(policy.ActionQuarantine), MatchedRule: rule, Reason: reason, Stage: StageDrift}}
			d.log.Warn("shadow mode: the tool would have been quarantined", "server", linesafe.Text(d.serverID), "tool", linesafe.Text(name), "rule", linesafe.Text(rule))
		}
	}
	d.emit(ev)
}

// actions is the drift block's actions as package drift takes them.
func (d *driftTracker) actions() drift.Actions {
	a := drift.Actions{}
	for sev, act := range d.settings.Actions {
		if s, ok := drift.ParseSeverity(sev); ok {
			a[s] = string(act)
		}
	}
	return a
}

// callDrift is what a tool's drift means for one call.
type callDrift struct {
	view   *policy.DriftView
	result *evidence.DriftResult
	// verdict is the drift's verdict, decided false when drift says
	// nothing (allow).
	verdict pipeline.Verdict
	decided bool
	hash    string
	// warnings are the drift's warnings (drift.Result.Warnings), for the
	// decision receipt.
	warnings []string
}

// forCall returns what tool name's drift decides for a call to its
// catalogued definition with drift.Hash hash: a hold quarantines it; else
// an added tool under --baseline require is denied; else a definition the
// tracker has not compared yet (the catalog took a listing that observe
// has not reached) is denied when it is not the baseline; else the drift
// block's action for its status and severity applies. Before the tool
// state could be read once, every call is denied.
func (d *driftTracker) forCall(name string, known bool, hash string) callDrift {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pollSoonLocked() // one lock per call
	var out callDrift
	if !d.loaded {
		// The holds are unknown: a held tool must not be called.
		out.verdict = pipeline.Verdict{Action: pipeline.Deny, Stage: StageDrift, Rule: RuleToolStateUnavailable, ReasonCode: RuleToolStateUnavailable,
			Reason: "the tool state (baselines and quarantines) could not be read; no call is forwarded until it is", Code: CodeDenied}
		out.decided = true
		return out
	}
	td := d.listed[name]
	if td != nil && known {
		out.hash = td.hash
		if td.viewed == nil {
			td.viewed = td.view()
		}
		out.view = td.viewed
		if td.status != driftNone {
			out.result = td.evidence()
			out.warnings = td.result.Warnings
		}
	}
	// A hold holds whatever the tool lists now: a definition that changed
	// again, even back to its baseline, is for a person to release.
	if q, ok := d.holds[name]; ok {
		rule := q.Rule
		if rule == "" {
			rule = RuleManualHold
		}
		reason := q.Reason
		if reason == "" {
			reason = "the tool is quarantined"
		}
		out.verdict = pipeline.Verdict{Action: pipeline.Quarantine, Stage: StageDrift, Rule: rule, ReasonCode: "quarantined", Reason: reason, Code: CodeQuarantined}
		out.decided = true
		if out.result == nil {
			out.result = &evidence.DriftResult{Severity: orNone(q.Severity), Action: string(policy.ActionQuarantine), Changes: nonNil(q.Changes)}
		} else {
			out.result.Action = string(policy.ActionQuarantine)
		}
		return out
	}
	if !known {
		return out
	}
	if hash == "" {
		// RFC 8785 cannot carry the definition (a number beyond
		// float64's exact integers): it has no hash, so it can have no
		// baseline and its drift can never be found. Refused (fail
		// closed) rather than called as a tool that never drifts.
		out.verdict = pipeline.Verdict{Action: pipeline.Deny, Stage: StageDrift, Rule: RuleDrift, ReasonCode: "drift",
			Reason: "the tool's definition cannot be canonicalized (RFC 8785), so it cannot be compared with a baseline", Code: CodeDenied}
		out.decided = true
		return out
	}
	b, hasBaseline := d.baselines[name]
	if !hasBaseline && d.settings.Baseline == policy.BaselineRequire {
		out.verdict = pipeline.Verdict{Action: pipeline.Deny, Stage: StageDrift, Rule: RuleBaselineRequired, ReasonCode: "baseline_required",
			Reason: "no approved baseline for this tool of server " + strconv.Quote(d.serverID) + " (--baseline require): a person reviews it with gatehouse tools diff and approves the hash it prints with gatehouse tools approve", Code: CodeDenied}
		out.decided = true
		if out.result == nil {
			out.result = &evidence.DriftResult{Severity: drift.Moderate.String(), Action: string(policy.ActionDeny), Changes: []string{drift.KindToolAdded}}
		} else {
			out.result.Action = string(policy.ActionDeny)
		}
		return out
	}
	if td == nil || td.hash != hash {
		// The catalog has a definition the tracker has not compared
		// yet: a call decided between a listing's cataloguing and its
		// comparison. Not the baseline: refused (fail closed); the
		// comparison follows at once. A tool with no baseline on a
		// server with baselines is refused too: the comparison will find
		// it added or renamed, which drift.added and drift.renamed may
		// hold.
		if (hasBaseline && b.b.Hash != hash) || (!hasBaseline && len(d.baselines) > 0 && !d.firstListing) {
			out.verdict = pipeline.Verdict{Action: pipeline.Deny, Stage: StageDrift, Rule: RuleDrift, ReasonCode: "drift",
				Reason: "the tool's listed definition is not its baseline and has not been compared with it yet; try again", Code: CodeDenied}
			out.decided = true
		}
		out.view, out.result, out.warnings, out.hash = nil, nil, nil, hash
		return out
	}
	if td.status == driftNone {
		return out
	}
	act, err := pipeline.ParseAction(td.result.Action)
	if err != nil || act == pipeline.Allow {
		return out
	}
	out.verdict = pipeline.Verdict{Action: act, Stage: StageDrift, Rule: RuleDrift, ReasonCode: "drift", Reason: td.reason()}
	switch act {
	case pipeline.Deny:
		out.verdict.Code = CodeDenied
	case pipeline.Quarantine:
		// A quarantine the listing did not place (shadow mode): the
		// verdict says what would have happened.
		out.verdict.Code = CodeQuarantined
	}
	out.decided = true
	return out
}

// holdFromDecision holds tool name after a call's policy decided
// quarantine (a rule whose condition read the call): every later call is
// held too, until a person releases it.
func (d *driftTracker) holdFromDecision(name, hash, rule, reason string) {
	if d.shadow {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.holds[name]; ok {
		return
	}
	q := toolstate.Quarantine{ServerID: d.serverID, Tool: name, Hash: hash, Automatic: true, By: d.by, Rule: rule, Reason: reason, At: time.Now().UTC()}
	if td := d.listed[name]; td != nil {
		q.Severity, q.Changes = td.result.Severity.String(), td.result.Decisive()
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d.placeLocked(ctx, q)
	d.flushLocked()
}

// placeLocked holds q.Tool (d.mu held): in the store (a hold it cannot
// record stays in force in this gateway for the run), in the audit ledger
// (a tool_quarantine entry) and on stderr.
func (d *driftTracker) placeLocked(ctx context.Context, q toolstate.Quarantine) {
	if err := d.store.Hold(ctx, q); err != nil {
		d.log.Error("tool state: recording a quarantine failed; the tool is held in this gateway only", "err", err)
		d.unstored = setFlag(d.unstored, q.Tool)
	}
	d.holds[q.Tool] = q
	d.local++
	d.log.Warn("tool quarantined: its calls are answered by the gateway until it is reviewed (gatehouse tools diff, approve or release)",
		"server", linesafe.Text(q.ServerID), "tool", linesafe.Text(q.Tool), "rule", linesafe.Text(q.Rule), "severity", q.Severity)
	d.record(kindToolQuarantine, toolstate.QuarantineRecord{ServerID: q.ServerID, Tool: q.Tool, Hash: q.Hash, Automatic: true,
		Severity: q.Severity, Changes: q.Changes, Rule: q.Rule, QuarantinedBy: q.By, Reason: q.Reason, QuarantinedAt: toolstate.LedgerTime(q.At)})
}

// record queues one of the gateway's tool-state records for the audit
// ledger, when it is on (d.mu held); flushLocked writes them.
func (d *driftTracker) record(kind string, v any) {
	if d.recorder != nil {
		d.records = append(d.records, ToolRecord{Kind: kind, Payload: v})
	}
}

// flushLocked writes the queued records in one group (d.mu held); a
// failure is logged (the state itself is in the store).
func (d *driftTracker) flushLocked() {
	if len(d.records) == 0 {
		return
	}
	recs := d.records
	d.records = nil
	if err := d.recorder.RecordTools(recs); err != nil {
		d.log.Error("audit ledger: recording the tool states failed", "records", len(recs), "err", err)
	}
}

// listing returns what the client's tools/list shows of the page's tools:
// hide names the tools left out (held ones under listing: hide, and with
// hide_denied the ones the policy denies to the caller whatever the
// arguments), mark the held ones shown with a notice (listing: mark).
func (d *driftTracker) listing(page []mcp.Tool, held map[string]bool, facts func(string) *toolFacts) (hide, mark map[string]string) {
	if d.shadow {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range page {
		if held[t.Name] {
			q := d.holds[t.Name]
			if d.settings.Listing == policy.ListingHide {
				hide = setName(hide, t.Name, q.Reason)
			} else {
				mark = setName(mark, t.Name, q.Reason)
			}
			continue
		}
		if d.settings.HideDenied && d.pol != nil && d.pol.DependsOnlyOnTool() {
			if f := facts(t.Name); f != nil {
				var view *policy.DriftView
				if td := d.listed[t.Name]; td != nil {
					view = td.view()
				}
				dec := d.pol.Evaluate(&policy.Input{Principal: d.principal, ServerID: d.serverID, Tool: f.policyTool(t.Name), ToolView: f.viewFor(t.Name), Drift: view})
				if dec.Action == policy.ActionDeny {
					hide = setName(hide, t.Name, dec.Reason)
				}
			}
		}
	}
	return hide, mark
}

func setFlag(m map[string]bool, name string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[name] = true
	return m
}

func setName(m map[string]string, name, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[name] = v
	return m
}

// view is the policy's drift variable for td.
func (td *toolDrift) view() *policy.DriftView {
	return &policy.DriftView{Status: td.status, Severity: td.result.Severity.String(), Action: orAllow(td.result.Action),
		Changes: nonNil(td.result.Decisive()), AllChanges: nonNil(kinds(td.result.Changes))}
}

// evidence is td's drift_result (evidence.md §6).
func (td *toolDrift) evidence() *evidence.DriftResult {
	return &evidence.DriftResult{Severity: td.result.Severity.String(), Action: orAllow(td.result.Action), Changes: nonNil(td.result.Decisive())}
}

// reason is a display-safe sentence for td's drift: its status, severity
// and deciding changes (change kinds are fixed vocabulary).
func (td *toolDrift) reason() string {
	switch td.status {
	case driftAdded:
		return "the tool has no approved baseline (added since the baseline was taken)"
	case driftRenamed:
		return "the tool is a renamed tool with an approved baseline (" + strings.Join(td.result.Decisive(), ", ") + ")"
	}
	return "the tool's definition drifted from its approved baseline (" + td.result.Severity.String() + ": " + strings.Join(td.result.Decisive(), ", ") + ")"
}

func kinds(cs []drift.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orAllow(a string) string {
	if a == "" {
		return string(policy.ActionAllow)
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return drift.None.String()
	}
	return s
}

// driftJSON is the decision event's drift_result, nil when there is none.
func driftJSON(r *evidence.DriftResult) json.RawMessage {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

// emitDrift writes a drift event to the decision log (without one, to
// the diagnostic logger).
func (s *Session) emitDrift(ev decisionlog.Drift) {
	if s.cfg.Log == nil {
		s.log.Warn("tools/list: tool drift", "server", linesafe.Text(ev.ServerID), "tool", linesafe.Text(ev.Tool), "status", ev.Status,
			"severity", ev.Severity, "action", ev.Action, "changes", strings.Join(ev.Changes, ","), "held", ev.Held)
		return
	}
	if _, err := s.cfg.Log.Emit(decisionlog.TypeDrift, ev); err != nil {
		s.log.Error("decision log write failed", "err", err)
	}
}

// directives returns the ids of the poisoning and injection findings in
// t's description (the scanner's tool scan), nil without a scanner: a
// directive the baseline's description did not have makes a description
// edit at least high drift (docs/drift.md).
func (s *Session) directives(t mcp.Tool) []string {
	if s.scan == nil {
		return nil
	}
	var out []string
	for _, f := range s.scan.toolFindings(t, nil) {
		if (f.Class == string(scan.ClassPoisoning) || f.Class == string(scan.ClassInjection)) && strings.HasPrefix(f.Path, "/description") {
			out = append(out, f.Rule)
		}
	}
	return out
}
