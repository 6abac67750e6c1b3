package decisionlog

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/linesafe"
)

// This file writes the events whose shape the gateway emits on every
// tools/call without reflection. The bytes are exactly what encoding/json
// writes for the same values with HTML escaping off, passed through
// linesafe.Append (FuzzAppendEvent holds the two together), so the format
// of the log does not depend on which path wrote a line.

// appender is implemented by event data that can append its own JSON
// encoding; ok false means "use encoding/json" (a value the fast path does
// not handle exactly, such as an rpc_id that is not a plain JSON token).
type appender interface {
	appendJSON(b []byte) (out []byte, ok bool)
}

// appendEnvelope appends the CloudEvents envelope of one event with data
// already encoded by d, and the LF. ok is false when d declined.
func appendEnvelope(b []byte, id, source, eventType string, t time.Time, d appender) ([]byte, bool) {
	b = append(b, `{"specversion":"`+SpecVersion+`","id":`...)
	b = appendString(b, id)
	b = append(b, `,"source":`...)
	b = appendString(b, source)
	b = append(b, `,"type":`...)
	b = appendString(b, eventType)
	b = append(b, `,"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","datacontenttype":"`+DataContentType+`","data":`...)
	b, ok := d.appendJSON(b)
	if !ok {
		return b, false
	}
	return append(b, '}', '\n'), true
}

// appendJSON appends d as encoding/json would marshal it, line-safe.
func (d ToolDecision) appendJSON(b []byte) ([]byte, bool) {
	if !plainToken(d.RPCID) {
		return b, false
	}
	b = append(b, `{"tool":`...)
	b = appendString(b, d.Tool)
	b = append(b, `,"decision":`...)
	b = appendString(b, d.Decision)
	b = append(b, `,"reason_code":`...)
	b = appendString(b, d.ReasonCode)
	b = append(b, `,"reason":`...)
	b = appendString(b, d.Reason)
	b = append(b, `,"matched_rule":`...)
	b = appendString(b, d.MatchedRule)
	b = append(b, `,"policy_name":`...)
	b = appendString(b, d.PolicyName)
	b = append(b, `,"policy_version":`...)
	b = appendString(b, d.PolicyVersion)
	if d.ShadowMode {
		b = append(b, `,"shadow_mode":true`...)
	}
	if len(d.ShadowDecisions) > 0 {
		b = append(b, `,"shadow_decisions":[`...)
		for i, sd := range d.ShadowDecisions {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"action":`...)
			b = appendString(b, sd.Action)
			b = append(b, `,"matched_rule":`...)
			b = appendString(b, sd.MatchedRule)
			b = append(b, `,"reason":`...)
			b = appendString(b, sd.Reason)
			b = append(b, `,"stage":`...)
			b = appendString(b, sd.Stage)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"rpc_id_present":`...)
	b = strconv.AppendBool(b, d.RPCIDPresent)
	b = append(b, `,"rpc_id":`...)
	if d.RPCID == nil {
		b = append(b, "null"...)
	} else {
		// The id's token as received, its raw controls and line
		// breaks (valid JSON may hold U+2028 or C1 in a string) escaped.
		b = linesafe.Append(b, d.RPCID)
	}
	b = append(b, `,"tool_call_id":`...)
	b = appendString(b, d.ToolCallID)
	b = append(b, `,"tool_call_id_strength":`...)
	b = appendString(b, d.ToolCallIDStrength)
	b = append(b, `,"tool_call_id_source":`...)
	b = appendString(b, d.ToolCallIDSource)
	if d.PrincipalID != "" {
		b = append(b, `,"principal_id":`...)
		b = appendString(b, d.PrincipalID)
	}
	if d.Role != "" {
		b = append(b, `,"role":`...)
		b = appendString(b, d.Role)
	}
	if d.ServerID != "" {
		b = append(b, `,"server_id":`...)
		b = appendString(b, d.ServerID)
	}
	b = append(b, `,"side_effect":`...)
	b = appendString(b, d.SideEffect)
	b = append(b, `,"tool_known":`...)
	b = strconv.AppendBool(b, d.ToolKnown)
	b = append(b, `,"forwarded":`...)
	b = strconv.AppendBool(b, d.Forwarded)
	if len(d.ArgumentScanResult) > 0 {
		// The gateway's own compact JSON (jcs.Marshal), line-safe.
		b = append(b, `,"argument_scan_result":`...)
		b = linesafe.Append(b, d.ArgumentScanResult)
	}
	if len(d.DriftResult) > 0 {
		b = append(b, `,"drift_result":`...)
		b = linesafe.Append(b, d.DriftResult)
	}
	return append(b, '}'), true
}

// plainToken reports whether raw is nil or one valid JSON value without
// whitespace outside strings that encoding/json's compaction would leave
// unchanged: a JSON-RPC id as the parser returns it.
func plainToken(raw json.RawMessage) bool {
	if raw == nil {
		return true
	}
	if len(raw) == 0 || !json.Valid(raw) {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		// Valid and starting with a quote: one string, unless whitespace
		// follows it.
		return raw[len(raw)-1] == '"'
	case c == '-' || '0' <= c && c <= '9' || c == 't' || c == 'f' || c == 'n':
		// A number or literal starting at its first byte: valid means no
		// whitespace unless trailing.
		c := raw[len(raw)-1]
		return c != ' ' && c != '\t' && c != '\n' && c != '\r'
	}
	return false // an object, an array, or leading whitespace
}

// appendString appends s as a JSON string in the decision log's form:
// linesafe.AppendString, the bytes encoding/json writes (HTML escaping off)
// with every control character and line break escaped.
func appendString(b []byte, s string) []byte { return linesafe.AppendString(b, s) }
