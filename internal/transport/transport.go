// Package transport is the seam between the gateway's session and the
// transports that carry MCP messages: a Conn is a message-level,
// byte-exact connection to one peer (the client, or one upstream server).
// The session reads Frames from one Conn and writes frames to another; it
// knows nothing of processes, pipes or HTTP.
//
// A Frame carries the exact bytes of one message as it arrived and the one
// strict parse of them (jsonrpc.Parse), done by the Conn as it reads: the
// session and the stages after it read the parse, never the bytes again.
// A Frame's slices alias the Conn's read buffer and are valid until the
// next Read, unless the Frame is retained (Retain), which is the one
// explicit way a frame outlives its read.
//
// The implementations here: Stream, NDJSON over an io.Reader and an
// io.Writer (the stdio transport of every MCP revision, "Transports" page:
// one JSON-RPC message per line, no embedded newlines), which the stdio
// front end builds over the client's stdin/stdout and the child server's
// pipes; and Pipe, an in-memory pair of Streams for tests.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// Frame is one message read from a Conn.
type Frame struct {
	// Raw is the exact bytes received, line terminator included ("\n" or
	// "\r\n" as sent; none for a final line at end of input).
	Raw []byte
	// Msg is the strict parse of Raw; its slices alias Raw. It is the zero
	// Message when Err is set.
	Msg jsonrpc.Message
	// Err is why Raw failed the strict parse, nil when it passed: the
	// frame is then not to be forwarded, and Err.ID (when present) is the
	// id to address the error to.
	Err *jsonrpc.Error

	release func() // gives the read buffer back (big frames); nil when retained
}

// NewFrame parses raw (one message, terminator included) into a Frame that
// aliases raw. It is how a transport that has the bytes of one message
// makes its Frame, and how tests make one.
func NewFrame(raw []byte) *Frame {
	f := &Frame{Raw: raw}
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		f.Err = err.(*jsonrpc.Error)
	} else {
		f.Msg = m
	}
	return f
}

// Retain returns a Frame that owns its bytes: a copy of Raw, parsed again
// so that Msg aliases the copy. The copy stays valid after later Reads. It
// costs a copy and a parse of the frame; the session retains only frames
// that must wait (a call held for a catalog fetch, say).
func (f *Frame) Retain() *Frame {
	return NewFrame(append([]byte(nil), f.Raw...))
}

// Done tells the Conn that the frame is no longer used: the memory of a
// big frame is given back before the next Read. f must not be used
// afterwards. Calling Done is optional; the next Read does the same.
func (f *Frame) Done() {
	if f.release != nil {
		f.release()
		f.release = nil
	}
}

// Conn is a message-level connection to one peer.
//
// Read is called from one goroutine at a time. It returns the next frame,
// or io.EOF when the peer's stream ended, or a *wire.FrameTooLargeError for
// a message over the limit (discarded; reading may go on), or the
// transport's error. Close unblocks a Read where the operating system
// allows it (pipes and sockets; not a terminal). ctx bounds the wait for a
// frame where the transport can honour it; Stream reads from a blocking
// stream and honours it only between frames.
//
// Write sends raw, the exact bytes of one or more whole messages with
// their terminators, and is safe for concurrent use: concurrent writes do
// not interleave. A failed write fails the Conn: that and every later
// Write return an error.
//
// Close releases the Conn; it is safe to call more than once.
type Conn interface {
	Read(ctx context.Context) (*Frame, error)
	Write(ctx context.Context, raw []byte) error
	Close() error
}

// Buffered is implemented by a Conn that can tell whether a whole frame is
// already buffered, so that the next Read returns without waiting. A relay
// loop uses it to gather the writes of frames that arrived together.
type Buffered interface {
	Buffered() bool
}

// Holder is implemented by a Conn whose writes can be gathered: between
// Hold and the matching Release, writes are buffered (up to
// wire.CoalesceBytes) and leave together in one write at the last
// Release. Release returns the write's error.
type Holder interface {
	Hold()
	Release() error
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("transport: connection closed")

// Stream is a Conn over a byte stream carrying one JSON-RPC message per
// line (the stdio transport). It implements Buffered and Holder.
type Stream struct {
	rd     *wire.Reader
	wr     *wire.Writer
	closer func() error

	closeOnce sync.Once
	closeErr  error
}

var (
	_ Conn     = (*Stream)(nil)
	_ Buffered = (*Stream)(nil)
	_ Holder   = (*Stream)(nil)
)

// NewStream returns a Stream reading frames of at most maxFrame bytes
// (terminator included; <= 0 means wire.DefaultMaxFrameBytes) from r and
// writing to w. Either may be nil for a one-way Stream: Read then returns
// io.EOF, Write ErrClosed. closer, when non-nil, is what Close calls (for
// the stdio front end: closing the pipes); it is called once.
func NewStream(r io.Reader, w io.Writer, maxFrame int, closer func() error) *Stream {
	s := &Stream{closer: closer}
	if r != nil {
		s.rd = wire.NewReader(r, maxFrame)
	}
	if w != nil {
		s.wr = wire.NewWriter(w)
	}
	return s
}

// Read returns the next line as a Frame; see Conn. The Frame's slices are
// valid until the next Read.
func (s *Stream) Read(ctx context.Context) (*Frame, error) {
	if s.rd == nil {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, err := s.rd.ReadFrame()
	if err != nil {
		return nil, err
	}
	f := NewFrame(raw)
	if len(raw) >= BigFrame {
		f.release = s.rd.DropFrame
	}
	return f, nil
}

// BigFrame is the frame size in bytes from which a Stream lets go of a
// frame's buffer when the frame is Done, rather than at the next Read: a
// 16 MiB frame must not stay pinned while the loop waits for the next one.
const BigFrame = 1 << 20

// Buffered reports whether a whole line is already buffered.
func (s *Stream) Buffered() bool { return s.rd != nil && s.rd.HasFrame() }

// Write writes raw exactly as given, in one write unless held; see Conn.
func (s *Stream) Write(_ context.Context, raw []byte) error {
	if s.wr == nil {
		return ErrClosed
	}
	if err := s.wr.WriteFrame(raw); err != nil {
		return fmt.Errorf("transport: write: %w", err)
	}
	return nil
}

// Hold starts (or joins) a period of gathered writes (wire.Writer.Hold).
func (s *Stream) Hold() {
	if s.wr != nil {
		s.wr.Hold()
	}
}

// Release ends one Hold and writes what was gathered when no holder is
// left (wire.Writer.Release).
func (s *Stream) Release() error {
	if s.wr == nil {
		return nil
	}
	if err := s.wr.Release(); err != nil {
		return fmt.Errorf("transport: write: %w", err)
	}
	return nil
}

// Close calls the closer given to NewStream, once, and returns its error.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		if s.closer != nil {
			s.closeErr = s.closer()
		}
	})
	return s.closeErr
}

// Pipe returns two connected in-memory Streams: what one writes, the
// other reads, byte for byte. Closing an end ends both directions for the
// other: its Read returns io.EOF once what was written is read, and its
// Write returns an error. For tests and in-process peers.
func Pipe(maxFrame int) (*Stream, *Stream) {
	ar, bw := io.Pipe() // b writes, a reads
	br, aw := io.Pipe() // a writes, b reads
	closeA := func() error { aw.Close(); ar.Close(); return nil }
	closeB := func() error { bw.Close(); br.Close(); return nil }
	return NewStream(ar, aw, maxFrame, closeA), NewStream(br, bw, maxFrame, closeB)
}
