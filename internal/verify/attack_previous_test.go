package verify

import "testing"

// TestCaptureOfPreviousReleaseVerifies: testdata/previous-release-*.jsonl
// is a capture written by `gatehouse wrap` at fac1618 (the release before
// line-safe JSON): one tools/call whose string id holds a raw DEL and a raw
// U+2028, so its receipt's rpc_id and the decision event's rpc_id are the
// id token exactly as received. That release's verifier accepts it; this
// one compares both with the token's line-safe form only (\u007f, \u2028)
// and rejects the capture (rpc_id_tool). A capture that verified must go on
// verifying: the exact token, as request-receipts.md §9 names it ("type and
// exact text"), must still be accepted beside its line-safe form.
func TestCaptureOfPreviousReleaseVerifies(t *testing.T) {
	rep, err := Capture("testdata/previous-release-receipts.jsonl", "testdata/previous-release-decisions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if failed := rep.Failed(); len(failed) != 0 {
		for _, name := range failed {
			t.Errorf("check %s failed: %+v", name, rep.Check(name))
		}
	}
}
