package evidence

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// withMember returns the object base with member name set to the raw JSON
// value (appended when absent), or removed when value is "".
func withMember(t testing.TB, base []byte, name, value string) []byte {
	t.Helper()
	ms, err := objectMembers(base)
	if err != nil {
		t.Fatal(err)
	}
	var out []member
	done := false
	for _, m := range ms {
		if m.name == name {
			done = true
			if value == "" {
				continue
			}
			m.value = []byte(value)
		}
		out = append(out, m)
	}
	if !done && value != "" {
		out = append(out, member{name: name, value: []byte(value)})
	}
	return appendObject(nil, out)
}

func ptr[T any](v T) *T { return &v }

func TestParseValid(t *testing.T) {
	raw := readTestdata(t, "receipts/valid.json")
	r, problems, err := Parse(raw)
	if err != nil || problems != nil {
		t.Fatalf("Parse: %v %v", problems, err)
	}
	want := &ServerReceipt{
		ReceiptID: "mcp_rcpt_roam_0001", SchemaVersion: "0.1", IssuedAt: "2026-05-19T08:15:30Z",
		ServerID: "roam-code-local", ToolName: "publish_artifact", ToolCallID: "call_0001",
		ClientID: "claude-code", ActorRefID: "user_maaz", SessionID: "sess_7", RunID: "run_20260519_001", RunEventID: "event_0042",
		DeclaredSideEffects: []string{"read", "export", "share"}, SideEffect: "mutating",
		DataClasses: []string{"source_code", "internal"}, Externality: "external",
		RequiredScopes: []string{"repo.read", "artifact.write", "external.share"}, Mode: "safe_edit",
		ToolSchemaHash:      "sha256:9d3c0000000000000000000000000000000000000000000000000000000000aa",
		ToolDescriptionHash: "sha256:d35c0000000000000000000000000000000000000000000000000000000000bb",
		InputHash:           "sha256:1a7b0000000000000000000000000000000000000000000000000000000000cc",
		ArgumentKeys:        []string{"path", "destination", "visibility"},
		InputRef:            "s3://evidence/in/0001",
		OutputHash:          "sha256:49cc0000000000000000000000000000000000000000000000000000000000dd",
		OutputRef:           "s3://evidence/out/0001",
		Redactions: []Redaction{
			{Field: "output.text", Class: "secret", Method: "pattern", Replacement: "[REDACTED_SECRET]"},
			{Field: "input.token", Class: "secret", Method: "drop"},
		},
		PolicyDecision: "allow", PolicyReason: "safe_edit mode permits artifact publishing",
		MatchedRule: "safe_edit_publish_artifact", PolicyVersion: "roam-policy-2026-05-19",
		OverrideUsed: ptr(false), ShadowMode: ptr(true),
		LedgerID: "roam_run_20260519_001", LedgerSeq: ptr(int64(42)),
		PreviousHash:       "sha256:abc1000000000000000000000000000000000000000000000000000000000000",
		VerificationStatus: "ok",
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", r, want)
	}
}

// TestParseEveryField fills every field of ServerReceipt by reflection,
// marshals it with the struct's own tags and checks that Parse reads every
// one back: no draft field is missing from the parser.
func TestParseEveryField(t *testing.T) {
	var full ServerReceipt
	v := reflect.ValueOf(&full).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		name := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
		switch f.Kind() {
		case reflect.String:
			f.SetString(map[string]string{
				"schema_version": "0.1", "issued_at": "2026-05-19T08:15:30.5+02:00",
				"side_effect": "destructive", "externality": "third_party",
				"policy_decision": "quarantine", "verification_status": "tampered",
				"signature_alg": "ed25519",
			}[name])
			if strings.HasSuffix(name, "_hash") {
				f.SetString(HashPrefix + strings.Repeat("0f", 32))
			}
			if f.String() == "" {
				f.SetString("v_" + name)
			}
		case reflect.Slice:
			if name == "redactions" {
				f.Set(reflect.ValueOf([]Redaction{{Field: "f", Class: "c", Method: "m", Replacement: "r"}}))
			} else if name == "declared_side_effects" {
				f.Set(reflect.ValueOf(slices.Clone(Effects)))
			} else {
				f.Set(reflect.ValueOf([]string{"a_" + name, "b_" + name}))
			}
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			if f.Elem().Kind() == reflect.Bool {
				f.Elem().SetBool(true)
			} else {
				f.Elem().SetInt(7)
			}
		default:
			t.Fatalf("unhandled field %s", name)
		}
	}
	raw, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	r, problems, err := Parse(raw)
	if err != nil || problems != nil {
		t.Fatalf("Parse: %v %v", problems, err)
	}
	if !reflect.DeepEqual(*r, full) {
		t.Errorf("round trip lost fields:\n got %+v\nwant %+v", *r, full)
	}
}

// TestParseDraftExample parses the draft's own example: valid except for
// its abbreviated hashes.
func TestParseDraftExample(t *testing.T) {
	r, problems, err := Parse(readTestdata(t, "receipts/draft_example.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{"tool_schema_hash", ProblemHash}, {"input_hash", ProblemHash},
		{"output_hash", ProblemHash}, {"previous_hash", ProblemHash},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems = %v, want %v", problems, want)
	}
	if r.ToolSchemaHash != "" || r.ServerID != "roam-code-local" || r.Redactions == nil || len(r.Redactions) != 0 {
		t.Errorf("unexpected receipt %+v", r)
	}
}

func TestParseProblems(t *testing.T) {
	base := readTestdata(t, "receipts/valid.json")
	const secret = "SECRET-VALUE-42"
	tests := []struct {
		name, field, value string
		want               []Problem
	}{
		{"missing receipt_id", "receipt_id", "", []Problem{{"receipt_id", ProblemMissing}}},
		{"missing schema_version", "schema_version", "", []Problem{{"schema_version", ProblemMissing}}},
		{"missing issued_at", "issued_at", "", []Problem{{"issued_at", ProblemMissing}}},
		{"missing server_id", "server_id", "", []Problem{{"server_id", ProblemMissing}}},
		{"missing tool_name", "tool_name", "", []Problem{{"tool_name", ProblemMissing}}},
		{"missing tool_call_id", "tool_call_id", "", []Problem{{"tool_call_id", ProblemMissing}}},
		{"empty receipt_id", "receipt_id", `""`, []Problem{{"receipt_id", ProblemEmpty}}},
		{"empty tool_call_id", "tool_call_id", `""`, []Problem{{"tool_call_id", ProblemEmpty}}},
		{"number receipt_id", "receipt_id", `5`, []Problem{{"receipt_id", ProblemType}}},
		{"null server_id", "server_id", `null`, []Problem{{"server_id", ProblemType}}},
		{"object tool_name", "tool_name", `{"n":"` + secret + `"}`, []Problem{{"tool_name", ProblemType}}},
		{"number client_id", "client_id", `1`, []Problem{{"client_id", ProblemType}}},
		{"array actor_ref_id", "actor_ref_id", `["` + secret + `"]`, []Problem{{"actor_ref_id", ProblemType}}},
		{"bool session_id", "session_id", `true`, []Problem{{"session_id", ProblemType}}},
		{"null run_id", "run_id", `null`, []Problem{{"run_id", ProblemType}}},
		{"number run_event_id", "run_event_id", `1`, []Problem{{"run_event_id", ProblemType}}},
		{"schema 0.2", "schema_version", `"0.2"`, []Problem{{"schema_version", ProblemVersion}}},
		{"schema number", "schema_version", `0.1`, []Problem{{"schema_version", ProblemType}}},
		{"issued_at space", "issued_at", `"2026-05-19 08:15:30Z"`, []Problem{{"issued_at", ProblemTime}}},
		{"issued_at no zone", "issued_at", `"2026-05-19T08:15:30"`, []Problem{{"issued_at", ProblemTime}}},
		{"issued_at words", "issued_at", `"` + secret + `"`, []Problem{{"issued_at", ProblemTime}}},
		{"issued_at bad day", "issued_at", `"2026-02-30T08:15:30Z"`, []Problem{{"issued_at", ProblemTime}}},
		{"issued_at empty", "issued_at", `""`, []Problem{{"issued_at", ProblemEmpty}}},
		{"side_effect vocab", "side_effect", `"` + secret + `"`, []Problem{{"side_effect", ProblemVocabulary}}},
		{"side_effect case", "side_effect", `"Read_Only"`, []Problem{{"side_effect", ProblemVocabulary}}},
		{"externality vocab", "externality", `"cloud"`, []Problem{{"externality", ProblemVocabulary}}},
		{"policy_decision vocab", "policy_decision", `"maybe"`, []Problem{{"policy_decision", ProblemVocabulary}}},
		{"verification_status vocab", "verification_status", `"trusted"`, []Problem{{"verification_status", ProblemVocabulary}}},
		{"effects vocab", "declared_side_effects", `["read","` + secret + `"]`, []Problem{{"declared_side_effects[1]", ProblemVocabulary}}},
		{"effects duplicate", "declared_side_effects", `["read","write","read"]`, []Problem{{"declared_side_effects[2]", ProblemDuplicate}}},
		{"effects item type", "declared_side_effects", `["read",5,null]`, []Problem{{"declared_side_effects[1]", ProblemType}, {"declared_side_effects[2]", ProblemType}}},
		{"effects not array", "declared_side_effects", `"read"`, []Problem{{"declared_side_effects", ProblemType}}},
		{"data_classes duplicate", "data_classes", `["pii","pii"]`, []Problem{{"data_classes[1]", ProblemDuplicate}}},
		{"data_classes object", "data_classes", `{}`, []Problem{{"data_classes", ProblemType}}},
		{"required_scopes null item", "required_scopes", `[null]`, []Problem{{"required_scopes[0]", ProblemType}}},
		{"argument_keys not array", "argument_keys", `"path"`, []Problem{{"argument_keys", ProblemType}}},
		{"argument_keys duplicate", "argument_keys", `["a","a"]`, []Problem{{"argument_keys[1]", ProblemDuplicate}}},
		{"mode number", "mode", `3`, []Problem{{"mode", ProblemType}}},
		{"input_ref number", "input_ref", `3`, []Problem{{"input_ref", ProblemType}}},
		{"output_ref null", "output_ref", `null`, []Problem{{"output_ref", ProblemType}}},
		{"hash uppercase", "tool_schema_hash", `"sha256:` + strings.Repeat("AB", 32) + `"`, []Problem{{"tool_schema_hash", ProblemHash}}},
		{"hash short", "tool_description_hash", `"sha256:` + strings.Repeat("a", 63) + `"`, []Problem{{"tool_description_hash", ProblemHash}}},
		{"hash long", "input_hash", `"sha256:` + strings.Repeat("a", 65) + `"`, []Problem{{"input_hash", ProblemHash}}},
		{"hash sha512", "output_hash", `"sha512:` + strings.Repeat("a", 64) + `"`, []Problem{{"output_hash", ProblemHash}}},
		{"hash no prefix", "previous_hash", `"` + strings.Repeat("a", 64) + `"`, []Problem{{"previous_hash", ProblemHash}}},
		{"hash non-hex", "input_hash", `"sha256:` + strings.Repeat("g", 64) + `"`, []Problem{{"input_hash", ProblemHash}}},
		{"hash number", "input_hash", `1`, []Problem{{"input_hash", ProblemType}}},
		{"ledger_seq fraction", "ledger_seq", `42.0`, []Problem{{"ledger_seq", ProblemInteger}}},
		{"ledger_seq exponent", "ledger_seq", `1e2`, []Problem{{"ledger_seq", ProblemInteger}}},
		{"ledger_seq negative", "ledger_seq", `-1`, []Problem{{"ledger_seq", ProblemInteger}}},
		{"ledger_seq minus zero", "ledger_seq", `-0`, []Problem{{"ledger_seq", ProblemInteger}}},
		{"ledger_seq overflow", "ledger_seq", `9223372036854775808`, []Problem{{"ledger_seq", ProblemInteger}}},
		{"ledger_seq string", "ledger_seq", `"42"`, []Problem{{"ledger_seq", ProblemType}}},
		{"override_used string", "override_used", `"false"`, []Problem{{"override_used", ProblemType}}},
		{"shadow_mode number", "shadow_mode", `0`, []Problem{{"shadow_mode", ProblemType}}},
		{"shadow_mode null", "shadow_mode", `null`, []Problem{{"shadow_mode", ProblemType}}},
		{"redactions object", "redactions", `{}`, []Problem{{"redactions", ProblemType}}},
		{"redaction not object", "redactions", `[1]`, []Problem{{"redactions[0]", ProblemType}}},
		{"redaction missing method", "redactions", `[{"field":"a","class":"b"}]`, []Problem{{"redactions[0].method", ProblemMissing}}},
		{"redaction missing all", "redactions", `[{"field":"a","class":"b","method":"c"},{}]`, []Problem{
			{"redactions[1].field", ProblemMissing}, {"redactions[1].class", ProblemMissing}, {"redactions[1].method", ProblemMissing}}},
		{"redaction field type", "redactions", `[{"field":5,"class":"b","method":"c"}]`, []Problem{{"redactions[0].field", ProblemType}}},
		{"redaction empty class", "redactions", `[{"field":"a","class":"","method":"c"}]`, []Problem{{"redactions[0].class", ProblemEmpty}}},
		{"redaction replacement type", "redactions", `[{"field":"a","class":"b","method":"c","replacement":null}]`, []Problem{{"redactions[0].replacement", ProblemType}}},
		{"signature without alg", "receipt_signature", `"abc"`, []Problem{{"receipt_signature", ProblemSignaturePair}}},
		{"signature type", "receipt_signature", `5`, []Problem{{"receipt_signature", ProblemType}, {"receipt_signature", ProblemSignaturePair}}},
		{"alg without signature", "signature_alg", `"ed25519"`, []Problem{{"receipt_signature", ProblemSignaturePair}}},
		{"ledger_id type", "ledger_id", `[]`, []Problem{{"ledger_id", ProblemType}}},
		{"issued_by type", "issued_by", `1`, []Problem{{"issued_by", ProblemType}}},
		{"unknown member ignored", "x-other", `{"a":1}`, nil},
		{"a name that differs only in case", "Receipt_ID", `"` + secret + `"`, []Problem{{"Receipt_ID", ProblemCaseFold}}},
		{"case folding inside a member", "x-other", `{"a":1,"A":2}`, []Problem{{"A", ProblemCaseFold}}},
		{"unknown member with a big number ignored", "x-big", `123456789012345678901234567890`, nil},
	}
	valid, _, err := Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := withMember(t, base, tt.field, tt.value)
			r, problems, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(problems, tt.want) {
				t.Errorf("problems = %v, want %v", problems, tt.want)
			}
			for _, p := range problems {
				if s := p.String(); strings.Contains(s, secret) || !strings.HasPrefix(s, p.Field+": ") || problemText[p.Kind] == "" {
					t.Errorf("bad problem text %q", s)
				}
			}
			// The field with a problem is zeroed; the others are intact.
			if tt.want != nil && !strings.HasPrefix(tt.field, "receipt_signature") && tt.field != "signature_alg" {
				got := fieldByJSON(r, tt.field)
				if got.IsValid() && !got.IsZero() {
					t.Errorf("field %s kept an invalid value: %v", tt.field, got)
				}
			}
			if tt.field != "receipt_id" && r.ReceiptID != valid.ReceiptID {
				t.Errorf("receipt_id lost")
			}
		})
	}
}

// fieldByJSON returns the field of r with the given json name.
func fieldByJSON(r *ServerReceipt, name string) reflect.Value {
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0] == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in        string
		notObject bool
	}{
		{`{"receipt_id":"a","receipt_id":"b"}`, false},
		{`{"receipt_id":"a","receipt\u005fid":"b"}`, false},
		{`{"redactions":[{"field":"a","field":"b"}]}`, false},
		{`{"x":{"y":1,"y":1}}`, false},
		{`{"receipt_id":"a"} {}`, false},
		{`{"receipt_id":"a"`, false},
		{"{\"receipt_id\":\"\xff\"}", false},
		{`{"receipt_id":"\udc00"}`, false},
		{``, false},
		{`[]`, true},
		{`"receipt"`, true},
		{`null`, true},
		{`42`, true},
	}
	for _, tt := range tests {
		r, problems, err := Parse([]byte(tt.in))
		if err == nil || r != nil || problems != nil {
			t.Errorf("Parse(%q) = %v, %v, %v; want an error", tt.in, r, problems, err)
			continue
		}
		if errors.Is(err, ErrNotObject) != tt.notObject {
			t.Errorf("Parse(%q) error %v: ErrNotObject = %v", tt.in, err, !tt.notObject)
		}
	}
}

func TestParseDeclaration(t *testing.T) {
	d, problems, err := ParseDeclaration([]byte(`{
		"declared_side_effects": ["read","network"], "side_effect": "read_only",
		"data_classes": [], "externality": "external", "required_scopes": ["web.fetch"],
		"mode": "read_only", "tool_schema_hash": "sha256:` + strings.Repeat("1", 64) + `",
		"receipt_id": 5, "tool_name": null, "anything": "else"}`))
	if err != nil || problems != nil {
		t.Fatalf("ParseDeclaration: %v %v", problems, err)
	}
	want := &ToolDeclaration{
		DeclaredSideEffects: []string{"read", "network"}, SideEffect: "read_only",
		DataClasses: []string{}, Externality: "external", RequiredScopes: []string{"web.fetch"},
		Mode: "read_only", ToolSchemaHash: "sha256:" + strings.Repeat("1", 64),
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %+v, want %+v", d, want)
	}
	_, problems, err = ParseDeclaration([]byte(`{"side_effect":"harmless","declared_side_effects":["fly"],"tool_description_hash":"x"}`))
	want2 := []Problem{{"side_effect", ProblemVocabulary}, {"declared_side_effects[0]", ProblemVocabulary}, {"tool_description_hash", ProblemHash}}
	if err != nil || !reflect.DeepEqual(problems, want2) {
		t.Errorf("problems = %v, %v; want %v", problems, err, want2)
	}
	if _, _, err := ParseDeclaration([]byte(`[]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("ParseDeclaration([]) error = %v", err)
	}
}
