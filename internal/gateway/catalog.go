package gateway

import (
	"encoding/json"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// catalog is what the gateway knows of the server's tools, learned from every
// page of every tools/list result that passes through it (client-initiated
// or private). It is safe for concurrent use.
type catalog struct {
	mu    sync.RWMutex
	tools map[string]mcp.Tool
	// stale is set by notifications/tools/list_changed: the next tools/call
	// refreshes the whole catalog before it is decided.
	stale bool
	// listing accumulates the pages of a client-initiated tools/list from
	// its first page (no cursor) to its last (no nextCursor).
	listing []mcp.Tool
}

func newCatalog() *catalog { return &catalog{tools: map[string]mcp.Tool{}} }

func (c *catalog) lookup(name string) (mcp.Tool, bool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tools[name]
	return t, ok, c.stale
}

// markStale records notifications/tools/list_changed: the next tools/call
// refreshes the catalog, and a client listing in progress (whose earlier
// pages predate the change) will not replace it.
func (c *catalog) markStale() {
	c.mu.Lock()
	c.stale = true
	c.listing = nil
	c.mu.Unlock()
}

// upsert records the tools of one tools/list result page.
func (c *catalog) upsert(tools []mcp.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tools {
		c.tools[t.Name] = t
	}
}

// page records one page of a client-initiated tools/list result: its tools
// are known at once; a listing followed from its first page to its last
// replaces the catalog and clears stale.
func (c *catalog) page(tools []mcp.Tool, first, last bool) {
	c.upsert(tools)
	c.mu.Lock()
	if first {
		c.listing = c.listing[:0]
	}
	started := first || c.listing != nil
	c.listing = append(c.listing, tools...)
	all := c.listing
	if last {
		c.listing = nil
	}
	c.mu.Unlock()
	if last && started {
		c.replace(all)
	}
}

// replace installs a complete listing (all pages) and clears stale.
func (c *catalog) replace(tools []mcp.Tool) {
	m := make(map[string]mcp.Tool, len(tools))
	for _, t := range tools {
		m[t.Name] = t
	}
	c.mu.Lock()
	c.tools = m
	c.stale = false
	c.mu.Unlock()
}

func (c *catalog) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tools)
}

// parseToolsPage reads the tools and the nextCursor of a tools/list result.
// Tools that cannot be read (no string name) are skipped; the page itself is
// relayed unchanged either way.
func parseToolsPage(result []byte) (tools []mcp.Tool, nextCursor []byte) {
	_ = jsonrpc.ObjectMembers(result, func(name string, v []byte) {
		switch name {
		case "tools":
			var raw []json.RawMessage
			if json.Unmarshal(v, &raw) != nil {
				return
			}
			for _, r := range raw {
				var t mcp.Tool
				if json.Unmarshal(r, &t) == nil && t.Name != "" {
					tools = append(tools, t)
				}
			}
		case "nextCursor":
			if len(v) > 0 && v[0] == '"' {
				nextCursor = v
			}
		}
	})
	return tools, nextCursor
}
