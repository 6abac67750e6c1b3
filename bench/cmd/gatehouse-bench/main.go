// Command gatehouse-bench measures `gatehouse wrap` against a direct pipe to
// the same fast echo server, side by side in one run, and prints the report
// (benchmark-format lines and Markdown tables). See docs/benchmarks.md.
//
// Binaries: GATEHOUSE_BIN and GATEHOUSE_FAKESERVER_BIN when set, otherwise
// both are built from the module. GATEHOUSE_BENCH_CALLS sets the length of
// the memory run (default 1,000,000).
//
// With -cpuprofile FILE it instead profiles the gateway process itself: it
// runs -calls calls (-window in flight) through a gatehouse that is this
// program re-executed as `gatehouse-bench wrap ...` (the same cli.Main, with
// runtime/pprof around it), writes the CPU profile to FILE, and prints
// `go tool pprof -top` of it.
//
// Run as `gatehouse-bench relay -- SERVER...` it is the null-relay variant
// (internal/wire's framing over os/exec's pipes, nothing else), and as
// `gatehouse-bench rawrelay -- SERVER...` the raw-relay variant (blocking
// read/write on raw pipe descriptors: the floor of a Go relay).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/gatehouse-mcp/gatehouse/bench"
	"github.com/gatehouse-mcp/gatehouse/internal/cli"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// profileEnv names the file a re-executed `gatehouse-bench wrap` writes its
// CPU profile to.
const profileEnv = "GATEHOUSE_BENCH_CPUPROFILE"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "wrap" {
		os.Exit(profiledGatehouse())
	}
	if len(os.Args) > 2 && os.Args[1] == "rawrelay" && os.Args[2] == "--" {
		os.Exit(rawRelay(os.Args[3:]))
	}
	if len(os.Args) > 2 && os.Args[1] == "relay" && os.Args[2] == "--" {
		os.Exit(nullRelay(os.Args[3:]))
	}
	var cfg bench.Config
	flag.IntVar(&cfg.LatencyCalls, "latency-calls", 0, "measured one-in-flight calls per variant (default 30000)")
	flag.IntVar(&cfg.Batch, "batch", 0, "calls per variant per interleaved batch (default 250)")
	flag.IntVar(&cfg.ThroughputCalls, "throughput-calls", 0, "calls per variant per throughput round (default 20000)")
	flag.IntVar(&cfg.ThroughputRounds, "throughput-rounds", 0, "throughput rounds (default 5)")
	flag.IntVar(&cfg.Window, "window", 0, "calls in flight in the throughput and memory runs (default 64)")
	flag.IntVar(&cfg.LongCalls, "calls", 0, "calls of the memory run (default: $GATEHOUSE_BENCH_CALLS, else 1000000)")
	flag.IntVar(&cfg.FrameBytes, "frame-bytes", 0, "arguments size of the huge-frame test (default 16 MiB)")
	cpuprofile := flag.String("cpuprofile", "", "profile the gateway process over -calls calls into `FILE` instead of benchmarking")
	candidate := flag.String("candidate", "", "also measure this gatehouse `BINARY` (policy and log on, ledger off, like \"gw-noledger\") as variant \"candidate\", interleaved with the others: an A/B test of a gateway change")
	candidateLedger := flag.String("candidate-ledger", "", "also measure this gatehouse `BINARY` with today's defaults (ledger on, like \"gateway\") as variant \"cand-ledger\", interleaved with the others")
	only := flag.String("variants", "", "comma-separated subset of the variants to run (default all; \"direct\" is always run)")
	phases := flag.String("phases", "", "comma-separated subset of fsync,latency,throughput,memory,frame (default all)")
	quiet := flag.Bool("q", false, "no progress lines on stderr")
	flag.Parse()
	if *phases != "" {
		cfg.Phases = strings.Split(*phases, ",")
	}
	cfg.Variants = append([]bench.Variant(nil), bench.Features...)
	if self, err := os.Executable(); err == nil {
		cfg.Variants = append(cfg.Variants,
			bench.Variant{Name: "null-relay", Gateway: true, NullRelay: true, Exe: self},
			bench.Variant{Name: bench.RawRelayName, Gateway: true, NullRelay: true, RawRelay: true, Exe: self})
	}
	if *candidate != "" {
		c := bench.GatewayNoLedger
		c.Name, c.Exe = "candidate", *candidate
		cfg.Variants = append(cfg.Variants, c)
	}
	if *candidateLedger != "" {
		c := bench.Gateway
		c.Name, c.Exe = "cand-ledger", *candidateLedger
		cfg.Variants = append(cfg.Variants, c)
	}
	if *only != "" {
		keep := map[string]bool{bench.Direct.Name: true}
		for _, n := range strings.Split(*only, ",") {
			keep[strings.TrimSpace(n)] = true
		}
		var vs []bench.Variant
		for _, v := range cfg.Variants {
			if keep[v.Name] {
				vs = append(vs, v)
			}
		}
		cfg.Variants = vs
	}
	if !*quiet {
		t0 := time.Now()
		cfg.Progress = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "gatehouse-bench: %6.1fs  %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
		}
	}
	if *cpuprofile != "" {
		err := profile(cfg, *cpuprofile)
		bench.CleanupBinaries()
		if err != nil {
			fmt.Fprintln(os.Stderr, "gatehouse-bench:", err)
			os.Exit(1)
		}
		return
	}
	res, err := bench.RunAll(cfg)
	bench.CleanupBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench:", err)
		os.Exit(1)
	}
	res.Print(os.Stdout)
}

// nullRelay runs argv as a child and relays frames between this process's
// stdin/stdout and the child with internal/wire's Reader and Writer and
// nothing else: what any Go stdio relay costs on this machine before it
// looks at a single byte.
func nullRelay(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "gatehouse-bench relay: no command")
		return 64
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 70
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 70
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench relay:", err)
		return 69
	}
	copyFrames := func(dst io.Writer, src io.Reader) {
		// The gateway's write pattern: frames that arrived together are
		// written together (wire.Writer.Hold while more are buffered).
		r, w := wire.NewReader(src, 1<<30), wire.NewWriter(dst)
		holding := false
		for {
			if holding && !r.HasFrame() {
				holding = false
				if w.Release() != nil {
					return
				}
			}
			f, err := r.ReadFrame()
			if err != nil {
				if holding {
					w.Release()
				}
				return
			}
			if !holding && r.HasFrame() {
				w.Hold()
				holding = true
			}
			if w.WriteFrame(f) != nil {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { copyFrames(os.Stdout, out); close(done) }()
	copyFrames(in, os.Stdin)
	in.Close()
	<-done
	cmd.Wait()
	return 0
}

// profiledGatehouse is `gatehouse` with a CPU profile around the whole run.
func profiledGatehouse() int {
	path := os.Getenv(profileEnv)
	if path == "" {
		return cli.Main(os.Args[1:])
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench wrap:", err)
		return 70
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-bench wrap:", err)
		return 70
	}
	defer pprof.StopCPUProfile()
	return cli.Main(os.Args[1:])
}

var (
	profileLedger = flag.Bool("profile-ledger", false, "with -cpuprofile: keep the audit ledger on (default: --no-ledger)")
	profileResult = flag.Int("profile-result-bytes", 0, "with -cpuprofile: the server's results carry this many bytes of benign text (the scanning comparison's calls)")
)

func profile(cfg bench.Config, path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	calls := cfg.LongCalls
	if calls <= 0 {
		calls = bench.CallsFromEnv(200_000)
	}
	window := cfg.Window
	if window <= 0 {
		window = 64
	}
	v := bench.GatewayNoLedger
	if *profileLedger {
		v = bench.Gateway
	}
	v.Exe = self
	v.ResultBytes = *profileResult
	v.Div = 0 // -calls is what is profiled
	v.Env = []string{profileEnv + "=" + path}
	if cfg.Progress != nil {
		cfg.Progress("profiling %s: %d calls, %d in flight", v.Describe(), calls, window)
	}
	res, err := bench.MeasureLong(v, calls, window, time.Second)
	if err != nil {
		return err
	}
	// MeasureLong has closed the session: the profile is written.
	fmt.Printf("%d calls in %s (%.0f calls/s), gatehouse VmHWM %.1f MiB; profile: %s\n\n",
		calls, res.Elapsed.Round(time.Millisecond), float64(calls)/res.Elapsed.Seconds(), float64(res.HWM)/(1<<20), path)
	cmd := exec.Command("go", "tool", "pprof", "-top", "-nodecount=35", self, path)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
