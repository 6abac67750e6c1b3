package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
)

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// toolNames are the tools, in tools/list order.
var toolNames = []string{"signed_ok", "unsigned", "bad_signature", "conflicting", "legacy_interlock", "none"}

// builtinSecret signs bad_signature receipts when no key is configured.
var builtinSecret = []byte("receiptserver-builtin-unconfigured-secret")

const inputSchema = `{"type":"object","properties":{"text":{"type":"string"}}}`

// The --chain values.
const (
	chainOK     = "ok"
	chainNone   = "none"
	chainGap    = "gap"
	chainRepeat = "repeat"
	chainBroken = "broken"
)

// server is one run. It handles one line at a time; nothing is concurrent.
type server struct {
	cfg      config
	out      io.Writer
	clientID string
	seq      int64
	prevHash string // hash of the previous receipt as emitted
	tools    []json.RawMessage
	intent   evidence.ToolDeclaration
	emitted  int // receipts emitted so far
	// schemaHash and descHashes are the listed tools' hashes.
	schemaHash string
	descHashes map[string]string
	extraName  string // the --tool-receipt-file tool's name, "" without
	held       []byte // --swap-pairs: the response line held back
}

// run serves stdin until EOF.
func run(cfg config, stdin io.Reader, stdout io.Writer) error {
	s := &server{cfg: cfg, out: stdout}
	if err := s.buildTools(); err != nil {
		return err
	}
	r := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := r.ReadBytes('\n') // any length
		if len(bytes.TrimSpace(line)) > 0 {
			if werr := s.handle(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// buildTools makes the tools/list entries with their declarations.
func (s *server) buildTools() error {
	schemaHash, err := evidence.Hash([]byte(inputSchema))
	if err != nil {
		return err
	}
	s.schemaHash, s.descHashes = schemaHash, map[string]string{}
	for _, name := range toolNames {
		desc := "Answers with a " + strings.ReplaceAll(name, "_", " ") + " security receipt."
		descHash, err := evidence.DescriptionHash(desc)
		if err != nil {
			return err
		}
		s.descHashes[name] = descHash
		decl := evidence.ToolDeclaration{
			DeclaredSideEffects: []string{"read"}, SideEffect: "read_only",
			DataClasses: []string{"internal"}, Externality: "internal",
			RequiredScopes: []string{"receipts.read"}, Mode: "read_only",
			ToolSchemaHash: schemaHash, ToolDescriptionHash: descHash,
		}
		var security any = decl
		if s.cfg.toolReceipts {
			if security, err = s.toolReceipt(name, decl); err != nil {
				return err
			}
		}
		tool, err := json.Marshal(map[string]any{
			"name":        name,
			"description": desc,
			"inputSchema": json.RawMessage(inputSchema),
			"annotations": map[string]bool{"readOnlyHint": true, "openWorldHint": false},
			"_meta":       map[string]any{evidence.DeclarationKey: security},
		})
		if err != nil {
			return err
		}
		s.tools = append(s.tools, tool)
	}
	if s.cfg.extraTool != nil {
		var r struct {
			ToolName string `json:"tool_name"`
		}
		_ = json.Unmarshal(s.cfg.extraTool, &r) // checked by parseFlags
		s.extraName = r.ToolName
		tool, err := json.Marshal(map[string]any{
			"name":        r.ToolName,
			"description": "Listed with a tool-level receipt from a file.",
			"inputSchema": json.RawMessage(inputSchema),
		})
		if err != nil {
			return err
		}
		// Spliced in, not marshalled: json.Marshal would escape HTML
		// characters in the receipt.
		k, _ := json.Marshal(evidence.DeclarationKey)
		s.tools = append(s.tools, slices.Concat(tool[:len(tool)-1], []byte(`,"_meta":{`), k, []byte(":"), s.cfg.extraTool, []byte("}}")))
	}
	return nil
}

// toolReceipt returns the tool-level receipt of a tool (--tool-receipts):
// its declaration as a full receipt, signed when a key is configured.
func (s *server) toolReceipt(name string, decl evidence.ToolDeclaration) (json.RawMessage, error) {
	now := s.cfg.now
	if now.IsZero() {
		now = time.Now()
	}
	r := evidence.ServerReceipt{
		ReceiptID: "mcp_rcpt_rs_tool_" + name, SchemaVersion: evidence.SchemaVersion, IssuedAt: evidence.Timestamp(now),
		ServerID: s.cfg.serverID, ToolName: name, ToolCallID: "tools/list",
		DeclaredSideEffects: decl.DeclaredSideEffects, SideEffect: decl.SideEffect, DataClasses: decl.DataClasses,
		Externality: decl.Externality, RequiredScopes: decl.RequiredScopes, Mode: decl.Mode,
		ToolSchemaHash: decl.ToolSchemaHash, ToolDescriptionHash: decl.ToolDescriptionHash,
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if s.cfg.alg != "" {
		return evidence.Sign(b, s.cfg.alg, s.cfg.key())
	}
	return b, nil
}

// message is the part of a JSON-RPC message the server reads. ID keeps the
// raw bytes; nil when absent.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (s *server) handle(line []byte) error {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return s.writeError(json.RawMessage("null"), codeParseError, "parse error")
	}
	if m.Method == "" || m.ID == nil {
		return nil // a response or a notification
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.clientID = p.ClientInfo.Name
		v := p.ProtocolVersion
		if v == "" {
			v = "2025-06-18"
		}
		q, _ := json.Marshal(v)
		return s.writeResult(m.ID, []byte(`{"protocolVersion":`+string(q)+`,"capabilities":{"tools":{}},"serverInfo":{"name":"gatehouse-receiptserver","version":"0.1.0"}}`))
	case "ping":
		return s.writeResult(m.ID, []byte(`{}`))
	case "tools/list":
		var b bytes.Buffer
		b.WriteString(`{"tools":[`)
		for i, t := range s.tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(t)
		}
		b.WriteString(`]}`)
		return s.writeResult(m.ID, b.Bytes())
	case "tools/call":
		result, err := s.call(m)
		if err != nil {
			return s.writeError(m.ID, codeInvalidParams, err.Error())
		}
		if s.cfg.swapPairs {
			// Concurrent calls answered out of order: the first of each
			// pair is answered after the second.
			line := slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), m.ID, []byte(`,"result":`), result, []byte("}\n"))
			if s.held == nil {
				s.held = line
				return nil
			}
			held := s.held
			s.held = nil
			if err := s.write(line); err != nil {
				return err
			}
			return s.write(held)
		}
		return s.writeResult(m.ID, result)
	}
	return s.writeError(m.ID, codeMethodNotFound, "method not found")
}

// callParams are the tools/call params the server reads.
type callParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// call answers one tools/call.
func (s *server) call(m message) ([]byte, error) {
	var p callParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, errors.New("invalid params")
	}
	if !slices.Contains(toolNames, p.Name) && (p.Name == "" || p.Name != s.extraName) {
		return nil, fmt.Errorf("unknown tool %q", p.Name)
	}
	if p.Name == "signed_ok" && s.cfg.alg == "" {
		return nil, errors.New("signed_ok needs --ed25519-seed-hex or --hmac-secret")
	}
	base, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": p.Name + " ok"}}})
	if p.Name == "none" || p.Name == s.extraName {
		return base, nil
	}

	args := p.Arguments
	if string(args) == "null" {
		args = nil
	}
	inputHash, err := evidence.InputHash(args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	keys, err := evidence.ArgumentKeys(args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	outputHash, err := evidence.Hash(base)
	if err != nil {
		return nil, err
	}
	// The chain (--chain): the second receipt carries the fault, and the
	// server's own counter and link go on as if it had not.
	s.emitted++
	fault := ""
	if s.emitted == 2 {
		fault = s.cfg.chain
	}
	seq, prev := s.seq+1, s.prevHash
	switch fault {
	case chainGap:
		seq++
	case chainRepeat:
		seq, prev = s.seq, "" // the first's ledger_seq, unlinked like the first
	case chainBroken:
		prev, _ = evidence.Hash([]byte(`{}`))
	}
	if fault != chainRepeat {
		s.seq = seq
	}
	now := s.cfg.now
	if now.IsZero() {
		now = time.Now()
	}
	r := evidence.ServerReceipt{
		ReceiptID:           fmt.Sprintf("mcp_rcpt_rs_%06d", s.emitted),
		SchemaVersion:       evidence.SchemaVersion,
		IssuedAt:            evidence.Timestamp(now),
		ServerID:            s.cfg.serverID,
		ToolName:            p.Name,
		ToolCallID:          toolCallID(p.Meta, m.ID),
		ClientID:            s.clientID,
		DeclaredSideEffects: []string{"read"},
		SideEffect:          "read_only",
		DataClasses:         []string{"internal"},
		Externality:         "internal",
		RequiredScopes:      []string{"receipts.read"},
		Mode:                "read_only",
		InputHash:           inputHash,
		ArgumentKeys:        keys,
		OutputHash:          outputHash,
		Redactions:          []evidence.Redaction{},
		PolicyDecision:      "allow",
		MatchedRule:         "receiptserver_allow_all",
		LedgerID:            s.cfg.serverID + "-ledger",
		LedgerSeq:           &seq,
		PreviousHash:        prev,
	}
	if s.cfg.chain == chainNone {
		r.LedgerID, r.LedgerSeq, r.PreviousHash = "", nil, ""
	}
	switch s.cfg.toolHashes {
	case "match":
		r.ToolSchemaHash, r.ToolDescriptionHash = s.schemaHash, s.descHashes[p.Name]
	case "mismatch":
		r.ToolSchemaHash, _ = evidence.Hash([]byte(`{"type":"object","properties":{}}`))
		r.ToolDescriptionHash, _ = evidence.DescriptionHash("another description")
	}
	if p.Name == "conflicting" {
		r.ServerID = "not-" + s.cfg.serverID
		r.ToolName = "other_tool"
		r.InputHash, _ = evidence.InputHash([]byte(`{"other":true}`))
	}
	receipt, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	switch p.Name {
	case "signed_ok":
		receipt, err = evidence.Sign(receipt, s.cfg.alg, s.cfg.key())
	case "legacy_interlock":
		if s.cfg.alg != "" {
			receipt, err = evidence.Sign(receipt, s.cfg.alg, s.cfg.key())
		}
	case "bad_signature":
		alg, key := s.cfg.alg, s.cfg.key()
		if alg == "" {
			alg, key = evidence.AlgHMACSHA256, builtinSecret
		}
		if receipt, err = evidence.Sign(receipt, alg, key); err == nil {
			receipt, err = setMember(receipt, "side_effect", `"destructive"`)
		}
	}
	if err != nil {
		return nil, err
	}
	h, err := evidence.Hash(receipt)
	if err != nil {
		return nil, err
	}
	if fault != chainRepeat {
		s.prevHash = h
	}

	var meta []byte
	if p.Name == "legacy_interlock" {
		meta, err = dotted(receipt, "interlock")
		if err != nil {
			return nil, err
		}
	} else {
		k, _ := json.Marshal(evidence.ReceiptKey)
		meta = slices.Concat([]byte("{"), k, []byte(":"), receipt, []byte("}"))
	}
	return slices.Concat(base[:len(base)-1], []byte(`,"_meta":`), meta, []byte("}")), nil
}

// toolCallID follows request-receipts.md §7: a caller-supplied tool-use id
// from params._meta, else "req_" + the JSON-RPC id.
func toolCallID(meta map[string]json.RawMessage, id json.RawMessage) string {
	for _, k := range []string{"claudecode/toolUseId", "tool_call_id"} {
		var v string
		if json.Unmarshal(meta[k], &v) == nil && v != "" && !strings.HasPrefix(v, "req_") {
			return v
		}
	}
	var str string
	if json.Unmarshal(id, &str) == nil {
		return "req_" + str
	}
	return "req_" + string(bytes.TrimSpace(id))
}

// setMember returns the object obj with member name set to the raw value.
func setMember(obj []byte, name, value string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m[name] = json.RawMessage(value)
	return json.Marshal(m)
}

// dotted returns the members of obj as an object of "prefix.<name>"
// members, in sorted name order.
func dotted(obj []byte, prefix string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[prefix+"."+k] = v
	}
	return json.Marshal(out)
}

func (s *server) writeResult(id, result []byte) error {
	return s.write(slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"result":`), result, []byte("}\n")))
}

func (s *server) writeError(id []byte, code int, msg string) error {
	q, _ := json.Marshal(msg)
	return s.write(slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"error":{"code":`+strconv.Itoa(code)+`,"message":`), q, []byte("}}\n")))
}

func (s *server) write(b []byte) error {
	_, err := s.out.Write(b)
	return err
}
