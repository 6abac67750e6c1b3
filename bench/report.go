package bench

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// RawRelayName is the name of the raw-relay variant (gatehouse-bench
// rawrelay), the floor the pipeline's targets are stated against.
const RawRelayName = "raw-relay"

// The pipeline issue's targets, against floors measured in the same run:
// the raw relay (the Go floor of any stdio relay) and the disk's
// fdatasync.
const (
	// FloorCPURatio: ledger-off CPU per call at 64 in flight at most this
	// many times the raw relay's.
	FloorCPURatio = 2.0
	// FloorThroughput: ledger-off throughput at least this share of the
	// raw relay's.
	FloorThroughput = 0.70
	// FloorAddedP50, FloorAddedP99: ledger-off added latency at one in
	// flight at most this much above the raw relay's.
	FloorAddedP50 = 15 * time.Microsecond
	FloorAddedP99 = 60 * time.Microsecond
	// EvidenceCPU64: ledger-on CPU per call at 64 in flight at most this
	// much above ledger off.
	EvidenceCPU64 = 25 * time.Microsecond
	// EvidenceAddedP50: ledger-on added p50 at one in flight at most two
	// fdatasync p50s plus this above ledger off.
	EvidenceAddedP50 = 100 * time.Microsecond
	// EvidenceCPU1: ledger-on CPU per call at one in flight at most this.
	EvidenceCPU1 = 150 * time.Microsecond
	// ScanAddedP99: scanning on adds at most this to the p99 of a call
	// with a ScanBytes result, one in flight (the inspection issue).
	ScanAddedP99 = 100 * time.Microsecond
)

// The targets the report checks.
const (
	TargetAddedP50   = 40 * time.Microsecond
	TargetAddedP99   = 200 * time.Microsecond
	TargetRatio      = 0.50
	TargetLongHWM    = 64 << 20
	TargetFrameRatio = 4.0
)

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e3) }

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// Machine describes the machine the run is on, in one line.
func Machine() string {
	goVersion := runtime.Version()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		goVersion = strings.TrimSpace(string(out))
	}
	cpu := "?"
	if out, err := exec.Command("sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").Output(); err == nil && len(out) > 0 {
		cpu = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("nproc %d (%s), GOMAXPROCS %d, %s, %s/%s", runtime.NumCPU(), cpu, runtime.GOMAXPROCS(0), goVersion, runtime.GOOS, runtime.GOARCH)
}

// findLat returns the latency result of the named variant.
func (r *Results) findLat(name string) *LatencyResult {
	for i := range r.Latency {
		if r.Latency[i].Variant.Name == name {
			return &r.Latency[i]
		}
	}
	return nil
}

func (r *Results) findThr(name string) *ThroughputResult {
	for i := range r.Throughput {
		if r.Throughput[i].Variant.Name == name {
			return &r.Throughput[i]
		}
	}
	return nil
}

// addedRounds returns, per interleaved round, the variant's batch median
// minus the direct pipe's batch median, in µs.
func addedRounds(v, direct *LatencyResult) []float64 {
	out := make([]float64, 0, len(v.RoundP50))
	for i := range v.RoundP50 {
		if i < len(direct.RoundP50) {
			out = append(out, float64(v.RoundP50[i]-direct.RoundP50[i])/1e3)
		}
	}
	return out
}

// ratios returns the per-round throughput ratio of v to direct.
func ratios(v, direct *ThroughputResult) []float64 {
	out := make([]float64, 0, len(v.Rates))
	for i := range v.Rates {
		if i < len(direct.Rates) && direct.Rates[i] > 0 {
			out = append(out, v.Rates[i]/direct.Rates[i])
		}
	}
	return out
}

func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf(format+" .. "+format, lo, hi)
}

// quartiles returns the 25th and 75th percentiles of xs (sorted in place).
func quartiles(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	Median(xs) // sorts
	q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	return q(0.25), q(0.75)
}

// LongTrend summarizes the RSS samples of the memory run after the first
// tenth of the calls (warm-up): the least-squares slope in bytes per 100k
// calls, and the mean RSS of the first and the last quarter of those
// samples.
func (l *LongResult) LongTrend() (slope float64, firstQ, lastQ, peak int64) {
	var xs, ys []float64
	var kept []MemSample
	for _, s := range l.Samples {
		peak = max(peak, s.RSS)
		if s.Calls >= int64(l.Calls/10) {
			kept = append(kept, s)
			xs = append(xs, float64(s.Calls))
			ys = append(ys, float64(s.RSS))
		}
	}
	if len(kept) < 4 {
		return 0, 0, 0, peak
	}
	mean := func(ss []MemSample) int64 {
		var t int64
		for _, s := range ss {
			t += s.RSS
		}
		return t / int64(len(ss))
	}
	q := len(kept) / 4
	return Slope(xs, ys) * 100_000, mean(kept[:q]), mean(kept[len(kept)-q:]), peak
}

// Print writes the report: benchmark-format lines (for benchstat) and the
// Markdown tables.
func (r *Results) Print(w io.Writer) {
	direct := r.findLat(Direct.Name)
	tDirect := r.findThr(Direct.Name)

	fmt.Fprintf(w, "\n# gatehouse wrap benchmark\n\n")
	fmt.Fprintf(w, "machine: %s\n", Machine())
	fmt.Fprintf(w, "date: %s, run took %s, load average before %s, after %s\n", r.Started.UTC().Format(time.RFC3339), r.Elapsed.Round(time.Second), r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "server: test/fakeserver --echo-fast; calls: tools/call echo with a %d-byte arguments object\n\n", ArgBytes)

	// Benchmark-format lines: one per measurement, benchstat-compatible.
	fmt.Fprintf(w, "```\n")
	for _, l := range r.Latency {
		fmt.Fprintf(w, "BenchmarkWrap/inflight=1/%s \t%8d\t%10.0f ns/op\t%10.0f p50-ns\t%10.0f p90-ns\t%10.0f p99-ns\t%10.0f cpu-ns/op\n",
			l.Variant.Name, l.Dist.N, float64(l.Dist.Mean), float64(l.Dist.P50), float64(l.Dist.P90), float64(l.Dist.P99), float64(l.CPU.CPU)/float64(max(1, l.Dist.N)))
	}
	for _, t := range r.Throughput {
		fmt.Fprintf(w, "BenchmarkWrap/inflight=%d/%s \t%8d\t%10.0f ns/op\t%10.0f calls/s\t%10.0f cpu-ns/op\n",
			r.Config.Window, t.Variant.Name, t.Calls, 1e9/t.Median, t.Median, float64(t.CPU.CPU)/float64(max(1, t.Calls)))
	}
	for _, l := range r.Long {
		fmt.Fprintf(w, "BenchmarkWrap/calls=%d/%s \t%8d\t%10.0f ns/op\t%10d peak-rss-B\t%10.0f cpu-ns/op\n",
			l.Calls, l.Variant.Name, l.Calls, float64(l.Elapsed)/float64(l.Calls), l.HWM, float64(l.CPU.CPU)/float64(l.Calls))
	}
	for _, f := range r.Frames {
		fmt.Fprintf(w, "BenchmarkWrap/frame=%d/%s \t%8d\t%10.0f ns/op\t%10d peak-rss-B\n",
			f.ReqBytes, f.Variant.Name, len(f.Latencies), float64(Summarize(append([]time.Duration(nil), f.Latencies...)).P50), f.HWMAfter[len(f.HWMAfter)-1])
	}
	fmt.Fprintf(w, "```\n\n")

	// Targets.
	fmt.Fprintf(w, "## Targets\n\n")
	fmt.Fprintf(w, "gateway: `gatehouse wrap --policy readonly-agent.yaml --role readonly_agent --decision-log F --event-source U` with today's defaults (audit ledger on); gw-noledger: the same with `--no-ledger`.\n\n")
	fmt.Fprintf(w, "| measure | variant | result | target | verdict |\n|---|---|---|---|---|\n")
	for _, name := range []string{Gateway.Name, GatewayNoLedger.Name} {
		gw := r.findLat(name)
		if direct == nil || gw == nil {
			continue
		}
		a50 := gw.Dist.P50 - direct.Dist.P50
		fmt.Fprintf(w, "| added latency p50, 1 in flight | %s | %s µs | <= %s µs | %s |\n", name, us(a50), us(TargetAddedP50), verdict(a50 <= TargetAddedP50))
	}
	for _, name := range []string{Gateway.Name, GatewayNoLedger.Name} {
		gw := r.findLat(name)
		if direct == nil || gw == nil {
			continue
		}
		a99 := gw.Dist.P99 - direct.Dist.P99
		fmt.Fprintf(w, "| added latency p99, 1 in flight | %s | %s µs | <= %s µs | %s |\n", name, us(a99), us(TargetAddedP99), verdict(a99 <= TargetAddedP99))
	}
	for _, name := range []string{Gateway.Name, GatewayNoLedger.Name} {
		tGw := r.findThr(name)
		if tDirect == nil || tGw == nil {
			continue
		}
		rs := ratios(tGw, tDirect)
		ratio := Median(append([]float64(nil), rs...))
		fmt.Fprintf(w, "| throughput vs direct, %d in flight | %s | %.1f%% (rounds %s) | >= %.0f%% | %s |\n",
			r.Config.Window, name, 100*ratio, spread(scale(rs, 100), "%.1f%%"), 100*TargetRatio, verdict(ratio >= TargetRatio))
	}
	for _, l := range r.Long {
		fmt.Fprintf(w, "| peak RSS (VmHWM) over %d calls | %s | %s MiB | <= %s MiB | %s |\n", l.Calls, l.Variant.Name, mib(l.HWM), mib(TargetLongHWM), verdict(l.HWM <= TargetLongHWM))
	}
	for _, l := range r.Long {
		slope, _, _, _ := l.LongTrend()
		growth := slope * 0.9 * float64(l.Calls) / 100_000 // fitted, over the calls after warm-up
		fmt.Fprintf(w, "| VmRSS trend after the first 10%% of %d calls (fitted growth) | %s | %+.2f MiB | no upward trend (< 2 MiB) | %s |\n", l.Calls, l.Variant.Name, growth/(1<<20), verdict(growth < 2<<20))
	}
	for _, f := range r.Frames {
		if !f.Variant.Gateway {
			continue
		}
		peak := f.HWMAfter[len(f.HWMAfter)-1]
		x := float64(peak) / float64(f.ReqBytes)
		fmt.Fprintf(w, "| peak RSS, one %s MiB frame | %s | %s MiB = %.2fx frame | <= %.0fx frame | %s |\n",
			mib(int64(f.ReqBytes)), f.Variant.Name, mib(peak), x, TargetFrameRatio, verdict(x <= TargetFrameRatio))
	}

	r.printFloorTargets(w)
	r.printScan(w)

	// Latency.
	fmt.Fprintf(w, "\n## One call in flight (%d calls per variant, interleaved batches of %d; slow variants 1/Div of both)\n\n", r.Config.LatencyCalls, r.Config.Batch)
	fmt.Fprintf(w, "| variant | calls | p50 µs | p90 µs | p99 µs | p99.9 µs | mean µs | added p50 µs | added p99 µs | added p50 per batch, IQR µs | CPU µs/call | run-queue wait µs/call |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.Latency {
		add50, add99, iqr := "-", "-", "-"
		if direct != nil && l.Variant.Gateway {
			add50, add99 = us(l.Dist.P50-direct.Dist.P50), us(l.Dist.P99-direct.Dist.P99)
			lo, hi := quartiles(addedRounds(&l, direct))
			iqr = fmt.Sprintf("%.1f .. %.1f", lo, hi)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Variant.Name, l.Dist.N,
			us(l.Dist.P50), us(l.Dist.P90), us(l.Dist.P99), us(l.Dist.P999), us(l.Dist.Mean), add50, add99, iqr,
			perCall(l.CPU.CPU, l.Dist.N), perCall(l.CPU.RunQueue, l.Dist.N))
	}

	// Throughput.
	fmt.Fprintf(w, "\n## %d calls in flight (%d rounds of %d calls per variant, order rotated; slow variants 1/Div)\n\n", r.Config.Window, r.Config.ThroughputRounds, r.Config.ThroughputCalls)
	fmt.Fprintf(w, "| variant | calls | calls/s (median) | rounds calls/s | vs direct (median of rounds) | CPU µs/call | run-queue wait µs/call |\n|---|---|---|---|---|---|---|\n")
	for _, t := range r.Throughput {
		rel := "-"
		if tDirect != nil && t.Variant.Gateway {
			rel = fmt.Sprintf("%.0f%%", 100*Median(ratios(&t, tDirect)))
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %s | %s | %s |\n", t.Variant.Name, t.Calls, t.Median, spread(t.Rates, "%.0f"), rel,
			perCall(t.CPU.CPU, t.Calls), perCall(t.CPU.RunQueue, t.Calls))
	}

	// Features.
	if direct != nil && tDirect != nil {
		fmt.Fprintf(w, "\n## Features on vs off\n\n")
		fmt.Fprintf(w, "| variant | what | added p50 µs | added p99 µs | throughput vs direct | gatehouse CPU µs/call, 1 / %d in flight |\n|---|---|---|---|---|---|\n", r.Config.Window)
		for _, l := range r.Latency {
			if !l.Variant.Gateway {
				continue
			}
			t := r.findThr(l.Variant.Name)
			rel, cpu := "-", perCall(l.CPU.CPU, l.Dist.N)
			if t != nil {
				rel = fmt.Sprintf("%.0f%%", 100*Median(ratios(t, tDirect)))
				cpu += " / " + perCall(t.CPU.CPU, t.Calls)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", l.Variant.Name, strings.TrimPrefix(l.Variant.Describe(), "client <-> "),
				us(l.Dist.P50-direct.Dist.P50), us(l.Dist.P99-direct.Dist.P99), rel, cpu)
		}
	}

	// Memory runs.
	for i := range r.Long {
		l := &r.Long[i]
		slope, fq, lq, peak := l.LongTrend()
		fmt.Fprintf(w, "\n## Memory over %d calls through %s (%d in flight)\n\n", l.Calls, l.Variant.Name, r.Config.Window)
		fmt.Fprintf(w, "%.0f calls/s over %s, gatehouse CPU %s µs per call; decision log grew to %s MiB. VmRSS after the handshake %s MiB; ", float64(l.Calls)/l.Elapsed.Seconds(), l.Elapsed.Round(time.Second), perCall(l.CPU.CPU, l.Calls), mib(l.LogBytes), mib(l.Start.RSS))
		fmt.Fprintf(w, "peak sampled VmRSS %s MiB; VmHWM %s MiB. After the first 10%% of calls: mean VmRSS of the first quarter of samples %s MiB, of the last quarter %s MiB, slope %+.3f MiB per 100k calls (%d samples every %s).\n\n",
			mib(peak), mib(l.HWM), mib(fq), mib(lq), slope/(1<<20), len(l.Samples), r.Config.SampleEvery)
		fmt.Fprintf(w, "| calls done | VmRSS MiB |\n|---|---|\n")
		for _, s := range decimate(l.Samples, 11) {
			fmt.Fprintf(w, "| %d | %s |\n", s.Calls, mib(s.RSS))
		}
	}

	// Huge frame.
	if len(r.Frames) > 0 {
		fmt.Fprintf(w, "\n## One huge frame\n\n")
		fmt.Fprintf(w, "| variant | request frame MiB | response frame MiB | RSS before MiB | VmHWM after each call MiB | peak / request frame | round trip ms |\n|---|---|---|---|---|---|---|\n")
		for _, f := range r.Frames {
			var hwm, lat []string
			for i := range f.HWMAfter {
				hwm = append(hwm, mib(f.HWMAfter[i]))
				lat = append(lat, fmt.Sprintf("%.0f", float64(f.Latencies[i])/1e6))
			}
			name := f.Variant.Name
			if !f.Variant.Gateway {
				name += " (fakeserver's RSS)"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2fx | %s |\n", name, mib(int64(f.ReqBytes)), mib(int64(f.RespBytes)),
				mib(f.Before.RSS), strings.Join(hwm, ", "), float64(f.HWMAfter[len(f.HWMAfter)-1])/float64(f.ReqBytes), strings.Join(lat, ", "))
		}
	}
	fmt.Fprintln(w)
}

// printFloorTargets prints the pipeline issue's targets, each against the
// floor measured in this run: the raw relay for the ledger-off gateway,
// the ledger-off gateway and the disk's fdatasync for the ledger on. A
// target whose inputs were not measured is left out.
func (r *Results) printFloorTargets(w io.Writer) {
	raw, off, on := r.findLat(RawRelayName), r.findLat(GatewayNoLedger.Name), r.findLat(Gateway.Name)
	tRaw, tOff, tOn := r.findThr(RawRelayName), r.findThr(GatewayNoLedger.Name), r.findThr(Gateway.Name)
	direct := r.findLat(Direct.Name)
	cpu := func(t *ThroughputResult) time.Duration { return t.CPU.CPU / time.Duration(max(1, t.Calls)) }
	cpu1 := func(l *LatencyResult) time.Duration { return l.CPU.CPU / time.Duration(max(1, l.Dist.N)) }
	fmt.Fprintf(w, "\n## Targets against the floors of this run\n\n")
	if r.Fsync != nil {
		fmt.Fprintf(w, "fdatasync of a 4 KiB append in %s: p50 %s µs, p99 %s µs (%d syncs).\n\n", r.Fsync.Dir, us(r.Fsync.Dist.P50), us(r.Fsync.Dist.P99), r.Fsync.Dist.N)
	}
	fmt.Fprintf(w, "| measure | result | floor in this run | target | verdict |\n|---|---|---|---|---|\n")
	if tRaw != nil && tOff != nil {
		x := float64(cpu(tOff)) / float64(max(1, cpu(tRaw)))
		fmt.Fprintf(w, "| ledger off: CPU per call, %d in flight | %s µs = %.2fx raw relay | raw relay %s µs | <= %.0fx | %s |\n",
			r.Config.Window, us(cpu(tOff)), x, us(cpu(tRaw)), FloorCPURatio, verdict(x <= FloorCPURatio))
		rs := ratios(tOff, tRaw)
		ratio := Median(append([]float64(nil), rs...))
		fmt.Fprintf(w, "| ledger off: throughput, %d in flight | %.0f calls/s = %.0f%% of raw relay (rounds %s) | raw relay %.0f calls/s | >= %.0f%% | %s |\n",
			r.Config.Window, tOff.Median, 100*ratio, spread(scale(rs, 100), "%.0f%%"), tRaw.Median, 100*FloorThroughput, verdict(ratio >= FloorThroughput))
	}
	if raw != nil && off != nil && direct != nil {
		d50 := (off.Dist.P50 - direct.Dist.P50) - (raw.Dist.P50 - direct.Dist.P50)
		d99 := (off.Dist.P99 - direct.Dist.P99) - (raw.Dist.P99 - direct.Dist.P99)
		fmt.Fprintf(w, "| ledger off: added p50, 1 in flight, above raw relay's | %s µs | raw relay adds %s µs | <= %s µs | %s |\n",
			us(d50), us(raw.Dist.P50-direct.Dist.P50), us(FloorAddedP50), verdict(d50 <= FloorAddedP50))
		fmt.Fprintf(w, "| ledger off: added p99, 1 in flight, above raw relay's | %s µs | raw relay adds %s µs | <= %s µs | %s |\n",
			us(d99), us(raw.Dist.P99-direct.Dist.P99), us(FloorAddedP99), verdict(d99 <= FloorAddedP99))
	}
	if tOn != nil && tOff != nil {
		d := cpu(tOn) - cpu(tOff)
		fmt.Fprintf(w, "| ledger on: evidence CPU per call, %d in flight (above ledger off) | %s µs | ledger off %s µs | <= %s µs | %s |\n",
			r.Config.Window, us(d), us(cpu(tOff)), us(EvidenceCPU64), verdict(d <= EvidenceCPU64))
	}
	if on != nil && off != nil {
		d := on.Dist.P50 - off.Dist.P50
		if r.Fsync != nil {
			limit := 2*r.Fsync.Dist.P50 + EvidenceAddedP50
			fmt.Fprintf(w, "| ledger on: added p50, 1 in flight, above ledger off | %s µs | 2 fdatasync p50 = %s µs | <= %s µs | %s |\n",
				us(d), us(2*r.Fsync.Dist.P50), us(limit), verdict(d <= limit))
		}
		fmt.Fprintf(w, "| ledger on: CPU per call, 1 in flight | %s µs | ledger off %s µs | <= %s µs | %s |\n",
			us(cpu1(on)), us(cpu1(off)), us(EvidenceCPU1), verdict(cpu1(on) <= EvidenceCPU1))
	}
}

// perCall formats d/n in µs.
func perCall(d time.Duration, n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(d)/1e3/float64(n))
}

func scale(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * k
	}
	return out
}

// decimate returns about n samples spread evenly over ss, first and last
// included.
func decimate(ss []MemSample, n int) []MemSample {
	if len(ss) <= n {
		return ss
	}
	out := make([]MemSample, 0, n)
	for i := range n {
		out = append(out, ss[i*(len(ss)-1)/(n-1)])
	}
	return out
}

// printScan writes the scanning on/off comparison (phase "scan").
func (r *Results) printScan(w io.Writer) {
	if len(r.Scan) < 3 {
		return
	}
	d, on, off := &r.Scan[0], &r.Scan[1], &r.Scan[2]
	fmt.Fprintf(w, "\n## Scanning on and off (a %d-byte result of benign text, small arguments; one in flight, interleaved)\n\n", ScanBytes)
	fmt.Fprintf(w, "| variant | calls | p50 µs | p99 µs | added p50 µs | added p99 µs | CPU µs/call |\n|---|---|---|---|---|---|---|\n")
	for _, l := range r.Scan {
		add50, add99 := "-", "-"
		if l.Variant.Gateway {
			add50, add99 = us(l.Dist.P50-d.Dist.P50), us(l.Dist.P99-d.Dist.P99)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", l.Variant.Name, l.Dist.N, us(l.Dist.P50), us(l.Dist.P99), add50, add99, perCall(l.CPU.CPU, l.Dist.N))
	}
	a99 := on.Dist.P99 - off.Dist.P99
	cpu := float64(on.CPU.CPU)/float64(max(1, on.Dist.N)) - float64(off.CPU.CPU)/float64(max(1, off.Dist.N))
	fmt.Fprintf(w, "\nScanning adds %s µs at p50 and %s µs at p99 (target <= %s µs: %s) and %.1f µs of CPU per call.\n",
		us(on.Dist.P50-off.Dist.P50), us(a99), us(ScanAddedP99), verdict(a99 <= ScanAddedP99), cpu/1e3)
}
