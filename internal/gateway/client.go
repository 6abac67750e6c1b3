package gateway

import (
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// handleClient classifies one client frame and relays, answers or refuses
// it. The frame is only valid during the call.
func (s *Session) handleClient(f *transport.Frame) error {
	frame, m, perr := f.Raw, f.Msg, f.Err
	if !s.opened.Load() && !(perr == nil && m.Kind == jsonrpc.KindRequest && m.Method == mcp.MethodServerDiscover) {
		if err := s.openReceipts(); err != nil {
			return err
		}
	}
	if perr != nil {
		s.record("client", perr.Message, perr.Code, len(frame), perr.ID)
		return s.sendClient(errorFrame(perr.ID, perr.Code, "gatehouse: "+perr.Message, nil))
	}
	switch m.Kind {
	case jsonrpc.KindBatch:
		return s.clientBatch(frame, &m)
	default:
		out, reply, err := s.clientMessage(frame, &m, false)
		if err != nil {
			return err
		}
		if reply != nil {
			if err := s.sendClient(reply); err != nil {
				return err
			}
		}
		if !out {
			return nil
		}
		// Frames keep their order through the Sequencer, except
		// notifications/cancelled and notifications/progress, which go at
		// once and never wait behind calls; a request the client cancelled
		// while it waited is then not forwarded.
		switch {
		case m.Kind == jsonrpc.KindNotification && (m.Method == mcp.MethodCancelled || m.Method == mcp.MethodProgress):
			return s.sendServer(frame)
		case m.Kind == jsonrpc.KindRequest:
			// The key is computed once: the check runs for every request
			// (on the loop when nothing waits).
			key := m.ID.Key()
			s.mu.Lock()
			slot := s.pendingC2S[key]
			s.mu.Unlock()
			return s.relayToServer(frame, func() (bool, []byte) { return !s.cancelledKey(key, slot), nil })
		}
		return s.relayToServer(frame, nil)
	}
}

// openReceipts creates the receipt sidecar at the first client frame that is
// not server/discover (request-receipts.md §2).
func (s *Session) openReceipts() error {
	if s.cfg.Receipts == nil || s.opened.Swap(true) {
		return nil
	}
	if err := s.cfg.Receipts.Open(); err != nil {
		return fmt.Errorf("%w: request receipts: %w", ErrFatal, err)
	}
	return nil
}

// clientMessage handles one client message (top level or batch member). It
// reports whether the message is to be forwarded, and an answer to send to
// the client instead, if any. line is the exact received line for a
// top-level message (receipts bind it); nil for batch members.
func (s *Session) clientMessage(line []byte, m *jsonrpc.Message, inBatch bool) (forward bool, reply []byte, err error) {
	switch m.Kind {
	case jsonrpc.KindRequest, jsonrpc.KindNotification:
		if m.Method == mcp.MethodToolsCall {
			return s.toolCall(line, m, inBatch)
		}
		if mcp.NearMethod(m.Method, mcp.MethodToolsCall) {
			// "TOOLS/CALL", "tools/call ", "tools/\u200bcall": a server
			// that matches method names loosely would run a tool call
			// that no policy decided. Refused, never forwarded.
			const reason = "method differs from tools/call only in case, spacing, control or format characters"
			s.record("client", reason, jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			if m.Kind == jsonrpc.KindNotification {
				return false, nil, nil
			}
			return false, errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: invalid request: "+reason, nil), nil
		}
		s.noteDeclaredRevision(m)
		if m.Kind == jsonrpc.KindNotification {
			if m.Method == mcp.MethodCancelled {
				if s.cancelsInitialize(m.Params) {
					// Cancellation: "The initialize request MUST NOT be
					// cancelled by clients." The request stays pending
					// and the server never sees the notification.
					s.stats.Dropped.Add(1)
					s.record("client", "notifications/cancelled names the initialize request, which a client must not cancel", 0, len(m.Raw), jsonrpc.ID{})
					return false, nil, nil
				}
				s.forgetCancelled(m.Params)
			}
			if m.Method == mcp.MethodInitialized {
				// Everything sent to the server from now on goes behind
				// it: the gateway's own tools/list may go too.
				s.initialized.Store(true)
			}
			return s.scanClientMessage(line, m, nil)
		}
		if inBatch && m.Method == mcp.MethodInitialize {
			// Lifecycle (2025-03-26, the only revision with batches):
			// "The initialize request MUST NOT be part of a JSON-RPC
			// batch". Only this member is refused.
			const reason = "the initialize request must not be part of a JSON-RPC batch"
			s.record("client", reason, jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			return false, errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: "+reason, nil), nil
		}
		p := &pending{method: m.Method}
		if m.Method == mcp.MethodToolsList {
			p.cursor = hasMember(m.Params, "cursor")
		}
		if !s.addPending(m.ID, p) {
			if reply := s.goneReply(m); reply != nil {
				return false, reply, nil
			}
			s.record("client", "request id already in flight", jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			return false, errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: request id "+m.ID.String()+" is already in flight", nil), nil
		}
		return s.scanClientMessage(line, m, p)
	case jsonrpc.KindResponse:
		s.mu.Lock()
		method, ok := s.pendingS2C[m.ID.Key()]
		delete(s.pendingS2C, m.ID.Key())
		s.mu.Unlock()
		if !ok {
			s.stats.Dropped.Add(1)
			s.record("client", "response to no pending server request", 0, len(m.Raw), m.ID)
			return false, nil, nil
		}
		if s.scan != nil {
			out, answer := s.scanMessage(dirClientToServer, m, line, method)
			switch {
			case out == nil:
				if answer != nil {
					return false, nil, s.relayToServer(answer, nil)
				}
				return false, nil, nil
			case line != nil && &out[0] != &line[0]:
				return false, nil, s.relayToServer(out, nil)
			}
		}
		return true, nil, nil
	}
	return false, nil, nil
}

// scanClientMessage scans a client request (slot: its pending entry) or
// notification (slot nil) other than tools/call (Session.scanMessage)
// and says what clientMessage says: forward it as it is, answer it (a
// withheld request, its pending entry released), or neither (a dropped
// notification, or a rewritten message relayed here, in order).
func (s *Session) scanClientMessage(line []byte, m *jsonrpc.Message, slot *pending) (bool, []byte, error) {
	if s.scan == nil {
		return true, nil, nil
	}
	out, answer := s.scanMessage(dirClientToServer, m, line, m.Method)
	switch {
	case out == nil:
		if slot != nil {
			s.release(m.ID, slot)
		}
		return false, answer, nil
	case line != nil && &out[0] != &line[0]:
		var ready pipeline.Ready
		if slot != nil {
			key := m.ID.Key()
			ready = func() (bool, []byte) { return !s.cancelledKey(key, slot), nil }
		}
		return false, nil, s.relayToServer(out, ready)
	}
	return true, nil, nil
}

// addPending registers a client request; false when its id is in flight.
func (s *Session) addPending(id jsonrpc.ID, p *pending) bool {
	k := id.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.pendingC2S[k]; dup || s.goneMessage != "" {
		return false
	}
	p.id = copyRaw(id.Raw())
	s.pendingC2S[k] = p
	return true
}

// goneReply is the answer to request m when it arrives after ServerGone
// (a batch that waited for the catalog fetch, say): nothing will answer
// it, so it gets ServerGone's error at once and is recorded. nil while the
// server is there.
func (s *Session) goneReply(m *jsonrpc.Message) []byte {
	s.mu.Lock()
	msg := s.goneMessage
	s.mu.Unlock()
	if msg == "" {
		return nil
	}
	s.record("client", "request after the server exited", jsonrpc.CodeInternalError, len(m.Raw), m.ID)
	return errorFrame(m.ID, jsonrpc.CodeInternalError, msg, nil)
}

// forgetCancelled drops the pending entry of a request the client cancelled
// (notifications/cancelled, "Cancellation"): a late response is then
// dropped. The notification itself is forwarded at once.
func (s *Session) forgetCancelled(params []byte) {
	if params == nil || params[0] != '{' {
		return
	}
	_ = jsonrpc.ObjectMembers(params, func(name string, v []byte) {
		if name == "requestId" {
			k := jsonrpc.NewID(v).Key()
			s.mu.Lock()
			delete(s.pendingC2S, k)
			s.mu.Unlock()
		}
	})
}

// cancelsInitialize reports whether notifications/cancelled params name a
// pending initialize request by their requestId.
func (s *Session) cancelsInitialize(params []byte) bool {
	v := cancelledID(params)
	if v == nil {
		return false
	}
	k := jsonrpc.NewID(v).Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pendingC2S[k]
	return ok && p.method == mcp.MethodInitialize
}

// cancelledID returns the raw requestId of notifications/cancelled params,
// nil when there is none.
func cancelledID(params []byte) []byte {
	if params == nil || params[0] != '{' {
		return nil
	}
	return member(params, "requestId")
}

// noteDeclaredRevision learns the revision a stateless (2026-07-28) request
// states in params._meta, and keeps its _meta for private requests.
func (s *Session) noteDeclaredRevision(m *jsonrpc.Message) {
	if m.Params == nil || m.Params[0] != '{' {
		return
	}
	s.noteDeclaredMeta(member(m.Params, "_meta"))
}

// noteDeclaredMeta is noteDeclaredRevision given the request's params._meta
// (nil when absent): tools/call finds it while reading its params.
func (s *Session) noteDeclaredMeta(meta []byte) {
	if meta == nil || meta[0] != '{' {
		return
	}
	v := member(meta, mcp.MetaProtocolVersion)
	if len(v) < 2 || v[0] != '"' {
		return
	}
	rev := mcp.Revision(v[1 : len(v)-1])
	if !rev.Stateless() {
		return
	}
	s.mu.Lock()
	s.revision = rev
	s.lastMeta = append(s.lastMeta[:0], meta...)
	s.mu.Unlock()
}

// clientBatch handles a JSON-RPC batch: refused unless the negotiated
// revision is 2025-03-26, where every member is decided on its own. When all
// members go through, the original bytes are forwarded; otherwise the
// forwarded members are re-joined from their original bytes and the others
// are answered separately.
func (s *Session) clientBatch(frame []byte, m *jsonrpc.Message) error {
	rev := s.Revision()
	if !rev.AllowsBatch() {
		reason := "JSON-RPC batches are not supported"
		if rev != "" {
			reason += " by protocol revision " + string(rev)
		} else {
			reason += " before a protocol revision is negotiated"
		}
		s.record("client", reason, jsonrpc.CodeInvalidRequest, len(frame), jsonrpc.ID{})
		return s.sendClient(errorFrame(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "gatehouse: "+reason, nil))
	}
	// A member naming a tool the gateway does not know (or any tools/call
	// while the catalog is stale) needs the catalog refreshed first, once
	// for the whole batch: the batch then waits on its own goroutine, so
	// that the client's other traffic is not queued behind it.
	if s.settings.UnknownTool == "fetch" && s.fetchAllowed() && s.batchNeedsRefresh(m) {
		if !s.hold() {
			// No place to wait: the members that need the fetch are
			// refused (a request answered with CodeBusy on its own, as
			// the members the gateway answers always are), and the
			// others (a response to a server request, a notification,
			// a call to a known tool) are handled as usual now.
			reason := s.busyReason()
			rest := jsonrpc.Message{Kind: jsonrpc.KindBatch}
			var raws [][]byte
			for i := range m.Members {
				mm := &m.Members[i]
				if !s.memberNeedsRefresh(mm) {
					rest.Members = append(rest.Members, *mm)
					raws = append(raws, mm.Raw)
					continue
				}
				s.record("client", reason, CodeBusy, len(mm.Raw), mm.ID)
				if mm.Kind == jsonrpc.KindRequest {
					if err := s.sendClient(errorFrame(mm.ID, CodeBusy, "gatehouse: "+reason, nil)); err != nil {
						return err
					}
				}
			}
			if len(rest.Members) == 0 {
				return nil
			}
			return s.relayBatch(joinBatch(raws), &rest, true)
		}
		held := append([]byte(nil), frame...)
		go func() {
			defer s.unhold()
			s.refreshing <- struct{}{}
			s.refreshCatalog(nil)
			<-s.refreshing
			hm, err := jsonrpc.Parse(held)
			if err != nil {
				return
			}
			if err := s.relayBatch(held, &hm, false); err != nil {
				s.log.Error("relaying a batch failed", "err", err)
			}
		}()
		return nil
	}
	return s.relayBatch(frame, m, true)
}

// memberNeedsRefresh reports whether batch member mm is a tools/call for a
// tool the gateway does not know, or any tools/call while the catalog is
// stale.
func (s *Session) memberNeedsRefresh(mm *jsonrpc.Message) bool {
	if mm.Method != mcp.MethodToolsCall {
		return false
	}
	if p, ok := parseToolCall(mm.Params); ok {
		_, known, stale := s.catalog.lookup(p.name)
		return !known || stale
	}
	return false
}

// batchNeedsRefresh reports whether a member of batch m is a tools/call for
// a tool the gateway does not know, or the catalog is stale.
func (s *Session) batchNeedsRefresh(m *jsonrpc.Message) bool {
	for i := range m.Members {
		if s.memberNeedsRefresh(&m.Members[i]) {
			return true
		}
	}
	return false
}

// relayBatch decides every member of batch m in order and forwards what is
// allowed, answering the rest. loop is true on the client relay loop, false
// on the goroutine of a batch held for a catalog fetch (which must not use
// the loop's burst: it pushes through deliverHeld).
func (s *Session) relayBatch(frame []byte, m *jsonrpc.Message, loop bool) error {
	var keep [][]byte
	var replies [][]byte
	for i := range m.Members {
		mm := &m.Members[i]
		fwd, reply, err := s.clientMessage(nil, mm, true)
		if err != nil {
			return err
		}
		if fwd {
			keep = append(keep, mm.Raw)
		}
		if reply != nil {
			replies = append(replies, reply)
		}
	}
	for _, r := range replies {
		if err := s.sendClient(r); err != nil {
			return err
		}
	}
	send := s.relayToServer
	if !loop {
		send = func(f []byte, _ func() (bool, []byte)) error { return s.deliverHeld(f, true, nil, nil) }
	}
	switch {
	case len(keep) == len(m.Members):
		return send(frame, nil)
	case len(keep) == 0:
		return nil
	}
	return send(joinBatch(keep), nil)
}

// joinBatch builds a batch frame from members' original bytes:
// "[" m1 "," m2 ... "]" LF.
func joinBatch(members [][]byte) []byte {
	n := 3
	for _, m := range members {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, ']', '\n')
}

// clientOversized answers a client frame over the limit: it was discarded
// by the reader; the client gets an error addressed to its id when the id
// could be read from the frame's first bytes. An oversized frame counts as
// a frame that is not server/discover for the receipt sidecar: it is
// created here if it was not yet.
func (s *Session) clientOversized(e *wire.FrameTooLargeError) error {
	if err := s.openReceipts(); err != nil {
		return err
	}
	id := jsonrpc.SniffID(e.Prefix)
	reason := fmt.Sprintf("frame of %d bytes exceeds the limit of %d bytes", e.Size, e.Limit)
	s.record("client", reason, jsonrpc.CodeInvalidRequest, int(e.Size), id)
	return s.sendClient(errorFrame(id, jsonrpc.CodeInvalidRequest, "gatehouse: "+reason, nil))
}

// member returns the raw value of the named member of a JSON object, or nil.
func member(obj []byte, name string) []byte {
	// obj is part of a strictly parsed frame (or a tool definition
	// ParseTool accepted): read again, not parsed again.
	var out []byte
	_ = strictjson.ValidatedMembers(obj, func(n string, v []byte) bool {
		if n == name {
			out = v
			return false
		}
		return true
	})
	return out
}

func hasMember(obj []byte, name string) bool {
	return member(obj, name) != nil
}
