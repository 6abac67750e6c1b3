package policy

import (
	"path"
	"strings"
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

// slashStandIn replaces '/' in both the pattern and the name before
// path.Match runs, so that '*' and '?' also match it. U+FFFF is a Unicode
// noncharacter: no legitimate tool name holds it.
const slashStandIn = "\uffff"

// globMatch is path.Match for a pattern already known to be well formed,
// with '*' and '?' matching any character including '/'. A '/' is still
// matched by a literal '/' (escaped or in a class) but not by a class range
// that spans it, such as [!-0].
func globMatch(pattern, name string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", slashStandIn), strings.ReplaceAll(name, "/", slashStandIn))
	return err == nil && ok
}
