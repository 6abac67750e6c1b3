package ledger_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/backends"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"golang.org/x/mod/sumdb/note"
)

// Fixed test keys (the same as the internal tests').
const (
	testSignerKey   = "PRIVATE+KEY+gatehouse-test+090a88b5+AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
	testVerifierKey = "gatehouse-test+090a88b5+AYqI4910CfGV/VLbLTy6XXLKZwm/HZQSG/N0iAG0D29c"
)

// helperEnv names the ledger file a re-executed test binary appends to
// until it is killed (see appendForever).
const helperEnv = "GATEHOUSE_LEDGER_TEST_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		appendForever(path)
		return
	}
	os.Exit(m.Run())
}

// appendForever is the helper process: 8 goroutines append to the SQLite
// ledger at path (checkpoints every 25 entries and every 20 ms) and print
// "seq record_id" on stdout for every acknowledged append, after Append
// returned. It never returns; the test kills it with SIGKILL.
func appendForever(path string) {
	ctx := context.Background()
	signer, err := note.NewSigner(testSignerKey)
	if err != nil {
		panic(err)
	}
	l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "sigkill", Signer: signer, CheckpointEveryN: 25, CheckpointEvery: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	var mu sync.Mutex
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("p%d-w%d-%d", os.Getpid(), w, i)
				p := fmt.Appendf(nil, `{"action":"allow","i":%d,"tool_name":"t%d"}`, i, w)
				e, err := l.Append(ctx, ledger.KindAuditEvent, id, p)
				if err != nil {
					fmt.Fprintln(os.Stderr, "helper: append:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%d %s\n", e.Seq, id)
				mu.Unlock()
			}
		}()
	}
	select {}
}

// A process appending under load is killed with SIGKILL at random moments,
// five times. Every time the ledger verifies (chain, tree, checkpoints) and
// holds every entry the process acknowledged, exactly as acknowledged; after
// the last kill, appends continue in a new process.
func TestSIGKILLDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	verifiers := note.VerifierList(v)
	path := filepath.Join(t.TempDir(), "ledger.db")
	acked := map[int64]string{}
	for round := range 5 {
		got := runAndKill(t, exe, path, 20+rand.IntN(200))
		for seq, id := range got {
			acked[seq] = id
		}
		s, err := sqlite.Open(context.Background(), path, true)
		if err != nil {
			t.Fatalf("round %d: opening after SIGKILL: %v", round, err)
		}
		rep, err := ledger.Verify(context.Background(), s, ledger.VerifyOptions{Verifiers: verifiers})
		if err != nil || rep.Problem != nil {
			t.Fatalf("round %d: after SIGKILL: %+v, %v", round, rep.Problem, err)
		}
		stored := map[int64]string{}
		err = s.Leaves(context.Background(), 0, rep.Size, func(seq int64, leaf []byte) error {
			e, err := ledger.ParseLeaf(leaf)
			stored[seq] = e.RecordID
			return err
		})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		for seq, id := range acked {
			if stored[seq] != id {
				t.Fatalf("round %d: acknowledged entry %d (%s) is stored as %q: acknowledged before durable", round, seq, id, stored[seq])
			}
		}
		t.Logf("round %d: killed after %d acks; ledger of %d entries verifies, %d checkpoints, latest size %d",
			round, len(got), rep.Size, rep.Checkpoints, latestSize(rep))
	}
	// Appends continue after reopen, and Close signs everything.
	ctx := context.Background()
	signer, _ := note.NewSigner(testSignerKey)
	l, err := backends.Open(ctx, path, ledger.Options{LedgerID: "sigkill", Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := l.Store().Size(ctx)
	e, err := l.Append(ctx, ledger.KindSession, "after-kills", []byte(`{"ok":true}`))
	if err != nil || e.Seq != s0 {
		t.Fatalf("append after the kills: seq %d, %v; want %d", e.Seq, err, s0)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := ledger.Verify(ctx, s, ledger.VerifyOptions{Verifiers: verifiers})
	if err != nil || rep.Problem != nil || latestSize(rep) != s0+1 {
		t.Fatalf("final: %+v, %v", rep, err)
	}
}

func latestSize(r *ledger.Report) int64 {
	if r.Latest == nil {
		return 0
	}
	return r.Latest.Size
}

// runAndKill starts the helper on path, waits until it has acknowledged at
// least minAcks appends plus a random 0-30 ms, kills it with SIGKILL, and
// returns the acknowledgements it printed (complete lines only).
func runAndKill(t *testing.T, exe, path string, minAcks int) map[int64]string {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := map[int64]string{}
	var mu sync.Mutex
	enough := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		signalled := false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if err != io.EOF {
					t.Errorf("reading the helper: %v", err)
				}
				return // a final fragment without '\n' is not counted
			}
			seqText, id, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			if !ok {
				continue // "ready"
			}
			seq, err := strconv.ParseInt(seqText, 10, 64)
			if err != nil {
				t.Errorf("helper printed %q", line)
				continue
			}
			mu.Lock()
			acks[seq] = id
			n := len(acks)
			mu.Unlock()
			if n >= minAcks && !signalled {
				signalled = true
				close(enough)
			}
		}
	}()
	select {
	case <-enough:
	case <-done:
		cmd.Wait()
		t.Fatalf("helper exited early: %s", stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("helper made no progress: %s", stderr.String())
	}
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die of SIGKILL: %v; stderr: %s", err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return acks
}
