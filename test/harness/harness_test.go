package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSetupBuildsAndIsolatesState(t *testing.T) {
	old := os.Getenv("XDG_STATE_HOME")
	t.Cleanup(func() { os.Setenv("XDG_STATE_HOME", old) })
	dir, cleanup, err := Setup("harness-test-", Build{Out: "fake", Pkg: "github.com/gatehouse-mcp/gatehouse/test/fakeserver"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "fake")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("no executable built: %v", err)
	}
	if got := os.Getenv("XDG_STATE_HOME"); got != filepath.Join(dir, "state") {
		t.Fatalf("XDG_STATE_HOME = %q", got)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cleanup left %s", dir)
	}
	if _, _, err := Setup("harness-test-", Build{Out: "x", Pkg: "github.com/gatehouse-mcp/gatehouse/no/such/package"}); err == nil {
		t.Fatal("a failed build was not reported")
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	done := make(chan bool)
	for range 4 {
		go func() {
			for range 100 {
				b.Write([]byte("x"))
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	if len(b.String()) != 400 {
		t.Fatalf("got %d bytes, want 400", len(b.String()))
	}
}

// TestDriverKeepsEveryLine: a process that writes and exits at once
// loses no line (Wait runs only after stdout is drained), and Done closes.
func TestDriverKeepsEveryLine(t *testing.T) {
	for round := range 20 {
		d := Start(t, Options{Argv: []string{"/bin/sh", "-c", `i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done; printf tail`}, LineBuffer: 8192})
		d.CloseStdin()
		<-d.Done
		n, last := 0, ""
		for l := range d.Lines {
			n++
			last = string(l)
		}
		if n != 3001 || last != "tail" {
			t.Fatalf("round %d: %d lines, last %q; want 3001 ending with the unterminated \"tail\"", round, n, last)
		}
		if got := d.Wait(time.Second); got != 0 {
			t.Fatalf("round %d: exit code %d", round, got)
		}
	}
}
