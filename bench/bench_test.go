package bench

import (
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupBinaries()
	os.Exit(code)
}

// startB starts v for a benchmark and closes it at the end.
func startB(b *testing.B, v Variant) *Proc {
	b.Helper()
	p, err := Start(v)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// reportProcCPU reports the CPU time per op of the process the client
// talks to (gatehouse, or fakeserver for the direct pipe) since c0, with
// /proc's 10 ms resolution.
func reportProcCPU(b *testing.B, p *Proc, c0 CPUStat) {
	c1, err := ReadCPU(p.Pid)
	if err == nil {
		b.ReportMetric(float64(c1.CPU-c0.CPU)/float64(b.N), "proc-cpu-ns/op")
	}
}

// BenchmarkRoundTrip is one tools/call (1 KiB arguments) at a time through a
// real process: the direct pipe to test/fakeserver --echo-fast, and
// `gatehouse wrap` in front of it with each feature combination. Besides
// ns/op (the mean) it reports the p50, p90 and p99 round trip. The variants
// run one after the other; gatehouse-bench interleaves them instead, which
// is what the added-latency figures in docs/benchmarks.md come from.
func BenchmarkRoundTrip(b *testing.B) {
	for _, v := range Features {
		b.Run(v.Name, func(b *testing.B) {
			p := startB(b, v)
			for range 1000 {
				if _, err := p.Call(); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			c0, _ := ReadCPU(p.Pid)
			for range b.N {
				d, err := p.Call()
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, d)
			}
			b.StopTimer()
			reportProcCPU(b, p, c0)
			s := Summarize(lat)
			b.ReportMetric(float64(s.P50), "p50-ns")
			b.ReportMetric(float64(s.P90), "p90-ns")
			b.ReportMetric(float64(s.P99), "p99-ns")
		})
	}
}

// BenchmarkInFlight64 keeps 64 tools/calls in flight through a real process
// and reports calls/s.
func BenchmarkInFlight64(b *testing.B) {
	for _, v := range Features {
		b.Run(v.Name, func(b *testing.B) {
			p := startB(b, v)
			if _, err := p.Pipelined(2000, 64); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			c0, _ := ReadCPU(p.Pid)
			d, err := p.Pipelined(b.N, 64)
			if err != nil {
				b.Fatal(err)
			}
			reportProcCPU(b, p, c0)
			b.ReportMetric(float64(b.N)/d.Seconds(), "calls/s")
		})
	}
}

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	d := Summarize(s)
	if d.N != 100 || d.Min != 1 || d.Max != 100 || d.P50 != 50 || d.P90 != 90 || d.P99 != 99 || d.P999 != 100 {
		t.Errorf("Summarize(1..100) = %+v", d)
	}
	if got := Percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("Percentile of one sample = %v", got)
	}
	if got := Median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("Median = %v, want 2.5", got)
	}
	if got := Slope([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}); got != 2 {
		t.Errorf("Slope = %v, want 2", got)
	}
}

func TestArgs(t *testing.T) {
	for _, n := range []int{11, 12, 1024, 4096} {
		a := Args(n)
		if len(a) != n || a[0] != '{' || a[n-1] != '}' {
			t.Errorf("Args(%d) = %d bytes %.20q", n, len(a), a)
		}
	}
}

func TestResponseID(t *testing.T) {
	id, err := responseID([]byte(`{"jsonrpc":"2.0","id":42,"result":{}}` + "\n"))
	if err != nil || id != 42 {
		t.Errorf("responseID = %d, %v", id, err)
	}
	if _, err := responseID([]byte(`{"jsonrpc":"2.0","id":42,"error":{"code":1,"message":"x"}}`)); err == nil {
		t.Error("an error response was accepted")
	}
}
