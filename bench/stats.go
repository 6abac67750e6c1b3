package bench

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dist summarizes a sample of durations.
type Dist struct {
	N                        int
	Min, P50, P90, P99, P999 time.Duration
	Max, Mean                time.Duration
}

// Summarize sorts samples in place and returns their summary. Percentiles
// are nearest-rank: the smallest sample with at least p of the samples at or
// below it.
func Summarize(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Dist{
		N:    len(samples),
		Min:  samples[0],
		P50:  Percentile(samples, 0.50),
		P90:  Percentile(samples, 0.90),
		P99:  Percentile(samples, 0.99),
		P999: Percentile(samples, 0.999),
		Max:  samples[len(samples)-1],
		Mean: sum / time.Duration(len(samples)),
	}
}

// Percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	k = max(0, min(k, len(sorted)-1))
	return sorted[k]
}

// Median returns the median of xs (the mean of the middle two for an even
// count); xs is sorted in place.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Slope is the least-squares slope of y over x; 0 with fewer than two
// distinct x.
func Slope(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 || len(x) != len(y) {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// MemStatus is the memory part of /proc/PID/status, in bytes.
type MemStatus struct {
	RSS, HWM int64
}

// ReadMem reads VmRSS and VmHWM of a process from /proc/PID/status.
func ReadMem(pid int) (MemStatus, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return MemStatus{}, err
	}
	var m MemStatus
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		f := strings.Fields(v) // "12345 kB"
		if len(f) >= 1 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			*dst = n << 10
		}
	}
	return m, nil
}

// MemSample is one VmRSS reading during a run.
type MemSample struct {
	At    time.Duration // since the sampler started
	Calls int64         // calls completed at that moment
	RSS   int64         // bytes
}

// Sampler reads a process's VmRSS periodically until stopped.
type Sampler struct {
	stop chan struct{}
	done chan []MemSample
}

// SampleRSS starts sampling pid's VmRSS every interval, tagging each sample
// with calls().
func SampleRSS(pid int, interval time.Duration, calls func() int64) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan []MemSample, 1)}
	go func() {
		var out []MemSample
		t0 := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		take := func() {
			if m, err := ReadMem(pid); err == nil {
				out = append(out, MemSample{At: time.Since(t0), Calls: calls(), RSS: m.RSS})
			}
		}
		take()
		for {
			select {
			case <-tick.C:
				take()
			case <-s.stop:
				take()
				s.done <- out
				return
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the samples.
func (s *Sampler) Stop() []MemSample {
	close(s.stop)
	return <-s.done
}

// LoadAvg returns the first field of /proc/loadavg (the 1-minute load), or
// "?".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux configuration Go supports).
const clockTick = 10 * time.Millisecond

// CPUStat is a process's CPU accounting so far.
type CPUStat struct {
	// CPU is user plus system time of all its threads (10 ms resolution).
	CPU time.Duration
	// RunQueue is the time its live threads spent runnable but waiting for
	// a CPU (/proc/PID/task/*/schedstat); 0 when schedstats are
	// unavailable. It measures how contended the machine was.
	RunQueue time.Duration
}

// ReadCPU reads pid's CPU accounting from /proc.
func ReadCPU(pid int) (CPUStat, error) {
	var c CPUStat
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return c, err
	}
	// Fields after the command name, which is in parentheses and may
	// contain spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return c, os.ErrInvalid
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	c.CPU = time.Duration(ut+st) * clockTick
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			w, _ := strconv.ParseInt(f[1], 10, 64)
			c.RunQueue += time.Duration(w)
		}
	}
	return c, nil
}

// Sub returns c - o.
func (c CPUStat) Sub(o CPUStat) CPUStat {
	return CPUStat{CPU: c.CPU - o.CPU, RunQueue: c.RunQueue - o.RunQueue}
}
