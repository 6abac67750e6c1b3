package scan

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the calling thread's user plus system CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestScanCPUTime reports scan throughput in CPU time rather than wall
// time (benchmarks on a shared, loaded machine measure waiting too). It
// runs only when GATEHOUSE_SCAN_CPUTIME is set (Linux):
//
//	GATEHOUSE_SCAN_CPUTIME=1 go test -run TestScanCPUTime -v ./internal/scan
func TestScanCPUTime(t *testing.T) {
	if os.Getenv("GATEHOUSE_SCAN_CPUTIME") == "" {
		t.Skip("set GATEHOUSE_SCAN_CPUTIME=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	benign := benign64KiB(t)
	rep := func(unit string) string { return strings.Repeat(unit, (64<<10)/len(unit)+1)[:64<<10] }
	for _, c := range []struct {
		name string
		opts Options
		text string
	}{
		{"benign, every family", Options{}, benign},
		{"benign 4 KiB, every family", Options{}, benign4KiB(t)},
		{"bench.BenignText 4 KiB, every family", Options{}, string(benchBenignText(4096))},
		{"benign, secrets", Options{NoPII: true, NoInjection: true}, benign},
		{"benign, pii", Options{NoSecrets: true, NoInjection: true}, benign},
		{"benign, injection", Options{NoSecrets: true, NoPII: true}, benign},
		{"adversarial generic assignments", Options{}, rep("api_key = 'q8Zr2Lm0Xv7Tn4Wp' ")},
		{"adversarial vault-like tokens", Options{}, rep("s.abcdefghijklmnopqrstuvwx ")},
		{"adversarial JWTs", Options{}, rep("eyJhbGciOiJIUzI1NiJ9.eyJhIjoxfQ.c2lnbmF0dXJlc2lnbmF0dXJl ")},
		{"adversarial BEGIN lines", Options{}, rep("-----BEGIN RSA PRIVATE KEY-----\n")},
		{"adversarial keywords", Options{}, rep("key token secret api auth ")},
	} {
		s, err := New(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		best := time.Duration(1 << 62)
		for r := 0; r < 3; r++ {
			n := 0
			c0 := threadCPU()
			for threadCPU()-c0 < 200*time.Millisecond || n == 0 {
				s.Scan(Input{Text: c.text}, func(Finding) {})
				n++
			}
			if d := (threadCPU() - c0) / time.Duration(n); d < best {
				best = d
			}
		}
		t.Logf("%-34s %10v/op %8.0f MB/s", c.name, best, float64(len(c.text))/best.Seconds()/1e6)
	}
}

// TestScanLinear: texts built so that each keyword hit would re-read
// what follows it (a bearer token of dotted "bearer" words, nothing but
// "@", URL-like runs) are scanned in time linear in their length: the
// 64 KiB text costs at most 40 times the 4 KiB one per byte (generous:
// the machine is shared; a quadratic scan is 16 times worse per byte).
func TestScanLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	for _, unit := range []string{".bearer", "@a.", "://a", "Basic QUFB", "eyJhbGciOiJub25lIn0.", "-----BEGIN A PRIVATE KEY-----", "ghp_", "s.", "key=", "4111-", "DE89 "} {
		per := func(n int) float64 {
			text := "Bearer x" + strings.Repeat(unit, n/len(unit))
			best := time.Duration(1 << 62)
			for r := 0; r < 3; r++ {
				t0 := time.Now()
				testScanner.Scan(Input{Text: text}, func(Finding) {})
				best = min(best, time.Since(t0))
			}
			return float64(best) / float64(len(text))
		}
		small, large := per(4<<10), per(64<<10)
		t.Logf("%q: %.1f ns/byte at 4 KiB, %.1f at 64 KiB", unit, small, large)
		if large > 40*small && large > 200 { // 200 ns/byte: far below any real concern
			t.Errorf("%q: %.1f ns/byte at 64 KiB, %.1f at 4 KiB", unit, large, small)
		}
	}
}
