package verify

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
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

// objectParser parses one line strictly as exactly one JSON object: valid
// UTF-8, no duplicate member names at any depth, nothing but whitespace
// after the value (jsontext defaults).
type objectParser struct {
	rd  bytes.Reader
	dec jsontext.Decoder
}

// errNotObject is returned by members for JSON that is valid but not an
// object.
var errNotObject = errors.New("not a JSON object")

// errTrailing is returned by members when something follows the value.
var errTrailing = errors.New("data after the JSON value")

// members validates body and calls fn, in order, for each top-level member
// with its name and raw value (a sub-slice of body, valid as long as body
// is). fn is called only for members read before an error; callers must
// discard what they saw when members returns an error.
func (p *objectParser) members(body []byte, fn func(name string, raw []byte)) error {
	p.rd.Reset(body)
	p.dec.Reset(&p.rd)
	v, err := p.dec.ReadValue()
	if err != nil {
		return err
	}
	// v is only valid until the next read: take what is needed now.
	kind, end := v.Kind(), int(p.dec.InputOffset())
	obj := body[end-len(v) : end]
	if _, err := p.dec.ReadToken(); err != io.EOF {
		if err == nil {
			return errTrailing
		}
		return err
	}
	if kind != '{' {
		return errNotObject
	}
	p.rd.Reset(obj)
	p.dec.Reset(&p.rd)
	if _, err := p.dec.ReadToken(); err != nil {
		return err
	}
	for p.dec.PeekKind() != '}' {
		tok, err := p.dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String() // tok is voided by the next read
		v, err := p.dec.ReadValue()
		if err != nil {
			return err
		}
		end := int(p.dec.InputOffset())
		fn(name, obj[end-len(v):end])
	}
	return nil
}

// syntaxReason describes a members error without quoting the input.
func syntaxReason(err error) string {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, errNotObject), errors.Is(err, errTrailing):
		return err.Error()
	case errors.As(err, &se):
		if errors.Is(se, jsontext.ErrDuplicateName) {
			return "duplicate member name (strict JSON forbids it)"
		}
		msg := se.Err.Error()
		if bytes.Contains([]byte(msg), []byte("UTF-8")) {
			return "invalid UTF-8"
		}
		return "invalid JSON at byte " + itoa(se.ByteOffset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "empty or incomplete JSON"
	}
	return "invalid JSON"
}
