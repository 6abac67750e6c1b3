package gateway

import (
	"errors"
	"strings"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
)

// catalog is what the gateway knows of the server's tools, learned from every
// page of every tools/list result that passes through it (client-initiated
// or private). It is safe for concurrent use.
type catalog struct {
	mu    sync.RWMutex
	tools map[string]mcp.Tool
	// facts maps a tool name to what the gateway derives from its
	// definition in tools (its normalized intent and policy view),
	// computed when the definition is catalogued, never per call.
	facts map[string]*toolFacts
	// props maps a tool name to its inputSchema's top-level property names,
	// folded (see foldName) to exact.
	props map[string]map[string]string
	// stale is set by notifications/tools/list_changed: the next tools/call
	// refreshes the whole catalog before it is decided.
	stale bool
	// listing accumulates the pages of a client-initiated tools/list from
	// its first page (no cursor) to its last (no nextCursor).
	listing []mcp.Tool
	// gen counts changes of tools and stale; decisions holds policy
	// decisions per tool name taken at generation gen, for a policy that
	// depends only on the tool (policy.DependsOnlyOnTool). Every change
	// empties it.
	gen       uint64
	decisions map[string]policy.Decision
	// findings, when set, scans a listed definition (scanStage.toolFindings)
	// with the findings about its name in its listing (names, from
	// scanStage.nameFindings): they become the policy's tool.findings. Set
	// once, before the catalog is used.
	findings func(t mcp.Tool, name []policy.Finding) []policy.Finding
	names    func(tools []mcp.Tool) map[string][]policy.Finding
}

// maxDecisions bounds the decision cache (one entry per tool name).
const maxDecisions = 4096

func newCatalog() *catalog {
	return &catalog{tools: map[string]mcp.Tool{}, facts: map[string]*toolFacts{}, props: map[string]map[string]string{}, decisions: map[string]policy.Decision{}}
}

// newFacts is newToolFacts(t) with the definition's scan findings; names
// are the name findings of t's listing (nameFindings).
func (c *catalog) newFacts(t mcp.Tool, names map[string][]policy.Finding) *toolFacts {
	var fs []policy.Finding
	if c.findings != nil {
		fs = c.findings(t, names[t.Name])
	}
	return newToolFacts(t, fs)
}

// nameFindings are the findings about the names of one listing (lookalike
// names, collisions), nil without a scanner.
func (c *catalog) nameFindings(tools []mcp.Tool) map[string][]policy.Finding {
	if c.names == nil {
		return nil
	}
	return c.names(tools)
}

// changed records a change of the catalog (c.mu held for writing): cached
// decisions no longer hold.
func (c *catalog) changed() {
	c.gen++
	clear(c.decisions)
}

// lookupGen is lookup with the tool's facts (nil when unknown) and the
// generation the answer belongs to, for decision and keepDecision.
func (c *catalog) lookupGen(name string) (t mcp.Tool, f *toolFacts, known, stale bool, gen uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tools[name]
	return t, c.facts[name], ok, c.stale, c.gen
}

// decision returns the cached policy decision for tool name, if one was
// kept at generation gen and the catalog has not changed since.
func (c *catalog) decision(name string, gen uint64) (policy.Decision, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.gen != gen {
		return policy.Decision{}, false
	}
	d, ok := c.decisions[name]
	return d, ok
}

// keepDecision caches d for tool name if the catalog is still at
// generation gen (a decision taken on an older definition is not kept).
func (c *catalog) keepDecision(name string, gen uint64, d policy.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || len(c.decisions) >= maxDecisions {
		return
	}
	c.decisions[name] = d
}

// schemaProps returns the top-level property names of an inputSchema,
// folded to exact; nil when there are none.
func schemaProps(schema []byte) map[string]string {
	if len(schema) == 0 || schema[0] != '{' {
		return nil
	}
	props := member(schema, "properties")
	if len(props) == 0 || props[0] != '{' {
		return nil
	}
	out := map[string]string{}
	_ = jsonrpc.ObjectMembers(props, func(n string, _ []byte) { out[foldName(n)] = n })
	return out
}

// foldName is a name under case folding (lower(upper(name))), as a server
// matching member names case-insensitively would compare them.
func foldName(n string) string { return strings.ToLower(strings.ToUpper(n)) }

// argumentNameMismatch reports an argument name of the call that differs
// from a property of the tool's inputSchema only in case ("Path" for
// "path"): the policy would read one argument and a server matching names
// case-insensitively another.
func (c *catalog) argumentNameMismatch(tool string, args []byte) bool {
	c.mu.RLock()
	props := c.props[tool]
	c.mu.RUnlock()
	if props == nil || len(args) == 0 || args[0] != '{' {
		return false
	}
	bad := false
	_ = jsonrpc.ObjectMembers(args, func(n string, _ []byte) {
		if exact, ok := props[foldName(n)]; ok && exact != n {
			bad = true
		}
	})
	return bad
}

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
	c.changed()
	c.stale = true
	c.listing = nil
	c.mu.Unlock()
}

// listedTwice returns the names that tools lists more than once, nil when
// none is. A name defined twice in one listing is ambiguous (a client may
// keep either definition, the gateway would keep the last): it is not
// catalogued, so a call to it is denied as unknown_tool.
func listedTwice(tools []mcp.Tool) map[string]bool {
	var seen, dup map[string]bool
	for _, t := range tools {
		if seen[t.Name] {
			if dup == nil {
				dup = map[string]bool{}
			}
			dup[t.Name] = true
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[t.Name] = true
	}
	return dup
}

// withoutNames returns tools without the definitions named in drop.
func withoutNames(tools []mcp.Tool, drop map[string]bool) []mcp.Tool {
	if drop == nil {
		return tools
	}
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if !drop[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// upsert records the tools of one tools/list result page. A name the page
// lists twice is removed from the catalog (listedTwice).
func (c *catalog) upsert(tools []mcp.Tool) {
	dup := listedTwice(tools)
	tools = withoutNames(tools, dup)
	facts := make([]*toolFacts, len(tools))
	names := c.nameFindings(tools)
	for i, t := range tools {
		facts[i] = c.newFacts(t, names)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changed()
	for n := range dup {
		delete(c.tools, n)
		delete(c.facts, n)
		delete(c.props, n)
	}
	for i, t := range tools {
		c.tools[t.Name] = t
		c.facts[t.Name] = facts[i]
		c.props[t.Name] = schemaProps(t.InputSchema)
	}
}

// page records one page of a client-initiated tools/list result: its tools
// are known at once; a listing followed from its first page to its last
// replaces the catalog and clears stale, and is returned as all with
// complete true.
func (c *catalog) page(tools []mcp.Tool, first, last bool) (all []mcp.Tool, complete bool) {
	c.upsert(tools)
	c.mu.Lock()
	if first {
		c.listing = c.listing[:0]
	}
	started := first || c.listing != nil
	c.listing = append(c.listing, tools...)
	all = c.listing
	if last {
		c.listing = nil
	}
	c.mu.Unlock()
	if last && started {
		c.replace(all)
		return all, true
	}
	return nil, false
}

// replace installs a complete listing (all pages) and clears stale. A name
// the listing defines twice is left out (listedTwice).
func (c *catalog) replace(tools []mcp.Tool) {
	tools = withoutNames(tools, listedTwice(tools))
	m := make(map[string]mcp.Tool, len(tools))
	facts := make(map[string]*toolFacts, len(tools))
	props := make(map[string]map[string]string, len(tools))
	names := c.nameFindings(tools)
	for _, t := range tools {
		m[t.Name] = t
		facts[t.Name] = c.newFacts(t, names)
		props[t.Name] = schemaProps(t.InputSchema)
	}
	c.mu.Lock()
	c.changed()
	c.tools = m
	c.facts = facts
	c.props = props
	c.stale = false
	c.mu.Unlock()
}

func (c *catalog) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tools)
}

// parseToolsPage reads the tools and the nextCursor of a tools/list result
// with the strict decoder (mcp.ParseToolsPage): member names match exactly,
// duplicates, names that differ from a known member only in case and known
// members of the wrong type are refused. A definition refused is skipped,
// so it is not catalogued and a call to it is denied as unknown_tool; a
// result that cannot be read at all gives no tools and no cursor. The page
// itself is relayed unchanged either way.
func parseToolsPage(result []byte) (tools []mcp.Tool, nextCursor []byte) {
	tools, nextCursor, _ = mcp.ParseToolsPage(result)
	return tools, nextCursor
}

// toolsPage is parseToolsPage that also reports on the diagnostic logger
// each definition it skipped, by index, name length and field only (a
// name or value may carry anything: secrets, terminal controls).
func (s *Session) toolsPage(result []byte) (tools []mcp.Tool, nextCursor []byte) {
	tools, nextCursor, err := mcp.ParseToolsPage(result)
	var skipped mcp.ToolErrors
	var page *mcp.PageError
	switch {
	case errors.As(err, &skipped):
		for _, e := range skipped {
			s.log.Warn("tools/list: tool definition refused, not catalogued", "index", e.Index, "name_bytes", e.NameBytes, "field", e.Field, "reason", e.Err.Error())
		}
	case errors.As(err, &page):
		s.log.Warn("tools/list: result refused, no tool catalogued", "field", page.Field, "reason", page.Err.Error())
	}
	return tools, nextCursor
}

// invalidate records a change outside the catalog that its cached
// decisions depend on (a baseline approved, a hold released elsewhere).
func (c *catalog) invalidate() {
	c.mu.Lock()
	c.changed()
	c.mu.Unlock()
}

// factsFor returns the facts of the catalogued definition of name, nil
// when it is not catalogued.
func (c *catalog) factsFor(name string) *toolFacts {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.facts[name]
}
