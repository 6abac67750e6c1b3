package wire

import "syscall"

// mapSpill reads a long line into an anonymous private mapping reserved at
// the frame limit (MAP_NORESERVE: only the pages written become resident)
// and, while joining, gives each copied stretch back with
// madvise(MADV_DONTNEED). A line of n bytes therefore peaks at about n plus
// one stretch, not 2n, and nothing is left for the garbage collector.
type mapSpill struct {
	mem []byte
	n   int
}

// joinStep is how much of a mapSpill is copied before that stretch is
// given back: 1 MiB, a multiple of every page size.
const joinStep = 1 << 20

// newMapSpill maps limit bytes, or returns nil when the mapping fails (the
// caller falls back to the Go heap).
func newMapSpill(limit int) spill {
	if limit <= 0 {
		return nil
	}
	mem, err := syscall.Mmap(-1, 0, limit, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &mapSpill{mem: mem}
}

func (m *mapSpill) add(b []byte) { m.n += copy(m.mem[m.n:], b) }

func (m *mapSpill) size() int { return m.n }

func (m *mapSpill) prefix(n int) []byte { return append([]byte(nil), m.mem[:min(n, m.n)]...) }

func (m *mapSpill) join(dst []byte) int {
	for off := 0; off < m.n; off += joinStep {
		end := min(off+joinStep, m.n)
		copy(dst[off:end], m.mem[off:end])
		// Best effort: if the kernel refuses, the pages go at free.
		_ = syscall.Madvise(m.mem[off:end], syscall.MADV_DONTNEED)
	}
	return m.n
}

func (m *mapSpill) free() {
	if m.mem != nil {
		_ = syscall.Munmap(m.mem)
		m.mem = nil
	}
}
