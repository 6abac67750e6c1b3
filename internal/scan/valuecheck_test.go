package scan

import (
	"strings"
	"testing"
)

// semiGenericRules are the loaded rules with a value check.
func semiGenericRules(tb testing.TB) []*glRule {
	s, err := New(Options{NoPII: true, NoInjection: true})
	if err != nil {
		tb.Fatal(err)
	}
	var out []*glRule
	for i := range s.sec.rules {
		if r := &s.sec.rules[i]; r.check == checkAssign {
			out = append(out, r)
		}
	}
	return out
}

// valueWindows are value windows (from the operator on) the value
// checks are held to.
var valueWindows = []string{
	":= req.Header.Get('X-Request-Id'); ",
	"= 'q8Zr2Lm0Xv7Tn4Wp' ",
	`: "0123456789abcdef0123456789abcdef"`,
	"=0123456789abcdef0123456789abcdef",
	"= \"abcdefgh12\"\n",
	":::= `live_0123456789abcdefghij0123456789abcdefghij`;",
	"=> 123456789012345678\\n",
	", key-0123456789abcdef0123456789abcdef)",
	"=AAAAAAAAAAAAAAAAAAAAAAq8Zr2Lm0Xv7Tn4WpQ9s8d7f6g5h4q8Zr2Lm0Xv7Tn4WpQ9s8d7f6g5h4q8Zr2Lm0Xv7Tn4Wp ",
	"= su0123456789ab\t",
	"= 12345:AAbcdefghijklmnopqrstuvwxyz012345678 ",
	"= \u212aey0123456789abcdef ",
	"= (function() { return 1 })",
	"=",
	"",
}

// TestValueCheck: the check is built for gitleaks' semi-generic value
// parts (generic-api-key among them), never rejects a window the value
// regex matches, and rejects benign code.
func TestValueCheck(t *testing.T) {
	rules := semiGenericRules(t)
	n := 0
	for _, r := range rules {
		if r.sufCheck.ok {
			n++
		} else {
			t.Logf("%s: no value check", r.id)
		}
		if r.id == "generic-api-key" {
			if !r.sufCheck.ok {
				t.Fatal("generic-api-key has no value check")
			}
			if r.sufCheck.may(":= req.Header.Get('X-Request-Id'); ") {
				t.Error("generic-api-key: Go call after := passes the check")
			}
			if !r.sufCheck.may("= 'q8Zr2Lm0Xv7Tn4Wp' ") {
				t.Error("generic-api-key: a quoted value fails the check")
			}
		}
		for _, w := range valueWindows {
			if !r.sufCheck.may(w) && r.suf.MatchString(w) {
				t.Errorf("%s: check rejects %q, which the value regex matches", r.id, w)
			}
		}
	}
	if n < len(rules)*9/10 {
		t.Errorf("value checks for %d of %d semi-generic rules", n, len(rules))
	}
}

func FuzzValueCheck(f *testing.F) {
	for _, w := range valueWindows {
		f.Add(w)
	}
	rules := semiGenericRules(f)
	f.Fuzz(func(t *testing.T, w string) {
		if len(w) > 300 {
			w = w[:300]
		}
		for _, r := range rules {
			if !r.sufCheck.may(w) && r.suf.MatchString(w) {
				t.Fatalf("%s: check rejects %q, which the value regex matches", r.id, strings.ToValidUTF8(w, "?"))
			}
		}
	})
}
