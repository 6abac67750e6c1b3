package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// Rule names the gateway itself uses in decisions that no policy rule made.
const (
	RuleUnknownTool = "unknown_tool"
	RuleNotRecorded = "decision_not_recorded"
	// ReasonCancelled is the reason_code of a gatehouse.tool.refused.v1
	// event for an allowed call the client cancelled before it was
	// forwarded.
	ReasonCancelled = "cancelled_before_forwarding"
	// ReasonServerGone is the reason_code of a gatehouse.tool.refused.v1
	// event for an allowed call that was still waiting (for its catalog
	// fetch or its evidence) when the server exited; the client got a
	// -32603 error from Session.ServerGone.
	ReasonServerGone = "server_exited_before_forwarding"
	// RuleArgumentNameCase denies a call with an argument whose name
	// differs from one of the tool's inputSchema properties only in case.
	RuleArgumentNameCase   = "argument_name_case"
	reasonArgumentNameCase = "an argument name differs from a property of the tool's inputSchema only in case"
	reasonUnknownTool      = "this tool is not in the server's tools/list as the gateway has seen it"
)

// toolCallParams are the parts of tools/call params the gateway reads.
type toolCallParams struct {
	name      string
	arguments []byte
	meta      []byte
}

// parseToolCall reads params.name, params.arguments and params._meta; ok is
// false when name is missing or not a string, arguments is not an object,
// or a member is one of those names in another case.
func parseToolCall(params []byte) (toolCallParams, bool) {
	c, err := mcp.ParseToolCall(params)
	if err != nil {
		return toolCallParams{}, false
	}
	return toolCallParams{name: c.Name, arguments: c.Arguments, meta: c.Meta}, true
}

// toolCall handles one tools/call request or notification: read its
// params, reserve its id, look up the tool (holding the call for a catalog
// refresh when needed), then run it through the session's chain
// (runToolCall): the deciders judge it, the recorders record the decision,
// and it is forwarded or answered.
func (s *Session) toolCall(line []byte, m *jsonrpc.Message, inBatch bool) (bool, []byte, error) {
	p, ok := parseToolCall(m.Params)
	if !ok {
		s.noteDeclaredRevision(m)
		s.record("client", "tools/call params need a string name and object arguments", jsonrpc.CodeInvalidParams, len(m.Raw), m.ID)
		if m.Kind == jsonrpc.KindNotification {
			return false, nil, nil
		}
		return false, errorFrame(m.ID, jsonrpc.CodeInvalidParams, "gatehouse: invalid tools/call params: a string name and object arguments are required", nil), nil
	}
	s.noteDeclaredMeta(p.meta)
	isRequest := m.Kind == jsonrpc.KindRequest
	// Reserve the id now: a second request with this id is refused even
	// while this one is still being decided.
	var slot *pending
	if isRequest {
		slot = &pending{method: mcp.MethodToolsCall}
		if !s.addPending(m.ID, slot) {
			if reply := s.goneReply(m); reply != nil {
				return false, reply, nil
			}
			s.record("client", "request id already in flight", jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			return false, errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: request id "+m.ID.String()+" is already in flight", nil), nil
		}
	}
	s.stats.ToolCalls.Add(1)

	_, known, stale := s.catalog.lookup(p.name)
	// Before the client's notifications/initialized (session-based
	// revisions) the gateway does not fetch: the call is decided on the
	// catalog as it is, an unknown tool as unknown.
	if (!known || stale) && s.settings.UnknownTool == "fetch" && !inBatch && s.fetchAllowed() {
		// The catalog must be fetched first. The call waits for it on its
		// own goroutine so that the client's other traffic (a
		// notifications/cancelled for this very call, say) is not queued
		// behind it. The frame is copied: the reader reuses its buffer.
		if !s.hold() {
			s.release(m.ID, slot)
			reason := s.busyReason()
			s.record("client", reason, CodeBusy, len(m.Raw), m.ID)
			if !isRequest {
				return false, nil, nil
			}
			return false, errorFrame(m.ID, CodeBusy, "gatehouse: "+reason, nil), nil
		}
		go func(frame []byte) {
			defer s.unhold()
			s.heldToolCall(frame, slot)
		}(append([]byte(nil), line...))
		return false, nil, nil
	}
	fwd, reply, out := s.runToolCall(line, m, p, slot, !inBatch)
	if fwd && len(line) > 0 && len(out) > 0 && &out[0] != &line[0] {
		// Redacted (scanStage): the rewritten frame goes instead of the
		// received one, in order, unless the client cancels it first.
		var ready pipeline.Ready
		if slot != nil {
			ready = func() (bool, []byte) { return !s.cancelled(m.ID, slot), nil }
		}
		return false, reply, s.relayToServer(out, ready)
	}
	return fwd, reply, nil
}

// heldToolCall refreshes the catalog, then decides a tools/call that named
// a tool the gateway did not know, and forwards or answers it. A call the
// client cancelled meanwhile is decided and recorded but not forwarded.
func (s *Session) heldToolCall(frame []byte, slot *pending) {
	m, err := jsonrpc.Parse(frame)
	if err != nil {
		return // it parsed before the copy; cannot happen
	}
	p, _ := parseToolCall(m.Params)
	// One refresh at a time; a call that waited behind another's refresh
	// uses its result.
	s.refreshing <- struct{}{}
	if _, known, stale := s.catalog.lookup(p.name); !known || stale {
		s.refreshCatalog(p.meta)
	}
	<-s.refreshing
	fwd, reply, out := s.runToolCall(frame, &m, p, slot, false)
	s.deliver(out, fwd, reply, func() bool { return !s.cancelled(m.ID, slot) })
}

// cancelled reports whether the client cancelled the request whose pending
// slot is slot (its entry is gone or replaced).
func (s *Session) cancelled(id jsonrpc.ID, slot *pending) bool {
	if slot == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingC2S[id.Key()] != slot
}

// cancelledKey is cancelled given the request id's key (jsonrpc.ID.Key).
func (s *Session) cancelledKey(key string, slot *pending) bool {
	if slot == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingC2S[key] != slot
}

// release frees the pending slot of a call that will not be forwarded. It
// reports false when ServerGone has answered the call already (the caller
// must not answer it again).
func (s *Session) release(id jsonrpc.ID, slot *pending) bool {
	if slot == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot.abandoned {
		return false
	}
	if s.pendingC2S[id.Key()] == slot {
		delete(s.pendingC2S, id.Key())
	}
	return true
}

// wasAbandoned reports whether ServerGone answered the call whose pending slot
// is slot.
func (s *Session) wasAbandoned(slot *pending) bool {
	if slot == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slot.abandoned
}

// runToolCall decides one tools/call through the session's chain
// (decide), records the decision (the recorders' PhaseDecision), and
// forwards or answers it once the records are durable (finishToolCall).
// line is the exact received line, nil for a batch member.
//
// With async (the client relay loop calling) the call may be finished
// later, in the Sequencer to the server: after the burst's one write to
// the decision log (burst.go), or once its evidence is durable;
// runToolCall then reports neither a forward nor an answer.
//
// out is the frame to forward: line, or the frame a stage rewrote it to
// (a redaction, pipeline.Call.Rewrite); the async paths forward it
// themselves.
func (s *Session) runToolCall(line []byte, m *jsonrpc.Message, p toolCallParams, slot *pending, async bool) (fwd bool, reply, out []byte) {
	pc, st := s.decide(line, m, p, slot)
	if rw := pc.Rewritten(); rw != nil && line != nil {
		line = rw
	}
	// A call of the client loop's burst has its event encoded for the
	// burst's one write instead of written now (decisionLogStage).
	st.stage = async && line != nil && s.stagingCalls(len(line))
	rec := s.chain.Record(context.Background(), pc, pipeline.PhaseDecision)
	st.dropFrame(pc)
	if st.staged != nil || st.evCall != nil || s.chain.HasFilters() {
		// The call may finish on another goroutine, and its evidence (or
		// the response filters' view of it) outlives the frame: the id
		// is copied.
		st.id = jsonrpc.NewID(copyRaw(m.ID.Raw()))
		pc.ID = st.id
		if st.evCall != nil {
			st.evCall.ID = st.id
		}
	}
	switch {
	case st.staged != nil:
		// Finished after the burst's events are written (burst.go): the
		// frame waits in the Sequencer for that write.
		b, end := s.stageEvent(st.staged)
		st.staged = nil // copied into the burst
		_ = s.loopPush(line, b.done, func() (bool, []byte) {
			st.logErr = b.errFor(end)
			return s.finishToolCall(pc, st, rec())
		}) // fails only once the server is gone
		return false, nil, line
	case st.evCall != nil && async && line != nil && s.toServerQ != nil:
		// The call waits for its evidence in the ordered sequencer to the
		// server, so that the client relay goes on reading (a
		// notifications/cancelled for this call included) and concurrent
		// calls share durable ledger writes, while frames keep their
		// order.
		_ = s.toServerQ.Push(line, func() (bool, []byte) { return s.finishToolCall(pc, st, rec()) })
		return false, nil, line
	}
	fwd, reply = s.finishToolCall(pc, st, rec())
	return fwd, reply, line
}

// decide runs the session's deciders on one tools/call and returns the
// call and its state (callState), with the decision mapped back to a
// policy.Decision and the tool_call_id derived (request-receipts §7).
func (s *Session) decide(line []byte, m *jsonrpc.Message, p toolCallParams, slot *pending) (*pipeline.Call, *callState) {
	received := time.Now()
	tool, facts, known, stale, gen := s.catalog.lookupGen(p.name)
	if stale {
		// The server said its tools changed and the new list could not be
		// fetched: the old definition is not to be trusted.
		known = false
	}
	if !known || facts == nil {
		facts = factsOf(tool, known)
	}
	// The call and its state are one allocation.
	run := &struct {
		call  pipeline.Call
		state callState
	}{
		state: callState{
			facts: facts, gen: gen, meta: decodeObject(p.meta), shadow: s.shadow,
			line: line, id: m.ID, slot: slot, isRequest: m.Kind == jsonrpc.KindRequest, name: p.name,
		},
		call: pipeline.Call{
			Session: s.info, ID: m.ID, Name: p.name, Arguments: p.arguments, Meta: p.meta,
			Tool: tool, Known: known, Received: received,
		},
	}
	pc, st := &run.call, &run.state
	pc.State = st
	v := s.chain.Decide(context.Background(), pc)
	st.decision = decisionOf(s.cfg.Policy, pc, v, s.shadow)
	st.allowed = v.Action.Forwards() // allow, monitor, redact
	st.code = CodeDenied
	if v.Action == pipeline.Quarantine {
		st.code = CodeQuarantined
		if known {
			// A rule (or the drift block, for a tool released while its
			// drift still calls for a hold) decided quarantine on this
			// call: the tool is held from now on, until a person
			// releases it (holdFromDecision keeps a hold already there).
			s.drift.holdFromDecision(p.name, st.drift.hash, v.Rule, v.Reason)
		}
	}
	var rpcRaw []byte
	if m.ID.Present() {
		rpcRaw = m.ID.Raw()
	}
	st.toolCallID, st.strength, st.source = decisionlog.ToolCallID(st.meta, s.cfg.StrongKeys, m.ID.Present(), rpcRaw)
	return pc, st
}

// finishToolCall forwards or answers a decided call once its decision's
// records are resolved: recErr is the recorders' Future's result (nil when
// every record is durable). It may run on another goroutine (the
// Sequencer's): it uses st.id, a copy.
//
// A record that failed refuses an allowed call (-32081) unless the policy
// says on_log_failure: fail_open; when the decision event was written with
// forwarded true, a gatehouse.tool.refused.v1 event corrects it (the log
// is append-only). A call the server's exit (ServerGone) or the client's
// notifications/cancelled overtook is neither forwarded nor answered, and
// its decision event likewise corrected.
func (s *Session) finishToolCall(pc *pipeline.Call, st *callState, recErr error) (bool, []byte) {
	failOpen := s.settings.OnLogFailure == "fail_open"
	if recErr != nil {
		if errors.Is(recErr, errNotLogged) {
			// The decision event itself was not written: nothing to
			// correct.
			st.notRecorded(failOpen)
		} else {
			s.log.Error("evidence write failed", "err", recErr)
			wasAllowed := st.allowed
			st.notRecorded(failOpen)
			if wasAllowed && !st.allowed && s.cfg.Log != nil && st.eventID != "" {
				s.emitRefused(st, st.id, st.decision.Rule, st.decision.Reason)
			}
		}
	}
	id, slot := st.id, st.slot
	if s.wasAbandoned(slot) {
		// The server exited meanwhile and ServerGone answered the
		// client: nothing is forwarded or answered now.
		if st.allowed && s.cfg.Log != nil && st.eventID != "" {
			s.emitRefused(st, id, ReasonServerGone, "the server exited before the call was forwarded")
		}
		return false, nil
	}
	if st.allowed {
		if s.cancelled(id, slot) {
			s.log.Info("tools/call cancelled by the client before it was forwarded", "tool", pc.Name)
			if s.cfg.Log != nil && st.eventID != "" {
				s.emitRefused(st, id, ReasonCancelled, "the client cancelled the call (notifications/cancelled) before it was forwarded")
			}
			return false, nil
		}
		if slot != nil && (st.evCall != nil || s.chain.HasFilters()) {
			// The response's outcome is recorded, and it is filtered,
			// through the chain (PhaseOutcome, Filter; serverMessage).
			s.mu.Lock()
			slot.call = pc
			s.mu.Unlock()
		}
		return true, nil
	}
	if !s.release(id, slot) {
		return false, nil // answered by ServerGone meanwhile
	}
	s.stats.Denied.Add(1)
	if !st.isRequest {
		return false, nil
	}
	return false, s.denyFrame(id, st.code, st.decision.Rule, st.decision.Reason)
}

// emitRefused writes the gatehouse.tool.refused.v1 event of an allowed
// call refused after its decision event was written as st.eventID: rule
// and reason say why. id is the call's JSON-RPC id (a copy once the call
// may finish on another goroutine: the frame's buffer is reused by then).
// A failed write is logged; the call is refused either way.
func (s *Session) emitRefused(st *callState, id jsonrpc.ID, rule, reason string) {
	data := decisionlog.ToolRefused{DecisionEventID: st.eventID, Tool: st.name, RPCIDPresent: id.Present(),
		RPCID: json.RawMessage("null"), ToolCallID: st.toolCallID, ReasonCode: rule, Reason: reason}
	if id.Present() {
		data.RPCID = json.RawMessage(id.Raw())
	}
	if _, err := s.cfg.Log.Emit(decisionlog.TypeToolRefused, data); err != nil {
		s.log.Error("decision log write failed", "err", err)
	}
}

// copyRaw copies b, keeping nil as nil (an absent id stays absent).
func copyRaw(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// deliver sends a decided call's answer to the client and/or its frame to
// the server, from a goroutine other than the relay loops (a held call):
// through the Sequencer to the server behind what waits there, and
// then only if wanted still says so (deliverHeld).
func (s *Session) deliver(frame []byte, forward bool, reply []byte, wanted func() bool) {
	if err := s.deliverHeld(frame, forward, reply, wanted); err != nil {
		s.log.Error("delivering a held call failed", "err", err)
	}
}

// denyFrame answers a refused tools/call: a JSON-RPC error (deny_response:
// error), or a tool result with isError true (deny_response: tool_result).
// It names the rule and its reason, never the arguments.
func (s *Session) denyFrame(id jsonrpc.ID, code int, rule, reason string) []byte {
	msg := "gatehouse: tools/call denied by policy rule " + rule + ": " + reason
	if code == CodeQuarantined {
		msg = "gatehouse: tools/call held: the tool is quarantined (rule " + rule + "): " + reason
	}
	if s.settings.DenyResponse == "tool_result" && (code == CodeDenied || code == CodeQuarantined) {
		b := []byte(`{"jsonrpc":"2.0","id":`)
		b = append(b, id.Raw()...)
		b = append(b, `,"result":{"content":[{"type":"text","text":`...)
		b = appendJSONString(b, msg)
		b = append(b, `}],"isError":true`...)
		if s.Revision().Stateless() {
			b = append(b, `,"resultType":"complete"`...)
		}
		b = append(b, "}}\n"...)
		return b
	}
	data, _ := json.Marshal(map[string]string{"rule": rule, "reason": reason})
	return errorFrame(id, code, msg, data)
}

// decodeObject decodes a JSON object for policy conditions: integers that
// fit int64 become int64, other numbers float64. nil or a non-object gives
// an empty map.
func decodeObject(raw []byte) map[string]any {
	// raw is part of a strictly parsed frame: decoded in one pass, not
	// parsed again (strictjson.Decode gives encoding/json's values with
	// UseNumber, integers that fit int64 as int64, other numbers float64).
	if len(raw) == 0 || raw[0] != '{' {
		return map[string]any{}
	}
	v, err := strictjson.Decode(raw)
	if m, ok := v.(map[string]any); ok && err == nil {
		return m
	}
	return map[string]any{}
}
