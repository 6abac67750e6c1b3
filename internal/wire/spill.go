package wire

// A spill holds the bytes of a line longer than the read buffer while it
// is being read, before it is joined into the frame ReadFrame returns.
type spill interface {
	// add appends b (copied); the caller keeps the total within the limit
	// the spill was made for.
	add(b []byte)
	// size returns the number of bytes added.
	size() int
	// prefix returns a copy of the first min(n, size) bytes.
	prefix(n int) []byte
	// join copies every byte added into dst (len(dst) >= size), giving
	// the spill's own memory back as it goes, and returns size. Nothing
	// may be added after join.
	join(dst []byte) int
	// free releases the spill's memory; it is safe to call more than
	// once.
	free()
}

// newSpill returns the best spill for lines of at most limit bytes: an
// anonymous memory mapping where the platform has one (spill_linux.go),
// otherwise chunks on the Go heap.
func newSpill(limit int) spill {
	if s := newMapSpill(limit); s != nil {
		return s
	}
	return &heapSpill{}
}

// heapSpill keeps copies of the chunks on the Go heap; their memory goes
// back to the operating system only after a garbage collection, so a line
// of n bytes peaks at 2n while it is joined.
type heapSpill struct {
	chunks [][]byte
	n      int
}

func (h *heapSpill) add(b []byte) {
	h.chunks = append(h.chunks, append([]byte(nil), b...))
	h.n += len(b)
}

func (h *heapSpill) size() int { return h.n }

func (h *heapSpill) prefix(n int) []byte {
	out := make([]byte, 0, min(n, h.n))
	for _, c := range h.chunks {
		if len(out) == cap(out) {
			break
		}
		out = append(out, c[:min(len(c), cap(out)-len(out))]...)
	}
	return out
}

func (h *heapSpill) join(dst []byte) int {
	off := 0
	for i, c := range h.chunks {
		off += copy(dst[off:], c)
		h.chunks[i] = nil // collectable as soon as the collector runs
	}
	return off
}

func (h *heapSpill) free() { h.chunks = nil }
