package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// FuzzParse checks that Parse never panics, accepts only valid JSON
// (judged by encoding/json, an independent parser), reports well-formed
// problems, and is stable: a parsed receipt marshals and parses back to
// itself. Verify and Find run on every input too.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"receipts/valid.json", "receipts/draft_example.json", "signed/ed25519.json", "signed/hmac-sha256.json"} {
		f.Add(readTestdata(f, name))
	}
	for _, s := range []string{
		`{}`, `[]`, `{"receipt_id":5}`, `{"redactions":[{},1,{"field":"a","class":"b","method":"c"}]}`,
		`{"ledger_seq":-0}`, `{"declared_side_effects":["read","read","fly"]}`, `{"a":1,"a":2}`,
		`{"receipt_signature":"x","signature_alg":"ed25519","server_id":"roam-code-local"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, problems, err := Parse(raw)
		status := Verify(raw, r, testKeys)
		wrapped := append(append([]byte(`{"_meta":{"interlock":`), raw...), `}}`...)
		Find(wrapped, DefaultReceiptKeys)
		if err != nil {
			if r != nil || problems != nil {
				t.Fatal("error with a receipt or problems")
			}
			if len(bytes.TrimSpace(raw)) > 0 && status != StatusTampered {
				t.Fatalf("unparseable receipt has status %s", status)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("Parse accepted invalid JSON %q", raw)
		}
		for _, p := range problems {
			if p.Field == "" || problemText[p.Kind] == "" {
				t.Fatalf("malformed problem %#v", p)
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, _, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("unstable:\n%+v\n%+v", r, r2)
		}
	})
}

// FuzzCanonical checks that Canonical never panics and, when it succeeds,
// writes valid JSON that is a fixed point of Canonical, means the same as
// the input to encoding/json (numbers as float64, which are exact here),
// and hashes as Hash says.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.0,2e3,-0,"x\u0000y"]}`, `1e21`, `1e-7`, `0.1`, `9007199254740993`, `"\ud83d\ude00"`,
		`{"\ufb33":1,"\ud83d\ude00":2}`, `[]`, `null`, `{"a":{"a":{"a":[true,false,null]}}}`, `333333333.33333329`,
		`{"a":1,"a":1}`, "\"\xff\"", `1 2`, ` { } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonical(raw)
		h, herr := Hash(raw)
		if (err == nil) != (herr == nil) || errors.Is(err, ErrInexactNumber) != errors.Is(herr, ErrInexactNumber) {
			t.Fatalf("Canonical and Hash disagree: %v / %v", err, herr)
		}
		if err != nil {
			return
		}
		sum := sha256.Sum256(out)
		if h != HashPrefix+hex.EncodeToString(sum[:]) {
			t.Fatal("Hash is not sha256 of Canonical")
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("encoding/json rejects accepted input %q: %v", raw, err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", raw, out)
		}
	})
}

// FuzzToolIntentOf checks that the normalization of a listed tool whose
// _meta is arbitrary bytes never panics, stays in the vocabularies, has a
// source for each field and a confidence in [0, 1], and never says less
// than the annotations alone (the merge goes toward the more dangerous
// value, evidence.md §4).
func FuzzToolIntentOf(f *testing.F) {
	for _, s := range []string{
		`{"dev.gatehouse/security":{"declared_side_effects":["write"]}}`,
		`{"dev.gatehouse/security":{"side_effect":"read_only","externality":"internal","data_classes":[],"required_scopes":["a"]}}`,
		`{"dev.gatehouse/security":{"declared_side_effects":["read","read","fly"],"side_effect":"x"}}`,
		`{"dev.gatehouse/security":[]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s), "delete_file", byte(0))
	}
	f.Fuzz(func(t *testing.T, meta []byte, name string, hints byte) {
		hint := func(shift uint) *bool {
			switch (hints >> shift) & 3 {
			case 1:
				return new(bool)
			case 2:
				v := true
				return &v
			}
			return nil
		}
		tool := mcp.Tool{Name: name, Meta: meta, Annotations: mcp.Annotations{ReadOnlyHint: hint(0), DestructiveHint: hint(2), OpenWorldHint: hint(4)}}
		it := ToolIntentOf(&tool)
		if !slices.Contains(SideEffects, it.SideEffect) || !slices.Contains(Externalities, it.Externality) {
			t.Fatalf("out of vocabulary: %+v", it)
		}
		for _, e := range it.DeclaredSideEffects {
			if !slices.Contains(Effects, e) {
				t.Fatalf("effect %q out of vocabulary", e)
			}
		}
		for _, fld := range IntentFields {
			if !slices.Contains(IntentSources, it.Sources[fld]) {
				t.Fatalf("Sources[%s] = %q", fld, it.Sources[fld])
			}
		}
		if c := Confidence(it, 0); c < 0 || c > 1 {
			t.Fatalf("Confidence %v", c)
		}
		bare := tool
		bare.Meta = nil
		alone := ToolIntentOf(&bare)
		if alone.Sources[FieldSideEffect] != SourceUnknown && slices.Index(SideEffects, it.SideEffect) < slices.Index(SideEffects, alone.SideEffect) {
			t.Fatalf("the declaration made %s %s (alone %s)", name, it.SideEffect, alone.SideEffect)
		}
	})
}

// FuzzFindToolReceipt checks that a tool-level receipt found in a tool
// entry is the exact bytes of its declaration object, which has a
// receipt_id member, and that Parse takes it without an error.
func FuzzFindToolReceipt(f *testing.F) {
	for _, s := range []string{
		`{"name":"t","_meta":{"dev.gatehouse/security":{"receipt_id":"r","side_effect":"mutating"}}}`,
		`{"_meta":{"dev.gatehouse/security":{"side_effect":"read_only"}}}`,
		`{"_meta":{"dev.gatehouse/security":{"receipt_id":"a","receipt_id":"b"}}}`,
		`{"_meta":{"dev.gatehouse/security":{"receipt_id":1e400}}}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tool []byte) {
		raw, found := FindToolReceipt(tool)
		if !found {
			if raw != nil {
				t.Fatalf("not found but raw %q", raw)
			}
			return
		}
		decl, ok := FindToolDeclaration(tool)
		if !ok || !bytes.Equal(decl, raw) {
			t.Fatalf("receipt %q is not the declaration %q", raw, decl)
		}
		if !bytes.Contains(tool, raw) {
			t.Fatalf("receipt %q is not bytes of the tool", raw)
		}
		if _, _, err := Parse(raw); err != nil {
			t.Fatalf("Parse of a found tool receipt: %v", err)
		}
	})
}
