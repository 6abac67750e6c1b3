// Package audit records the evidence of every tools/call: it implements
// gateway.Evidence with gateway decision receipts (package evidence)
// appended to the audit ledger (package ledger), as shared/spec/evidence.md
// §1 and §9.1 ("Per-call evidence, second cut") describe:
//
//	decide -> the decision record (one ledger entry, durable before the
//	call is forwarded or answered)
//	response -> find/verify the server receipt (or synthesize one)
//	-> receipts.require, receipt rules -> the outcome record (one ledger
//	entry, durable before the response is relayed)
//
// Each record is one ledger entry, and the entry is the audit event: its
// record_id is the record's audit_event_id. The decision record is of kind
// "gateway_decision", the outcome record of kind "gateway_outcome"; each
// has its own gateway_decision_id, and the outcome names the decision it
// completes (completes_decision_id) and carries the server receipt exactly
// as received (server_receipt_base64) or as synthesized. The lineage
// server_receipt_id -> gateway_decision_id -> audit_event_id is walkable
// both ways from the stored payloads (docs/ledger.md, "Per-call records").
//
// The server's own evidence is checked too (docs/evidence.md §2): a
// receipt's tool_schema_hash and tool_description_hash against the
// gateway's hashes of the listed tool (conflicts), its chain (ledger_id,
// ledger_seq, previous_hash) across the session's calls
// (evidence.ChainTracker: a repeat, a gap or a broken link is tampered),
// and a tool-level receipt (a full receipt in the listed tool's security
// _meta) is referenced by the decision records of calls to that tool.
package audit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// Ledger entry kinds written by the Recorder (ledger.KindGatewayDecision,
// ledger.KindGatewayOutcome).
const (
	// KindGatewayDecision is the decision record of a call.
	KindGatewayDecision = ledger.KindGatewayDecision
	// KindGatewayOutcome is the outcome record of a forwarded call.
	KindGatewayOutcome = ledger.KindGatewayOutcome
)

// maxStoredReceipt is the largest server receipt (its JSON bytes) an
// outcome record carries; a larger one is referenced by id and hash only,
// with a warning, so that the record stays within ledger.MaxPayload once
// base64-encoded.
const maxStoredReceipt = 512 << 10

// WarnToolHashesNotCompared is the outcome warning of a receipt that
// carries tool_schema_hash or tool_description_hash for a tool the
// gateway has not seen listed: there is nothing to compare them with.
const WarnToolHashesNotCompared = "receipt tool_schema_hash and tool_description_hash not compared: tool not listed by the server"

// RuleReceiptRequirement is the matched_rule of an outcome that
// receipts.require denied or monitored.
const RuleReceiptRequirement = "receipts.require"

// Appender is the part of *ledger.Ledger the Recorder uses: EnqueueAll
// queues the records of one phase of a call as one group, committed in one
// transaction, and returns a wait for their durability
// (ledger.Ledger.EnqueueAll).
type Appender interface {
	EnqueueAll(ctx context.Context, recs []ledger.Record) (wait func() ([]ledger.Entry, error), err error)
}

var _ Appender = (*ledger.Ledger)(nil)

// DeferredAppender is an Appender that can let a group ride the next group
// commit (ledger.Ledger.EnqueueAllDeferred); Config.DeferOutcome needs one.
type DeferredAppender interface {
	Appender
	EnqueueAllDeferred(ctx context.Context, recs []ledger.Record, within time.Duration) (wait func() ([]ledger.Entry, error), err error)
}

var _ DeferredAppender = (*ledger.Ledger)(nil)

// Config configures a Recorder.
type Config struct {
	// Ledger receives every record; required.
	Ledger Appender
	// Keys verify server receipts per server_id.
	Keys evidence.Keys
	// ReceiptKeys are the result._meta keys a server receipt is read from;
	// nil means evidence.DefaultReceiptKeys.
	ReceiptKeys []string
	// Require is receipts.require for the server: none, present or
	// verified ("" is none).
	Require evidence.Requirement
	// GatewayID names this gateway instance in its receipts.
	GatewayID string
	// Timeout bounds one ledger append (from queueing to durable); <= 0
	// means 10 seconds. Appends queued within a hundredth of it (at most
	// 10 ms) share one deadline, so an append may be given up to that much
	// longer.
	Timeout time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// DeferOutcome, when > 0, lets each outcome record ride the next
	// group commit, at most this long after the response (evidence.md
	// §9.1, docs/ledger.md "Per-call records"): the response is relayed
	// without waiting for the outcome to be durable, saving a commit per
	// call when calls are sparse; a crash in that window leaves the
	// decision without its outcome ("outcome unknown" in `gatehouse ledger
	// verify`). A failure to write it later is logged. 0 (the default):
	// the outcome is durable before the response reaches the client.
	// Requires a DeferredAppender.
	DeferOutcome time.Duration
	// Policy, when it has receipt rules (rules whose condition reads
	// `receipt`), decides each forwarded call again on its response, after
	// Require (policy.EvaluateReceipt): a deny withholds the response
	// like receipts.require does, naming the rule. Nil: no receipt rules.
	Policy *policy.Policy
}

// Recorder implements gateway.Evidence. It is safe for concurrent use.
type Recorder struct {
	cfg       Config
	log       *slog.Logger
	tools     *toolCache
	deadlines *deadlines
	// chains follows the server's receipt chain across the session's
	// calls (evidence.ChainTracker).
	chains *evidence.ChainTracker
}

var _ gateway.Evidence = (*Recorder)(nil)

// New returns a Recorder. It returns an error when cfg.Ledger is nil or
// cfg.Require is not a known requirement.
func New(cfg Config) (*Recorder, error) {
	if cfg.Ledger == nil {
		return nil, errors.New("audit: no ledger")
	}
	if cfg.Require == "" {
		cfg.Require = evidence.RequireNone
	}
	if _, err := evidence.ParseRequirement(string(cfg.Require)); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if _, ok := cfg.Ledger.(DeferredAppender); cfg.DeferOutcome > 0 && !ok {
		return nil, errors.New("audit: DeferOutcome needs a ledger that can defer a group (DeferredAppender)")
	}
	if cfg.Policy != nil && !cfg.Policy.HasReceiptRules() {
		cfg.Policy = nil // nothing to evaluate on responses
	}
	if cfg.ReceiptKeys == nil {
		cfg.ReceiptKeys = evidence.DefaultReceiptKeys
	}
	if cfg.GatewayID == "" {
		cfg.GatewayID, _ = os.Hostname()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &Recorder{cfg: cfg, log: lg, tools: newToolCache(cfg.Keys), deadlines: newDeadlines(cfg.Timeout), chains: evidence.NewChainTracker()}, nil
}

// state is what Decided leaves on the gateway.Call for Responded.
type state struct {
	receipt *evidence.GatewayDecisionReceipt
	facts   evidence.CallFacts
	// tool is the facts of the call's tool definition; nil means
	// Responded looks them up.
	tool *toolFacts
	// ticket is the call's place among the forwarded calls, for the
	// receipt chain (zero when not forwarded).
	ticket evidence.ChainTicket
}

// Decided queues the decision record of one tools/call (one ledger entry of
// kind gateway_decision, whose record_id is the record's audit_event_id)
// and returns a wait that returns once it is durable in the ledger. A denied call's receipt has response_scan_result
// not_run. When c.Tool (Known) lists a tool-level server receipt in its
// security _meta (evidence.FindToolReceipt), the record references it as
// server_receipt_id, with its status, hash and bytes as listed: so does a
// decision made before forwarding (deny, quarantine). A forwarded call
// with an id takes its place in the server's receipt chain here, before
// it can reach the server. The wait's errors are the ledger's (wrapped): the gateway then
// fails closed as configured. c.Arguments and c.Meta are read before
// Decided returns, never after.
func (r *Recorder) Decided(c *gateway.Call) (wait func() error) {
	now := time.Now()
	var warnings []string
	inputHash, err := evidence.InputHash(c.Arguments)
	if err != nil {
		// Numbers JSON cannot carry exactly are an explicit error path
		// (evidence.md §3): no hash rather than a rounded one.
		warnings = append(warnings, "input_hash not computed: "+errorClass(err))
	}
	argKeys, _ := evidence.ArgumentKeys(c.Arguments)
	for i, k := range argKeys {
		if c.SecretNames[k] {
			// A secret used as an argument name: the record keeps that
			// there was such a key, not the key.
			argKeys[i] = "[REDACTED_NAME]"
		}
	}
	// What depends only on the tool definition (declaration, schema and
	// description hashes, normalized intent) is computed once per
	// definition.
	tf := r.tools.get(c)
	if !c.Known {
		warnings = append(warnings, "tool not listed by the server")
	} else if tf.schemaWarning != "" {
		warnings = append(warnings, tf.schemaWarning)
	}
	warnings = append(warnings, tf.intent.Warnings()...) // metadata_conflict:<field> (evidence.md §4)
	warnings = append(warnings, c.DriftWarnings...)      // the tool's drift (docs/drift.md)
	d := c.Decision
	rc := &evidence.GatewayDecisionReceipt{
		GatewayDecisionID:   evidence.NewGatewayDecisionID(),
		SchemaVersion:       evidence.SchemaVersion,
		IssuedAt:            evidence.Timestamp(now),
		GatewayID:           r.cfg.GatewayID,
		ServerID:            c.ServerID,
		ToolName:            c.Name,
		ActorRefID:          c.Principal.ID,
		Role:                c.Principal.Role,
		Action:              string(d.Action),
		MatchedRule:         d.Rule,
		Reason:              d.Reason,
		PolicyVersion:       d.PolicyVersion,
		MetadataConfidence:  tf.confidence,
		Warnings:            warnings,
		ArgumentScanResult:  argumentScan(c.ArgumentScan, argKeys),
		DriftResult:         c.DriftResult,
		ShadowMode:          c.ShadowMode,
		ShadowDecisions:     receiptShadows(nil, d.Shadows),
		AuditEventID:        evidence.NewAuditEventID(),
		InputHash:           inputHash,
		ToolSchemaHash:      tf.schemaHash,
		ToolDescriptionHash: tf.descHash,
		Phase:               evidence.PhaseDecision,
		DecisionEventID:     c.DecisionEventID,
	}
	if !c.Forwarded {
		rc.ResponseScanResult = evidence.HeldResponseScan()
	}
	if tr := tf.receipt; tr != nil {
		// The listed tool's own server receipt, issued before any call:
		// the evidence this decision (made before forwarding, be it a
		// deny or a quarantine) rests on, referenced and kept as listed.
		rc.ServerReceiptID = tr.id
		rc.ServerReceiptStatus = tr.status
		rc.ServerReceiptHash = tr.hash
		if len(tr.raw) <= maxStoredReceipt {
			rc.ServerReceiptBase64 = base64.StdEncoding.EncodeToString(tr.raw)
		} else {
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("%sof %d bytes not stored (limit %d); referenced by id and hash", toolReceiptWarning, len(tr.raw), maxStoredReceipt))
		}
		rc.Warnings = append(rc.Warnings, tr.warnings...)
	}
	st := &state{
		receipt: rc,
		tool:    tf,
		facts: evidence.CallFacts{
			ServerID: c.ServerID, ToolName: c.Name, ToolCallID: c.ToolCallID,
			InputHash: inputHash, ArgumentKeys: argKeys,
			ToolSchemaHash: tf.schemaHash, ToolDescriptionHash: tf.descHash,
		},
	}
	if c.Forwarded && c.ID.Present() {
		// Before the call can reach the server: a receipt lower than one
		// that arrives later is then known to be possible.
		st.ticket = r.chains.Sent()
	}
	c.State = st
	return r.write(KindGatewayDecision, rc)
}

// receiptShadows appends the shadow decisions ds to out as a receipt's
// shadow_decisions (the decision event's names, evidence.ShadowDecision);
// a decision without a stage is the evidence stage's own.
func receiptShadows(out []evidence.ShadowDecision, ds []policy.ShadowDecision) []evidence.ShadowDecision {
	for _, sd := range ds {
		stage := sd.Stage
		if stage == "" {
			stage = gateway.StageEvidence
		}
		out = append(out, evidence.ShadowDecision{Action: string(sd.Action), MatchedRule: sd.Rule, Reason: sd.Reason, Stage: stage})
	}
	return out
}

// argumentScan is the argument_scan_result of a decision record: the
// gateway's scan with the argument keys, or not_run without a scanner.
func argumentScan(scanned *evidence.ScanResult, keys []string) *evidence.ScanResult {
	if scanned == nil {
		return &evidence.ScanResult{Status: evidence.ScanNotRun, Reason: "no argument scanners configured", ArgumentKeys: keys}
	}
	r := *scanned
	r.ArgumentKeys = keys
	return &r
}

// severity orders the action vocabulary (evidence.Actions, least severe
// first); -1 for a name outside it.
func severity(a string) int { return slices.Index(evidence.Actions, a) }

// failed is a wait that reports err.
func failed(err error) func() error { return func() error { return err } }

// Responded queues the outcome record of a forwarded call (one ledger entry
// of kind gateway_outcome): a new gateway decision receipt with its own
// gateway_decision_id and audit_event_id, naming the decision it completes
// (completes_decision_id), with the final action, the response scan and
// the server receipt — verified by the gateway and kept exactly as
// received, or synthesized when the server sent none. What the decision
// record already holds (the argument scan, the input and tool hashes, the
// decision's warnings) is not repeated. resp is read before Responded
// returns, never after. The returned wait reports withhold true when
// receipts.require or a receipt rule denies the receipt, or when the
// outcome could not be recorded.
func (r *Recorder) Responded(c *gateway.Call, resp *jsonrpc.Message) (wait func() (bool, string)) {
	st, ok := c.State.(*state)
	if !ok {
		return func() (bool, string) { return false, "" }
	}
	now := time.Now()
	// The outcome record carries what the outcome adds (the final action,
	// the response, the server receipt) and names the decision for the
	// rest: what only the request determined (argument scan, input and
	// tool hashes, the decision's warnings) is in the decision record, not
	// repeated.
	d := st.receipt
	rc := evidence.GatewayDecisionReceipt{
		GatewayDecisionID:   evidence.NewGatewayDecisionID(),
		SchemaVersion:       d.SchemaVersion,
		IssuedAt:            evidence.Timestamp(now),
		GatewayID:           d.GatewayID,
		ServerID:            d.ServerID,
		ToolName:            d.ToolName,
		ActorRefID:          d.ActorRefID,
		Role:                d.Role,
		Action:              d.Action,
		MatchedRule:         d.MatchedRule,
		Reason:              d.Reason,
		PolicyVersion:       d.PolicyVersion,
		ShadowMode:          d.ShadowMode,
		ShadowDecisions:     receiptShadows(nil, c.ResponseShadows),
		AuditEventID:        evidence.NewAuditEventID(),
		Phase:               evidence.PhaseOutcome,
		CompletesDecisionID: d.GatewayDecisionID,
	}
	facts := st.facts
	var raw []byte
	var sr *evidence.ServerReceipt
	status := evidence.StatusEmpty
	if resp.Result != nil {
		if h, err := evidence.Hash(resp.Result); err == nil {
			rc.OutputHash = h
		} else {
			rc.Warnings = append(rc.Warnings, "output_hash not computed: "+errorClass(err))
		}
		if found, key, ok := evidence.Find(resp.Result, r.cfg.ReceiptKeys); ok {
			raw = found // read before Responded returns: encoded below
			if without, err := evidence.WithoutReceipt(resp.Result, key); err == nil {
				facts.OutputHash, _ = evidence.Hash(without)
			}
			p, problems, err := evidence.Parse(raw)
			if err == nil {
				sr = p
			}
			for _, pr := range problems {
				rc.Warnings = append(rc.Warnings, "server receipt: "+pr.String())
			}
			status = evidence.VerifyAs(raw, sr, r.cfg.Keys, c.ServerID)
		} else {
			facts.OutputHash = rc.OutputHash // the same value: no receipt to leave out
		}
	}
	conflicts := 0
	if sr != nil {
		cs := evidence.Conflicts(sr, facts)
		conflicts = len(cs)
		rc.Warnings = append(rc.Warnings, cs...)
		if !c.Known && (sr.ToolSchemaHash != "" || sr.ToolDescriptionHash != "") {
			rc.Warnings = append(rc.Warnings, WarnToolHashesNotCompared)
		}
	}
	tf := st.tool
	if tf == nil {
		tf = r.tools.get(c)
	}
	if raw != nil {
		// The server's receipt, exactly as received: its bytes, and the
		// hash of its RFC 8785 form (foreign JSON is canonicalized for
		// its hash only).
		if len(raw) <= maxStoredReceipt {
			rc.ServerReceiptBase64 = base64.StdEncoding.EncodeToString(raw)
		} else {
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("server receipt of %d bytes not stored (limit %d); referenced by id and hash", len(raw), maxStoredReceipt))
		}
		if h, err := evidence.Hash(raw); err == nil {
			rc.ServerReceiptHash = h
		} else {
			rc.Warnings = append(rc.Warnings, "server_receipt_hash not computed: "+errorClass(err))
		}
	}
	// The server's receipt chain (ledger_id, ledger_seq, previous_hash),
	// followed across the session's calls: a repeat, a gap or a broken
	// link is tampered (evidence.md §2). Every forwarded call arrives
	// here once, with or without a receipt.
	if ch := r.chains.Arrived(st.ticket, c.ServerID, sr, rc.ServerReceiptHash); ch.Tampered || len(ch.Warnings) > 0 {
		rc.Warnings = append(rc.Warnings, ch.Warnings...)
		if ch.Tampered {
			status = evidence.StatusTampered
		}
	}
	synthesized := false
	if sr == nil && raw == nil {
		// No receipt from the server: the gateway's own, synthesized at
		// the host boundary from what it observed (status empty), part of
		// the outcome record.
		sr = evidence.Synthesize(facts, tf.intent, now)
		rc.SynthesizedReceipt = sr
		synthesized = true
	}
	// evidence.Normalize with the receipt (when it has no conflicts) is
	// the tool's intent with the receipt's fields over it.
	intent := tf.intent
	if conflicts == 0 && sr != nil {
		intent = evidence.WithReceipt(intent, sr, status)
	}
	rc.MetadataConfidence = evidence.Confidence(intent, conflicts)
	decided := tf.intent.Warnings()
	for _, w := range intent.Warnings() {
		// A receipt that disagrees with the tool's metadata brings
		// metadata_conflict warnings of its own; those of the tool's
		// intent are in the decision record and are not repeated here.
		if !slices.Contains(decided, w) && !slices.Contains(rc.Warnings, w) {
			rc.Warnings = append(rc.Warnings, w)
		}
	}
	rc.ServerReceiptStatus = status
	switch {
	case sr != nil:
		rc.ServerReceiptID = sr.ReceiptID
		if !serverReceiptIDUsable(sr.ReceiptID, synthesized) {
			// Referenced all the same, under an id of the gateway's:
			// the receipt is the server's evidence.
			rc.ServerReceiptID = evidence.NewUnnamedReceiptID()
			rc.Warnings = append(rc.Warnings, "server receipt has no usable receipt_id; referenced as "+rc.ServerReceiptID)
		}
	case raw != nil:
		// A receipt that does not parse is kept and referenced too.
		rc.ServerReceiptID = evidence.NewUnnamedReceiptID()
		rc.Warnings = append(rc.Warnings, "server receipt has no usable receipt_id; referenced as "+rc.ServerReceiptID)
	}
	rc.ResponseScanResult = &evidence.ScanResult{Status: evidence.ScanNotRun, Reason: "no response scanners configured"}
	if c.ResponseScan != nil {
		rc.ResponseScanResult = c.ResponseScan
	} else if resp.Error != nil {
		rc.ResponseScanResult.Reason = "the server answered with a JSON-RPC error"
	}
	if v := c.ResponseVerdict; v != nil && severity(string(v.Action)) > severity(rc.Action) {
		// The response filters' verdict (a redaction, a withheld
		// response) is the outcome's action.
		rc.Action, rc.MatchedRule, rc.Reason = string(v.Action), v.Rule, v.Reason
	}
	withhold, why := false, ""
	action, reason := r.cfg.Require.Check(status)
	if c.ShadowMode && action != evidence.ActionAllow && action != "" {
		// Shadow mode: what receipts.require would have done is recorded
		// beside what was done (relayed).
		rc.ShadowDecisions = append(rc.ShadowDecisions, evidence.ShadowDecision{Action: action, MatchedRule: RuleReceiptRequirement, Reason: reason, Stage: gateway.StageEvidence})
		action = evidence.ActionAllow
	}
	switch action {
	case evidence.ActionDeny:
		rc.Action, rc.MatchedRule, rc.Reason = evidence.ActionDeny, RuleReceiptRequirement, reason
		withhold, why = true, reason
	case evidence.ActionMonitor:
		if rc.Action == evidence.ActionAllow {
			rc.Action = evidence.ActionMonitor
		}
		rc.Warnings = append(rc.Warnings, reason)
	default:
		if status != evidence.StatusOK {
			rc.Warnings = append(rc.Warnings, "server receipt status: "+string(status))
		}
	}
	if r.cfg.Policy != nil && !withhold {
		withhold, why = r.receiptRules(c, &rc, status, conflicts)
	}
	if r.cfg.DeferOutcome > 0 {
		// Queued (and checked) now, durable with the next commit: the
		// response does not wait for it.
		written := r.writeDeferred(KindGatewayOutcome, &rc)
		return func() (bool, string) {
			if err := written(); err != nil {
				r.log.Error("audit ledger write failed", "err", err)
				return true, "the outcome could not be recorded in the audit ledger"
			}
			return withhold, why
		}
	}
	written := r.write(KindGatewayOutcome, &rc)
	return func() (bool, string) {
		if err := written(); err != nil {
			r.log.Error("audit ledger write failed", "err", err)
			return true, "the outcome could not be recorded in the audit ledger"
		}
		return withhold, why
	}
}

// receiptRules decides the call again with the policy's receipt rules
// (receipt.status, receipt.conflicts; the principal, server and tool as on
// the request) and records the result in the outcome receipt rc: a deny
// replaces the action, rule and reason and withholds the response; a
// monitor turns an allow into monitor, naming its rule; every matching
// shadow rule is a shadow decision (shadow_decisions, stage evidence). In
// shadow mode (c.ShadowMode) the deciding rule is a shadow decision too,
// recorded before the shadow rules, and nothing changes or is withheld.
func (r *Recorder) receiptRules(c *gateway.Call, rc *evidence.GatewayDecisionReceipt, status evidence.Status, conflicts int) (withhold bool, why string) {
	d, matched := r.cfg.Policy.EvaluateReceipt(&policy.Input{
		Principal: c.Principal,
		ServerID:  c.ServerID,
		Tool:      c.PolicyTool(),
		Receipt:   &policy.Receipt{Status: string(status), Conflicts: conflicts},
	})
	if matched && c.ShadowMode {
		rc.ShadowDecisions = receiptShadows(rc.ShadowDecisions, []policy.ShadowDecision{{Action: d.Action, Rule: d.Rule, Reason: d.Reason, ReasonCode: d.ReasonCode}})
		matched = false
	}
	rc.ShadowDecisions = receiptShadows(rc.ShadowDecisions, d.Shadows)
	if !matched {
		return false, ""
	}
	switch d.Action {
	case policy.ActionDeny:
		rc.Action, rc.MatchedRule, rc.Reason = evidence.ActionDeny, d.Rule, d.Reason
		return true, d.Reason
	case policy.ActionMonitor:
		if rc.Action == evidence.ActionAllow {
			// The rule that made the outcome monitor is named; a
			// request already monitored keeps the rule that did.
			rc.Action, rc.MatchedRule, rc.Reason = evidence.ActionMonitor, d.Rule, d.Reason
		}
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("receipt rule %s: %s", d.Rule, d.Reason))
	}
	return false, ""
}

// write encodes rc once, in RFC 8785 form by construction
// (evidence.CanonicalJSON), queues it as one ledger entry of kind whose
// record_id is rc.AuditEventID (the entry is the audit event), and returns
// a wait for it to be durable. Encoding happens before write returns.
func (r *Recorder) write(kind string, rc *evidence.GatewayDecisionReceipt) func() error {
	payload, err := evidence.CanonicalJSON(rc)
	if err != nil {
		return failed(fmt.Errorf("audit: encode %s: %w", kind, err))
	}
	wait, err := r.cfg.Ledger.EnqueueAll(r.deadlines.get(time.Now()), []ledger.Record{{Kind: kind, RecordID: rc.AuditEventID, Payload: payload}})
	if err != nil {
		return failed(fmt.Errorf("audit: append: %w", err)) // the ledger names the record
	}
	return func() error {
		if _, err := wait(); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		return nil
	}
}

// writeDeferred is write for a deferred outcome: the record is encoded and
// queued with Config.DeferOutcome (ledger.Ledger.EnqueueAllDeferred)
// before it returns, and the wait it returns reports only what went wrong
// before queueing; the durability is awaited on a goroutine of its own,
// which logs a failure.
func (r *Recorder) writeDeferred(kind string, rc *evidence.GatewayDecisionReceipt) func() error {
	payload, err := evidence.CanonicalJSON(rc)
	if err != nil {
		return failed(fmt.Errorf("audit: encode %s: %w", kind, err))
	}
	da := r.cfg.Ledger.(DeferredAppender) // checked by New
	wait, err := da.EnqueueAllDeferred(r.deadlines.get(time.Now()), []ledger.Record{{Kind: kind, RecordID: rc.AuditEventID, Payload: payload}}, r.cfg.DeferOutcome)
	if err != nil {
		return failed(fmt.Errorf("audit: append: %w", err))
	}
	id := rc.AuditEventID
	go func() {
		if _, err := wait(); err != nil {
			r.log.Error("audit ledger: a deferred outcome was not recorded", "audit_event_id", id, "err", err)
		}
	}()
	return func() error { return nil }
}

// errorClass names an error without the data it may quote.
func errorClass(err error) string {
	if errors.Is(err, evidence.ErrInexactNumber) {
		return "a number JSON cannot carry exactly"
	}
	return "not strict JSON"
}

// serverReceiptIDUsable reports whether id, the receipt_id of a receipt
// the server sent (synthesized false) or the gateway synthesized, can name
// it in the ledger: a valid record id (ledger.CheckRecordID) and, for the
// server's, outside the prefixes the gateway gives its own receipts, so
// that a server can neither pass its receipt off as the gateway's nor join
// another call's lineage.
func serverReceiptIDUsable(id string, synthesized bool) bool {
	if ledger.CheckRecordID(id) != nil {
		return false
	}
	return synthesized || !strings.HasPrefix(id, evidence.PrefixSynthesizedReceipt) && !strings.HasPrefix(id, evidence.PrefixUnnamedReceipt)
}
