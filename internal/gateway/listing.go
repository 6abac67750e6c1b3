package gateway

import (
	"bytes"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// quarantineNotice starts the description of a quarantined tool in the
// listing the client sees (drift.listing: mark).
const quarantineNotice = "[QUARANTINED by Gatehouse: calls to this tool are refused until it is reviewed] "

// observeListing hands one tools/list page the client asked for (first:
// without a cursor) to the drift tracker (driftTracker.observe) and returns the frame the client
// gets instead of frame when the listing hides or marks a tool, nil to
// relay frame as received.
func (s *Session) observeListing(page []mcp.Tool, first, complete bool, all []mcp.Tool, m *jsonrpc.Message, frame []byte) []byte {
	held := s.drift.observe(page, first, complete, all, s.catalog.factsFor)
	hide, mark := s.drift.listing(page, held, s.catalog.factsFor)
	if hide == nil && mark == nil {
		return nil
	}
	out, err := rewriteListing(m.ID.Raw(), m.Result, hide, mark, terminator(frame))
	if err != nil {
		// The page parsed strictly as it was catalogued: this cannot
		// happen. Relaying it as received would show a held tool as
		// callable, so the page is refused instead.
		s.log.Error("tools/list: the listing could not be rewritten; answered with an error", "err", err)
		return errorFrame(m.ID, jsonrpc.CodeInternalError, "gatehouse: the tool listing could not be filtered", nil)
	}
	return out
}

// rewriteListing returns the JSON-RPC response with id whose result is
// result with the tools named in hide left out of result.tools and the
// ones named in mark with quarantineNotice before their description. Every
// other member and tool is kept byte for byte; member names are written
// again from their decoded form.
func rewriteListing(id, result []byte, hide, mark map[string]string, term []byte) ([]byte, error) {
	members, err := strictjson.Object(result)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{`...)
	for i, mem := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, mem.Name)
		b = append(b, ':')
		if mem.Name != "tools" {
			b = append(b, mem.Value...)
			continue
		}
		els, err := strictjson.Elements(mem.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, '[')
		n := 0
		for _, el := range els {
			name := toolName(el)
			if _, ok := hide[name]; ok {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			if _, ok := mark[name]; ok {
				if b, err = appendMarked(b, el); err != nil {
					return nil, err
				}
				continue
			}
			b = append(b, el...)
		}
		b = append(b, ']')
	}
	b = append(b, "}}"...)
	return append(b, term...), nil
}

// appendMarked appends the tool definition el with quarantineNotice before
// its description (a description member added when it has none).
func appendMarked(b, el []byte) ([]byte, error) {
	members, err := strictjson.Object(el)
	if err != nil {
		return nil, err
	}
	b = append(b, '{')
	described := false
	for i, mem := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, mem.Name)
		b = append(b, ':')
		if mem.Name == "description" {
			d, err := strictjson.String(mem.Value)
			if err != nil {
				return nil, err
			}
			b = appendJSONString(b, quarantineNotice+d)
			described = true
			continue
		}
		b = append(b, mem.Value...)
	}
	if !described {
		if len(members) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"description":`...)
		b = appendJSONString(b, quarantineNotice[:len(quarantineNotice)-1])
	}
	return append(b, '}'), nil
}

// toolName is the name member of a tool definition, "" when it has none.
func toolName(el []byte) string {
	v := member(el, "name")
	if v == nil {
		return ""
	}
	n, err := strictjson.String(v)
	if err != nil {
		return ""
	}
	return n
}

// terminator is frame's line terminator ("\r\n" or "\n"; "\n" for a frame
// without one).
func terminator(frame []byte) []byte {
	if bytes.HasSuffix(frame, []byte("\r\n")) {
		return []byte("\r\n")
	}
	return []byte("\n")
}

// refreshOnListChanged fetches the server's listing after a
// notifications/tools/list_changed, so that drift is found (and a tool
// held) when the server changes its tools, not at the next call. It runs
// on a goroutine of its own, behind any fetch already running, once
// private fetches are allowed (fetchAllowed); a refresh already waiting
// covers this notification too.
func (s *Session) refreshOnListChanged() {
	if !s.fetchAllowed() || !s.listChangedPending.CompareAndSwap(false, true) {
		return
	}
	go func() {
		s.refreshing <- struct{}{}
		s.listChangedPending.Store(false)
		if _, _, stale := s.catalog.lookup(""); stale {
			s.refreshCatalog(nil)
		}
		<-s.refreshing
	}()
}
