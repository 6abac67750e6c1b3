package wire

import (
	"bytes"
	"testing"
)

// TestSpills: both spills return the bytes added, in order, from prefix and
// join, and survive free twice.
func TestSpills(t *testing.T) {
	const limit = 3<<20 + 5
	spills := map[string]func() spill{
		"heap": func() spill { return &heapSpill{} },
		"map": func() spill {
			s := newMapSpill(limit)
			if s == nil {
				t.Skip("no mapping on this platform")
			}
			return s
		},
	}
	for name, mk := range spills {
		t.Run(name, func(t *testing.T) {
			s := mk()
			var want []byte
			for i := 0; len(want)+70000 <= limit; i++ {
				chunk := bytes.Repeat([]byte{byte('a' + i%26)}, 70000-i)
				s.add(chunk)
				want = append(want, chunk...)
			}
			if s.size() != len(want) {
				t.Fatalf("size %d, want %d", s.size(), len(want))
			}
			if p := s.prefix(PrefixBytes); !bytes.Equal(p, want[:PrefixBytes]) {
				t.Fatalf("prefix differs")
			}
			if p := s.prefix(len(want) + 10); !bytes.Equal(p, want) {
				t.Fatalf("prefix longer than the content differs")
			}
			dst := make([]byte, len(want)+3)
			if n := s.join(dst); n != len(want) || !bytes.Equal(dst[:n], want) {
				t.Fatalf("join returned %d bytes, content equal %v", n, bytes.Equal(dst[:n], want))
			}
			s.free()
			s.free()
		})
	}
}

// TestLongFrameExactAtLimit: a line of exactly the limit, longer than the
// read buffer, is returned whole; one byte more is refused with its size.
func TestLongFrameExactAtLimit(t *testing.T) {
	const limit = 5*readChunk + 123
	in := line(limit) + line(limit+1) + "{}\n"
	r := NewReader(bytes.NewReader([]byte(in)), limit)
	f, err := r.ReadFrame()
	if err != nil || len(f) != limit || !bytes.Equal(f, []byte(line(limit))) {
		t.Fatalf("frame of %d bytes, %v", len(f), err)
	}
	_, err = r.ReadFrame()
	e, ok := err.(*FrameTooLargeError)
	if !ok || e.Size != limit+1 || !bytes.Equal(e.Prefix, []byte(line(limit + 1))[:PrefixBytes]) {
		t.Fatalf("over the limit: %v", err)
	}
	if f, err = r.ReadFrame(); err != nil || string(f) != "{}\n" {
		t.Fatalf("after the refused line: %q, %v", f, err)
	}
}
