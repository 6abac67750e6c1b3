package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures one tools/call round trip (request written,
// response read) against the fake server's --echo-fast path, directly and
// through gatehouse wrap, side by side in one run so that their ratio
// means something on a shared machine. It reports p50 and p99 latencies as
// extra metrics. Compare runs with benchstat.
func BenchmarkRoundTrip(b *testing.B) {
	sizes := []int{64, 4 << 10, 256 << 10}
	paths := []struct {
		name string
		argv func() []string
	}{
		{"direct", func() []string { return []string{fakeServerBin, "--echo-fast"} }},
		{"gatehouse", func() []string { return []string{gatehouseBin, "wrap", "--", fakeServerBin, "--echo-fast"} }},
		{"gatehouse-policy", func() []string {
			return []string{gatehouseBin, "wrap", "--policy", examplePolicy(b, "readonly-agent.yaml"), "--role", "readonly_agent", "--", fakeServerBin, "--echo-fast"}
		}},
	}
	for _, size := range sizes {
		for _, path := range paths {
			b.Run(fmt.Sprintf("args=%d/%s", size, path.name), func(b *testing.B) {
				benchRoundTrip(b, path.argv(), size)
			})
		}
	}
}

func benchRoundTrip(b *testing.B, argv []string, size int) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	r := bufio.NewReaderSize(stdout, 1<<20)
	roundTrip := func(line []byte) []byte {
		if _, err := stdin.Write(line); err != nil {
			b.Fatalf("write: %v\n%s", err, stderr)
		}
		resp, err := r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			var more []byte
			more, err = r.ReadSlice('\n')
			resp = append(slices.Clone(resp), more...)
		}
		if err != nil {
			b.Fatalf("read: %v\n%s", err, stderr)
		}
		return resp
	}
	roundTrip([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"))
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	roundTrip([]byte(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}` + "\n"))

	payload := strings.Repeat("a", size)
	prefix := `{"jsonrpc":"2.0","id":`
	suffix := `,"method":"tools/call","params":{"name":"echo","arguments":{"s":"` + payload + `"}}}` + "\n"
	line := make([]byte, 0, len(prefix)+20+len(suffix))
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(suffix)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		line = append(line[:0], prefix...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, suffix...)
		start := time.Now()
		resp := roundTrip(line)
		lat = append(lat, time.Since(start))
		if i == 0 && !strings.Contains(string(resp), `"result"`) {
			b.Fatalf("unexpected response: %.200s", resp)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
