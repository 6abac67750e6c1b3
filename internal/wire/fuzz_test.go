package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// expand replaces every 0x00 byte of data with n copies of 'a' (n == 0
// leaves data as it is), so that the fuzzer can build lines longer than the
// 64 KiB read chunk from short inputs. The result is capped at 1 MiB.
func expand(data []byte, n int) []byte {
	if n == 0 {
		return data
	}
	var out []byte
	for _, c := range data {
		if c == 0 {
			out = append(out, bytes.Repeat([]byte{'a'}, n)...)
		} else {
			out = append(out, c)
		}
		if len(out) > 1<<20 {
			return out[:1<<20]
		}
	}
	return out
}

// splitLines is the reference framing: lines of input, each with its LF,
// the last one without LF when the input does not end in LF.
func splitLines(in []byte) [][]byte {
	var out [][]byte
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			out = append(out, in)
			break
		}
		out = append(out, in[:i+1])
		in = in[i+1:]
	}
	return out
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// FuzzReadFrame checks the framing against the reference: the frames
// returned, concatenated, are the input without the lines over the limit;
// every line over the limit is reported once, with its exact size and first
// bytes; the reader always reaches io.EOF.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\r\nlast"), uint32(1024), uint16(0), uint16(0))
	f.Add([]byte("\n\n\r\n"), uint32(1), uint16(0), uint16(3))
	f.Add([]byte("x\x00\n{}\n"), uint32(70000), uint16(65535), uint16(0))         // a line just under 64 KiB + few
	f.Add([]byte("\x00\x00\x00\n{}\n"), uint32(196608), uint16(65535), uint16(0)) // limit+1 across chunks
	f.Add([]byte("\x00\x00\n\x00\x00\x00\n"), uint32(131071), uint16(65535), uint16(1000))
	f.Add([]byte("\x00\x00\x00"), uint32(100000), uint16(65535), uint16(0))
	f.Add([]byte("\x00\x00\n{}\n"), uint32(99999), uint16(65535), uint16(0)) // the limit is crossed by the line's last chunk
	f.Add([]byte(bom+"{}\n"+bom+"{}\n"), uint32(1024), uint16(0), uint16(1)) // a byte order mark at the start and mid-stream
	f.Add([]byte(bom), uint32(1), uint16(0), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, limit uint32, rep uint16, chunk uint16) {
		in := expand(data, int(rep))
		lim := int(limit%(1<<18)) + 1
		var src io.Reader = bytes.NewReader(in)
		if chunk > 0 {
			src = &chunkReader{b: in, n: int(chunk)}
		}
		r := NewReader(src, lim)
		var got []byte
		var sizes []int64
		for i := 0; ; i++ {
			if i > len(in)+2 {
				t.Fatalf("no io.EOF after %d calls", i)
			}
			fr, err := r.ReadFrame()
			if err == io.EOF {
				if len(fr) != 0 {
					t.Fatalf("io.EOF with %d bytes", len(fr))
				}
				break
			}
			var e *FrameTooLargeError
			if errors.As(err, &e) {
				sizes = append(sizes, e.Size)
				got = append(got, 0xFF) // marks where a line was discarded
				if len(e.Prefix) > PrefixBytes {
					t.Fatalf("prefix of %d bytes", len(e.Prefix))
				}
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if len(fr) == 0 || len(fr) > lim {
				t.Fatalf("frame of %d bytes with limit %d", len(fr), lim)
			}
			if i := bytes.IndexByte(fr, '\n'); i >= 0 && i != len(fr)-1 {
				t.Fatalf("frame holds an LF before its end")
			}
			got = append(got, fr...)
		}
		var want []byte
		var wantSizes []int64
		// A byte order mark at the very start of the stream is in no
		// frame; anywhere else it is data.
		if r.SkippedBOM() != bytes.HasPrefix(in, []byte(bom)) {
			t.Fatalf("SkippedBOM() = %v for input starting %q", r.SkippedBOM(), clip(in[:min(len(in), 3)]))
		}
		for _, l := range splitLines(bytes.TrimPrefix(in, []byte(bom))) {
			if len(l) > lim {
				wantSizes = append(wantSizes, int64(len(l)))
				want = append(want, 0xFF)
				continue
			}
			want = append(want, l...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("limit %d: frames (0xFF marks a discarded line) differ from the input minus oversized lines:\n got %d bytes %q\nwant %d bytes %q", lim, len(got), clip(got), len(want), clip(want))
		}
		if len(sizes) != len(wantSizes) {
			t.Fatalf("%d oversized lines reported, want %d", len(sizes), len(wantSizes))
		}
		for i := range sizes {
			if sizes[i] != wantSizes[i] {
				t.Fatalf("oversized line %d: Size %d, want %d", i, sizes[i], wantSizes[i])
			}
		}
	})
}

func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(append(b[:100:100], "..."...), b[len(b)-100:]...)
	}
	return b
}
