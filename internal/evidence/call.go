package evidence

import (
	"slices"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/go-json-experiment/json/jsontext"
)

// CallFacts are what the gateway itself observed about one tools/call, to
// compare with a server receipt ([Conflicts]) or to fill a synthesized one
// ([Synthesize]). Empty fields are unknown and are not compared.
type CallFacts struct {
	// ServerID is the gateway's identifier of the upstream server.
	ServerID string
	// ToolName is params.name.
	ToolName string
	// ToolCallID is the call's tool_call_id (request-receipts.md §7: the
	// caller's tool-use id from params._meta, or "req_" + the JSON-RPC id).
	ToolCallID string
	// InputHash is [InputHash] of params.arguments.
	InputHash string
	// OutputHash is the gateway's hash of the result without the receipt:
	// Hash(WithoutReceipt(result, key)) ([WithoutReceipt]).
	OutputHash string
	// ArgumentKeys are the top-level keys of params.arguments ([ArgumentKeys]).
	ArgumentKeys []string
	// ToolSchemaHash and ToolDescriptionHash are the gateway's own
	// tool_schema_hash and tool_description_hash of the listed tool
	// (evidence.md §3: [Hash] of its inputSchema, [DescriptionHash] of its
	// description); "" when the tool is not listed or the hash could not
	// be computed.
	ToolSchemaHash, ToolDescriptionHash string
}

// Conflict warnings returned by [Conflicts], in this order. They name
// fields, never values.
const (
	ConflictServerID     = "receipt server_id differs from the call"
	ConflictToolName     = "receipt tool_name differs from the call"
	ConflictToolCallID   = "receipt tool_call_id differs from the call"
	ConflictInputHash    = "receipt input_hash differs from the gateway's hash"
	ConflictOutputHash   = "receipt output_hash differs from the gateway's hash"
	ConflictArgumentKeys = "receipt argument_keys differ from the call's arguments"
	// ConflictToolSchemaHash: the receipt's tool_schema_hash is not the
	// gateway's hash of the listed tool's inputSchema.
	ConflictToolSchemaHash = "receipt tool_schema_hash differs from the gateway's hash of the listed tool"
	// ConflictToolDescriptionHash: the receipt's tool_description_hash is
	// not the gateway's hash of the listed tool's description.
	ConflictToolDescriptionHash = "receipt tool_description_hash differs from the gateway's hash of the listed tool"
)

// Conflicts compares a server receipt with the call the gateway observed
// (evidence.md §2) and returns one warning per disagreeing field, in the
// order of the Conflict constants, or nil: the call's identity and hashes,
// then the listed tool's tool_schema_hash and tool_description_hash
// (evidence.md §3, issue 13). A field is compared only when
// both sides have it (non-empty; argument_keys non-nil on the receipt and
// in call). Strings compare exactly; argument_keys compare as sets. A nil
// receipt has no conflicts. Each conflict lowers metadata confidence by
// 0.1 ([Confidence]) and is meant for the gateway decision's warnings.
func Conflicts(r *ServerReceipt, call CallFacts) []string {
	if r == nil {
		return nil
	}
	var out []string
	differ := func(a, b string) bool { return a != "" && b != "" && a != b }
	if differ(r.ServerID, call.ServerID) {
		out = append(out, ConflictServerID)
	}
	if differ(r.ToolName, call.ToolName) {
		out = append(out, ConflictToolName)
	}
	if differ(r.ToolCallID, call.ToolCallID) {
		out = append(out, ConflictToolCallID)
	}
	if differ(r.InputHash, call.InputHash) {
		out = append(out, ConflictInputHash)
	}
	if differ(r.OutputHash, call.OutputHash) {
		out = append(out, ConflictOutputHash)
	}
	if r.ArgumentKeys != nil && call.ArgumentKeys != nil && !sameSet(r.ArgumentKeys, call.ArgumentKeys) {
		out = append(out, ConflictArgumentKeys)
	}
	if differ(r.ToolSchemaHash, call.ToolSchemaHash) {
		out = append(out, ConflictToolSchemaHash)
	}
	if differ(r.ToolDescriptionHash, call.ToolDescriptionHash) {
		out = append(out, ConflictToolDescriptionHash)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Synthesize returns the receipt the gateway records at the host boundary
// when the server emitted none (evidence.md §2): receipt_id "mcp_rcpt_gw_"
// + ULID, schema_version "0.1", issued_at now in [TimeLayout],
// issued_by "gateway", verification_status "empty"; server_id, tool_name,
// tool_call_id, input_hash, output_hash and argument_keys from call; and
// the tool intent fields (declared_side_effects, side_effect, data_classes,
// externality, required_scopes) from the normalized intent. It is never
// signed. Slices are copied. A synthesized receipt is never a source for
// [Normalize].
func Synthesize(call CallFacts, intent ToolIntent, now time.Time) *ServerReceipt {
	return &ServerReceipt{
		ReceiptID:           newSynthesizedReceiptID(now),
		SchemaVersion:       SchemaVersion,
		IssuedAt:            Timestamp(now),
		ServerID:            call.ServerID,
		ToolName:            call.ToolName,
		ToolCallID:          call.ToolCallID,
		DeclaredSideEffects: slices.Clone(intent.DeclaredSideEffects),
		SideEffect:          intent.SideEffect,
		DataClasses:         slices.Clone(intent.DataClasses),
		Externality:         intent.Externality,
		RequiredScopes:      slices.Clone(intent.RequiredScopes),
		InputHash:           call.InputHash,
		ArgumentKeys:        slices.Clone(call.ArgumentKeys),
		OutputHash:          call.OutputHash,
		VerificationStatus:  string(StatusEmpty),
		IssuedBy:            IssuedByGateway,
	}
}

// InputHash returns the input_hash of a call: [Hash] of params.arguments,
// or of {} when arguments is nil (absent and empty arguments hash alike).
// Errors as for [Hash].
func InputHash(arguments []byte) (string, error) {
	if arguments == nil {
		arguments = []byte("{}")
	}
	return Hash(arguments)
}

// ArgumentKeys returns the top-level member names of params.arguments in
// their order, a non-nil empty slice for {} or nil arguments. Errors:
// arguments is not a strict JSON object. Arguments already in RFC 8785
// form are read by the one-pass canonical scanner, others by a strict
// parse.
func ArgumentKeys(arguments []byte) ([]string, error) {
	if arguments == nil {
		return []string{}, nil
	}
	if names, ok := canonicalObjectNames(arguments); ok {
		return names, nil
	}
	return argumentKeys(arguments)
}

// argumentKeys is ArgumentKeys by the strict parse.
func argumentKeys(arguments []byte) ([]string, error) {
	ms, err := objectMembers(arguments)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = m.name
	}
	return keys, nil
}

// DescriptionHash returns the tool_description_hash of a tool description:
// [Hash] of the description as a JSON string. Errors: description is not
// valid UTF-8.
func DescriptionHash(description string) (string, error) {
	q, err := jsontext.AppendQuote(nil, description)
	if err != nil {
		return "", err
	}
	return Hash(q)
}

// canonicalObjectNames returns the member names of raw, unescaped, when raw
// is a JSON object in RFC 8785 canonical form (so also strict JSON); ok is
// false otherwise.
func canonicalObjectNames(raw []byte) (names []string, ok bool) {
	if len(raw) < 2 || raw[0] != '{' || jcs.Check(raw) != nil {
		return nil, false
	}
	names = []string{}
	if raw[1] == '}' {
		return names, true
	}
	var s jcs.Scanner
	for pos := 1; ; {
		name, end, err := s.String(raw, pos)
		if err != nil || end >= len(raw) || raw[end] != ':' {
			return nil, false
		}
		names = append(names, string(name))
		if end, err = s.Value(raw, end+1); err != nil || end >= len(raw) {
			return nil, false
		}
		if raw[end] == '}' {
			return names, true
		}
		pos = end + 1
	}
}
