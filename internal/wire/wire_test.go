package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// step is one expected result of ReadFrame: a frame, or an oversized line of
// the given size, or io.EOF.
type step struct {
	frame  string // expected frame when tooBig == 0 and !eof
	tooBig int64  // expected FrameTooLargeError.Size
	eof    bool
}

func frame(s string) step   { return step{frame: s} }
func big(n int) step        { return step{tooBig: int64(n)} }
func line(n int) string     { return strings.Repeat("a", n-1) + "\n" }
func lineCRLF(n int) string { return strings.Repeat("b", n-2) + "\r\n" }

var eof = step{eof: true}

// readAll checks the sequence of ReadFrame results against want.
func readAll(t *testing.T, r *Reader, want []step) {
	t.Helper()
	for i, w := range want {
		got, err := r.ReadFrame()
		switch {
		case w.eof:
			if err != io.EOF {
				t.Fatalf("step %d: got frame of %d bytes, err %v; want io.EOF", i, len(got), err)
			}
		case w.tooBig > 0:
			var e *FrameTooLargeError
			if !errors.As(err, &e) {
				t.Fatalf("step %d: got frame of %d bytes (%q...), err %v; want *FrameTooLargeError of %d bytes", i, len(got), head(got), err, w.tooBig)
			}
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Errorf("step %d: errors.Is(err, ErrFrameTooLarge) is false", i)
			}
			if e.Size != w.tooBig {
				t.Errorf("step %d: FrameTooLargeError.Size = %d, want %d", i, e.Size, w.tooBig)
			}
			if e.Limit != r.Limit() {
				t.Errorf("step %d: FrameTooLargeError.Limit = %d, want %d", i, e.Limit, r.Limit())
			}
		default:
			if err != nil {
				t.Fatalf("step %d: err %v; want frame of %d bytes (%q...)", i, err, len(w.frame), head([]byte(w.frame)))
			}
			if string(got) != w.frame {
				t.Fatalf("step %d: got frame of %d bytes (%q...), want %d bytes (%q...)", i, len(got), head(got), len(w.frame), head([]byte(w.frame)))
			}
		}
	}
}

func head(b []byte) string {
	if len(b) > 40 {
		return string(b[:40])
	}
	return string(b)
}

func TestReaderFrames(t *testing.T) {
	const small = 1024            // below the 64 KiB read chunk
	const large = 3*readChunk + 7 // above it: frames are accumulated
	tests := []struct {
		name  string
		limit int
		input string
		want  []step
	}{
		{"empty input", small, "", []step{eof, eof}},
		{"one line", small, "{}\n", []step{frame("{}\n"), eof}},
		{"CRLF is kept", small, "{}\r\n{\"a\":1}\r\n", []step{frame("{}\r\n"), frame("{\"a\":1}\r\n"), eof}},
		{"lone CR is not a terminator", small, "a\rb\n", []step{frame("a\rb\n"), eof}},
		{"empty lines are frames", small, "\n\r\n\n", []step{frame("\n"), frame("\r\n"), frame("\n"), eof}},
		{"final line without LF", small, "{}\n{\"x\":2}", []step{frame("{}\n"), frame("{\"x\":2}"), eof, eof}},
		{"only a line without LF", small, "abc", []step{frame("abc"), eof}},
		{"nothing trimmed", small, "  {} \t\n", []step{frame("  {} \t\n"), eof}},

		// The limit counts the terminator; a frame of exactly the limit
		// passes, one byte more is refused.
		{"small: exactly the limit", small, line(small), []step{frame(line(small)), eof}},
		{"small: limit+1", small, line(small+1) + "{}\n", []step{big(small + 1), frame("{}\n"), eof}},
		{"small: exactly the limit with CRLF", small, lineCRLF(small), []step{frame(lineCRLF(small)), eof}},
		{"small: limit+1 with CRLF", small, lineCRLF(small+1) + "x\n", []step{big(small + 1), frame("x\n"), eof}},
		{"small: limit+1 without LF at EOF", small, "x\n" + strings.Repeat("a", small+1), []step{frame("x\n"), big(small + 1), eof}},
		{"small: exactly the limit without LF at EOF", small, strings.Repeat("a", small), []step{frame(strings.Repeat("a", small)), eof}},
		{"small: oversized line longer than a read chunk", small, line(2*readChunk+5) + "{}\n", []step{big(2*readChunk + 5), frame("{}\n"), eof}},
		{"small: oversized line ends just past a read chunk", small, line(readChunk+1) + "{}\n", []step{big(readChunk + 1), frame("{}\n"), eof}},
		{"small: oversized line ends just past two read chunks", small, line(2*readChunk+1) + "{}\n", []step{big(2*readChunk + 1), frame("{}\n"), eof}},
		{"small: two oversized lines in a row", small, line(small+1) + line(small+2) + "{}\n", []step{big(small + 1), big(small + 2), frame("{}\n"), eof}},

		{"large: exactly the limit", large, line(large) + "{}\n", []step{frame(line(large)), frame("{}\n"), eof}},
		{"large: limit+1", large, line(large+1) + "{}\n", []step{big(large + 1), frame("{}\n"), eof}},
		{"large: limit+1 with CRLF", large, lineCRLF(large+1) + "{}\r\n", []step{big(large + 1), frame("{}\r\n"), eof}},
		{"large: exactly the limit with CRLF", large, lineCRLF(large) + "{}\n", []step{frame(lineCRLF(large)), frame("{}\n"), eof}},
		{"large: limit+1 without LF at EOF", large, strings.Repeat("a", large+1), []step{big(large + 1), eof}},
		{"large: exactly the limit without LF at EOF", large, strings.Repeat("a", large), []step{frame(strings.Repeat("a", large)), eof}},
		{"large: far over the limit", large, line(3*large) + "{}\n", []step{big(3 * large), frame("{}\n"), eof}},
		{"large: over the limit by a few bytes", large, line(large+100) + line(10), []step{big(large + 100), frame(line(10)), eof}},
		{"large: oversized, then a long frame", large, line(large+1) + line(large), []step{big(large + 1), frame(line(large)), eof}},
		{"large: long frames in a row", large, line(large) + line(readChunk+1) + line(2), []step{frame(line(large)), frame(line(readChunk + 1)), frame(line(2)), eof}},
		{"large: oversized lines in a row", large, line(large+1) + line(large+2) + line(5), []step{big(large + 1), big(large + 2), frame(line(5)), eof}},

		// A UTF-8 byte order mark at the very start of the stream is in no
		// frame and counts toward no limit; anywhere else it is kept.
		{"BOM at the start is skipped", small, bom + "{}\n{\"a\":1}\n", []step{frame("{}\n"), frame("{\"a\":1}\n"), eof}},
		{"BOM at the start, CRLF", small, bom + "{}\r\n", []step{frame("{}\r\n"), eof}},
		{"BOM at the start, no LF", small, bom + "{}", []step{frame("{}"), eof}},
		{"only a BOM", small, bom, []step{eof, eof}},
		{"BOM then an empty line", small, bom + "\n{}\n", []step{frame("\n"), frame("{}\n"), eof}},
		{"BOM at the start of a later line is kept", small, "{}\n" + bom + "{}\n", []step{frame("{}\n"), frame(bom + "{}\n"), eof}},
		{"BOM after an empty first line is kept", small, "\n" + bom + "{}\n", []step{frame("\n"), frame(bom + "{}\n"), eof}},
		{"only the first of two BOMs is skipped", small, bom + bom + "{}\n", []step{frame(bom + "{}\n"), eof}},
		{"BOM inside the first line is kept", small, "{\"a\":\"" + bom + "\"}\n", []step{frame("{\"a\":\"" + bom + "\"}\n"), eof}},
		{"half a BOM is kept", small, "\xEF\xBB{}\n", []step{frame("\xEF\xBB{}\n"), eof}},
		{"small: BOM and exactly the limit", small, bom + line(small), []step{frame(line(small)), eof}},
		{"small: BOM and limit+1", small, bom + line(small+1) + "{}\n", []step{big(small + 1), frame("{}\n"), eof}},
		{"large: BOM and exactly the limit", large, bom + line(large) + "{}\n", []step{frame(line(large)), frame("{}\n"), eof}},
		{"large: BOM and limit+1", large, bom + line(large+1) + "{}\n", []step{big(large + 1), frame("{}\n"), eof}},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				if rd.name == "one byte at a time" && len(tt.input) > 4*readChunk {
					t.Skip("slow")
				}
				r := NewReader(rd.wrap(strings.NewReader(tt.input)), tt.limit)
				readAll(t, r, tt.want)
			})
		}
	}
}

// TestReaderDefaultLimit checks the 16 MiB default both ways: 1 MiB and
// 15 MiB frames pass, a frame of exactly 16 MiB passes, one byte more is
// refused, and the next frame is read.
func TestReaderDefaultLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~50 MiB")
	}
	for _, limit := range []int{0, -1} {
		r := NewReader(strings.NewReader(""), limit)
		if r.Limit() != DefaultMaxFrameBytes {
			t.Errorf("NewReader(_, %d).Limit() = %d, want %d", limit, r.Limit(), DefaultMaxFrameBytes)
		}
	}
	if DefaultMaxFrameBytes != 16<<20 {
		t.Errorf("DefaultMaxFrameBytes = %d, want 16 MiB", DefaultMaxFrameBytes)
	}
	var in bytes.Buffer
	in.WriteString(line(1 << 20))
	in.WriteString(line(15 << 20))
	in.WriteString(line(16 << 20))
	in.WriteString(line(16<<20 + 1))
	in.WriteString("{}\n")
	r := NewReader(&in, 0)
	readAll(t, r, []step{frame(line(1 << 20)), frame(line(15 << 20)), frame(line(16 << 20)), big(16<<20 + 1), frame("{}\n"), eof})
}

// TestReaderPrefix checks that an oversized frame's first bytes are kept so
// that the caller can address an error to its id.
func TestReaderPrefix(t *testing.T) {
	for _, size := range []int{2000, readChunk + 1, 3*readChunk + 3} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			msg := `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"x":"` + strings.Repeat("z", size) + "\"}}\n"
			r := NewReader(strings.NewReader(msg+"{}\n"), 1024)
			_, err := r.ReadFrame()
			var e *FrameTooLargeError
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *FrameTooLargeError", err)
			}
			if e.Size != int64(len(msg)) {
				t.Errorf("Size = %d, want %d", e.Size, len(msg))
			}
			n := min(len(msg), PrefixBytes)
			if string(e.Prefix) != msg[:n] {
				t.Errorf("Prefix = %q..., want the first %d bytes of the line", head(e.Prefix), n)
			}
			if len(e.Prefix) > PrefixBytes {
				t.Errorf("len(Prefix) = %d > PrefixBytes", len(e.Prefix))
			}
			if !strings.Contains(e.Error(), fmt.Sprint(len(msg))) || !strings.Contains(e.Error(), "1024") {
				t.Errorf("Error() = %q, want the size and the limit", e.Error())
			}
			got, err := r.ReadFrame()
			if err != nil || string(got) != "{}\n" {
				t.Errorf("next ReadFrame = %q, %v; want the next frame", got, err)
			}
		})
	}
}

// TestReaderPrefixIsACopy checks that the prefix is not overwritten by
// later reads.
func TestReaderPrefixIsACopy(t *testing.T) {
	in := `{"id":1,"x":"` + strings.Repeat("a", 3000) + "\"}\n" + strings.Repeat("b", 500) + "\n"
	r := NewReader(strings.NewReader(in), 1024)
	_, err := r.ReadFrame()
	var e *FrameTooLargeError
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	want := string(e.Prefix)
	if _, err := r.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if string(e.Prefix) != want {
		t.Errorf("Prefix changed after the next ReadFrame")
	}
}

// TestReaderUnderlyingError checks that an error from the stream (other than
// EOF) is returned as it is.
func TestReaderUnderlyingError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("{}\npartial"), iotest.ErrReader(boom)), 1024)
	got, err := r.ReadFrame()
	if err != nil || string(got) != "{}\n" {
		t.Fatalf("first ReadFrame = %q, %v", got, err)
	}
	got, err = r.ReadFrame()
	if !errors.Is(err, boom) {
		t.Fatalf("second ReadFrame = %q, %v; want the stream's error", got, err)
	}
	// Also on the long path.
	r = NewReader(io.MultiReader(strings.NewReader(strings.Repeat("a", 2*readChunk)), iotest.ErrReader(boom)), 4*readChunk)
	got, err = r.ReadFrame()
	if !errors.Is(err, boom) {
		t.Fatalf("long ReadFrame = %d bytes, %v; want the stream's error", len(got), err)
	}
}

// TestReaderBufferReleased checks that a long frame does not keep its
// buffer for the rest of the session, and that short frames after it are
// still right.
func TestReaderBufferReleased(t *testing.T) {
	in := line(3<<20) + "{}\n" + line(2*readChunk) + "x\n"
	r := NewReader(strings.NewReader(in), 4<<20)
	readAll(t, r, []step{frame(line(3 << 20)), frame("{}\n"), frame(line(2 * readChunk)), frame("x\n"), eof})
	if cap(r.buf) > 4<<20 {
		t.Errorf("reader keeps a %d byte buffer", cap(r.buf))
	}
}

func TestWriterExact(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	frames := []string{"{}\n", "{\"a\":1.0}\r\n", "no terminator", "\u2028\n"}
	for _, f := range frames {
		if err := w.WriteFrame([]byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if b.String() != strings.Join(frames, "") {
		t.Errorf("wrote %q", b.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriterError(t *testing.T) {
	err := NewWriter(failWriter{}).WriteFrame([]byte("{}\n"))
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("err = %v, want it to wrap io.ErrClosedPipe", err)
	}
}

// chunkWriter passes every Write in pieces, as a pipe may; a Writer must
// still not interleave frames from concurrent callers.
type chunkWriter struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += 7 {
		c.mu.Lock()
		c.out.Write(p[i:min(i+7, len(p))])
		c.mu.Unlock()
	}
	return len(p), nil
}

func TestWriterConcurrent(t *testing.T) {
	cw := &chunkWriter{}
	w := NewWriter(cw)
	var wg sync.WaitGroup
	const writers, each = 8, 200
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				f := fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`+"\n", g, i, strings.Repeat("p", (g*31+i)%97))
				if err := w.WriteFrame([]byte(f)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r := NewReader(&cw.out, 1024)
	n := 0
	for {
		f, err := r.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(string(f), `{"g":%d,"i":%d,"pad":%s`, &g, &i, &pad); err != nil {
			t.Fatalf("interleaved frame %q: %v", f, err)
		}
		if want := `"` + strings.Repeat("p", (g*31+i)%97) + `"}`; pad != want {
			t.Fatalf("interleaved frame %q", f)
		}
		n++
	}
	if n != writers*each {
		t.Errorf("read %d frames, want %d", n, writers*each)
	}
}

// countWriter records each Write as one element.
type countWriter struct {
	writes [][]byte
	fail   error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func TestWriterHold(t *testing.T) {
	big := line(CoalesceBytes + 10)
	tests := []struct {
		name  string
		steps []string // "hold", "release", or a frame to write
		want  []string // the writes that reach the stream, in order
	}{
		{"unheld frames are written one by one", []string{"a\n", "b\n"}, []string{"a\n", "b\n"}},
		{"held frames leave together at release", []string{"hold", "a\n", "b\r\n", "c\n", "release", "d\n"}, []string{"a\nb\r\nc\n", "d\n"}},
		{"nested holds write at the last release", []string{"hold", "a\n", "hold", "b\n", "release", "c\n", "release"}, []string{"a\nb\nc\n"}},
		{"release with nothing gathered writes nothing", []string{"hold", "release"}, nil},
		{"a frame over the coalescing size flushes and goes alone", []string{"hold", "a\n", big, "b\n", "release"}, []string{"a\n", big, "b\n"}},
		{"the buffer is written before it would exceed the size", []string{"hold", line(CoalesceBytes - 4), "xyzw\n", "release"}, []string{line(CoalesceBytes - 4), "xyzw\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cw := &countWriter{}
			w := NewWriter(cw)
			for _, st := range tc.steps {
				var err error
				switch st {
				case "hold":
					w.Hold()
				case "release":
					err = w.Release()
				default:
					err = w.WriteFrame([]byte(st))
				}
				if err != nil {
					t.Fatalf("%q: %v", st, err)
				}
			}
			if len(cw.writes) != len(tc.want) {
				t.Fatalf("%d writes, want %d", len(cw.writes), len(tc.want))
			}
			for i := range tc.want {
				if string(cw.writes[i]) != tc.want[i] {
					t.Errorf("write %d = %.40q (%d bytes), want %.40q (%d bytes)", i, cw.writes[i], len(cw.writes[i]), tc.want[i], len(tc.want[i]))
				}
			}
		})
	}
}

// TestWriterHoldError: a failed write while flushing a held buffer is
// returned by Release and by every later call, and nothing else is written.
func TestWriterHoldError(t *testing.T) {
	cw := &countWriter{}
	w := NewWriter(cw)
	w.Hold()
	if err := w.WriteFrame([]byte("a\n")); err != nil {
		t.Fatalf("buffered write: %v", err)
	}
	cw.fail = io.ErrClosedPipe
	if err := w.Release(); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Release = %v, want io.ErrClosedPipe", err)
	}
	cw.fail = nil
	if err := w.WriteFrame([]byte("b\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("WriteFrame after a failure = %v, want the earlier io.ErrClosedPipe", err)
	}
	w.Hold()
	if err := w.Release(); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Release after a failure = %v, want the earlier io.ErrClosedPipe", err)
	}
	if len(cw.writes) != 0 {
		t.Errorf("%d writes reached the stream after the failure", len(cw.writes))
	}
}

// TestHasFrame: HasFrame is true exactly when a whole line is buffered.
func TestHasFrame(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, 1024)
	go func() {
		pw.Write([]byte("{\"a\":1}\n{\"b\":2}\n{\"c\""))
		pw.Write([]byte(":3}\n"))
		pw.Close()
	}()
	if r.HasFrame() {
		t.Fatal("HasFrame before anything was read")
	}
	f, err := r.ReadFrame()
	if err != nil || string(f) != "{\"a\":1}\n" {
		t.Fatalf("first frame %q, %v", f, err)
	}
	if !r.HasFrame() {
		t.Error("HasFrame false with a whole second line buffered")
	}
	if f, err = r.ReadFrame(); err != nil || string(f) != "{\"b\":2}\n" {
		t.Fatalf("second frame %q, %v", f, err)
	}
	if r.HasFrame() {
		t.Error("HasFrame true with only part of a line buffered")
	}
	if f, err = r.ReadFrame(); err != nil || string(f) != "{\"c\":3}\n" {
		t.Fatalf("third frame %q, %v", f, err)
	}
	if r.HasFrame() {
		t.Error("HasFrame true at end of input")
	}
}

// bom is a UTF-8 byte order mark, spelt out (not wire.BOM) so that the
// tests say what they expect.
const bom = "\xEF\xBB\xBF"
