package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// shortWriter writes everything to buf, except that the write number
// failAt (1-based) writes only its first cut bytes and fails, as a full
// disk does.
type shortWriter struct {
	buf         bytes.Buffer
	writes      int
	failAt, cut int
}

func (w *shortWriter) Write(b []byte) (int, error) {
	w.writes++
	if w.writes == w.failAt {
		n := min(w.cut, len(b))
		w.buf.Write(b[:n])
		return n, errors.New("no space left on device")
	}
	return w.buf.Write(b)
}

// TestTornLineDoesNotSwallowTheNextEvent: after a write that ended
// part-way through a line, the next event starts a line of its own, so a
// line reader loses only the torn event (a regression: the next complete
// event used to be glued to the torn piece, and an allowed call's decision
// could be found by no strict reader).
func TestTornLineDoesNotSwallowTheNextEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  int
		torn bool
	}{
		{"cut inside the event", 40, true},
		{"nothing written", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(filepath.Join(t.TempDir(), "d.jsonl"), "gatehouse://test/torn")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			w := &shortWriter{failAt: 2, cut: tc.cut}
			l.w = w
			if _, err := l.Emit(TypeToolDecision, ToolDecision{Tool: "first"}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Emit(TypeToolDecision, ToolDecision{Tool: "torn"}); err == nil {
				t.Fatal("the failing write reported no error")
			}
			ev, err := l.Emit(TypeToolDecision, ToolDecision{Tool: "after"})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(w.buf.String(), "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			last := lines[len(lines)-1]
			if last != string(ev.Bytes) {
				t.Fatalf("last line %q, want exactly the event written after the failure %q", last, ev.Bytes)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(last), &v); err != nil {
				t.Fatalf("the event after the failure is not a JSON line of its own: %v", err)
			}
			want := 2
			if tc.torn {
				want = 3 // first, the torn piece, after
			}
			if len(lines) != want {
				t.Fatalf("%d lines %q, want %d", len(lines), lines, want)
			}
		})
	}
}
