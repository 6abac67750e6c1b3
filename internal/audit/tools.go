package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// toolFacts is what the evidence of a call takes from the tool's definition
// alone: its declaration, hashes and normalized intent. Computed once per
// definition (toolCache) and then only read, by any number of calls at
// once.
type toolFacts struct {
	key toolKey

	// decl is the tools/list _meta declaration, nil when absent or invalid.
	decl *evidence.ToolDeclaration
	// schemaHash and descHash are tool_schema_hash and
	// tool_description_hash ("" when not computed); schemaWarning says why
	// the schema hash is missing, when it is.
	schemaHash, schemaWarning, descHash string
	// intent is the tool's normalized intent without a receipt: the
	// gateway's (gateway.Call.Intent), else evidence.Normalize of the
	// declaration and the tool (of nothing for a tool not Known), the
	// same values; confidence is evidence.Confidence(intent, 0).
	intent     evidence.ToolIntent
	confidence float64
	// receipt is the tool-level server receipt of the listed definition
	// (evidence.FindToolReceipt), nil when it has none.
	receipt *toolReceipt
}

// toolReceipt is a tool-level server receipt (evidence.md §2: a full
// McpSecurityReceipt in the tools/list entry's security _meta, issued
// before any call) as the gateway checked it, once per definition: with
// the same code as a per-call receipt (evidence.Parse, evidence.VerifyAs
// with the keys of the gateway's server id, evidence.Conflicts on
// server_id, tool_name and the tool hashes; a tool-level receipt has no
// call to compare the per-call fields with). Every decision record of a
// call to that definition references it.
type toolReceipt struct {
	// raw is the receipt exactly as listed (a copy).
	raw []byte
	// id is its receipt_id, or an mcp_rcpt_unnamed_ id of the gateway's
	// (made once) when that cannot name it (serverReceiptIDUsable).
	id string
	// hash is evidence.Hash(raw), "" when it has no canonical form.
	hash   string
	status evidence.Status
	// warnings are its problems, conflicts and status, prefixed
	// "tool-level server receipt".
	warnings []string
}

// toolReceiptWarning prefixes the warnings of a tool-level receipt.
const toolReceiptWarning = "tool-level server receipt: "

// newToolReceipt checks the tool-level receipt of c's tool, nil when the
// tool is not listed or its declaration is not a full receipt.
func newToolReceipt(c *gateway.Call, keys evidence.Keys, schemaHash, descHash string) *toolReceipt {
	if !c.Known {
		return nil
	}
	found, ok := evidence.FindToolReceipt(toolObject(&c.Tool))
	if !ok {
		return nil
	}
	tr := &toolReceipt{raw: bytes.Clone(found)}
	sr, problems, err := evidence.Parse(tr.raw)
	if err != nil {
		sr = nil
	}
	for _, p := range problems {
		tr.warnings = append(tr.warnings, toolReceiptWarning+p.String())
	}
	tr.status = evidence.VerifyAs(tr.raw, sr, keys, c.ServerID)
	if h, err := evidence.Hash(tr.raw); err == nil {
		tr.hash = h
	} else {
		tr.warnings = append(tr.warnings, toolReceiptWarning+"server_receipt_hash not computed: "+errorClass(err))
	}
	if sr != nil {
		for _, w := range evidence.Conflicts(sr, evidence.CallFacts{
			ServerID: c.ServerID, ToolName: c.Tool.Name, ToolSchemaHash: schemaHash, ToolDescriptionHash: descHash,
		}) {
			tr.warnings = append(tr.warnings, toolReceiptWarning+w)
		}
		tr.id = sr.ReceiptID
	}
	if sr == nil || !serverReceiptIDUsable(tr.id, false) {
		tr.id = evidence.NewUnnamedReceiptID()
		tr.warnings = append(tr.warnings, toolReceiptWarning+"no usable receipt_id; referenced as "+tr.id)
	}
	if tr.status != evidence.StatusOK {
		tr.warnings = append(tr.warnings, toolReceiptWarning+"status "+string(tr.status))
	}
	return tr
}

// toolKey is every part of a call that toolFacts depends on: whether the
// tool is listed, and the tool definition's name, description, inputSchema,
// _meta and the three annotations Normalize reads. Byte slices are copies.
type toolKey struct {
	known                bool
	server               string
	name, description    string
	inputSchema, meta    []byte
	readOnly, destr, ext hint
}

// hint is an annotation's value: absent, false or true.
type hint uint8

func hintOf(p *bool) hint {
	switch {
	case p == nil:
		return 0
	case *p:
		return 2
	}
	return 1
}

// keyMatches reports whether c's tool is the one k was made from.
func (k *toolKey) matches(c *gateway.Call) bool {
	t := &c.Tool
	return k.known == c.Known && k.server == c.ServerID && k.name == t.Name && k.description == t.Description &&
		bytes.Equal(k.inputSchema, t.InputSchema) && bytes.Equal(k.meta, t.Meta) &&
		k.readOnly == hintOf(t.Annotations.ReadOnlyHint) && k.destr == hintOf(t.Annotations.DestructiveHint) &&
		k.ext == hintOf(t.Annotations.OpenWorldHint)
}

// newToolFacts computes the facts of c's tool; keys verify its tool-level
// receipt.
func newToolFacts(c *gateway.Call, keys evidence.Keys) *toolFacts {
	t := &c.Tool
	f := &toolFacts{key: toolKey{
		known: c.Known, server: c.ServerID, name: t.Name, description: t.Description,
		inputSchema: bytes.Clone(t.InputSchema), meta: bytes.Clone(t.Meta),
		readOnly: hintOf(t.Annotations.ReadOnlyHint), destr: hintOf(t.Annotations.DestructiveHint),
		ext: hintOf(t.Annotations.OpenWorldHint),
	}}
	if c.Known {
		if raw, ok := evidence.FindToolDeclaration(toolObject(t)); ok {
			if d, _, err := evidence.ParseDeclaration(raw); err == nil {
				f.decl = d
			}
		}
		if len(t.InputSchema) > 0 {
			var err error
			if f.schemaHash, err = evidence.Hash(t.InputSchema); err != nil {
				f.schemaWarning = "tool_schema_hash not computed: " + errorClass(err)
			}
		}
		f.descHash, _ = evidence.DescriptionHash(t.Description)
		f.receipt = newToolReceipt(c, keys, f.schemaHash, f.descHash)
	}
	switch {
	case c.Intent.Sources != nil:
		// The gateway's, computed once per catalogued definition: what
		// the policy decided on and the decision event recorded.
		f.intent = c.Intent
	case c.Known:
		// As the gateway computes it (a flawed dangerous declaration
		// taken toward danger, not dropped).
		tool := *t
		f.intent = evidence.ToolIntentOf(&tool)
	default:
		// Not listed, or listed before a list_changed: nothing about it
		// is trusted, as the gateway decides it (evidence.ToolIntentOf(nil)).
		f.intent = evidence.ToolIntentOf(nil)
	}
	f.confidence = evidence.Confidence(f.intent, 0)
	return f
}

// toolObject returns a JSON object carrying the tool's _meta, for
// evidence.FindToolDeclaration.
func toolObject(t *mcp.Tool) []byte {
	if len(t.Meta) == 0 {
		return nil
	}
	return append(append([]byte(`{"_meta":`), t.Meta...), '}')
}

// maxCachedTools bounds the cache: past it, the cache starts over. A
// server lists a few dozen tools; a catalog that changes all the time
// cannot make the cache grow.
const maxCachedTools = 512

// toolCache holds the toolFacts of the tools seen, keyed by a hash of the
// toolKey and checked against the whole key on every hit. Safe for
// concurrent use.
type toolCache struct {
	keys evidence.Keys // verify tool-level receipts
	seed maphash.Seed
	mu   sync.RWMutex
	m    map[uint64]*toolFacts
}

func newToolCache(keys evidence.Keys) *toolCache {
	return &toolCache{keys: keys, seed: maphash.MakeSeed(), m: make(map[uint64]*toolFacts)}
}

// get returns the facts of c's tool: cached when a call carried the same
// definition before, computed (and cached) otherwise. The result is the
// same either way; it must not be modified.
func (tc *toolCache) get(c *gateway.Call) *toolFacts {
	h := tc.hash(c)
	tc.mu.RLock()
	f := tc.m[h]
	tc.mu.RUnlock()
	if f != nil && f.key.matches(c) {
		return f
	}
	f = newToolFacts(c, tc.keys)
	tc.mu.Lock()
	if len(tc.m) >= maxCachedTools {
		clear(tc.m)
	}
	tc.m[h] = f // a hash collision replaces the other definition's entry
	tc.mu.Unlock()
	return f
}

// hash hashes the parts of c that make its toolKey.
func (tc *toolCache) hash(c *gateway.Call) uint64 {
	var h maphash.Hash
	h.SetSeed(tc.seed)
	t := &c.Tool
	var head [4]byte
	if c.Known {
		head[0] = 1
	}
	head[1], head[2], head[3] = byte(hintOf(t.Annotations.ReadOnlyHint)), byte(hintOf(t.Annotations.DestructiveHint)), byte(hintOf(t.Annotations.OpenWorldHint))
	h.Write(head[:])
	for _, s := range []string{c.ServerID, t.Name, t.Description} {
		maphash.WriteComparable(&h, len(s))
		h.WriteString(s)
	}
	for _, b := range [][]byte{t.InputSchema, t.Meta} {
		maphash.WriteComparable(&h, len(b))
		h.Write(b)
	}
	return h.Sum64()
}

// RecordTools appends recs (ledger.KindToolBaseline,
// ledger.KindToolQuarantine records), each encoded RFC 8785 under a new
// audit_event_id, as one group, and waits until they are durable: the
// gateway's own first-use baselines and holds (gateway.ToolRecorder;
// docs/drift.md). The error says what could not be encoded or written;
// nothing is appended when a record cannot be encoded.
func (r *Recorder) RecordTools(recs []gateway.ToolRecord) error {
	out := make([]ledger.Record, 0, len(recs))
	for _, rec := range recs {
		raw, err := json.Marshal(rec.Payload)
		if err != nil {
			return fmt.Errorf("audit: encode %s: %w", rec.Kind, err)
		}
		payload, err := ledger.Canonicalize(raw)
		if err != nil {
			return fmt.Errorf("audit: encode %s: %w", rec.Kind, err)
		}
		out = append(out, ledger.Record{Kind: rec.Kind, RecordID: evidence.NewAuditEventID(), Payload: payload})
	}
	wait, err := r.cfg.Ledger.EnqueueAll(context.Background(), out)
	if err != nil {
		return fmt.Errorf("audit: append the tool states: %w", err)
	}
	if _, err := wait(); err != nil {
		return fmt.Errorf("audit: the tool states: %w", err)
	}
	return nil
}
