package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// TestStreamReadsExactFrames reads streams of several frames and checks
// each frame's bytes, terminator included, and its parse.
func TestStreamReadsExactFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		raw   []string
		kinds []jsonrpc.Kind
		bad   []bool // frame failed the strict parse
	}{
		{"lf and crlf", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n",
			[]string{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n", "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n"},
			[]jsonrpc.Kind{jsonrpc.KindRequest, jsonrpc.KindNotification}, []bool{false, false}},
		{"final line without lf", `{"jsonrpc":"2.0","id":"a","result":{}}`,
			[]string{`{"jsonrpc":"2.0","id":"a","result":{}}`}, []jsonrpc.Kind{jsonrpc.KindResponse}, []bool{false}},
		{"invalid frame keeps its bytes and id", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\",\"method\":\"b\"}\nnot json\n",
			[]string{"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\",\"method\":\"b\"}\n", "not json\n"}, nil, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(strings.NewReader(tc.in), nil, 0, nil)
			for i, want := range tc.raw {
				f, err := s.Read(context.Background())
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if string(f.Raw) != want {
					t.Errorf("frame %d: raw %q, want %q", i, f.Raw, want)
				}
				if (f.Err != nil) != tc.bad[i] {
					t.Errorf("frame %d: parse error %v, want failed=%v", i, f.Err, tc.bad[i])
				}
				if f.Err == nil && f.Msg.Kind != tc.kinds[i] {
					t.Errorf("frame %d: kind %v, want %v", i, f.Msg.Kind, tc.kinds[i])
				}
			}
			if _, err := s.Read(context.Background()); err != io.EOF {
				t.Fatalf("after the frames: %v, want io.EOF", err)
			}
		})
	}
}

// TestStreamInvalidFrameID: a frame refused for duplicate names still has
// the id its error is addressed to.
func TestStreamInvalidFrameID(t *testing.T) {
	s := NewStream(strings.NewReader("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\",\"method\":\"b\"}\n"), nil, 0, nil)
	f, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.Err == nil || f.Err.ID.String() != "7" {
		t.Fatalf("Err %+v, want a parse error addressed to id 7", f.Err)
	}
}

// TestStreamOversizedFrameContinues: a frame over the limit is reported as
// *wire.FrameTooLargeError and the next frame is read.
func TestStreamOversizedFrameContinues(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", 200) + `"}}` + "\n"
	s := NewStream(strings.NewReader(big+"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"), nil, 100, nil)
	_, err := s.Read(context.Background())
	var tooLarge *wire.FrameTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 100 {
		t.Fatalf("first Read: %v, want *wire.FrameTooLargeError with limit 100", err)
	}
	f, err := s.Read(context.Background())
	if err != nil || f.Msg.ID.String() != "2" {
		t.Fatalf("second Read: %v %+v, want the ping with id 2", err, f)
	}
}

// TestRetainOutlivesRead: a retained frame keeps its bytes and parse after
// later Reads reuse the buffer; the unretained one aliases the buffer.
func TestRetainOutlivesRead(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"zzzzz/zzzz\",\"params\":{\"name\":\"b\"}}\n"
	s := NewStream(strings.NewReader(in), nil, 0, nil)
	f1, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kept := f1.Retain()
	want := string(f1.Raw)
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if string(kept.Raw) != want || kept.Msg.Method != "tools/call" || string(kept.Msg.Params) != `{"name":"a"}` {
		t.Fatalf("retained frame changed: %q method %q params %s", kept.Raw, kept.Msg.Method, kept.Msg.Params)
	}
	if &kept.Raw[0] == &f1.Raw[0] {
		t.Fatal("Retain did not copy")
	}
}

// countingWriter counts write calls.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(b)
}

// TestStreamHoldGathersWrites: held writes leave in one write at Release;
// unheld writes go one by one; bytes are unchanged either way.
func TestStreamHoldGathersWrites(t *testing.T) {
	w := &countingWriter{}
	s := NewStream(nil, w, 0, nil)
	ctx := context.Background()
	if err := s.Write(ctx, []byte("a\n")); err != nil {
		t.Fatal(err)
	}
	s.Hold()
	for _, f := range []string{"b\r\n", "c\n", "d\n"} {
		if err := s.Write(ctx, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if w.writes != 1 {
		t.Fatalf("%d writes while held, want 1 (the unheld one)", w.writes)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if w.writes != 2 || w.buf.String() != "a\nb\r\nc\nd\n" {
		t.Fatalf("%d writes, bytes %q; want 2 writes of a, then b c d together", w.writes, w.buf.String())
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestStreamWriteFailureFailsConn: a failed write is reported, wrapped,
// and so is every later one.
func TestStreamWriteFailureFailsConn(t *testing.T) {
	s := NewStream(nil, failingWriter{}, 0, nil)
	for i := 0; i < 2; i++ {
		if err := s.Write(context.Background(), []byte("x\n")); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write %d: %v, want io.ErrClosedPipe wrapped", i, err)
		}
	}
	if err := NewStream(nil, nil, 0, nil).Write(context.Background(), []byte("x\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write to a read-only Stream: %v, want ErrClosed", err)
	}
}

// TestPipe: what one end writes the other reads, byte for byte, and
// closing one end ends the other's Read with io.EOF.
func TestPipe(t *testing.T) {
	a, b := Pipe(0)
	ctx := context.Background()
	go func() {
		_ = a.Write(ctx, []byte("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n"))
	}()
	f, err := b.Read(ctx)
	if err != nil || string(f.Raw) != "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n" {
		t.Fatalf("Read %q %v", f.Raw, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.Read(ctx); err != io.EOF {
		t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
	}
	if err := b.Write(ctx, []byte("x\n")); err == nil {
		t.Fatal("Write to a closed peer succeeded")
	}
}

// TestStreamBuffered: Buffered is true only while a whole line waits.
func TestStreamBuffered(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewStream(pr, nil, 0, nil)
	go func() {
		_, _ = pw.Write([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n"))
	}()
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Buffered() {
		t.Fatal("second line arrived with the first but Buffered is false")
	}
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Buffered() {
		t.Fatal("nothing left but Buffered is true")
	}
}

// TestReadHonoursCancelledContext: a cancelled context ends Read before
// it reads.
func TestReadHonoursCancelledContext(t *testing.T) {
	s := NewStream(strings.NewReader("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"), nil, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read: %v, want context.Canceled", err)
	}
}

// FuzzNewFrame: a frame's retained copy has the same bytes and the same
// parse outcome, and never aliases the original.
func FuzzNewFrame(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"))
	f.Add([]byte("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\r\n"))
	f.Add([]byte("{\"id\":1,\"id\":2}\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fr := NewFrame(raw)
		kept := fr.Retain()
		if !bytes.Equal(kept.Raw, fr.Raw) || (kept.Err == nil) != (fr.Err == nil) {
			t.Fatalf("retained frame differs: %q err %v vs %q err %v", kept.Raw, kept.Err, fr.Raw, fr.Err)
		}
		if fr.Err == nil && (kept.Msg.Kind != fr.Msg.Kind || !bytes.Equal(kept.Msg.Raw, fr.Msg.Raw)) {
			t.Fatalf("retained parse differs")
		}
		if len(raw) > 0 && &kept.Raw[0] == &fr.Raw[0] {
			t.Fatal("Retain aliases the original")
		}
	})
}
