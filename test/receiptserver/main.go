// Command receiptserver is a small MCP server on stdio that emits security
// receipts (McpSecurityReceipt draft v0.1; shared/spec/evidence.md §2), for
// Gatehouse's end-to-end tests of receipt discovery, verification,
// conflicts and receipts.require. It is test code: some tools misbehave on
// purpose.
//
// # Protocol
//
// It reads newline-delimited JSON-RPC messages of any length on stdin and
// answers each request on stdout, one line per message, in order (but see
// --swap-pairs). Response
// ids are the request's id bytes copied raw (12345678901234567890 and 1.0e2
// survive unchanged). It answers initialize (echoing the requested
// protocolVersion, default 2025-06-18), ping, tools/list (one page) and
// tools/call; other requests get -32601, lines that are not JSON objects
// -32700 with id null, and notifications and responses are ignored.
//
// # Tools
//
// Every tool accepts any arguments and answers
// {"content":[{"type":"text","text":"<name> ok"}], "_meta": {...}}. Its
// tools/list entry has annotations (readOnlyHint true, openWorldHint false)
// and declares its intent at _meta["dev.gatehouse/security"]: effects
// [read], side_effect read_only, data_classes [internal], externality
// internal, required_scopes [receipts.read], and the tool_schema_hash and
// tool_description_hash of its definition.
//
// Unless said otherwise, the receipt is at
// result._meta["dev.gatehouse/security-receipt"] and carries: receipt_id
// "mcp_rcpt_rs_NNNNNN" (NNNNNN counts receipts from 1), schema_version
// "0.1", issued_at (--now or the current time), server_id (--server-id),
// tool_name, tool_call_id (the caller's params._meta "claudecode/toolUseId"
// or "tool_call_id" when a non-empty string not starting with "req_",
// otherwise "req_" + the JSON-RPC id: a string id's value, a number's text;
// the convention of request-receipts.md §7), client_id (initialize
// clientInfo.name, if any), the declared intent, input_hash (of
// params.arguments, {} when absent), argument_keys, output_hash (of the
// result before the receipt was added to it), redactions [],
// policy_decision allow, matched_rule "receiptserver_allow_all",
// ledger_id "<server-id>-ledger", ledger_seq (= NNNNNN without a --chain
// fault) and, from the
// second receipt on, previous_hash (the hash of the previous receipt as
// emitted: a hash chain).
//
//   - signed_ok: the receipt signed with the configured key (--alg);
//     error -32602 when no key is configured.
//   - unsigned: the receipt without signature.
//   - bad_signature: the receipt signed (with the configured key, or a
//     built-in HMAC secret when none is configured), then side_effect
//     changed to "destructive" after signing: verifies as tampered with the
//     right key.
//   - conflicting: an unsigned receipt whose server_id ("not-" +
//     --server-id), tool_name ("other_tool") and input_hash (of
//     {"other":true}) disagree with the call.
//   - legacy_interlock: the receipt as dotted members directly in _meta
//     ("interlock.receipt_id": ..., one per receipt member), signed like
//     signed_ok when a key is configured (the signature covers the
//     reassembled object), unsigned otherwise.
//   - none: no receipt and no _meta.
//
// Any other tool name gets error -32602.
//
// # The server's own evidence
//
// --chain says how receipts chain (ledger_id, ledger_seq, previous_hash;
// previous_hash is evidence.Hash of the previous receipt as emitted, that
// is of its RFC 8785 form). The fault is in the second receipt emitted,
// and the chain then goes on as if it had not happened, so that exactly
// that receipt breaks the chain:
//
//   - ok (default): 1, 2, 3, ... each linking to the one before;
//   - none: no ledger_id, ledger_seq or previous_hash;
//   - gap: the second receipt has ledger_seq 3 (2 is skipped), linked;
//   - repeat: the second receipt repeats ledger_seq 1 (without
//     previous_hash, like the first); the third is 2, linking to the first;
//   - broken: the second receipt's previous_hash is the hash of {}.
//
// --swap-pairs holds the response to every first tools/call of a pair and
// writes it after the response to the second, as a concurrent server
// answering out of order would: receipts are numbered in request order,
// so the gateway sees ledger_seq 2 before 1, 4 before 3, and so on. A
// client must send the second call without waiting for the first.
//
// --tool-hashes none|match|mismatch: receipts carry no tool_schema_hash and
// tool_description_hash (default), the hashes of the listed tool, or
// hashes of another schema and description.
//
// --tool-receipts: each tools/list declaration is a full receipt (a
// tool-level receipt, issued before any call): the declaration plus
// receipt_id "mcp_rcpt_rs_tool_<name>", schema_version, issued_at,
// server_id, tool_name and tool_call_id "tools/list", signed like
// signed_ok when a key is configured.
//
// --tool-receipt-file FILE lists one more tool, named by the file's
// tool_name, whose _meta["dev.gatehouse/security"] is the file's receipt,
// compacted (a stdio message is one line) and otherwise byte for byte (the
// draft's Example Flow receipt, for instance); a call to it answers
// "<name> ok" without a receipt.
//
// # Flags
//
//	--server-id ID            server_id of receipts (default "receiptserver")
//	--ed25519-seed-hex HEX    Ed25519 private key seed, 64 hex digits
//	--hmac-secret SECRET      HMAC-SHA256 shared secret (its UTF-8 bytes)
//	--alg ALG                 ed25519 or hmac-sha256 (default: ed25519 when a
//	                          seed is given, else hmac-sha256 when a secret is)
//	--now TIME                fixed RFC 3339 issued_at, for reproducible output
//	--chain FAULT             ok, none, gap, repeat or broken (see above)
//	--tool-hashes WHICH       none, match or mismatch (see above)
//	--tool-receipts           tools/list declarations are full receipts
//	--tool-receipt-file FILE  one more tool listed with FILE's receipt
//	--swap-pairs              answer each two tools/call in reverse order
//
// The matching Gatehouse keys file has, for the server id, the base64 of
// the Ed25519 public key (printed on stderr at start when a seed is given)
// and/or a file holding the HMAC secret.
package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "receiptserver:", err)
		os.Exit(64)
	}
	if cfg.edKey != nil {
		fmt.Fprintln(os.Stderr, "receiptserver: ed25519 public key", base64.StdEncoding.EncodeToString(cfg.edKey.Public().(ed25519.PublicKey)))
	}
	if err := run(cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "receiptserver:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	serverID string
	// chain is the --chain fault: chainOK, chainNone, chainGap,
	// chainRepeat or chainBroken.
	chain string
	// toolHashes is --tool-hashes: none, match or mismatch.
	toolHashes string
	// toolReceipts (--tool-receipts): every tools/list declaration is a
	// full receipt.
	toolReceipts bool
	// extraTool is the --tool-receipt-file receipt (compacted), nil without.
	extraTool []byte
	// swapPairs (--swap-pairs): of each two tools/call responses, the
	// second is written first.
	swapPairs  bool
	edKey      ed25519.PrivateKey // nil without --ed25519-seed-hex
	hmacSecret []byte             // nil without --hmac-secret
	alg        string             // "" when no key is configured
	now        time.Time          // zero: use the clock
}

func parseFlags(args []string) (config, error) {
	var c config
	var seedHex, secret, alg, now, extra string
	fs := flag.NewFlagSet("receiptserver", flag.ContinueOnError)
	fs.StringVar(&c.serverID, "server-id", "receiptserver", "server_id of receipts")
	fs.StringVar(&seedHex, "ed25519-seed-hex", "", "Ed25519 private key seed (64 hex digits)")
	fs.StringVar(&secret, "hmac-secret", "", "HMAC-SHA256 shared secret")
	fs.StringVar(&alg, "alg", "", "signature algorithm: ed25519 or hmac-sha256")
	fs.StringVar(&now, "now", "", "fixed RFC 3339 issued_at")
	fs.StringVar(&c.chain, "chain", chainOK, "receipt chain: ok, none, gap, repeat or broken (the fault is in the second receipt)")
	fs.StringVar(&c.toolHashes, "tool-hashes", "none", "tool_schema_hash and tool_description_hash in receipts: none, match or mismatch")
	fs.BoolVar(&c.swapPairs, "swap-pairs", false, "answer each pair of tools/call requests in reverse order (the receipts are numbered in request order)")
	fs.BoolVar(&c.toolReceipts, "tool-receipts", false, "make every tools/list declaration a full (tool-level) receipt")
	fs.StringVar(&extra, "tool-receipt-file", "", "list one more tool whose security _meta is this file's receipt (compacted)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.serverID == "" {
		return c, errors.New("--server-id must not be empty")
	}
	switch c.chain {
	case chainOK, chainNone, chainGap, chainRepeat, chainBroken:
	default:
		return c, errors.New("--chain must be ok, none, gap, repeat or broken")
	}
	switch c.toolHashes {
	case "none", "match", "mismatch":
	default:
		return c, errors.New("--tool-hashes must be none, match or mismatch")
	}
	if extra != "" {
		b, err := os.ReadFile(extra)
		if err != nil {
			return c, fmt.Errorf("--tool-receipt-file: %w", err)
		}
		var r struct {
			ToolName string `json:"tool_name"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.ToolName == "" || slices.Contains(toolNames, r.ToolName) {
			return c, errors.New("--tool-receipt-file must hold a JSON receipt with a tool_name of its own")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return c, fmt.Errorf("--tool-receipt-file: %w", err)
		}
		c.extraTool = compact.Bytes()
	}
	if seedHex != "" {
		seed, err := hex.DecodeString(seedHex)
		if err != nil || len(seed) != ed25519.SeedSize {
			return c, errors.New("--ed25519-seed-hex must be 64 hex digits")
		}
		c.edKey = ed25519.NewKeyFromSeed(seed)
	}
	if secret != "" {
		c.hmacSecret = []byte(secret)
	}
	switch alg {
	case "":
		if c.edKey != nil {
			c.alg = evidence.AlgEd25519
		} else if c.hmacSecret != nil {
			c.alg = evidence.AlgHMACSHA256
		}
	case evidence.AlgEd25519:
		if c.edKey == nil {
			return c, errors.New("--alg ed25519 needs --ed25519-seed-hex")
		}
		c.alg = alg
	case evidence.AlgHMACSHA256:
		if c.hmacSecret == nil {
			return c, errors.New("--alg hmac-sha256 needs --hmac-secret")
		}
		c.alg = alg
	default:
		return c, fmt.Errorf("--alg must be %s or %s", evidence.AlgEd25519, evidence.AlgHMACSHA256)
	}
	if now != "" {
		t, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			return c, errors.New("--now must be an RFC 3339 time")
		}
		c.now = t
	}
	return c, nil
}

// key returns the configured signing key for c.alg, or nil.
func (c config) key() any {
	switch c.alg {
	case evidence.AlgEd25519:
		return c.edKey
	case evidence.AlgHMACSHA256:
		return c.hmacSecret
	}
	return nil
}
