package bench

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config sizes a full run. The zero value of a field means its default.
type Config struct {
	// LatencyCalls is the number of measured one-in-flight calls per
	// variant (default 30000), made in interleaved batches of Batch
	// (default 250) after Warmup calls (default 2000).
	LatencyCalls, Batch, Warmup int
	// ThroughputCalls is the number of calls per variant per round
	// (default 20000) of the in-flight test; ThroughputRounds rounds
	// (default 5) alternate the variants; Window calls are kept in flight
	// (default 64).
	ThroughputCalls, ThroughputRounds, Window int
	// LongCalls is the length of the memory run through each of
	// LongVariants (default Gateway and GatewayNoLedger; calls: env
	// GATEHOUSE_BENCH_CALLS, else 1,000,000).
	LongCalls    int
	LongVariants []Variant
	// FrameVariants are the variants of the huge-frame test (default
	// Direct, Gateway, GatewayNoLedger, GatewayNoScan).
	FrameVariants []Variant
	// SampleEvery is the VmRSS sampling period (default 250ms).
	SampleEvery time.Duration
	// FrameBytes is the size of the arguments object of the huge-frame
	// test (default 16 MiB); FrameRepeats calls are made (default 3).
	FrameBytes, FrameRepeats int
	// Variants are compared in the latency and throughput tests (default
	// Features); the first must be the direct pipe and the second the
	// gateway configuration the targets apply to.
	Variants []Variant
	// Phases selects what RunAll measures: any of "fsync", "latency",
	// "throughput", "memory", "frame", "scan"; empty means all.
	Phases []string
	// Progress, when set, receives one line per phase.
	Progress func(format string, args ...any)
}

func (c *Config) runs(phase string) bool {
	if len(c.Phases) == 0 {
		return true
	}
	for _, p := range c.Phases {
		if p == phase {
			return true
		}
	}
	return false
}

func (c *Config) defaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.LatencyCalls, 30000)
	def(&c.Batch, 250)
	def(&c.Warmup, 2000)
	def(&c.ThroughputCalls, 20000)
	def(&c.ThroughputRounds, 5)
	def(&c.Window, 64)
	if c.LongCalls <= 0 {
		c.LongCalls = CallsFromEnv(1_000_000)
	}
	if len(c.LongVariants) == 0 {
		c.LongVariants = []Variant{Gateway, GatewayNoLedger}
	}
	if len(c.FrameVariants) == 0 {
		c.FrameVariants = []Variant{Direct, Gateway, GatewayNoLedger, GatewayNoScan}
	}
	def(&c.FrameBytes, 16<<20)
	def(&c.FrameRepeats, 3)
	if c.SampleEvery <= 0 {
		c.SampleEvery = 250 * time.Millisecond
	}
	if len(c.Variants) == 0 {
		c.Variants = Features
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// CallsFromEnv returns GATEHOUSE_BENCH_CALLS when it is a positive integer
// (underscores allowed: 1_000_000), else def.
func CallsFromEnv(def int) int {
	if s := os.Getenv("GATEHOUSE_BENCH_CALLS"); s != "" {
		if n, err := strconv.ParseInt(s, 0, 64); err == nil && n > 0 {
			return int(n)
		}
	}
	return def
}

// LatencyResult is the one-in-flight measurement of one variant.
type LatencyResult struct {
	Variant Variant
	Dist    Dist
	// RoundP50 is the median of each interleaved batch, in round order.
	RoundP50 []time.Duration
	// CPU is the CPU accounting of the process the client talks to
	// (gatehouse, or fakeserver for the direct pipe) over the measured
	// calls.
	CPU CPUStat
}

// ThroughputResult is the in-flight measurement of one variant.
type ThroughputResult struct {
	Variant Variant
	// Rates are calls per second of each round, in round order.
	Rates []float64
	// Median is the median of Rates.
	Median float64
	// CPU is the CPU accounting of the process the client talks to over
	// all rounds (Calls calls).
	CPU   CPUStat
	Calls int
}

// LongResult is the memory run through the gateway.
type LongResult struct {
	Variant  Variant
	Calls    int
	CPU      CPUStat // gatehouse's, over the calls
	Elapsed  time.Duration
	Start    MemStatus // after the handshake
	HWM      int64     // VmHWM at the end, before the session closes
	Samples  []MemSample
	LogBytes int64 // decision log size at the end
}

// FrameResult is the huge-frame measurement of one variant.
type FrameResult struct {
	Variant   Variant
	ReqBytes  int // request frame, LF included
	RespBytes int // response frame, LF included
	Before    MemStatus
	HWMAfter  []int64 // VmHWM after each call
	Latencies []time.Duration
}

// Results is everything a full run measured.
type Results struct {
	Config     Config
	Started    time.Time
	Elapsed    time.Duration
	LoadBefore string
	LoadAfter  string
	Latency    []LatencyResult
	Throughput []ThroughputResult
	Long       []LongResult
	Frames     []FrameResult
	// Fsync is the disk's durability floor (phase "fsync"); nil when not
	// measured.
	Fsync *FsyncResult
	// Scan is the scanning on/off comparison (phase "scan"): one call in
	// flight through ScanVariants, interleaved.
	Scan []LatencyResult
}

// RunAll runs every measurement and returns the results.
func RunAll(cfg Config) (*Results, error) {
	cfg.defaults()
	res := &Results{Config: cfg, Started: time.Now(), LoadBefore: LoadAvg()}
	if cfg.runs("fsync") {
		cfg.Progress("fsync: 200 appends of 4 KiB + fdatasync in %s", os.TempDir())
		fs, err := MeasureFdatasync(os.TempDir(), 200)
		if err != nil {
			return nil, err
		}
		res.Fsync = &fs
	}
	if cfg.runs("latency") || cfg.runs("throughput") {
		cfg.Progress("starting %d variants", len(cfg.Variants))
		procs := make([]*Proc, 0, len(cfg.Variants))
		closeAll := func() {
			for _, p := range procs {
				p.Close()
			}
			procs = nil
		}
		defer closeAll()
		for _, v := range cfg.Variants {
			p, err := Start(v)
			if err != nil {
				return nil, err
			}
			procs = append(procs, p)
		}
		if cfg.runs("latency") {
			cfg.Progress("latency: %d calls per variant, one in flight, batches of %d", cfg.LatencyCalls, cfg.Batch)
			lat, err := MeasureLatency(procs, cfg.LatencyCalls, cfg.Batch, cfg.Warmup)
			if err != nil {
				return nil, err
			}
			res.Latency = lat
		}
		if cfg.runs("throughput") {
			cfg.Progress("throughput: %d rounds of %d calls per variant, %d in flight", cfg.ThroughputRounds, cfg.ThroughputCalls, cfg.Window)
			thr, err := MeasureThroughput(procs, cfg.ThroughputRounds, cfg.ThroughputCalls, cfg.Window)
			if err != nil {
				return nil, err
			}
			res.Throughput = thr
		}
		closeAll()
	}

	if cfg.runs("scan") {
		cfg.Progress("scan: %d calls per variant with %d-byte arguments and results, scanning on and off", cfg.LatencyCalls/2, ScanBytes)
		var procs []*Proc
		for _, v := range ScanVariants {
			p, err := Start(v)
			if err != nil {
				for _, q := range procs {
					q.Close()
				}
				return nil, err
			}
			procs = append(procs, p)
		}
		lat, err := MeasureLatency(procs, cfg.LatencyCalls/2, cfg.Batch, cfg.Warmup)
		for _, q := range procs {
			q.Close()
		}
		if err != nil {
			return nil, err
		}
		res.Scan = lat
	}

	if cfg.runs("memory") {
		for _, v := range cfg.LongVariants {
			cfg.Progress("memory: %d calls through %s, %d in flight", cfg.LongCalls, v.Name, cfg.Window)
			long, err := MeasureLong(v, cfg.LongCalls, cfg.Window, cfg.SampleEvery)
			if err != nil {
				return nil, err
			}
			res.Long = append(res.Long, long)
		}
	}

	if !cfg.runs("frame") {
		res.Elapsed = time.Since(res.Started)
		res.LoadAfter = LoadAvg()
		return res, nil
	}
	cfg.Progress("huge frame: %d-byte arguments, %d calls", cfg.FrameBytes, cfg.FrameRepeats)
	limit := 2*cfg.FrameBytes + 1<<20
	for _, v := range cfg.FrameVariants {
		v.MaxFrameBytes = limit
		if !v.Gateway {
			v.MaxFrameBytes = 0
		}
		fr, err := MeasureFrame(v, cfg.FrameBytes, cfg.FrameRepeats)
		if err != nil {
			return nil, err
		}
		res.Frames = append(res.Frames, fr)
	}
	res.Elapsed = time.Since(res.Started)
	res.LoadAfter = LoadAvg()
	return res, nil
}

// MeasureLatency makes calls one at a time on every proc, interleaved: each
// round runs a batch on every proc, the order rotating from round to round,
// so that drift on the machine reaches every variant alike.
func MeasureLatency(procs []*Proc, calls, batch, warmup int) ([]LatencyResult, error) {
	for _, p := range procs {
		for range p.Variant.scaled(warmup) {
			if _, err := p.Call(); err != nil {
				return nil, fmt.Errorf("%s: warm-up: %w", p.Variant.Name, err)
			}
		}
	}
	samples := make([][]time.Duration, len(procs))
	for i := range samples {
		samples[i] = make([]time.Duration, 0, calls)
	}
	out := make([]LatencyResult, len(procs))
	round := make([]time.Duration, batch)
	for r := 0; r*batch < calls; r++ {
		n := min(batch, calls-r*batch)
		for k := range procs {
			i := (k + r) % len(procs)
			p := procs[i]
			n := p.Variant.scaled(n)
			c0, _ := ReadCPU(p.Pid)
			for j := 0; j < n; j++ {
				d, err := p.Call()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p.Variant.Name, err)
				}
				round[j] = d
			}
			c1, _ := ReadCPU(p.Pid)
			out[i].CPU.CPU += c1.CPU - c0.CPU
			out[i].CPU.RunQueue += c1.RunQueue - c0.RunQueue
			samples[i] = append(samples[i], round[:n]...)
			out[i].RoundP50 = append(out[i].RoundP50, Summarize(round[:n]).P50)
		}
	}
	for i, p := range procs {
		out[i].Variant = p.Variant
		out[i].Dist = Summarize(samples[i])
	}
	return out, nil
}

// MeasureThroughput runs rounds of n calls with window in flight on every
// proc in turn (rotating the order) and reports calls per second.
func MeasureThroughput(procs []*Proc, rounds, n, window int) ([]ThroughputResult, error) {
	out := make([]ThroughputResult, len(procs))
	for i, p := range procs { // warm-up: grow buffers, settle the scheduler
		if _, err := p.Pipelined(p.Variant.scaled(n/4+1), window); err != nil {
			return nil, fmt.Errorf("%s: warm-up: %w", p.Variant.Name, err)
		}
		out[i].Variant = p.Variant
	}
	for r := range rounds {
		for k := range procs {
			i := (k + r) % len(procs)
			n := procs[i].Variant.scaled(n)
			c0, _ := ReadCPU(procs[i].Pid)
			d, err := procs[i].Pipelined(n, window)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", procs[i].Variant.Name, err)
			}
			c1, _ := ReadCPU(procs[i].Pid)
			out[i].CPU.CPU += c1.CPU - c0.CPU
			out[i].CPU.RunQueue += c1.RunQueue - c0.RunQueue
			out[i].Calls += n
			out[i].Rates = append(out[i].Rates, float64(n)/d.Seconds())
		}
	}
	for i := range out {
		out[i].Median = Median(append([]float64(nil), out[i].Rates...))
	}
	return out, nil
}

// MeasureLong starts a fresh process of variant v, makes calls calls with
// window in flight while sampling its VmRSS, and reads VmHWM at the end.
func MeasureLong(v Variant, calls, window int, every time.Duration) (LongResult, error) {
	calls = v.scaled(calls)
	res := LongResult{Variant: v, Calls: calls}
	p, err := Start(v)
	if err != nil {
		return res, err
	}
	defer p.Close()
	if res.Start, err = ReadMem(p.Pid); err != nil {
		return res, err
	}
	base := p.Done.Load()
	c0, _ := ReadCPU(p.Pid)
	s := SampleRSS(p.Pid, every, func() int64 { return p.Done.Load() - base })
	// Chunks keep the id range check of Pipelined meaningful and the
	// pipeline full: only the ends of each chunk drain it.
	t0 := time.Now()
	const chunk = 100_000
	for left := calls; left > 0; left -= chunk {
		if _, err := p.Pipelined(min(chunk, left), window); err != nil {
			s.Stop()
			return res, err
		}
	}
	res.Elapsed = time.Since(t0)
	res.Samples = s.Stop()
	c1, _ := ReadCPU(p.Pid)
	res.CPU = c1.Sub(c0)
	end, err := ReadMem(p.Pid)
	if err != nil {
		return res, err
	}
	res.HWM = end.HWM
	res.LogBytes = p.LogBytes()
	return res, nil
}

// MeasureFrame starts a fresh process of variant v and makes repeats calls
// whose arguments object is argBytes long, one at a time.
func MeasureFrame(v Variant, argBytes, repeats int) (FrameResult, error) {
	res := FrameResult{Variant: v}
	p, err := Start(v)
	if err != nil {
		return res, err
	}
	defer p.Close()
	p.SetArgs(Args(argBytes))
	res.ReqBytes = len(p.request(0))
	if res.Before, err = ReadMem(p.Pid); err != nil {
		return res, err
	}
	for range repeats {
		d, n, err := p.CallLen()
		if err != nil {
			return res, fmt.Errorf("%s: huge frame: %w (stderr: %s)", v.Name, err, p.Stderr())
		}
		m, err := ReadMem(p.Pid)
		if err != nil {
			return res, err
		}
		res.RespBytes = n
		res.Latencies = append(res.Latencies, d)
		res.HWMAfter = append(res.HWMAfter, m.HWM)
	}
	return res, nil
}
