package verify

import (
	"bufio"
	"errors"
	"io"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// lineStatus says how a line ended.
type lineStatus uint8

const (
	lineComplete  lineStatus = iota // ended in LF
	lineTruncated                   // end of input before an LF
	lineTooLong                     // longer than the cap; its bytes were discarded
)

// lineReader reads LF-terminated lines with a per-line cap, reusing one
// buffer: memory stays bounded by the cap whatever the input size.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte
	num  int   // 1-based number of the line last returned
	size int64 // total bytes of the line last returned (also when too long)
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line including its LF (when complete). The slice is
// valid until the next call. It returns io.EOF at the end of input and any
// other read error as it is.
func (lr *lineReader) next() ([]byte, lineStatus, error) {
	lr.buf = lr.buf[:0]
	lr.size = 0
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.size += int64(len(chunk))
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			lr.num++
			if tooLong {
				return nil, lineTooLong, nil
			}
			return lr.buf, lineComplete, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if lr.size == 0 {
				return nil, 0, io.EOF
			}
			lr.num++
			if tooLong {
				return nil, lineTooLong, nil
			}
			return lr.buf, lineTruncated, nil
		default:
			return nil, 0, err
		}
	}
}

// objectParser parses one line as exactly one strict JSON object with
// strictjson, the project's one strict reader: valid UTF-8, no duplicate
// member names at any depth, nesting bounded, nothing but whitespace after
// the value.
//
// Names that differ only in case (strictjson.ErrFoldedDuplicate) are not a
// failure here, as they were not before strictjson: these lines are the
// gateway's own records, which carry a server's receipt as received, and a
// receipt with such names is recorded with a case_folded_name problem
// (evidence.Parse), not refused; refusing its line would make a log the
// gateway wrote unverifiable.
type objectParser struct{}

// members validates body and calls fn, in order, for each top-level member
// with its name and raw value (a sub-slice of body, valid as long as body
// is). fn is called only for members read before an error; callers must
// discard what they saw when members returns an error.
func (p *objectParser) members(body []byte, fn func(name string, raw []byte)) error {
	err := strictjson.Members(body, func(name string, raw []byte) error {
		fn(name, raw)
		return nil
	})
	if errors.Is(err, strictjson.ErrFoldedDuplicate) {
		return nil
	}
	return err
}

// syntaxReason describes a members error without quoting the input.
func syntaxReason(err error) string {
	var se *strictjson.Error
	switch {
	case errors.Is(err, strictjson.ErrKind):
		return "not a JSON object"
	case errors.Is(err, strictjson.ErrTrailing):
		return "data after the JSON value"
	case errors.Is(err, strictjson.ErrDuplicate):
		return "duplicate member name (strict JSON forbids it)"
	case errors.Is(err, strictjson.ErrUTF8):
		return "invalid UTF-8"
	case errors.Is(err, strictjson.ErrDepth):
		return "nesting too deep"
	case errors.As(err, &se) && se.Offset >= 0:
		return "invalid JSON at byte " + itoa(se.Offset)
	case errors.As(err, &se):
		return "empty or incomplete JSON"
	}
	return "invalid JSON"
}

// Line is one line of an NDJSON file as [EachLine] hands it over.
type Line struct {
	// Num is the 1-based line number.
	Num int
	// Bytes is the line without its LF; nil when Problem is set. It is
	// valid only during the callback.
	Bytes []byte
	// Problem is "" for a complete line within the cap, else why the
	// line cannot be read: "no LF at the end of the file (truncated)" or
	// "longer than N bytes".
	Problem string
}

// EachLine reads r as LF-terminated lines, each at most max bytes
// (terminator included; longer lines are discarded unread, so memory stays
// bounded by max), and calls fn for every line in order, a bad one
// included (Line.Problem). It stops at the end of input, at a read error
// (returned as it is) or at fn's first error (returned).
func EachLine(r io.Reader, max int, fn func(Line) error) error {
	lr := newLineReader(r, max)
	for {
		b, st, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		l := Line{Num: lr.num}
		switch st {
		case lineComplete:
			l.Bytes = b[:len(b)-1]
		case lineTruncated:
			l.Problem = "no LF at the end of the file (truncated)"
		case lineTooLong:
			l.Problem = "longer than " + itoa(int64(max)) + " bytes"
		}
		if err := fn(l); err != nil {
			return err
		}
	}
}

// ObjectMembers parses line as exactly one strict JSON object (the
// decision log's and receipts' strict reading: valid UTF-8, no duplicate
// member names, nothing after the value) and calls fn for each top-level
// member with its raw value (a sub-slice of line). Its error says what is
// wrong without quoting the input.
func ObjectMembers(line []byte, fn func(name string, raw []byte)) error {
	var p objectParser
	if err := p.members(line, fn); err != nil {
		return errors.New(syntaxReason(err))
	}
	return nil
}
