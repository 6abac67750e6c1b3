package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// handleServer classifies one server frame and relays or drops it.
func (s *Session) handleServer(frame []byte) error {
	m, err := jsonrpc.Parse(frame)
	if err != nil {
		perr := err.(*jsonrpc.Error)
		s.stats.Dropped.Add(1)
		// Shown on stderr by record; the content is not (it may hold
		// secrets), only its size and why it was refused.
		s.record("server", perr.Message, perr.Code, len(frame), jsonrpc.ID{})
		return nil
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
		var call *Call
		if ok {
			call = p.call
		}
		s.mu.Unlock()
		if !ok {
			s.stats.Dropped.Add(1)
			s.record("server", "response to no pending request", 0, len(m.Raw), m.ID)
			return false
		}
		if call != nil && s.cfg.Evidence != nil {
			wait := s.cfg.Evidence.Responded(call, m)
			withheld := func(id jsonrpc.ID, withhold bool, reason string) bool {
				if withhold {
					s.stats.Denied.Add(1)
					_ = s.sendClient(errorFrame(id, CodeWithheld, "gatehouse: tools/call response withheld: "+reason, nil))
				}
				return withhold
			}
			if frame == nil {
				withhold, reason := wait()
				return !withheld(m.ID, withhold, reason)
			}
			id := jsonrpc.NewID(copyRaw(m.ID.Raw()))
			// In the ordered queue to the client: relayed, or replaced by
			// the withheld error, once the outcome is recorded.
			_ = s.relayToClient(frame, func() (bool, []byte) {
				if withhold, reason := wait(); withhold {
					s.stats.Denied.Add(1)
					return false, errorFrame(id, CodeWithheld, "gatehouse: tools/call response withheld: "+reason, nil)
				}
				return true, nil
			})
			return false
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
				s.catalog.page(tools, !p.cursor, next == nil)
			}
		}
		return true
	case jsonrpc.KindRequest:
		k := m.ID.Key()
		s.mu.Lock()
		_, dup := s.pendingS2C[k]
		if !dup {
			s.pendingS2C[k] = struct{}{}
		}
		s.mu.Unlock()
		if dup {
			s.record("server", "server request id already in flight", jsonrpc.CodeInvalidRequest, len(m.Raw), m.ID)
			_ = s.sendServer(errorFrame(m.ID, jsonrpc.CodeInvalidRequest, "gatehouse: request id "+m.ID.String()+" is already in flight", nil))
			return false
		}
		return true
	case jsonrpc.KindNotification:
		if m.Method == mcp.MethodToolsListChanged {
			s.catalog.markStale()
		}
		return true
	}
	return false
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
	s.mu.Lock()
	ch, private := s.private[id.Key()]
	delete(s.private, id.Key())
	s.mu.Unlock()
	if private {
		// The answer to the gateway's own tools/list: the refresh fails
		// now rather than at its timeout.
		close(ch)
		return nil
	}
	if isRequest {
		// A server-to-client request: the server is the sender.
		return s.sendServer(errorFrame(id, jsonrpc.CodeInvalidRequest, "gatehouse: "+reason, nil))
	}
	s.mu.Lock()
	_, ok := s.pendingC2S[id.Key()]
	delete(s.pendingC2S, id.Key())
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.sendClient(errorFrame(id, jsonrpc.CodeInternalError, "gatehouse: the server's response was dropped: "+reason, nil))
}

// refreshCatalog fetches the server's whole tool list (every page) with
// private request ids that the client never sees, and replaces the catalog.
// It gives up after FetchTimeout; the catalog is then left as it was.
func (s *Session) refreshCatalog(callMeta []byte) {
	deadline := time.Now().Add(s.cfg.FetchTimeout)
	var all []mcp.Tool
	var cursor []byte
	for page := 0; page < 1000; page++ {
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
		if err := s.sendServer(req); err != nil {
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
			return
		}
		cursor = next
	}
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
