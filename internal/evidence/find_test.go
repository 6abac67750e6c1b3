package evidence

import (
	"testing"
)

func TestFind(t *testing.T) {
	const rcpt = `{"receipt_id":"r1"}`
	tests := []struct {
		name    string
		result  string
		keys    []string
		wantRaw string
		wantKey string
	}{
		{"gatehouse key", `{"content":[],"_meta":{"dev.gatehouse/security-receipt":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, ReceiptKey},
		{"whitespace kept as is", `{"_meta":{"dev.gatehouse/security-receipt": { "receipt_id" : "r1" } }}`, DefaultReceiptKeys, `{ "receipt_id" : "r1" }`, ReceiptKey},
		{"first key wins", `{"_meta":{"security":{"receipt_id":"s"},"dev.gatehouse/security-receipt":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, ReceiptKey},
		{"legacy security", `{"_meta":{"security":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, "security"},
		{"legacy interlock nested", `{"_meta":{"interlock":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, "interlock"},
		{"legacy interlock dotted", `{"_meta":{"other":1,"interlock.receipt_id":"r1","interlock.ledger_seq":42,"interlock.redactions":[{"field":"a"}],"interlock.":"ignored","interlockx.y":1}}`,
			DefaultReceiptKeys, `{"receipt_id":"r1","ledger_seq":42,"redactions":[{"field":"a"}]}`, "interlock"},
		{"dotted names unescaped and requoted", `{"_meta":{"interlock.a\"b":"\u0041","interlock.\u00e9":1}}`, DefaultReceiptKeys, `{"a\"b":"\u0041","é":1}`, "interlock"},
		{"nested wins over dotted", `{"_meta":{"interlock.receipt_id":"d","interlock":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, "interlock"},
		{"non-object skipped", `{"_meta":{"dev.gatehouse/security-receipt":"x","security":"high","interlock":` + rcpt + `}}`, DefaultReceiptKeys, rcpt, "interlock"},
		{"non-object then dotted", `{"_meta":{"security":"high","security.receipt_id":"r1"}}`, DefaultReceiptKeys, `{"receipt_id":"r1"}`, "security"},
		{"custom keys", `{"_meta":{"security":{"receipt_id":"s"},"acme/receipt":` + rcpt + `}}`, []string{"acme/receipt", "security"}, rcpt, "acme/receipt"},
		{"custom keys exclude defaults", `{"_meta":{"security":` + rcpt + `}}`, []string{"acme/receipt"}, "", ""},
		{"no keys", `{"_meta":{"security":` + rcpt + `}}`, nil, "", ""},
		{"no _meta", `{"content":[]}`, DefaultReceiptKeys, "", ""},
		{"receipt outside _meta", `{"dev.gatehouse/security-receipt":` + rcpt + `}`, DefaultReceiptKeys, "", ""},
		{"_meta not object", `{"_meta":[` + rcpt + `]}`, DefaultReceiptKeys, "", ""},
		{"result not object", `[{"_meta":{"security":` + rcpt + `}}]`, DefaultReceiptKeys, "", ""},
		{"result invalid", `{"_meta":{"security":` + rcpt, DefaultReceiptKeys, "", ""},
		{"duplicate names in result", `{"_meta":{"security":` + rcpt + `},"_meta":{}}`, DefaultReceiptKeys, "", ""},
		{"duplicate names in receipt", `{"_meta":{"security":{"a":1,"a":2}}}`, DefaultReceiptKeys, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, key, found := Find([]byte(tt.result), tt.keys)
			if found != (tt.wantRaw != "") || string(raw) != tt.wantRaw || key != tt.wantKey {
				t.Errorf("Find = %s, %q, %v; want %s, %q", raw, key, found, tt.wantRaw, tt.wantKey)
			}
			if found {
				if _, _, err := Parse(raw); err != nil {
					t.Errorf("found receipt does not parse: %v", err)
				}
			}
		})
	}
}

func TestFindDoesNotAliasForAppend(t *testing.T) {
	result := []byte(`{"_meta":{"security":{"receipt_id":"r1"}},"z":1}`)
	raw, _, _ := Find(result, DefaultReceiptKeys)
	_ = append(raw, "XXXX"...)
	if string(result) != `{"_meta":{"security":{"receipt_id":"r1"}},"z":1}` {
		t.Errorf("append to the found receipt changed the result: %s", result)
	}
}

func TestFindToolDeclaration(t *testing.T) {
	const decl = `{"side_effect":"read_only"}`
	tests := []struct {
		tool, want string
	}{
		{`{"name":"t","_meta":{"dev.gatehouse/security":` + decl + `}}`, decl},
		{`{"name":"t","_meta":{"dev.gatehouse/security-receipt":` + decl + `}}`, ""},
		{`{"name":"t","_meta":{"dev.gatehouse/security":"read_only"}}`, ""},
		{`{"name":"t","_meta":{"dev.gatehouse/security.side_effect":"read_only"}}`, ""},
		{`{"name":"t"}`, ""},
		{`{"name":"t","_meta":null}`, ""},
		{`[]`, ""},
		{`{"name":"t","name":"u","_meta":{"dev.gatehouse/security":` + decl + `}}`, ""},
	}
	for _, tt := range tests {
		raw, found := FindToolDeclaration([]byte(tt.tool))
		if found != (tt.want != "") || string(raw) != tt.want {
			t.Errorf("FindToolDeclaration(%s) = %s, %v; want %s", tt.tool, raw, found, tt.want)
		}
	}
}

func TestFindToolReceipt(t *testing.T) {
	const full = `{"receipt_id":"mcp_rcpt_roam_0001","side_effect":"mutating"}`
	tests := []struct {
		tool, want string
	}{
		{`{"name":"t","_meta":{"dev.gatehouse/security":` + full + `}}`, full},
		// receipt_id of any value makes it a receipt, which Parse then
		// validates.
		{`{"_meta":{"dev.gatehouse/security":{"receipt_id":7}}}`, `{"receipt_id":7}`},
		{`{"_meta":{"dev.gatehouse/security":{"side_effect":"read_only"}}}`, ""},
		{`{"_meta":{"dev.gatehouse/security":{"x":{"receipt_id":"r"}}}}`, ""},
		{`{"_meta":{"dev.gatehouse/security-receipt":` + full + `}}`, ""},
		{`{"_meta":{"dev.gatehouse/security":{"receipt_id":"a","receipt_id":"b"}}}`, ""},
		{`{"name":"t"}`, ""},
		{`[]`, ""},
	}
	for _, tt := range tests {
		raw, found := FindToolReceipt([]byte(tt.tool))
		if found != (tt.want != "") || string(raw) != tt.want {
			t.Errorf("FindToolReceipt(%s) = %s, %v; want %s", tt.tool, raw, found, tt.want)
		}
	}
}

func TestWithoutReceipt(t *testing.T) {
	tests := []struct {
		name, result, key, want string
	}{
		{"only receipt", `{"content":[{"type":"text","text":"hi"}],"_meta":{"dev.gatehouse/security-receipt":{"receipt_id":"r"}}}`, ReceiptKey,
			`{"content":[{"type":"text","text":"hi"}]}`},
		{"other meta kept", `{"_meta":{"a":1,"dev.gatehouse/security-receipt":{"receipt_id":"r"},"b":2},"isError":false}`, ReceiptKey,
			`{"_meta":{"a":1,"b":2},"isError":false}`},
		{"dotted removed", `{ "content" : [ ] , "_meta" : { "interlock.receipt_id" : "r" , "interlock.ledger_seq" : 1 , "keep" : true } }`, "interlock",
			`{"content":[],"_meta":{"keep":true}}`},
		{"nothing to remove", `{"content":[], "_meta":{"x":1}}`, ReceiptKey, `{"content":[],"_meta":{"x":1}}`},
		{"no meta", `{"content":[]}`, ReceiptKey, `{"content":[]}`},
		{"meta not object kept", `{"_meta":5}`, ReceiptKey, `{"_meta":5}`},
	}
	for _, tt := range tests {
		got, err := WithoutReceipt([]byte(tt.result), tt.key)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: WithoutReceipt = %s, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{`[]`, `{`, `{"a":1,"a":1}`} {
		if got, err := WithoutReceipt([]byte(bad), ReceiptKey); err == nil {
			t.Errorf("WithoutReceipt(%s) = %s, want an error", bad, got)
		}
	}
}

// TestOutputHashConvention: a server hashes its result before adding the
// receipt; the gateway gets the same hash from the result it received.
func TestOutputHashConvention(t *testing.T) {
	for _, before := range []string{
		`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":1}}`,
		`{"content":[],"_meta":{"progress":"x"}}`,
	} {
		server, err := Hash([]byte(before))
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := objectMembers([]byte(before))
		var withReceipt []byte
		if len(ms) == 2 && ms[1].name == "_meta" {
			withReceipt = []byte(`{"content":[],"_meta":{"progress":"x","dev.gatehouse/security-receipt":{"output_hash":"` + server + `"}}}`)
		} else {
			withReceipt = append([]byte(before[:len(before)-1]), `,"_meta":{"dev.gatehouse/security-receipt":{"output_hash":"`+server+`"}}}`...)
		}
		_, key, found := Find(withReceipt, DefaultReceiptKeys)
		if !found {
			t.Fatal("receipt not found")
		}
		stripped, err := WithoutReceipt(withReceipt, key)
		if err != nil {
			t.Fatal(err)
		}
		gateway, err := Hash(stripped)
		if err != nil || gateway != server {
			t.Errorf("gateway hash %s, %v; server hash %s", gateway, err, server)
		}
	}
}

// TestFindEscapedMeta: a _meta member name written with \u escapes is still
// found (the search that skips the parse must not miss it).
func TestFindEscapedMeta(t *testing.T) {
	for _, result := range []string{
		`{"\u005fmeta":{"security":{"receipt_id":"r1"}}}`,
		`{"_m\u0065ta":{"security":{"receipt_id":"r1"}}}`,
		`{"content":[],"_meta":{"security":{"receipt_id":"r1"}}}`,
	} {
		if raw, _, found := Find([]byte(result), DefaultReceiptKeys); !found || string(raw) != `{"receipt_id":"r1"}` {
			t.Errorf("Find(%s) = %s, %v", result, raw, found)
		}
	}
	for _, result := range []string{`{"content":[{"type":"text","text":"_meta"}]}`, `{"meta":{"security":{"receipt_id":"r1"}}}`, `{"_Meta":{"security":{}}}`} {
		if raw, _, found := Find([]byte(result), DefaultReceiptKeys); found {
			t.Errorf("Find(%s) = %s", result, raw)
		}
	}
}

// FuzzFind: skipping the parse when result cannot hold a _meta member
// changes no answer.
func FuzzFind(f *testing.F) {
	for _, s := range []string{`{"_meta":{"security":{"receipt_id":"r1"}}}`, `{"\u005fmeta":{"interlock.receipt_id":"r"}}`, `{"content":[]}`, `{"_meta":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		raw, key, found := Find(result, DefaultReceiptKeys)
		wraw, wkey, wfound := find(result, DefaultReceiptKeys)
		if found != wfound || key != wkey || string(raw) != string(wraw) {
			t.Fatalf("Find(%q) = %s, %q, %v; without the search %s, %q, %v", result, raw, key, found, wraw, wkey, wfound)
		}
	})
}
