package verify

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/receipts"
)

// TestLargeDecisionLogBoundedMemory verifies a capture whose decision log
// holds 64 MiB of other events: it must be accepted with the heap staying
// far below the file size.
func TestLargeDecisionLogBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	const total = 64 << 20
	filler := func(i int) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":"filler-%d","source":"gatehouse://local/test","type":"gatehouse.frame.rejected.v1","time":"2026-01-01T00:00:00Z","datacontenttype":"application/json","data":{"direction":"client","reason":"%s","bytes":1}}`+"\n", i, strings.Repeat("x", 900))
	}
	per := len(filler(0))
	b := build(t, goodCalls, receipts.Limits{}, func(i int, logPath string) {
		if i != 2 {
			return
		}
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for n := 0; n*per < total; n++ {
			w.WriteString(filler(n))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
	st, _ := os.Stat(b.dlog)
	if st.Size() < total {
		t.Fatalf("log is only %d bytes", st.Size())
	}

	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	rep, err := Capture(b.receipts, b.dlog)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("rejected: %v", rep.Failed())
	}
	const limit = 32 << 20
	t.Logf("verified %d MiB, %d lines in %v; peak HeapInuse %.1f MiB", st.Size()>>20, rep.Events, time.Since(start), float64(peak.Load())/(1<<20))
	if peak.Load() > limit {
		t.Fatalf("peak HeapInuse %d bytes exceeds %d", peak.Load(), limit)
	}
}

// TestLongDecisionLogLineNotHeld checks that a line over the cap is
// reported and skipped rather than held in memory.
func TestLongDecisionLogLineNotHeld(t *testing.T) {
	b := build(t, goodCalls[:1], receipts.Limits{}, func(i int, logPath string) {
		f, _ := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		defer f.Close()
		w := bufio.NewWriter(f)
		w.WriteString(`{"id":"big","type":"x","data":"`)
		for n := 0; n < (MaxEventLineBytes/4096)+1; n++ {
			w.WriteString(strings.Repeat("y", 4096))
		}
		w.WriteString("\"}\n")
		w.Flush()
	})
	rep, err := Capture(b.receipts, b.dlog)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Check(CheckLinesComplete)
	if c.OK || !strings.Contains(strings.Join(c.Failures, "\n"), "decision log line 3: longer than") {
		t.Fatalf("%v", c.Failures)
	}
	if failed := rep.Failed(); len(failed) != 1 {
		t.Fatalf("failed %v", failed)
	}
}

func TestOversizedReceiptsFile(t *testing.T) {
	b := build(t, goodCalls[:1], receipts.Limits{}, nil)
	f, _ := os.OpenFile(b.receipts, os.O_WRONLY|os.O_APPEND, 0)
	w := bufio.NewWriter(f)
	for n := 0; n <= MaxReceiptsBytes/1024; n++ {
		w.WriteString(`{"pad":"` + strings.Repeat("z", 1014) + "\"}\n")
	}
	w.Flush()
	f.Close()
	rep, err := Capture(b.receipts, b.dlog)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Check(CheckLinesComplete); c.OK || !strings.Contains(strings.Join(c.Failures, "\n"), "exceeds") {
		t.Fatalf("%v", c.Failures)
	}
}
