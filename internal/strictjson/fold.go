package strictjson

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Member names that differ only in case are a parser differential: a peer
// that decodes with a case-insensitive matcher (Go's encoding/json into a
// struct, for one, where the last match wins and Unicode simple folding
// makes "paramſ" match "params") reads a different value than the gateway
// did. The fold is lower(upper(name)).

// Fold returns name under the case folding of this package: ASCII
// lowercased, and for other names lower(upper(name)), which also maps
// U+017F (long s) to "s" and U+212A (Kelvin sign) to "k". Two member names
// are "equal under case folding" when their Folds are equal.
func Fold(name string) string { return foldKey(name) }

// FoldedDuplicate returns the first member name in body, in text order, that
// equals an earlier member name of the same object under case folding
// ([Fold]), at any depth, decoded from its JSON escapes; or "" when there is
// none. body must already be strict JSON but for folding (valid UTF-8,
// valid escapes, no exact duplicate names), as [Validate] checks it: it is
// scanned as raw bytes without being validated again. Any other body gets an
// unspecified result, but no panic.
//
// The work is linear in len(body): string values are skipped with
// bytes.IndexByte, and a name is compared one by one with the earlier names
// of its object while there are at most 16 of them, through a map of folded
// names beyond.
func FoldedDuplicate(body []byte) string { return foldedDuplicate(body) }

// foldKey is Fold.
func foldKey(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 {
			return strings.ToLower(strings.ToUpper(name))
		}
	}
	return strings.ToLower(name)
}

// linearNames is how many names an object may have before its folded names
// are looked up in a map instead of compared one by one.
const linearNames = 16

// foldStructural marks the bytes the scanner stops at; every other byte of a
// valid JSON text (whitespace, ':', numbers, literals) is skipped.
var foldStructural = [256]bool{'{': true, '}': true, '[': true, ']': true, ',': true, '"': true}

// foldName is the folded key of one member name: keys[off:end] when inKeys,
// else body[off:end] (a name that is its own key).
type foldName struct {
	off, end int
	inKeys   bool
}

// foldLevel is one open object or array.
type foldLevel struct {
	object   bool
	wantName bool // the next string of the object is a member name
	// folds is set once the object has a name that is not plain (has an
	// ASCII capital, a non-ASCII byte or an escape); until then no two of
	// its names can be equal under folding.
	folds bool
	names int                 // where the object's names begin in names
	keys  int                 // where its folded keys begin in keys
	seen  map[string]struct{} // the folded names, once there are many
}

// foldedDuplicate returns the first member name in body, in text order, that
// equals an earlier member name of the same object under case folding (as
// foldKey defines it), at any depth, decoded from its JSON escapes; or ""
// when there is none. body must be one strict JSON value, as jsontext
// accepts it by default (valid UTF-8, valid escapes, no exact duplicate
// names; surrounding whitespace allowed): it is scanned as raw bytes without
// being validated again. Any other body gets an unspecified result, but no
// panic.
//
// The work is linear in len(body): string values are skipped with
// bytes.IndexByte, and a name is compared one by one with the earlier names
// of its object while there are at most linearNames of them, through a map
// of folded names beyond. Names that are ASCII without escapes need no
// allocation, except as map keys; others are decoded and folded.
func foldedDuplicate(body []byte) string {
	var (
		stackBuf [16]foldLevel
		namesBuf [64]foldName
		keysBuf  [256]byte
	)
	stack, names, keys := stackBuf[:0], namesBuf[:0], keysBuf[:0]
	keyOf := func(n foldName) []byte {
		if n.inKeys {
			return keys[n.off:n.end]
		}
		return body[n.off:n.end]
	}
	for i := 0; i < len(body); {
		c := body[i]
		if !foldStructural[c] {
			i++
			continue
		}
		switch c {
		case '{':
			stack = append(stack, foldLevel{object: true, wantName: true, names: len(names), keys: len(keys)})
			i++
			continue
		case '[':
			stack = append(stack, foldLevel{names: len(names), keys: len(keys)})
			i++
			continue
		case '}', ']':
			if len(stack) == 0 {
				return "" // not valid JSON
			}
			top := &stack[len(stack)-1]
			names, keys = names[:top.names], keys[:top.keys]
			*top = foldLevel{} // drop its map
			stack = stack[:len(stack)-1]
			i++
			continue
		case ',':
			if len(stack) == 0 {
				return "" // not valid JSON
			}
			if top := &stack[len(stack)-1]; top.object {
				top.wantName = true
			}
			i++
			continue
		}
		// A string: a member name when its object wants one, else skipped.
		end := stringEnd(body, i)
		if end < 0 {
			return "" // not valid JSON
		}
		n := len(stack)
		if n == 0 || !stack[n-1].wantName {
			i = end
			continue
		}
		top := &stack[n-1]
		top.wantName = false
		quoted := body[i:end]
		i = end
		raw := quoted[1 : len(quoted)-1]
		var upper, high, escaped bool
		for _, c := range raw {
			switch {
			case c >= 0x80:
				high = true
			case c == '\\':
				escaped = true
			case 'A' <= c && c <= 'Z':
				upper = true
			}
		}
		var name foldName
		switch {
		case !upper && !high && !escaped:
			// Its own key. Distinct plain names never fold together, so
			// until the object has another kind there is nothing to
			// compare.
			name = foldName{off: end - 1 - len(raw), end: end - 1}
			if !top.folds {
				names = append(names, name)
				continue
			}
		default:
			start := len(keys)
			if escaped {
				// Strict JSON has valid escapes; on invalid ones
				// AppendUnquote still returns the text with U+FFFD.
				keys, _ = jsontext.AppendUnquote(keys, quoted)
			} else {
				keys = append(keys, raw...)
			}
			key := keys[start:]
			ascii := true
			for _, c := range key {
				if c >= utf8.RuneSelf {
					ascii = false
					break
				}
			}
			if ascii {
				// foldKey of an ASCII name: capitals lowercased.
				for j, c := range key {
					if 'A' <= c && c <= 'Z' {
						key[j] = c + ('a' - 'A')
					}
				}
			} else {
				keys = append(keys[:start], foldKey(string(key))...)
			}
			name = foldName{off: start, end: len(keys), inKeys: true}
			top.folds = true
		}
		key := keyOf(name)
		earlier := names[top.names:]
		if top.seen == nil && len(earlier) >= linearNames {
			top.seen = make(map[string]struct{}, 2*len(earlier))
			for _, e := range earlier {
				top.seen[string(keyOf(e))] = struct{}{}
			}
		}
		dup := false
		if top.seen != nil {
			if _, dup = top.seen[string(key)]; !dup {
				top.seen[string(key)] = struct{}{}
			}
		} else {
			for _, e := range earlier {
				if bytes.Equal(keyOf(e), key) {
					dup = true
					break
				}
			}
		}
		if dup {
			if escaped {
				s, _ := jsontext.AppendUnquote(nil, quoted)
				return string(s)
			}
			return string(raw)
		}
		names = append(names, name)
	}
	return ""
}

// stringEnd returns the index just after the closing quote of the JSON
// string that starts with the quote at body[i], or -1 if it has none. A
// quote ends the string when an even number of backslashes precedes it; each
// byte is looked at a bounded number of times.
func stringEnd(body []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(body[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		backslashes := 0
		for p := j - 1; p > i && body[p] == '\\'; p-- {
			backslashes++
		}
		j++
		if backslashes%2 == 0 {
			return j
		}
	}
}
