// Package wire frames the stdio transport: LF-delimited lines of any length up
// to a configured limit, returned exactly as they arrived (MCP 2025-11-25
// "Transports", stdio: messages are delimited by newlines).
//
// A frame is the bytes of one line including its terminator, which is "\n"
// or "\r\n" as sent; nothing is trimmed, decoded or re-encoded, except that
// a UTF-8 byte order mark as the very first bytes of the stream is in no
// frame (see [Reader]). There is no 64 KiB scanner limit: a line may be as
// long as the configured maximum.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxFrameBytes is the default frame limit: 16 MiB, terminator
// included.
const DefaultMaxFrameBytes = 16 << 20

// readChunk is the size of the bufio.Reader under a Reader: lines shorter
// than this are returned without any extra copy.
const readChunk = 64 << 10

// FrameTooLargeError reports a line longer than the limit. The line has been
// consumed and discarded up to and including its LF (or to end of input);
// reading may continue with the next frame.
type FrameTooLargeError struct {
	// Size is the full length of the discarded line in bytes, terminator
	// included.
	Size int64
	// Limit is the configured maximum frame size in bytes.
	Limit int
	// Prefix holds the first bytes of the discarded line (at most
	// PrefixBytes), so that a caller can try to find the JSON-RPC id and
	// address an error to the sender.
	Prefix []byte
}

// PrefixBytes is how many leading bytes of an oversized frame are kept in
// FrameTooLargeError.Prefix.
const PrefixBytes = 4096

// Error returns the discarded size and the limit, in bytes.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds the limit of %d bytes", e.Size, e.Limit)
}

// ErrFrameTooLarge is matched by errors.Is for every *FrameTooLargeError.
var ErrFrameTooLarge = errors.New("frame exceeds the limit")

// Is makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
const BOM = "\xEF\xBB\xBF"

// Reader reads frames from a byte stream. It is not safe for concurrent use.
//
// A UTF-8 byte order mark (EF BB BF) as the very first bytes of the stream
// is not part of any frame: it is skipped, and the first frame is the rest
// of the first line (RFC 8259 §8.1 lets a parser ignore it; MCP stdio
// messages are UTF-8 JSON, which must not carry one). Only the start of the
// stream is special: a byte order mark at the start of any later line, or
// anywhere inside one, is part of that frame as received, and the strict
// parse refuses it.
//
// Why skip it rather than pass it on: the official SDKs' stdio transports
// cannot read a line that starts with one, so a frame forwarded with it
// would be lost at the peer. Read (not copied), at their snapshots of
// August 2026:
//   - modelcontextprotocol/typescript-sdk
//     packages/core-internal/src/shared/stdio.ts (ReadBuffer.readMessage):
//     Buffer.toString keeps U+FEFF, JSON.parse throws a SyntaxError, and the
//     line is skipped as non-JSON output (the request then times out; seen
//     with @modelcontextprotocol/server-everything 2026.8.31: a
//     BOM-prefixed initialize got no answer, the ping after it did);
//   - modelcontextprotocol/go-sdk mcp/transport.go (newIOConn): an
//     encoding/json Decoder over the stream fails on the first byte and the
//     connection's read loop ends;
//   - modelcontextprotocol/python-sdk src/mcp/server/stdio.py and
//     src/mcp/client/stdio.py: lines are decoded as "utf-8" (not
//     "utf-8-sig"), so U+FEFF stays, pydantic's validate_json raises, and
//     the exception is passed to the session, which logs it and answers
//     nothing.
//
// The Rust SDK (rmcp 1.7, modelcontextprotocol/rust-sdk pull request 833)
// strips a leading byte order mark, and typescript-sdk pull requests 2790
// and 2796 (open) propose the same. So with Gatehouse in between, every peer
// reads the first frame exactly as Gatehouse parsed and decided it: without
// the mark.
type Reader struct {
	br    *bufio.Reader
	limit int
	buf   []byte
	// started is set once the first bytes of the stream have been looked
	// at for a byte order mark; bom when one was skipped.
	started, bom bool
}

// NewReader returns a Reader over r that accepts frames of at most maxFrame
// bytes, terminator included. maxFrame <= 0 means DefaultMaxFrameBytes.
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	return &Reader{br: bufio.NewReaderSize(r, readChunk), limit: maxFrame}
}

// Limit returns the maximum frame size in bytes.
func (r *Reader) Limit() int { return r.limit }

// SkippedBOM reports whether the stream started with a UTF-8 byte order
// mark, which ReadFrame skipped (it is in no frame).
func (r *Reader) SkippedBOM() bool { return r.bom }

// skipBOM drops a byte order mark from the start of line when line is the
// first thing read from the stream.
func (r *Reader) skipBOM(line []byte) []byte {
	if r.started || len(line) == 0 {
		return line
	}
	r.started = true
	if bytes.HasPrefix(line, []byte(BOM)) {
		r.bom = true
		return line[len(BOM):]
	}
	return line
}

// DropFrame lets go of the last frame ReadFrame returned, so that the
// memory of a long one can be freed before the next ReadFrame (which would
// drop it too). The frame must not be used afterwards.
func (r *Reader) DropFrame() { r.buf = nil }

// HasFrame reports whether a whole line (one ending in LF) is already
// buffered, so that the next ReadFrame returns without reading from the
// underlying stream. A relay loop uses it to coalesce its writes while it
// works through frames that arrived together (see Writer.Hold). It never
// reads; it scans only the buffered bytes up to the first LF.
func (r *Reader) HasFrame() bool {
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n) // never reads: n bytes are buffered
	return bytes.IndexByte(b, '\n') >= 0
}

// ReadFrame returns the next frame: one line including its LF (and the CR
// before it, if any). The returned slice is valid only until the next call.
//
// At end of input, a final line without LF is returned as a frame with a nil
// error, and the next call returns io.EOF. A line longer than the limit is
// discarded to its LF and reported as *FrameTooLargeError; the Reader stays
// usable. Other errors are those of the underlying reader.
//
// A byte order mark at the very start of the stream is skipped (see
// [Reader]): it counts toward no frame and no limit. A stream that holds
// only a byte order mark has no frame.
func (r *Reader) ReadFrame() ([]byte, error) {
	// The previous long frame's buffer is not kept: one big frame must not
	// pin its memory for the rest of the session.
	r.buf = nil
	line, err := r.br.ReadSlice('\n')
	line = r.skipBOM(line)
	if err == nil {
		if len(line) > r.limit {
			return nil, r.tooLarge(line, int64(len(line)), true)
		}
		return line, nil
	}
	if err != bufio.ErrBufferFull {
		if len(line) > 0 && err == io.EOF {
			if len(line) > r.limit {
				return nil, r.tooLarge(line, int64(len(line)), true)
			}
			return line, nil
		}
		return nil, err
	}
	// A long line: collect the reader's chunks in a spill up to the limit,
	// then join them once into a buffer of exactly the frame's size. The
	// spill gives its memory back while joining (spill.go), so that a frame
	// of n bytes costs about n bytes at its peak, not 2n.
	if len(line) > r.limit {
		// A limit below the read buffer's size: refused already.
		return nil, r.tooLarge(line, int64(len(line)), false)
	}
	sp := newSpill(r.limit)
	defer sp.free()
	sp.add(line)
	for {
		line, err = r.br.ReadSlice('\n')
		if sp.size()+len(line) > r.limit {
			total := int64(sp.size() + len(line))
			prefix := sp.prefix(PrefixBytes)
			if len(prefix) < PrefixBytes {
				prefix = append(prefix, line[:min(len(line), PrefixBytes-len(prefix))]...)
			}
			// The line ended unless the chunk just read filled the buffer.
			return nil, r.tooLarge(prefix, total, err != bufio.ErrBufferFull)
		}
		switch err {
		case nil, io.EOF:
			r.buf = make([]byte, sp.size()+len(line))
			n := sp.join(r.buf)
			copy(r.buf[n:], line)
			return r.buf, nil
		case bufio.ErrBufferFull:
			sp.add(line)
		default:
			return nil, err
		}
	}
}

// tooLarge discards the rest of the current line (unless ended is true) and
// builds the error. seen counts the bytes of the line consumed so far.
func (r *Reader) tooLarge(head []byte, seen int64, ended bool) error {
	e := &FrameTooLargeError{Limit: r.limit, Prefix: append([]byte(nil), head[:min(len(head), PrefixBytes)]...)}
	size := seen
	if !ended {
		for {
			line, err := r.br.ReadSlice('\n')
			size += int64(len(line))
			if err != bufio.ErrBufferFull {
				break
			}
		}
	}
	e.Size = size
	return e
}

// CoalesceBytes is the most a held Writer buffers before it writes anyway:
// 64 KiB, the capacity of a Linux pipe.
const CoalesceBytes = 64 << 10

// Writer writes whole frames to a byte stream. It is safe for concurrent
// use: each frame is written whole and frames keep the order of the
// WriteFrame calls.
//
// Normally every WriteFrame is one write to the stream. While the Writer is
// held (Hold), frames are gathered in a buffer and written together when
// the last holder calls Release, or earlier when the buffer would exceed
// CoalesceBytes; a frame larger than that is written by itself. A relay
// loop holds its destination while it has more input already buffered, so
// that frames arriving together leave together, in one write, with no
// added delay for a frame that arrives alone.
//
// A failed write makes the Writer fail: that WriteFrame or Release, and
// every later one, returns the error, and nothing more is written.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	holds int
	err   error
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFrame writes frame exactly as given (the caller includes the
// terminator), or while the Writer is held appends it to the buffer; frame
// is not retained after WriteFrame returns. It returns the underlying
// writer's error, wrapped, or the error of an earlier failed write. While
// held, a nil error means the frame was buffered: a failure to write it is
// reported by a later call.
func (w *Writer) WriteFrame(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.holds == 0 {
		return w.write(frame)
	}
	if len(w.buf)+len(frame) > CoalesceBytes {
		if err := w.flush(); err != nil {
			return err
		}
		if len(frame) > CoalesceBytes {
			return w.write(frame)
		}
	}
	w.buf = append(w.buf, frame...)
	return nil
}

// Hold starts (or joins) a period during which frames are gathered rather
// than written one by one. Every Hold must be followed by one Release.
func (w *Writer) Hold() {
	w.mu.Lock()
	w.holds++
	w.mu.Unlock()
}

// Release ends one Hold; when no holder is left it writes what was
// gathered, in one write. It returns the write's error, wrapped, or the
// error of an earlier failed write.
func (w *Writer) Release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds > 0 {
		w.holds--
	}
	if w.err != nil {
		return w.err
	}
	if w.holds == 0 {
		return w.flush()
	}
	return nil
}

// flush writes the buffer (w.mu held).
func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.write(w.buf)
	if cap(w.buf) > 2*CoalesceBytes {
		w.buf = nil // a one-off big buffer is not kept
	} else {
		w.buf = w.buf[:0]
	}
	return err
}

// write writes b to the stream (w.mu held) and makes a failure sticky.
func (w *Writer) write(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("write frame: %w", err)
		w.buf = nil
		return w.err
	}
	return nil
}
