package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
)

// FuzzMembers checks that the strict line parser never panics, agrees with
// encoding/json on what is a valid JSON object (encoding/json accepts
// duplicate names and invalid UTF-8, so only the other direction is
// compared), and returns sub-slices of the input.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":1,"a":2}`, `[1]`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{} {}`, `{"a":{"b":[1,2,{"c":null}]}}`, ` {"x":"y"} `, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p objectParser
		var names []string
		err := p.members(body, func(name string, raw []byte) {
			names = append(names, name)
			if len(raw) == 0 || !json.Valid(raw) {
				t.Fatalf("member %q: raw value %q is not JSON", name, raw)
			}
		})
		if err == nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(body, &m) != nil {
				t.Fatalf("accepted %q that encoding/json rejects", body)
			}
			if len(m) != len(names) {
				t.Fatalf("accepted %q with duplicate names", body)
			}
		}
		_ = syntaxReason(err)
	})
}

// FuzzVerify feeds arbitrary receipts and decision-log bytes to the
// verifier: it must never panic, always report the ten checks, never
// accept a capture with a diagnostic or a truncated line, and stay
// deterministic. The seeds are whole captures (kilobytes), so minimizing
// an interesting input is slow: run it with a bound, e.g.
//
//	go test -run XXX -fuzz FuzzVerify -fuzzminimizetime 2s ./internal/verify
func FuzzVerify(f *testing.F) {
	seed := func(calls []string) {
		b := build(f, calls, receipts.Limits{}, nil)
		f.Add(readB(f, b.receipts), readB(f, b.dlog))
	}
	seed(goodCalls)
	seed(goodCalls[:1])
	seed(nil)
	f.Add([]byte(receipts.DiagnosticLine), []byte("{}\n"))
	f.Add([]byte("{\"a\":1"), []byte("\n"))
	f.Fuzz(func(t *testing.T, rec, dlog []byte) {
		rep, err := verify(bytes.NewReader(rec), bytes.NewReader(dlog))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Checks) != len(CheckNames) {
			t.Fatalf("%d checks", len(rep.Checks))
		}
		if rep.OK {
			if bytes.Contains(rec, []byte(`"diagnostic"`)) {
				t.Fatalf("accepted a capture with a diagnostic")
			}
			if len(rec) > 0 && rec[len(rec)-1] != '\n' || len(dlog) > 0 && dlog[len(dlog)-1] != '\n' {
				t.Fatal("accepted a truncated line")
			}
			if rep.Records != rep.ToolDecisions {
				t.Fatalf("accepted %d receipts for %d tool decisions", rep.Records, rep.ToolDecisions)
			}
		}
		again, _ := verify(bytes.NewReader(rec), bytes.NewReader(dlog))
		a, _ := json.Marshal(rep)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("non-deterministic report:\n%s\n%s", a, b)
		}
	})
}

func readB(f *testing.F, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
