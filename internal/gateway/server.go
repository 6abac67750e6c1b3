package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// handleServer classifies one server frame and relays or drops it. The
// frame is only valid during the call.
func (s *Session) handleServer(f *transport.Frame) error {
	frame, m, perr := f.Raw, f.Msg, f.Err
	if perr != nil {
		s.stats.Dropped.Add(1)
		// The id, when it can be read, addresses the refusal: a response
		// to a pending client request must not leave the client waiting
		// for an answer that will never come.
		id, isRequest := jsonrpc.Sniff(jsonrpc.Body(frame))
		// Shown on stderr by record; the content is not (it may hold
		// secrets), only its size and why it was refused.
		s.record("server", perr.Message, perr.Code, len(frame), id)
		if isRequest {
			// A server request (or notification): its id is the
			// server's, not one of the client's requests. A request
			// whose id can be read is answered, as an oversized one is,
			// so that the server does not wait for a response that will
			// never come; the answer names the kind of fault only.
			if !id.Present() {
				return nil
			}
			return s.sendServer(errorFrame(id, perr.Code, fmt.Sprintf("gatehouse: the request was refused (%d bytes): not a strict JSON-RPC 2.0 request", len(frame)), nil))
		}
		// The client gets the kind of fault only: the parser's message
		// may quote a member name of the frame.
		why := "not a JSON-RPC 2.0 response"
		switch {
		case len(frame) == 0 || frame[len(frame)-1] != '\n':
			// The last line of the stream, without its LF: the server's
			// output ended inside the response (it crashed, say).
			why = "cut off: the server's output ended inside it"
		case perr.Code == jsonrpc.CodeParseError:
			why = "not strict JSON"
		}
		return s.failResponse(id, fmt.Sprintf("gatehouse: the server's response was refused (%d bytes): %s", len(frame), why))
	}
	switch m.Kind {
	case jsonrpc.KindBatch:
		if !s.Revision().AllowsBatch() {
			s.stats.Dropped.Add(1)
			s.record("server", "JSON-RPC batch outside protocol revision 2025-03-26", jsonrpc.CodeInvalidRequest, len(frame), jsonrpc.ID{})
			return nil
		}
		// Every member is handled; those refused (withheld, stray) are
		// left out and the others relayed from their original bytes.
		var keep [][]byte
		for i := range m.Members {
			if s.serverMessage(&m.Members[i], nil) {
				keep = append(keep, m.Members[i].Raw)
			}
		}
		switch {
		case len(keep) == len(m.Members):
			return s.relayToClient(frame, nil)
		case len(keep) == 0:
			return nil
		}
		return s.relayToClient(joinBatch(keep), nil)
	default:
		if s.serverMessage(&m, frame) {
			return s.relayToClient(frame, nil)
		}
		return nil
	}
}

// serverMessage updates the session for one server message and reports
// whether it is to be forwarded to the client. frame is the message's whole
// line for a top-level message, nil for a batch member: the response to a
// tools/call with evidence to record is then relayed (or withheld) by a
// goroutine of its own once the evidence is recorded, and serverMessage
// reports false.
func (s *Session) serverMessage(m *jsonrpc.Message, frame []byte) bool {
	switch m.Kind {
	case jsonrpc.KindResponse:
		k := m.ID.Key()
		s.mu.Lock()
		if ch, ok := s.private[k]; ok {
			delete(s.private, k)
			s.mu.Unlock()
			ch <- append([]byte(nil), m.Raw...)
			close(ch)
			return false
		}
		p, ok := s.pendingC2S[k]
		delete(s.pendingC2S, k)
		var call *pipeline.Call
		if ok {
			call = p.call
		}
		s.mu.Unlock()
		if !ok && m.ID.IsNull() && m.Error != nil {
			s.nullIDError(len(m.Raw))
			return true
		}
		if !ok {
			s.stats.Dropped.Add(1)
			s.record("server", "response to no pending request", 0, len(m.Raw), m.ID)
			return false
		}
		if call != nil {
			raw := m.Raw // a batch member's own bytes
			if frame != nil {
				raw = frame // the whole line, terminator included
			}
			resp := &pipeline.Response{ID: m.ID, Result: m.Result, Error: m.Error, Raw: raw}
			call.Response = resp
			// The response filters (reverse chain order) judge it first:
			// a verdict that does not forward withholds it, a rewrite is
			// what the client gets instead.
			filtered := s.filterResponse(call, resp, frame == nil)
			// The outcome is recorded through the chain (the recorders'
			// PhaseOutcome); the response is read before Record returns.
			wait := s.chain.Record(context.Background(), call, pipeline.PhaseOutcome)
			call.Response = nil
			if frame == nil {
				err := wait()
				if filtered != nil {
					err = filtered
				}
				return !s.withheld(m.ID, err)
			}
			id := jsonrpc.NewID(copyRaw(m.ID.Raw()))
			out := frame
			if rw := resp.Rewritten(); rw != nil && filtered == nil {
				out = rw
			}
			// In the ordered sequencer to the client: relayed, or replaced
			// by the withheld error, once the outcome is recorded.
			_ = s.relayToClient(out, func() (bool, []byte) {
				err := wait()
				if filtered != nil {
					err = filtered
				}
				if reply := s.withheldFrame(id, err); reply != nil {
					return false, reply
				}
				return true, nil
			})
			return false
		}
		if s.scan != nil {
			// The answer to any other client request (resources/read,
			// prompts/get, completion/complete, ...) is scanned like a
			// tools/call result.
			out, answer := s.scanMessage(dirServerToClient, m, frame, p.method)
			switch {
			case out == nil:
				if answer != nil {
					_ = s.relayToClient(answer, nil)
				}
				return false
			case frame != nil && &out[0] != &frame[0]:
				_ = s.relayToClient(out, nil)
				return false
			}
		}
		if m.Result != nil {
			switch p.method {
			case mcp.MethodInitialize:
				if v := member(m.Result, "protocolVersion"); len(v) > 2 && v[0] == '"' {
					s.mu.Lock()
					s.revision = mcp.Revision(v[1 : len(v)-1])
					s.mu.Unlock()
				}
			case mcp.MethodToolsList:
				tools, next := s.toolsPage(m.Result)
				all, complete := s.catalog.page(tools, !p.cursor, next == nil)
				if out := s.observeListing(tools, !p.cursor, complete, all, m, frame); out != nil {
					_ = s.relayToClient(out, nil)
					return false
				}
			}
		}
		return true
	case jsonrpc.KindRequest:
		k := m.ID.Key()
		s.mu.Lock()
		_, dup := s.pendingS2C[k]
		if !dup {
			s.pendingS2C[k] = m.Method
		}
		s.mu.Unlock()
		if dup {
			s.record("server", "server request id already in flight", jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			_ = s.sendServer(errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: request id "+m.ID.String()+" is already in flight", nil))
			return false
		}
		return s.scanServerMessage(m, frame)
	case jsonrpc.KindNotification:
		if m.Method == mcp.MethodToolsListChanged {
			s.catalog.markStale()
			s.refreshOnListChanged()
		}
		return s.scanServerMessage(m, frame)
	}
	return false
}

// scanServerMessage scans a server notification or request
// (scanMessage) and reports whether frame is to be relayed as it is; a
// rewritten message is relayed here (false), a withheld one dropped (and
// a withheld request answered).
func (s *Session) scanServerMessage(m *jsonrpc.Message, frame []byte) bool {
	if s.scan == nil {
		return true
	}
	out, answer := s.scanMessage(dirServerToClient, m, frame, m.Method)
	if answer != nil {
		_ = s.sendServer(answer)
	}
	switch {
	case out == nil:
		return false
	case frame != nil && &out[0] != &frame[0]:
		_ = s.relayToClient(out, nil)
		return false
	}
	return true
}

// filterResponse runs the chain's Filters on the response resp to the
// forwarded call c, when the chain has any. It returns a *WithheldError
// when the response is not to reach the client: a filter failed (fail
// closed), or the merged verdict does not forward (deny, quarantine), or
// (inBatch) a filter rewrote a batch member, which the gateway cannot
// re-join (withheld rather than relayed unredacted). nil otherwise.
func (s *Session) filterResponse(c *pipeline.Call, resp *pipeline.Response, inBatch bool) error {
	if !s.chain.HasFilters() {
		return nil
	}
	if err := s.chain.Filter(context.Background(), c, resp); err != nil {
		s.log.Error("response filter failed", "err", err)
		return &WithheldError{Reason: "a response filter could not judge it (fail closed)"}
	}
	if v, ok := resp.Verdict(); ok && !v.Action.Forwards() {
		return &WithheldError{Reason: "stage " + v.Stage + " rule " + v.Rule + ": " + v.Reason}
	}
	if inBatch && resp.Rewritten() != nil {
		return &WithheldError{Reason: "a rewritten response inside a batch is not relayed"}
	}
	return nil
}

// withheldFrame is the CodeWithheld answer to a tools/call whose outcome
// Future failed (a *WithheldError says why; any other error is an outcome
// that could not be recorded), nil when err is nil. It counts the call as
// denied.
func (s *Session) withheldFrame(id jsonrpc.ID, err error) []byte {
	if err == nil {
		return nil
	}
	s.stats.Denied.Add(1)
	reason := "the outcome could not be recorded"
	var w *WithheldError
	if errors.As(err, &w) {
		reason = w.Reason
	}
	return errorFrame(id, CodeWithheld, "gatehouse: tools/call response withheld: "+reason, nil)
}

// withheld answers a batch member's tools/call whose outcome Future failed
// with CodeWithheld (withheldFrame) and reports whether it did.
func (s *Session) withheld(id jsonrpc.ID, err error) bool {
	reply := s.withheldFrame(id, err)
	if reply != nil {
		_ = s.sendClient(reply)
	}
	return reply != nil
}

// nullIDError records an error response with "id": null that answers no
// pending request (a client request with id null would have matched): the
// server could not read the id of a request (JSON-RPC 2.0 §5, a parse error
// or an invalid request). It is relayed to the client unchanged, since it is
// the server's word on one of the client's frames, and recorded as a
// gatehouse.frame.rejected.v1 event with relayed true and as a warning: some
// client request may now never be answered, and which one cannot be told.
// Neither record holds the frame's content, only its size.
func (s *Session) nullIDError(size int) {
	const reason = `error response with id null (the server could not read a request's id); relayed`
	s.log.Warn("server error response with id null", "bytes", size)
	if s.cfg.Log == nil {
		return
	}
	data := frameRejected{Direction: "server", Reason: reason, Bytes: size, RPCID: rawJSON("null"), Relayed: true}
	if _, err := s.cfg.Log.Emit(decisionlog.TypeFrameRejected, data); err != nil {
		s.log.Error("decision log write failed", "err", err)
	}
}

// serverOversized handles a server frame over the limit: it was discarded;
// when it was a response whose id could be read, the client's pending
// request is answered with an internal error instead.
func (s *Session) serverOversized(e *wire.FrameTooLargeError) error {
	id, isRequest := jsonrpc.Sniff(e.Prefix)
	reason := fmt.Sprintf("frame of %d bytes exceeds the limit of %d bytes", e.Size, e.Limit)
	s.stats.Dropped.Add(1)
	s.record("server", reason, 0, int(e.Size), id)
	if !id.Present() {
		return nil
	}
	if isRequest {
		// A server-to-client request: the server is the sender.
		return s.sendServer(errorFrame(id, jsonrpc.CodeInvalidRequest, "gatehouse: "+reason, nil))
	}
	return s.failResponse(id, "gatehouse: the server's response was dropped: "+reason)
}

// failResponse handles a server response that was dropped (over the limit,
// or refused by the strict parse) but whose id could be read: the pending
// client request it answers gets a -32603 error carrying message instead
// (for a forwarded tools/call with evidence, recorded first as the call's
// outcome), in order behind the responses before it, and its entry is
// removed; the
// answer to one of the gateway's own tools/list requests ends that fetch at
// once rather than at its timeout. An id naming nothing pending (or absent)
// is left alone. The error is the client writer's (wrapping ErrFatal).
func (s *Session) failResponse(id jsonrpc.ID, message string) error {
	if !id.Present() {
		return nil
	}
	k := id.Key()
	s.mu.Lock()
	if ch, private := s.private[k]; private {
		delete(s.private, k)
		s.mu.Unlock()
		close(ch)
		return nil
	}
	p, ok := s.pendingC2S[k]
	delete(s.pendingC2S, k)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	answer := errorFrame(id, jsonrpc.CodeInternalError, message, nil)
	if p.call == nil {
		return s.relayToClient(answer, nil)
	}
	// A forwarded tools/call with evidence: its outcome is the answer the
	// client gets in place of the refused response, recorded like any
	// response (the chain's PhaseOutcome) before it is relayed.
	m, err := jsonrpc.Parse(answer)
	if err != nil {
		return s.relayToClient(answer, nil) // cannot happen: errorFrame builds valid JSON-RPC
	}
	p.call.Response = &pipeline.Response{ID: m.ID, Error: m.Error, Raw: m.Raw}
	wait := s.chain.Record(context.Background(), p.call, pipeline.PhaseOutcome)
	p.call.Response = nil
	return s.relayToClient(answer, func() (bool, []byte) {
		if reply := s.withheldFrame(id, wait()); reply != nil {
			return false, reply
		}
		return true, nil
	})
}

// maxFetchPages bounds the pages of one private tools/list fetch.
const maxFetchPages = 100

// refreshCatalog fetches the server's whole tool list (every page) with
// private request ids that the client never sees, and replaces the catalog.
// It follows nextCursor only while it is a non-empty string not seen before
// in this fetch, for at most maxFetchPages pages, and gives up after
// FetchTimeout; on any of these (and on an error answer) the catalog is
// left as it was and a warning is logged. The requests go to the server in
// order behind the client frames already on their way (the Sequencer to
// the server): a fetch that the client's notifications/initialized
// allowed never overtakes it. Callers check fetchAllowed first.
func (s *Session) refreshCatalog(callMeta []byte) {
	deadline := time.Now().Add(s.cfg.FetchTimeout)
	var all []mcp.Tool
	var cursor []byte
	seen := map[string]bool{}
	for page := 0; page < maxFetchPages; page++ {
		id := `"gatehouse-` + s.privNonce + "-" + strconv.FormatUint(s.privSeq.Add(1), 10) + `"`
		req := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"`)
		params := []byte{}
		if cursor != nil {
			params = append(params, `"cursor":`...)
			params = append(params, cursor...)
		}
		if meta := s.privateMeta(callMeta); meta != nil {
			if len(params) > 0 {
				params = append(params, ',')
			}
			params = append(params, `"_meta":`...)
			params = append(params, meta...)
		}
		if len(params) > 0 {
			req = append(req, `,"params":{`...)
			req = append(req, params...)
			req = append(req, '}')
		}
		req = append(req, "}\n"...)
		ch := make(chan []byte, 1)
		key := jsonrpc.NewID([]byte(id)).Key()
		s.mu.Lock()
		s.private[key] = ch
		s.mu.Unlock()
		if err := s.sendPrivate(req); err != nil {
			s.dropPrivate(key)
			return
		}
		var resp []byte
		select {
		case r, ok := <-ch:
			if !ok {
				return
			}
			resp = r
		case <-time.After(time.Until(deadline)):
			s.dropPrivate(key)
			s.log.Warn("tools/list refresh timed out", "timeout", s.cfg.FetchTimeout)
			return
		}
		m, err := jsonrpc.Parse(resp)
		if err != nil || m.Result == nil {
			s.log.Warn("tools/list refresh failed: the server answered with an error")
			return
		}
		tools, next := s.toolsPage(m.Result)
		all = append(all, tools...)
		if next == nil {
			s.catalog.replace(all)
			s.drift.observe(all, true, true, all, s.catalog.factsFor)
			return
		}
		c, err := jsontext.AppendUnquote(nil, next)
		switch {
		case err != nil || len(c) == 0:
			s.log.Warn("tools/list refresh ended: the server sent an empty nextCursor; the catalog is left as it was")
			return
		case seen[string(c)]:
			s.log.Warn("tools/list refresh ended: the server repeated a nextCursor; the catalog is left as it was")
			return
		}
		seen[string(c)] = true
		cursor = next
	}
	s.log.Warn("tools/list refresh ended: the listing has more pages than the gateway follows; the catalog is left as it was", "pages", maxFetchPages)
}

// sendPrivate sends one of the gateway's own requests to the server, from a
// goroutine other than the relay loops: in order behind what waits in the
// Sequencer to the server.
func (s *Session) sendPrivate(req []byte) error {
	return s.toServerQ.PushAfter(req, nil, nil)
}

// fetchAllowed reports whether the gateway may send its own tools/list
// now: under a session-based revision (up to 2025-11-25, or none known
// yet) only once the client's notifications/initialized is on its way to
// the server (lifecycle: the client sends only pings before it, and the
// server need not answer other requests); under a stateless revision
// (2026-07-28), which has no initialized notification, always.
func (s *Session) fetchAllowed() bool {
	return s.initialized.Load() || s.Revision().Stateless()
}

func (s *Session) dropPrivate(key string) {
	s.mu.Lock()
	delete(s.private, key)
	s.mu.Unlock()
}

// privateMeta returns the _meta for a private request: under a stateless
// revision, the protocol version (and client info/capabilities) the client
// itself declared; nil otherwise.
func (s *Session) privateMeta(callMeta []byte) []byte {
	s.mu.Lock()
	rev, last := s.revision, s.lastMeta
	s.mu.Unlock()
	if !rev.Stateless() {
		return nil
	}
	src := callMeta
	if src == nil || src[0] != '{' {
		src = last
	}
	out := map[string]json.RawMessage{}
	_ = jsonrpc.ObjectMembers(src, func(n string, v []byte) {
		switch n {
		case mcp.MetaProtocolVersion, "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities":
			out[n] = append(json.RawMessage(nil), v...)
		}
	})
	if len(out) == 0 {
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}
