package gateway

import (
	"encoding/json"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// Directions of a scanned message (decisionlog.Scanned.Direction).
const (
	dirServerToClient = "server_to_client"
	dirClientToServer = "client_to_server"
)

// unscanned are the methods whose messages scanMessage leaves alone:
// the lifecycle (initialize and its answer, the initialized
// notification) and tools/list, whose definitions are scanned when they
// are catalogued (scanStage.toolFindings) and flagged, not rewritten.
var unscanned = map[string]bool{
	mcp.MethodInitialize:  true,
	mcp.MethodInitialized: true,
	mcp.MethodToolsList:   true,
}

// scanMessage scans one message that is not a tools/call request or
// response (docs/scanning.md, "What is scanned, and where"): any server
// notification, request or response to a client request (dir
// dirServerToClient), and any client notification, request or answer to a
// server request (dirClientToServer); method is the message's, or for a
// response its request's. A request's or notification's params are
// scanned, a response's result or error. frame is the message's whole
// line, nil for a batch member.
//
// It returns the bytes to relay: frame itself when nothing is to change,
// a rewritten frame (redact), or nil when the message is withheld (deny,
// or a redaction inside a batch, which cannot be re-joined); answer is the
// error response the gateway sends instead, nil for a notification: for a
// withheld request to its sender (the request's id), for a withheld
// response to its receiver (who waits for it). Findings are recorded in a
// gatehouse.scan.v1 event.
func (s *Session) scanMessage(dir string, m *jsonrpc.Message, frame []byte, method string) (out, answer []byte) {
	out = frame
	if out == nil {
		out = m.Raw
	}
	sc := s.scan
	if sc == nil || unscanned[method] {
		return out, nil
	}
	where := policy.WhereResponse
	if dir == dirClientToServer {
		where = policy.WhereArguments
		if !sc.settings.Arguments {
			return out, nil
		}
	} else if !sc.settings.Responses {
		return out, nil
	}
	doc, prefix := m.Params, "/params"
	if m.Kind == jsonrpc.KindResponse {
		doc, prefix = m.Result, "/result"
		if doc == nil {
			doc, prefix = m.Error, "/error"
		}
	}
	if len(doc) == 0 {
		return out, nil
	}
	o := sc.inspectDoc(doc, prefix, "", s.info.ServerID, where)
	if len(o.findings) == 0 && o.action == policy.ActionAllow {
		return out, nil
	}
	reason := scanReason(prefix[1:], o)
	if s.shadow {
		// Shadow mode: relayed as received; the would-have verdict is
		// recorded beside what was done.
		ev := decisionlog.Scanned{Method: method, Direction: dir, Action: string(policy.ActionAllow), MatchedRule: RuleScanning, Reason: reason, ShadowMode: true}
		if o.action != policy.ActionAllow {
			ev.MatchedRule, ev.Reason = RuleShadowMode, reasonShadowMode
			ev.ShadowDecisions = []decisionlog.ShadowDecision{{Action: string(o.action), MatchedRule: RuleScanning, Reason: reason, Stage: StageScan}}
		}
		s.emitScanned(ev, m.ID, o.result)
		return out, nil
	}
	withhold := o.action == policy.ActionDeny || o.action == policy.ActionQuarantine
	if o.action == policy.ActionRedact {
		if frame == nil {
			withhold, reason = true, "a message inside a batch cannot be rewritten; withheld"
		} else if red, err := o.redact(doc, false); err != nil {
			withhold, reason = true, "the findings could not be redacted: "+err.Error()+"; withheld"
		} else if rw, err := splice(frame, doc, red); err != nil {
			withhold, reason = true, "the findings could not be redacted: "+err.Error()+"; withheld"
		} else {
			out = rw
		}
	}
	action := string(o.action)
	if withhold {
		action, out = string(policy.ActionDeny), nil
		o.result.Action = action
		switch m.Kind {
		case jsonrpc.KindRequest:
			if dir == dirServerToClient {
				s.mu.Lock()
				delete(s.pendingS2C, m.ID.Key())
				s.mu.Unlock()
			}
			answer = errorFrame(m.ID, CodeWithheld, "gatehouse: "+method+" withheld: "+reason, nil)
		case jsonrpc.KindResponse:
			who := "the server's"
			if dir == dirClientToServer {
				who = "the client's"
			}
			answer = errorFrame(m.ID, CodeWithheld, "gatehouse: "+who+" answer to "+method+" was withheld: "+reason, nil)
		}
		s.stats.Dropped.Add(1)
	}
	s.emitScanned(decisionlog.Scanned{Method: method, Direction: dir, Action: action, MatchedRule: RuleScanning, Reason: reason}, m.ID, o.result)
	return out, answer
}

// emitScanned writes a gatehouse.scan.v1 event (data d, with the id and
// the scan result filled in), or, without a decision log, a diagnostic.
// A failed write is logged: the message was judged either way.
func (s *Session) emitScanned(d decisionlog.Scanned, id jsonrpc.ID, result *evidence.ScanResult) {
	if s.cfg.Log == nil {
		if d.Method == mcp.MethodToolsList {
			return // toolFindings has said so on stderr
		}
		n := 0
		if result != nil {
			n = len(result.Findings)
		}
		s.log.Warn("scan findings", "method", d.Method, "direction", d.Direction, "tool", d.Tool, "action", d.Action, "findings", n)
		return
	}
	d.RPCIDPresent, d.RPCID = id.Present(), json.RawMessage("null")
	if id.Present() {
		d.RPCID = json.RawMessage(id.Raw())
	}
	d.ScanResult = scanJSON(result)
	d.PrincipalID, d.Role, d.ServerID = s.info.PrincipalID, s.info.Role, s.info.ServerID
	if _, err := s.cfg.Log.Emit(decisionlog.TypeScanned, d); err != nil {
		s.log.Error("decision log write failed", "err", err)
	}
}
