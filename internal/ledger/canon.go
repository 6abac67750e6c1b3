package ledger

import (
	"errors"
	"fmt"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
)

// The canonical-form check is jcs.Check (the project's one RFC 8785
// implementation): one pass over the bytes without building anything, the
// fast path of Append and ParseLeaf. It accepts exactly what
// jsontext.Value.Canonicalize leaves unchanged (jcs.FuzzCheck, and
// FuzzCheckCanonical here, hold the two together).

var errNotCanonical = errors.New("not canonical")

// canonScanner walks a leaf for ParseLeaf: the fixed parts are matched by
// ParseLeaf itself, the payload and strings are checked by a jcs.Scanner.
type canonScanner struct {
	b   []byte
	pos int
	js  jcs.Scanner
}

func (s *canonScanner) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errNotCanonical, what, s.pos)
}

// value checks the canonical value at s.pos and moves past it; on error
// s.pos is where the problem is.
func (s *canonScanner) value(int) error {
	end, err := s.js.Value(s.b, s.pos)
	s.pos = end
	return err
}

// str checks the canonical string at s.pos (on its opening quote), moves
// past it and returns its unescaped content, valid until the next call.
func (s *canonScanner) str(bool) ([]byte, error) {
	content, end, err := s.js.String(s.b, s.pos)
	s.pos = end
	return content, err
}

// checkCanonical is jcs.Check, under the name the ledger's tests (canon_test,
// entry_test: FuzzCheckCanonical) hold it to.
func checkCanonical(b []byte) error { return jcs.Check(b) }
