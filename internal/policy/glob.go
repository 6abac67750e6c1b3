// The matcher below is adapted from Go's path.Match:
//
// Copyright 2010 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file of the Go distribution.

package policy

import (
	"path"
	"strings"
	"unicode/utf8"
)

// glob is a tool name pattern in path.Match syntax, validated at load time.
//
// Unlike path.Match, '*' and '?' also match '/': tool names are chosen by the
// (untrusted) server, and a server must not be able to step around a rule for
// "*" by putting a slash in a tool name.
type glob struct {
	pattern string
	kind    globKind
}

type globKind uint8

const (
	globAny     globKind = iota // "*", "**", ...: every name
	globLiteral                 // no metacharacters: string equality
	globPattern                 // general case
)

// compileGlob validates pattern with path.Match's grammar.
func compileGlob(pattern string) (glob, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return glob{}, err
	}
	g := glob{pattern: pattern, kind: globPattern}
	switch {
	case pattern != "" && strings.Trim(pattern, "*") == "":
		g.kind = globAny
	case !strings.ContainsAny(pattern, `*?[\`):
		g.kind = globLiteral
	}
	return g, nil
}

func (g glob) match(name string) bool {
	switch g.kind {
	case globAny:
		return true
	case globLiteral:
		return name == g.pattern
	}
	return globMatch(g.pattern, name)
}

// globMatch is path.Match for a pattern already known to be well formed,
// with '*' and '?' matching any character including '/'.
func globMatch(pattern, name string) bool {
Pattern:
	for len(pattern) > 0 {
		var star bool
		var chunk string
		star, chunk, pattern = scanChunk(pattern)
		if star && chunk == "" {
			// A trailing * matches the rest of the name.
			return true
		}
		// Look for a match at the current position.
		t, ok := matchChunk(chunk, name)
		// If this is the last chunk, the name must be exhausted; otherwise
		// a later position could still match through the star.
		if ok && (len(t) == 0 || len(pattern) > 0) {
			name = t
			continue
		}
		if star {
			// Look for a match skipping i+1 bytes.
			for i := 0; i < len(name); i++ {
				t, ok := matchChunk(chunk, name[i+1:])
				if ok {
					if len(pattern) == 0 && len(t) > 0 {
						continue
					}
					name = t
					continue Pattern
				}
			}
		}
		return false
	}
	return len(name) == 0
}

// scanChunk returns the next segment of pattern: a non-star string, possibly
// preceded by a star.
func scanChunk(pattern string) (star bool, chunk, rest string) {
	for len(pattern) > 0 && pattern[0] == '*' {
		pattern = pattern[1:]
		star = true
	}
	inrange := false
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
		case '[':
			inrange = true
		case ']':
			inrange = false
		case '*':
			if !inrange {
				return star, pattern[:i], pattern[i:]
			}
		}
	}
	return star, pattern, ""
}

// matchChunk reports whether chunk (literals, classes and '?') matches the
// beginning of s, and returns the rest of s. The chunk is well formed.
func matchChunk(chunk, s string) (rest string, ok bool) {
	for len(chunk) > 0 {
		if len(s) == 0 {
			return "", false
		}
		switch chunk[0] {
		case '[':
			r, n := utf8.DecodeRuneInString(s)
			s = s[n:]
			chunk = chunk[1:]
			negated := false
			if len(chunk) > 0 && chunk[0] == '^' {
				negated = true
				chunk = chunk[1:]
			}
			match := false
			nrange := 0
			for {
				if len(chunk) > 0 && chunk[0] == ']' && nrange > 0 {
					chunk = chunk[1:]
					break
				}
				var lo, hi rune
				lo, chunk = getEsc(chunk)
				hi = lo
				if chunk[0] == '-' {
					hi, chunk = getEsc(chunk[1:])
				}
				match = match || lo <= r && r <= hi
				nrange++
			}
			if match == negated {
				return "", false
			}
		case '?':
			_, n := utf8.DecodeRuneInString(s)
			s = s[n:]
			chunk = chunk[1:]
		case '\\':
			chunk = chunk[1:]
			fallthrough
		default:
			if chunk[0] != s[0] {
				return "", false
			}
			s = s[1:]
			chunk = chunk[1:]
		}
	}
	return s, true
}

// getEsc returns a possibly escaped character of a well-formed class.
func getEsc(chunk string) (r rune, nchunk string) {
	if chunk[0] == '\\' {
		chunk = chunk[1:]
	}
	r, n := utf8.DecodeRuneInString(chunk)
	return r, chunk[n:]
}
