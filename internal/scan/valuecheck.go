package scan

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// valueCheck is a necessary condition for a semi-generic rule's value
// part (glRule.suf) to match, tested before the regex: gitleaks'
// generated value parts all read
//
//	OP [\x60'"\s=]{0,5} ( VALUE ) (?:[\x60'"\s;]|\\[nr]|$)
//
// with OP at most 4 bytes, so the value starts 1 to 9 bytes after the
// operator, is a run of bytes VALUE can hold (class) at least min bytes
// long, and is followed by a terminator, a backslash or the end of the
// window. Benign code fails it at once (`token := req.Header.Get(...)`:
// the run "req.Header.Get" is followed by "("), where Go's backtracker
// took 1-1.5 µs to fail. A value part of another shape gets no check
// (ok false).
type valueCheck struct {
	ok    bool
	min   int
	class [256]bool
}

const (
	valuePrefix = semiGenericOp + `[\x60'"\s=]{0,5}(`
	valueSuffix = `)(?:[\x60'"\s;]|\\[nr]|$)`
)

// newValueCheck derives the check from the value part's source (body
// from the operator on, as split takes it) under flags ("" or "(?i)").
func newValueCheck(flags, body string) valueCheck {
	if !strings.HasPrefix(body, valuePrefix) || !strings.HasSuffix(body, valueSuffix) {
		return valueCheck{}
	}
	v := body[len(valuePrefix) : len(body)-len(valueSuffix)]
	re, err := syntax.Parse(flags+"(?:"+v+")", syntax.Perl)
	if err != nil {
		return valueCheck{}
	}
	var c valueCheck
	if !c.addClass(re) {
		return valueCheck{}
	}
	c.min, c.ok = minLen(re), true
	return c
}

// addClass adds every byte a match of re can hold; false for a node it
// does not know (no check is then made).
func (c *valueCheck) addClass(re *syntax.Regexp) bool {
	high := func() {
		for b := 0x80; b < 0x100; b++ {
			c.class[b] = true
		}
	}
	addRune := func(r rune, fold bool) {
		for f := r; ; {
			if f < 0x80 {
				c.class[f] = true
			} else {
				high()
			}
			if !fold {
				break
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			addRune(r, re.Flags&syntax.FoldCase != 0)
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= hi && r < 0x80; r++ {
				c.class[r] = true
			}
			if hi >= 0x80 {
				high()
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range c.class {
			c.class[b] = true
		}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat,
		syntax.OpConcat, syntax.OpAlternate:
		for _, s := range re.Sub {
			if !c.addClass(s) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// minLen is a lower bound of the length in bytes of a match of re (one
// byte per rune).
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLen(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minLen(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // star, quest, empty-width
}

// may reports whether the value part can match w (the window from the
// operator on); false means it cannot.
func (c *valueCheck) may(w string) bool {
	if !c.ok {
		return true
	}
	for p := 1; p <= 9 && p <= len(w); p++ {
		r := p
		for r < len(w) && c.class[w[r]] {
			// A byte the value can hold that also ends it: the value
			// may stop here.
			if r-p >= c.min && valueEnd(w[r]) {
				return true
			}
			r++
		}
		if r-p >= c.min && (r == len(w) || valueEnd(w[r])) {
			return true
		}
	}
	return false
}

// valueEnd: a byte the value part's terminator can start with.
func valueEnd(b byte) bool {
	switch b {
	case '`', '\'', '"', ';', '\\', ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}
