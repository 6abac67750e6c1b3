package audit

// refRecorder is the Recorder as it was before its records were encoded
// canonically and the per-tool work cached (commit c85f8b1): every record
// through encoding/json and ledger.Canonicalize, evidence.Normalize per
// call. TestSameRecordsAsReference compares the two.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
)

type refRecorder struct{ cfg Config }

type refState struct {
	receipt *evidence.GatewayDecisionReceipt
	facts   evidence.CallFacts
	decl    *evidence.ToolDeclaration
}

func refToolObject(c *gateway.Call) []byte {
	if len(c.Tool.Meta) == 0 {
		return nil
	}
	return append(append([]byte(`{"_meta":`), c.Tool.Meta...), '}')
}

func (r *refRecorder) Decided(c *gateway.Call) (wait func() error) {
	now := time.Now()
	var warnings []string
	inputHash, err := evidence.InputHash(c.Arguments)
	if err != nil {
		// Numbers JSON cannot carry exactly are an explicit error path
		// (evidence.md §3): no hash rather than a rounded one.
		warnings = append(warnings, "input_hash not computed: "+errorClass(err))
	}
	argKeys, _ := evidence.ArgumentKeys(c.Arguments)
	var decl *evidence.ToolDeclaration
	var schemaHash, descHash string
	if c.Known {
		if raw, ok := evidence.FindToolDeclaration(refToolObject(c)); ok {
			if d, _, err := evidence.ParseDeclaration(raw); err == nil {
				decl = d
			}
		}
		if len(c.Tool.InputSchema) > 0 {
			if schemaHash, err = evidence.Hash(c.Tool.InputSchema); err != nil {
				warnings = append(warnings, "tool_schema_hash not computed: "+errorClass(err))
			}
		}
		descHash, _ = evidence.DescriptionHash(c.Tool.Description)
	} else {
		warnings = append(warnings, "tool not listed by the server")
	}
	intent := refIntent(c, decl, nil, "")
	warnings = append(warnings, intent.Warnings()...)
	d := c.Decision
	if d.Shadow != nil {
		warnings = append(warnings, fmt.Sprintf("shadow rule %s would have decided %s", d.Shadow.Rule, d.Shadow.Action))
	}
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
		MetadataConfidence:  evidence.Confidence(intent, 0),
		Warnings:            warnings,
		ArgumentScanResult:  &evidence.ScanResult{Status: evidence.ScanNotRun, Reason: "no argument scanners configured", ArgumentKeys: argKeys},
		ShadowMode:          false,
		InputHash:           inputHash,
		ToolSchemaHash:      schemaHash,
		ToolDescriptionHash: descHash,
	}
	if !c.Forwarded {
		rc.ResponseScanResult = evidence.HeldResponseScan()
	}
	c.State = &refState{
		receipt: rc,
		decl:    decl,
		facts: evidence.CallFacts{
			ServerID: c.ServerID, ToolName: c.Name, ToolCallID: c.ToolCallID,
			InputHash: inputHash, ArgumentKeys: argKeys,
		},
	}
	return r.write(rc, evidence.PhaseDecision, nil, nil)
}

// Responded queues the outcome of a forwarded call: the server receipt
// (verified by the gateway, or synthesized when the server sent none), the
// outcome-phase gateway decision receipt and audit event. resp is read
// before Responded returns, never after. The returned wait reports withhold
// true when receipts.require denies the receipt's status, or when the
// outcome could not be recorded.
func (r *refRecorder) Responded(c *gateway.Call, resp *jsonrpc.Message) (wait func() (bool, string)) {
	st, ok := c.State.(*refState)
	if !ok {
		return func() (bool, string) { return false, "" }
	}
	rc := *st.receipt // the outcome copy; the decision-phase one is written
	rc.IssuedAt = evidence.Timestamp(time.Now())
	rc.Warnings = append([]string(nil), st.receipt.Warnings...)
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
			raw = append([]byte(nil), found...)
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
	}
	synthesized := false
	if sr == nil {
		// No receipt from the server: the gateway's own, synthesized at
		// the host boundary from what it observed (status empty).
		syn := evidence.Synthesize(facts, refIntent(c, st.decl, nil, ""), time.Now())
		if b, err := json.Marshal(syn); err == nil {
			raw, sr = b, syn
			synthesized = true
		}
	}
	var intent evidence.ToolIntent
	if conflicts == 0 && sr != nil {
		intent = refIntent(c, st.decl, sr, status)
	} else {
		intent = refIntent(c, st.decl, nil, "")
	}
	rc.MetadataConfidence = evidence.Confidence(intent, conflicts)
	for _, w := range intent.Warnings() {
		if !slices.Contains(rc.Warnings, w) {
			rc.Warnings = append(rc.Warnings, w)
		}
	}
	rc.ServerReceiptStatus = status
	if sr != nil {
		rc.ServerReceiptID = sr.ReceiptID
		if !serverReceiptIDUsable(sr.ReceiptID, synthesized) {
			// Stored and referenced all the same, under an id of the
			// gateway's: the receipt is the server's evidence.
			rc.ServerReceiptID = evidence.NewUnnamedReceiptID()
			rc.Warnings = append(rc.Warnings, "server receipt has no usable receipt_id; stored as "+rc.ServerReceiptID)
		}
	}
	rc.ResponseScanResult = &evidence.ScanResult{Status: evidence.ScanNotRun, Reason: "no response scanners configured"}
	if resp.Error != nil {
		rc.ResponseScanResult.Reason = "the server answered with a JSON-RPC error"
	}
	withhold, why := false, ""
	action, reason := r.cfg.Require.Check(status)
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
	written := r.write(&rc, evidence.PhaseOutcome, sr, raw)
	return func() (bool, string) {
		if err := written(); err != nil {
			_ = err
			return true, "the outcome could not be recorded in the audit ledger"
		}
		return withhold, why
	}
}

// write queues the server receipt (when there is one), the gateway
// decision receipt and its audit event, in lineage order, and returns a
// wait for all of them to be durable. Encoding happens before write
// returns.
func (r *refRecorder) write(rc *evidence.GatewayDecisionReceipt, phase string, sr *evidence.ServerReceipt, srRaw []byte) func() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	var waits []func() (ledger.Entry, error)
	done := func(err error) func() error {
		return func() error {
			defer cancel()
			for _, w := range waits {
				if _, werr := w(); werr != nil && err == nil {
					err = fmt.Errorf("audit: %w", werr)
				}
			}
			return err
		}
	}
	var receipt []byte
	if sr != nil {
		payload, err := ledger.Canonicalize(srRaw)
		if err != nil {
			// Keep the lineage even when the server's bytes cannot be
			// canonicalized (numbers JSON cannot carry exactly).
			payload, _ = json.Marshal(map[string]string{"receipt_id": rc.ServerReceiptID, "error": errorClass(err)})
			payload, _ = ledger.Canonicalize(payload)
		}
		receipt = payload
		w, err := enqueueOne(r.cfg.Ledger, ctx, KindServerReceipt, rc.ServerReceiptID, payload)
		if err != nil {
			return done(fmt.Errorf("audit: append server receipt: %w", err))
		}
		waits = append(waits, w)
	}
	ev := rc.Event(phase)
	for _, rec := range []struct {
		kind, id string
		v        any
	}{{KindGatewayDecision, rc.GatewayDecisionID, rc}, {KindAuditEvent, ev.AuditEventID, &ev}} {
		b, err := json.Marshal(rec.v)
		if err != nil {
			return done(fmt.Errorf("audit: encode %s: %w", rec.kind, err))
		}
		payload, err := ledger.Canonicalize(b)
		if err != nil {
			return done(fmt.Errorf("audit: canonicalize %s: %w", rec.kind, err))
		}
		if rec.kind == KindGatewayDecision {
			// The event's hashes: of the stored payloads, as
			// evidence.md §4 describes, computed the long way.
			ev.GatewayDecisionHash, _ = evidence.Hash(payload)
			if receipt != nil {
				ev.ServerReceiptHash, _ = evidence.Hash(receipt)
			}
		}
		w, err := enqueueOne(r.cfg.Ledger, ctx, rec.kind, rec.id, payload)
		if err != nil {
			return done(fmt.Errorf("audit: append %s: %w", rec.kind, err))
		}
		waits = append(waits, w)
	}
	return done(nil)
}

// enqueueOne queues one record on its own, as the reference Recorder did
// before records were grouped.
func enqueueOne(a Appender, ctx context.Context, kind, id string, payload []byte) (func() (ledger.Entry, error), error) {
	w, err := a.EnqueueAll(ctx, []ledger.Record{{Kind: kind, RecordID: id, Payload: payload}})
	if err != nil {
		return nil, err
	}
	return func() (ledger.Entry, error) {
		es, err := w()
		if err != nil {
			return ledger.Entry{}, err
		}
		return es[0], nil
	}, nil
}

// refIntent is evidence.Normalize of c's tool (of nothing when it is not
// Known, as the gateway decides it), its declaration and receipt sr.
func refIntent(c *gateway.Call, decl *evidence.ToolDeclaration, sr *evidence.ServerReceipt, status evidence.Status) evidence.ToolIntent {
	in := evidence.IntentInput{Receipt: sr, ReceiptStatus: status}
	if c.Known {
		tool := c.Tool
		in.Declaration, in.Tool = decl, &tool
	}
	return evidence.Normalize(in)
}
