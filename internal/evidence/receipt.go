package evidence

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
	"github.com/gatehouse-mcp/gatehouse/internal/toolmeta"
)

// SchemaVersion is the schema_version of the receipts this package writes
// and the only one [Parse] accepts without a problem (draft v0.1).
const SchemaVersion = "0.1"

// IssuedByGateway is the issued_by of a receipt that the gateway
// synthesized because the server emitted none ([Synthesize]).
const IssuedByGateway = "gateway"

// ServerReceipt is an McpSecurityReceipt (draft v0.1; evidence.md §2): the
// evidence an MCP server emits about one tools/call. Fields, JSON names and
// types are those of the draft's tables, in table order; every field is
// optional on the wire except the six marked required, which [Parse]
// reports as problems when missing. A field that [Parse] found invalid is
// left at its zero value. Slices are nil when the member was absent and
// non-nil (possibly empty) when it was present.
type ServerReceipt struct {
	// Identity and correlation.

	ReceiptID     string `json:"receipt_id"`     // required; unique receipt identifier
	SchemaVersion string `json:"schema_version"` // required; "0.1"
	IssuedAt      string `json:"issued_at"`      // required; RFC 3339 timestamp
	ServerID      string `json:"server_id"`      // required; stable MCP server identifier
	ToolName      string `json:"tool_name"`      // required; MCP tool name
	ToolCallID    string `json:"tool_call_id"`   // required; tool-call identifier
	ClientID      string `json:"client_id,omitempty"`
	ActorRefID    string `json:"actor_ref_id,omitempty"`
	SessionID     string `json:"session_id,omitempty"`
	RunID         string `json:"run_id,omitempty"`
	RunEventID    string `json:"run_event_id,omitempty"`

	// Tool intent (see [ToolIntent] for the vocabularies).

	DeclaredSideEffects []string `json:"declared_side_effects,omitzero"` // subset of [Effects]
	SideEffect          string   `json:"side_effect,omitempty"`          // one of [SideEffects]
	DataClasses         []string `json:"data_classes,omitzero"`          // open vocabulary
	Externality         string   `json:"externality,omitempty"`          // one of [Externalities]
	RequiredScopes      []string `json:"required_scopes,omitzero"`
	Mode                string   `json:"mode,omitempty"`
	ToolSchemaHash      string   `json:"tool_schema_hash,omitempty"`      // "sha256:<hex>"
	ToolDescriptionHash string   `json:"tool_description_hash,omitempty"` // "sha256:<hex>"

	// Input and output evidence.

	InputHash    string      `json:"input_hash,omitempty"` // "sha256:<hex>" of params.arguments
	ArgumentKeys []string    `json:"argument_keys,omitzero"`
	InputRef     string      `json:"input_ref,omitempty"`
	OutputHash   string      `json:"output_hash,omitempty"` // "sha256:<hex>", see [WithoutReceipt]
	OutputRef    string      `json:"output_ref,omitempty"`
	Redactions   []Redaction `json:"redactions,omitzero"`

	// Server decision context.

	PolicyDecision string `json:"policy_decision,omitempty"` // one of [PolicyDecisions]
	PolicyReason   string `json:"policy_reason,omitempty"`
	MatchedRule    string `json:"matched_rule,omitempty"`
	PolicyVersion  string `json:"policy_version,omitempty"`
	OverrideUsed   *bool  `json:"override_used,omitempty"`
	ShadowMode     *bool  `json:"shadow_mode,omitempty"`

	// Verification.

	ReceiptSignature   string `json:"receipt_signature,omitempty"` // see [Sign]
	SignatureAlg       string `json:"signature_alg,omitempty"`     // [AlgHMACSHA256] or [AlgEd25519]
	LedgerID           string `json:"ledger_id,omitempty"`
	LedgerSeq          *int64 `json:"ledger_seq,omitempty"`          // non-negative
	PreviousHash       string `json:"previous_hash,omitempty"`       // "sha256:<hex>"
	VerificationStatus string `json:"verification_status,omitempty"` // claimed; see [Verify]

	// IssuedBy is "gateway" ([IssuedByGateway]) for a receipt the gateway
	// synthesized; servers leave it absent. Not part of the draft.
	IssuedBy string `json:"issued_by,omitempty"`
}

// Redaction is one redaction record of a receipt's redactions (draft v0.1,
// "Input and Output Evidence"), for example {"field":"output.text",
// "class":"secret","method":"pattern","replacement":"[REDACTED_SECRET]"}.
// Field, Class and Method are required; Replacement is optional (a method
// that drops the value has none).
type Redaction struct {
	Field       string `json:"field"`
	Class       string `json:"class"`
	Method      string `json:"method"`
	Replacement string `json:"replacement,omitempty"`
}

// ToolDeclaration is the tool-level part of a receipt that a server may
// declare in a tools/list entry at tool._meta["dev.gatehouse/security"]
// ([FindToolDeclaration]; evidence.md §2): the tool intent fields only.
type ToolDeclaration struct {
	DeclaredSideEffects []string `json:"declared_side_effects,omitzero"`
	SideEffect          string   `json:"side_effect,omitempty"`
	DataClasses         []string `json:"data_classes,omitzero"`
	Externality         string   `json:"externality,omitempty"`
	RequiredScopes      []string `json:"required_scopes,omitzero"`
	Mode                string   `json:"mode,omitempty"`
	ToolSchemaHash      string   `json:"tool_schema_hash,omitempty"`
	ToolDescriptionHash string   `json:"tool_description_hash,omitempty"`
}

// Vocabularies of the draft ("Proposed Minimal Vocabulary"). The slices are
// in the draft's order and must not be modified.
var (
	// Effects is the vocabulary of declared_side_effects (toolmeta.Effects).
	Effects = toolmeta.Effects
	// SideEffects is the vocabulary of side_effect, least severe first
	// (toolmeta.SideEffects).
	SideEffects = toolmeta.SideEffects
	// Externalities is the vocabulary of externality, narrowest first
	// (toolmeta.Externalities).
	Externalities = toolmeta.Externalities
	// PolicyDecisions is the vocabulary of a server's policy_decision: the
	// actions (pipeline.ActionNames) and "unknown".
	PolicyDecisions = append(pipeline.ActionNames(), "unknown")
	// Statuses is the vocabulary of verification_status.
	Statuses = []string{"ok", "unsigned", "tampered", "empty", "unknown"}
)

// ProblemKind classifies a [Problem].
type ProblemKind string

// The kinds of problem [Parse] and [ParseDeclaration] report.
const (
	ProblemMissing       ProblemKind = "missing"             // a required member is absent
	ProblemType          ProblemKind = "wrong_type"          // wrong JSON type (null included)
	ProblemEmpty         ProblemKind = "empty"               // a required string is ""
	ProblemVocabulary    ProblemKind = "not_in_vocabulary"   // not one of the draft's values
	ProblemTime          ProblemKind = "not_rfc3339"         // not an RFC 3339 date-time
	ProblemHash          ProblemKind = "not_sha256"          // not "sha256:" + 64 lowercase hex
	ProblemInteger       ProblemKind = "not_integer"         // not a non-negative int64 without fraction or exponent
	ProblemDuplicate     ProblemKind = "duplicate_item"      // an array repeats a string
	ProblemVersion       ProblemKind = "unsupported_version" // schema_version is not "0.1"
	ProblemSignaturePair ProblemKind = "unpaired"            // receipt_signature without signature_alg or the reverse
	ProblemCaseFold      ProblemKind = "case_folded_name"    // the name equals another member's but for case
)

var problemText = map[ProblemKind]string{
	ProblemMissing:       "required field is missing",
	ProblemType:          "wrong JSON type",
	ProblemEmpty:         "required field is empty",
	ProblemVocabulary:    "value is not in the draft's vocabulary",
	ProblemTime:          "not an RFC 3339 timestamp",
	ProblemHash:          `not "sha256:" followed by 64 lowercase hex digits`,
	ProblemInteger:       "not a non-negative integer",
	ProblemDuplicate:     "repeated item",
	ProblemVersion:       `unsupported schema_version (want "0.1")`,
	ProblemSignaturePair: "receipt_signature and signature_alg must be present together",
	ProblemCaseFold:      "another member of the object has this name in another case (a case-insensitive reader may take either value)",
}

// Problem is one validation finding about a receipt field. Field is the
// member's path, such as "issued_at", "declared_side_effects[2]" or
// "redactions[0].class"; a Problem never carries the member's value.
type Problem struct {
	Field string
	Kind  ProblemKind
}

// String returns "field: description", for example
// "issued_at: not an RFC 3339 timestamp".
func (p Problem) String() string {
	return p.Field + ": " + problemText[p.Kind]
}

// ErrNotObject is returned (wrapped) by [Parse] and [ParseDeclaration] when
// the input is valid JSON but not an object.
var ErrNotObject = errors.New("evidence: receipt is not a JSON object")

// Parse decodes and validates one server receipt (evidence.md §2). raw must
// be a single strict JSON object: valid UTF-8, no duplicate member names at
// any depth (a parser differential would let a signer and the gateway see
// different values). Otherwise Parse returns a nil receipt and an error
// (wrapping [ErrNotObject] for a non-object).
//
// On success it returns the receipt and the problems found (nil when
// none), in member order, then missing required fields in table order, then
// an unpaired signature: a missing, mistyped
// (null included) or invalid field is a [Problem], and the field is left at
// its zero value. Checks: the six required fields present and non-empty;
// schema_version "0.1"; issued_at RFC 3339; every *_hash and previous_hash
// "sha256:" + 64 lowercase hex; side_effect, externality, policy_decision,
// verification_status and every declared_side_effects item in the draft's
// vocabulary; no repeated item in a string array; ledger_seq a non-negative
// integer without fraction or exponent; override_used and shadow_mode
// booleans; redactions an array of objects with string field, class and
// method (and optionally replacement); receipt_signature and signature_alg
// present together. Unknown members are allowed and ignored (they are still
// covered by the signature).
func Parse(raw []byte) (*ServerReceipt, []Problem, error) {
	ms, folded, err := objectMembersFolded(raw)
	if err != nil {
		return nil, nil, err
	}
	r := &ServerReceipt{}
	v := validator{}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.name] = true
		v.receiptField(r, m.name, m.value)
	}
	for _, name := range requiredFields {
		if !seen[name] {
			v.add(name, ProblemMissing)
		}
	}
	if seen["receipt_signature"] != seen["signature_alg"] {
		v.add("receipt_signature", ProblemSignaturePair)
	}
	// Names that differ only in case are a parser differential (as in
	// frames, which are refused for it): the gateway reads the exact
	// name, a case-insensitive decoder may read the other.
	if folded != "" {
		v.add(folded, ProblemCaseFold)
	}
	return r, v.problems, nil
}

// requiredFields are the draft's required receipt fields, in table order.
var requiredFields = []string{"receipt_id", "schema_version", "issued_at", "server_id", "tool_name", "tool_call_id"}

// ParseDeclaration decodes and validates a tools/list tool declaration
// ([FindToolDeclaration]): the tool intent fields of a receipt, with the
// same checks as [Parse]; no field is required. Members that are not tool
// intent fields are ignored. Errors as for [Parse].
func ParseDeclaration(raw []byte) (*ToolDeclaration, []Problem, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, nil, err
	}
	var r ServerReceipt
	v := validator{}
	for _, m := range ms {
		if intentFields[m.name] {
			v.receiptField(&r, m.name, m.value)
		}
	}
	return &ToolDeclaration{
		DeclaredSideEffects: r.DeclaredSideEffects,
		SideEffect:          r.SideEffect,
		DataClasses:         r.DataClasses,
		Externality:         r.Externality,
		RequiredScopes:      r.RequiredScopes,
		Mode:                r.Mode,
		ToolSchemaHash:      r.ToolSchemaHash,
		ToolDescriptionHash: r.ToolDescriptionHash,
	}, v.problems, nil
}

var intentFields = map[string]bool{
	"declared_side_effects": true, "side_effect": true, "data_classes": true,
	"externality": true, "required_scopes": true, "mode": true,
	"tool_schema_hash": true, "tool_description_hash": true,
}

// validator accumulates problems.
type validator struct{ problems []Problem }

func (v *validator) add(field string, k ProblemKind) {
	v.problems = append(v.problems, Problem{Field: field, Kind: k})
}

// receiptField validates member name of a receipt and stores it in r.
func (v *validator) receiptField(r *ServerReceipt, name string, val jsontext.Value) {
	switch name {
	case "receipt_id":
		r.ReceiptID = v.str(name, val, true, nil)
	case "schema_version":
		r.SchemaVersion = v.str(name, val, true, func(s string) ProblemKind {
			if s != SchemaVersion {
				return ProblemVersion
			}
			return ""
		})
	case "issued_at":
		r.IssuedAt = v.str(name, val, true, checkTime)
	case "server_id":
		r.ServerID = v.str(name, val, true, nil)
	case "tool_name":
		r.ToolName = v.str(name, val, true, nil)
	case "tool_call_id":
		r.ToolCallID = v.str(name, val, true, nil)
	case "client_id":
		r.ClientID = v.str(name, val, false, nil)
	case "actor_ref_id":
		r.ActorRefID = v.str(name, val, false, nil)
	case "session_id":
		r.SessionID = v.str(name, val, false, nil)
	case "run_id":
		r.RunID = v.str(name, val, false, nil)
	case "run_event_id":
		r.RunEventID = v.str(name, val, false, nil)
	case "declared_side_effects":
		r.DeclaredSideEffects = v.strs(name, val, Effects)
	case "side_effect":
		r.SideEffect = v.str(name, val, false, vocab(SideEffects))
	case "data_classes":
		r.DataClasses = v.strs(name, val, nil)
	case "externality":
		r.Externality = v.str(name, val, false, vocab(Externalities))
	case "required_scopes":
		r.RequiredScopes = v.strs(name, val, nil)
	case "mode":
		r.Mode = v.str(name, val, false, nil)
	case "tool_schema_hash":
		r.ToolSchemaHash = v.str(name, val, false, checkHash)
	case "tool_description_hash":
		r.ToolDescriptionHash = v.str(name, val, false, checkHash)
	case "input_hash":
		r.InputHash = v.str(name, val, false, checkHash)
	case "argument_keys":
		r.ArgumentKeys = v.strs(name, val, nil)
	case "input_ref":
		r.InputRef = v.str(name, val, false, nil)
	case "output_hash":
		r.OutputHash = v.str(name, val, false, checkHash)
	case "output_ref":
		r.OutputRef = v.str(name, val, false, nil)
	case "redactions":
		r.Redactions = v.redactions(name, val)
	case "policy_decision":
		r.PolicyDecision = v.str(name, val, false, vocab(PolicyDecisions))
	case "policy_reason":
		r.PolicyReason = v.str(name, val, false, nil)
	case "matched_rule":
		r.MatchedRule = v.str(name, val, false, nil)
	case "policy_version":
		r.PolicyVersion = v.str(name, val, false, nil)
	case "override_used":
		r.OverrideUsed = v.boolean(name, val)
	case "shadow_mode":
		r.ShadowMode = v.boolean(name, val)
	case "receipt_signature":
		r.ReceiptSignature = v.str(name, val, false, nil)
	case "signature_alg":
		r.SignatureAlg = v.str(name, val, false, nil)
	case "ledger_id":
		r.LedgerID = v.str(name, val, false, nil)
	case "ledger_seq":
		r.LedgerSeq = v.integer(name, val)
	case "previous_hash":
		r.PreviousHash = v.str(name, val, false, checkHash)
	case "verification_status":
		r.VerificationStatus = v.str(name, val, false, vocab(Statuses))
	case "issued_by":
		r.IssuedBy = v.str(name, val, false, nil)
	}
}

// str returns val as a string, or "" with a problem when it is not a string,
// is empty while required, or fails check.
func (v *validator) str(name string, val jsontext.Value, required bool, check func(string) ProblemKind) string {
	if val.Kind() != '"' {
		v.add(name, ProblemType)
		return ""
	}
	s := unquote(val)
	if required && s == "" {
		v.add(name, ProblemEmpty)
		return ""
	}
	if check != nil {
		if k := check(s); k != "" {
			v.add(name, k)
			return ""
		}
	}
	return s
}

// strs returns val as a non-nil string slice, or nil with problems when it
// is not an array of strings (each in vocabulary when one is given) without
// repeats.
func (v *validator) strs(name string, val jsontext.Value, vocabulary []string) []string {
	if val.Kind() != '[' {
		v.add(name, ProblemType)
		return nil
	}
	out := []string{}
	ok := true
	for i, item := range arrayItems(val) {
		field := name + "[" + strconv.Itoa(i) + "]"
		if item.Kind() != '"' {
			v.add(field, ProblemType)
			ok = false
			continue
		}
		s := unquote(item)
		switch {
		case vocabulary != nil && !slices.Contains(vocabulary, s):
			v.add(field, ProblemVocabulary)
			ok = false
		case slices.Contains(out, s):
			v.add(field, ProblemDuplicate)
			ok = false
		default:
			out = append(out, s)
		}
	}
	if !ok {
		return nil
	}
	return out
}

func (v *validator) boolean(name string, val jsontext.Value) *bool {
	switch string(val) {
	case "true":
		b := true
		return &b
	case "false":
		b := false
		return &b
	}
	v.add(name, ProblemType)
	return nil
}

func (v *validator) integer(name string, val jsontext.Value) *int64 {
	if val.Kind() != '0' {
		v.add(name, ProblemType)
		return nil
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil || val[0] == '-' {
		v.add(name, ProblemInteger)
		return nil
	}
	return &n
}

func (v *validator) redactions(name string, val jsontext.Value) []Redaction {
	if val.Kind() != '[' {
		v.add(name, ProblemType)
		return nil
	}
	out := []Redaction{}
	ok := true
	for i, item := range arrayItems(val) {
		prefix := name + "[" + strconv.Itoa(i) + "]"
		if item.Kind() != '{' {
			v.add(prefix, ProblemType)
			ok = false
			continue
		}
		ms, _ := objectMembers(item) // already validated strictly
		var rd Redaction
		seen := map[string]bool{}
		before := len(v.problems)
		for _, m := range ms {
			seen[m.name] = true
			f := prefix + "." + m.name
			switch m.name {
			case "field":
				rd.Field = v.str(f, m.value, true, nil)
			case "class":
				rd.Class = v.str(f, m.value, true, nil)
			case "method":
				rd.Method = v.str(f, m.value, true, nil)
			case "replacement":
				rd.Replacement = v.str(f, m.value, false, nil)
			}
		}
		for _, req := range []string{"field", "class", "method"} {
			if !seen[req] {
				v.add(prefix+"."+req, ProblemMissing)
			}
		}
		if len(v.problems) > before {
			ok = false
			continue
		}
		out = append(out, rd)
	}
	if !ok {
		return nil
	}
	return out
}

func vocab(words []string) func(string) ProblemKind {
	return func(s string) ProblemKind {
		if slices.Contains(words, s) {
			return ""
		}
		return ProblemVocabulary
	}
}

// checkTime accepts RFC 3339 date-times as Go's time.RFC3339Nano layout
// parses them: "T" separator, "Z" or a numeric offset, optional fraction.
func checkTime(s string) ProblemKind {
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return ProblemTime
	}
	return ""
}

// checkHash accepts exactly "sha256:" followed by 64 lowercase hex digits.
func checkHash(s string) ProblemKind {
	if !validHash(s) {
		return ProblemHash
	}
	return ""
}

// validHash is jcs.ValidHash: "sha256:" and 64 lowercase hex digits.
func validHash(s string) bool { return jcs.ValidHash(s) }

// member is one object member: its unescaped name and raw value.
type member struct {
	name  string
	value jsontext.Value
}

// objectMembers parses raw with strictjson (the project's one strict
// reader) as exactly one JSON object and returns its members in order;
// values alias raw. Names equal under case folding are not refused here
// (strictjson.ErrFoldedDuplicate): [Parse] reports them as a problem of
// the receipt, the other callers read the gateway's own records or values
// already checked where they came in (a frame), as they did before
// strictjson. A valid value that is not an object wraps [ErrNotObject].
func objectMembers(raw []byte) ([]member, error) {
	ms, _, err := objectMembersFolded(raw)
	return ms, err
}

// objectMembersFolded is objectMembers that also returns the first name
// equal to an earlier one of its object under case folding, at any depth
// ("" for none).
func objectMembersFolded(raw []byte) ([]member, string, error) {
	sms, err := strictjson.Object(raw)
	folded := ""
	var se *strictjson.Error
	if errors.As(err, &se) && errors.Is(err, strictjson.ErrFoldedDuplicate) {
		folded, err = se.Name, nil
	}
	if errors.Is(err, strictjson.ErrKind) {
		return nil, "", ErrNotObject
	}
	if err != nil {
		return nil, "", fmt.Errorf("evidence: %w", err)
	}
	ms := make([]member, len(sms))
	for i, m := range sms {
		ms[i] = member{name: m.Name, value: m.Value}
	}
	return ms, folded, nil
}

// arrayItems returns the items of the valid JSON array val.
func arrayItems(val jsontext.Value) []jsontext.Value {
	es, err := strictjson.Elements(val)
	if err != nil && !errors.Is(err, strictjson.ErrFoldedDuplicate) {
		return nil
	}
	items := make([]jsontext.Value, len(es))
	for i, e := range es {
		items[i] = e
	}
	return items
}

// unquote returns the value of the valid JSON string val.
func unquote(val jsontext.Value) string {
	s, err := jsontext.AppendUnquote(nil, val)
	if err != nil {
		return ""
	}
	return string(s)
}
