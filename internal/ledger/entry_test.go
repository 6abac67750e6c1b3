package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/go-json-experiment/json/jsontext"
)

func testEntry() Entry {
	return Entry{
		LedgerID:     "gw-prod",
		Seq:          41,
		Kind:         KindGatewayDecision,
		RecordID:     "gw_dec_interlock_0001",
		Time:         time.Date(2026, 5, 19, 8, 15, 31, 123456000, time.UTC),
		PreviousHash: "sha256:" + strings.Repeat("ab", 32),
		Payload:      json.RawMessage(`{"action":"quarantine","server_id":"roam-code-local","tool_name":"publish_artifact"}`),
	}
}

// The leaf is the RFC 8785 canonicalization of the entry's JSON encoding.
func TestLeafIsCanonicalJSONOfEntry(t *testing.T) {
	for _, e := range []Entry{
		testEntry(),
		func() Entry {
			e := testEntry()
			e.Seq = 0
			e.PreviousHash = ZeroHash
			e.RecordID = "quote\" backslash\\ é \u2028 \U0001F600 <&>"
			e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			e.Payload = json.RawMessage(`[1,"a",{"b":null}]`)
			return e
		}(),
	} {
		std, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		want := jsontext.Value(std)
		if err := want.Canonicalize(); err != nil {
			t.Fatal(err)
		}
		if got := e.Leaf(); !bytes.Equal(got, want) {
			t.Errorf("Leaf()\n%s\nwant (canonicalized json.Marshal)\n%s", got, want)
		}
		back, err := ParseLeaf(e.Leaf())
		if err != nil {
			t.Fatalf("ParseLeaf(Leaf()): %v", err)
		}
		if !bytes.Equal(back.Leaf(), e.Leaf()) || !back.Time.Equal(e.Time) || back.RecordID != e.RecordID {
			t.Errorf("ParseLeaf round trip: %+v, want %+v", back, e)
		}
	}
}

func TestLeafGolden(t *testing.T) {
	e := testEntry()
	const want = `{"kind":"gateway_decision","ledger_id":"gw-prod","ledger_seq":41,` +
		`"payload":{"action":"quarantine","server_id":"roam-code-local","tool_name":"publish_artifact"},` +
		`"previous_hash":"sha256:abababababababababababababababababababababababababababababababab",` +
		`"record_id":"gw_dec_interlock_0001","time":"2026-05-19T08:15:31.123456Z"}`
	if got := string(e.Leaf()); got != want {
		t.Fatalf("Leaf()\n%s\nwant\n%s", got, want)
	}
	if got, want := e.Hash(), "sha256:"; !strings.HasPrefix(got, want) || len(got) != 71 {
		t.Fatalf("Hash() = %q", got)
	}
}

// appendString agrees with RFC 8785 (as implemented by jsontext) for every
// ASCII byte and a few multi-byte runes.
func TestAppendStringMatchesJCS(t *testing.T) {
	var cases []string
	for c := 0; c < 0x80; c++ {
		cases = append(cases, "x"+string(rune(c))+"y")
	}
	cases = append(cases, "é", "\u2028\u2029", "\U0001F600", "\u007f", "")
	for _, s := range cases {
		want, err := jsontext.AppendQuote(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		v := jsontext.Value(want)
		if err := v.Canonicalize(); err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, v) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, v)
		}
	}
}

func TestParseLeafRejects(t *testing.T) {
	e := testEntry()
	good := string(e.Leaf())
	for name, leaf := range map[string]string{
		"empty":            ``,
		"not json":         `nope`,
		"trailing newline": good + "\n",
		"leading space":    " " + good,
		"unknown member":   strings.Replace(good, `{"kind"`, `{"extra":1,"kind"`, 1),
		"duplicate member": strings.Replace(good, `{"kind":"gateway_decision"`, `{"kind":"gateway_decision","kind":"gateway_decision"`, 1),
		"missing member":   strings.Replace(good, `"record_id":"gw_dec_interlock_0001",`, ``, 1),
		"member order":     `{"ledger_id":"gw-prod","kind":"gateway_decision"` + good[len(`{"kind":"gateway_decision","ledger_id":"gw-prod"`):],
		"seq as float":     strings.Replace(good, `"ledger_seq":41`, `"ledger_seq":41.0`, 1),
		"seq exponent":     strings.Replace(good, `"ledger_seq":41`, `"ledger_seq":4.1e1`, 1),
		"negative seq":     strings.Replace(good, `"ledger_seq":41`, `"ledger_seq":-1`, 1),
		"time offset":      strings.Replace(good, `31.123456Z`, `31.123456+00:00`, 1),
		"time nanos":       strings.Replace(good, `31.123456Z`, `31.1234567Z`, 1),
		"time zeros":       strings.Replace(good, `31.123456Z`, `31.1234560Z`, 1),
		"upper hex":        strings.Replace(good, `sha256:abab`, `sha256:ABab`, 1),
		"short hash":       strings.Replace(good, `sha256:abab`, `sha256:ab`, 1),
		"payload spaces":   strings.Replace(good, `{"action":"quarantine",`, `{"action": "quarantine",`, 1),
		"payload order":    strings.Replace(good, `{"action":"quarantine","server_id":"roam-code-local"`, `{"server_id":"roam-code-local","action":"quarantine"`, 1),
		"escaped slash":    strings.Replace(good, `gw_dec_interlock_0001`, `gw_dec\/interlock`, 1),
		"escaped letter":   strings.Replace(good, `gw_dec_interlock_0001`, `gw_dec_\u0069nterlock`, 1),
		"bad kind":         strings.Replace(good, `"kind":"gateway_decision"`, `"kind":"Gateway"`, 1),
		"bad ledger id":    strings.Replace(good, `"ledger_id":"gw-prod"`, `"ledger_id":"gw prod"`, 1),
		"empty record id":  strings.Replace(good, `gw_dec_interlock_0001`, ``, 1),
		"seq 0 nonzero":    strings.Replace(good, `"ledger_seq":41`, `"ledger_seq":0`, 1),
		"invalid utf8":     strings.Replace(good, `gw_dec`, "gw\xffdec", 1),
	} {
		if _, err := ParseLeaf([]byte(leaf)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: ParseLeaf(%s) = %v, want ErrInvalid", name, leaf, err)
		}
	}
}

func TestCheckPayload(t *testing.T) {
	for _, p := range []string{`{}`, `[]`, `null`, `"x"`, `{"a":1,"b":[true,false,null],"c":{"d":"é"}}`, `1e+21`, `9007199254740992`, `-1.5`} {
		if err := checkPayload([]byte(p)); err != nil {
			t.Errorf("checkPayload(%s): %v", p, err)
		}
	}
	for _, p := range []string{``, ` {}`, `{} `, `{"b":1,"a":2}`, `{"a":1,"a":1}`, `{"a":1.0}`, `{"a":1E2}`,
		`{"a":12345678901234567890}`, `{"a":"\u0041"}`, "{\"a\":\"\xff\"}", `{"a":-0}`, `{`, `[1,]`} {
		if err := checkPayload([]byte(p)); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkPayload(%s) = %v, want ErrInvalid", p, err)
		}
	}
	if err := checkPayload([]byte(`"` + strings.Repeat("a", MaxPayload) + `"`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized payload accepted")
	}
}

func TestCanonicalize(t *testing.T) {
	got, err := Canonicalize([]byte(` { "b" : 1.0 , "a" : [ 1e2, "\u0041" ] } `))
	if err != nil || string(got) != `{"a":[100,"A"],"b":1}` {
		t.Fatalf("Canonicalize = %s, %v", got, err)
	}
	if _, err := Canonicalize([]byte(`{"id":12345678901234567890}`)); !errors.Is(err, ErrInvalid) || !errors.Is(err, jcs.ErrInexactNumber) {
		t.Fatalf("Canonicalize of an integer beyond 2^53: %v, want ErrInvalid and jcs.ErrInexactNumber", err)
	}
	// Whatever Canonicalize produces, Append accepts.
	for _, in := range []string{`{"b":[1e21,0.000001,1E-7,"\u00e9\u001f"],"a":{"z":true,"ﬀ":null,"😀":-0}}`, `"x"`, `[]`} {
		c, err := Canonicalize([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkPayload(c); err != nil {
			t.Errorf("Canonicalize(%s) = %s, which checkPayload rejects: %v", in, c, err)
		}
	}
	if _, err := Canonicalize([]byte(`{"a":1,"a":2}`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Canonicalize of duplicate names: %v, want ErrInvalid", err)
	}
	if got, err := Canonicalize([]byte(`{"a":-0}`)); err != nil || string(got) != `{"a":0}` {
		t.Fatalf("Canonicalize(-0) = %s, %v", got, err)
	}
}

func TestValidation(t *testing.T) {
	for _, k := range []string{"audit_event", "a", "x9_"} {
		if err := checkKind(k); err != nil {
			t.Errorf("checkKind(%q): %v", k, err)
		}
	}
	for _, k := range []string{"", "9a", "A", "a-b", "a b", strings.Repeat("a", 65)} {
		if err := checkKind(k); err == nil {
			t.Errorf("checkKind(%q) accepted", k)
		}
	}
	for _, id := range []string{"x", "mcp_rcpt_01HV", "é", strings.Repeat("a", MaxRecordID)} {
		if err := checkRecordID(id); err != nil {
			t.Errorf("checkRecordID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "a\nb", "a\x00", "a\x7f", "\xff", strings.Repeat("a", MaxRecordID+1)} {
		if err := checkRecordID(id); err == nil {
			t.Errorf("checkRecordID(%q) accepted", id)
		}
	}
	for _, id := range []string{"a", "gw-prod", "ns:ledger/1.2_x"} {
		if err := checkLedgerID(id); err != nil {
			t.Errorf("checkLedgerID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "a b", "a+b", "é", strings.Repeat("a", MaxLedgerID+1)} {
		if err := checkLedgerID(id); err == nil {
			t.Errorf("checkLedgerID(%q) accepted", id)
		}
	}
}

func FuzzParseLeaf(f *testing.F) {
	e := testEntry()
	f.Add(e.Leaf())
	e.Seq, e.PreviousHash = 0, ZeroHash
	f.Add(e.Leaf())
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, leaf []byte) {
		e, err := ParseLeaf(leaf)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		// Accepted leaves are exactly canonical: they re-encode to the
		// same bytes and are canonical JSON.
		if !bytes.Equal(e.Leaf(), leaf) {
			t.Fatalf("accepted leaf re-encodes differently:\n%q\n%q", leaf, e.Leaf())
		}
		v := jsontext.Value(bytes.Clone(leaf))
		if err := v.Canonicalize(); err != nil || !bytes.Equal(v, leaf) {
			t.Fatalf("accepted leaf is not RFC 8785 canonical: %q", leaf)
		}
		if !utf8.Valid(leaf) {
			t.Fatalf("accepted invalid UTF-8")
		}
	})
}

func TestCheckCanonical(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`0`, true}, {`-0`, false}, {`1.0`, false}, {`1E2`, false}, {`100`, true},
		{`1e+21`, true}, {`1e21`, false}, {`1e-7`, true}, {`1e-07`, false}, {`0.000001`, true}, {`1e-6`, false},
		{`123456789012345680000`, true}, {`12345678901234567890`, false}, {`9007199254740993`, false},
		{`1e400`, false}, {`00`, false}, {`.5`, false}, {`0.5`, true}, {`-`, false},
		{`"\u001f"`, true}, {`"\u001F"`, false}, {`"\u0008"`, false}, {`"\b"`, true}, {`"\/"`, false}, {`"\u0041"`, false},
		{`"` + "\x7f" + `"`, true}, {`"` + "\x01" + `"`, false}, {"\"\xff\"", false},
		{`{"a":1,"b":2}`, true}, {`{"b":1,"a":2}`, false}, {`{"a":1,"a":2}`, false},
		{`{"😀":2,"ﬀ":1}`, true}, {`{"ﬀ":1,"😀":2}`, false},
		{`{"a":1,"ab":2}`, true}, {`{"\u0000":0,"a":1}`, true},
		{`[1,2]`, true}, {`[1, 2]`, false}, {` 1`, false}, {`1 `, false}, {`[]`, true}, {`{}`, true},
		{`true`, true}, {`nul`, false}, {`[`, false}, {`{"a":}`, false}, {``, false},
	} {
		err := checkCanonical([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("checkCanonical(%s) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if tc.ok != jcsFixedPoint([]byte(tc.in)) {
			t.Errorf("%s: the table disagrees with jsontext", tc.in)
		}
	}
}

// jcsFixedPoint reports whether jsontext's RFC 8785 canonicalization leaves
// b unchanged.
func jcsFixedPoint(b []byte) bool {
	v := jsontext.Value(bytes.Clone(b))
	return v.Canonicalize() == nil && bytes.Equal(v, b)
}

// The fast checker agrees with jsontext's canonicalizer on every input.
func FuzzCheckCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null,true,{"b":-1.5e-7}]}`, `"\u001f"`, `1e+21`, `{"😀":2,"ﬀ":1}`, `[0.1,100,1e-7]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := checkCanonical(b) == nil
		if want := jcsFixedPoint(b); got != want {
			t.Fatalf("checkCanonical(%q) ok=%v, jsontext fixed point=%v", b, got, want)
		}
	})
}
