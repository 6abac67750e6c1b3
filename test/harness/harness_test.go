package harness

import (
	"os"
	"path/filepath"
	"testing"
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
