package policy

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// Error is one problem found while loading a policy file. [Parse] and [Load]
// return a single *Error, or several joined with errors.Join (sorted by line,
// one per line of the message); errors.As finds the first.
type Error struct {
	// File is the file name given to Parse or Load.
	File string
	// Line is the 1-based line the problem is on; 0 when unknown (some YAML
	// syntax errors).
	Line int
	// Rule is the id of the rule the problem is in, or "#N" (1-based
	// position in rules) for a rule without a usable id; empty outside rules.
	Rule string
	// Msg is the message, without location.
	Msg string
}

// Error formats e as "policy FILE:LINE: rule ID: message", leaving out
// ":LINE" when the line is unknown and "rule ID: " outside rules.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy ")
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Rule != "" {
		b.WriteString("rule ")
		b.WriteString(e.Rule)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads the policy file at path and parses it with [Parse], using path
// as the file name in errors. A read failure is returned as
// "policy PATH: <os error>".
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse decodes, validates and compiles a policy file (format in
// docs/policy.md). file names the source in errors only. Every problem found
// is reported as an [*Error] "policy FILE:LINE: [rule ID: ]message": YAML
// syntax, an empty file, several YAML documents, unknown or duplicate keys,
// values of the wrong type, a missing name, version, rule id, action or
// reason, a malformed or duplicate rule id, an unknown action or mode, an
// action where it has no meaning (redact or quarantine as the default,
// quarantine in scanning.actions, redact in drift), a malformed tool pattern,
// and a condition that does not compile or is not of type bool ("condition:
// <cel error>", on the line of the `when` key).
func Parse(file string, data []byte) (*Policy, error) {
	p := &parser{file: file}
	if root := p.decode(data); root != nil {
		pol := p.policy(root)
		if len(p.errs) == 0 {
			return pol, nil
		}
	}
	return nil, p.err()
}

type parser struct {
	file string
	errs []*Error
}

func (p *parser) errorf(line int, rule, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Rule: rule, Msg: oneLine(fmt.Sprintf(format, args...))})
}

// oneLine escapes control characters (CEL and YAML diagnostics can quote a
// newline from the source) so that every error is one line of text.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// err returns the collected errors, sorted by line (stable).
func (p *parser) err() error {
	slices.SortStableFunc(p.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	if len(p.errs) == 1 {
		return p.errs[0]
	}
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) yamlError(err error) {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.errorf(line, "", "%s", m[2])
		return
	}
	p.errorf(0, "", "%s", strings.TrimPrefix(msg, "yaml: "))
}

// decode returns the root mapping of the single YAML document in data, or
// nil after recording an error.
func (p *parser) decode(data []byte) (root *yaml.Node) {
	defer func() {
		// yaml.v3 is not known to panic on any input, but a policy loader
		// must not take the process down on a malformed file.
		if r := recover(); r != nil {
			root = nil
			p.errorf(0, "", "invalid YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			p.errorf(1, "", "empty policy file")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		p.errorf(extra.Line, "", "more than one YAML document")
		return nil
	case err != io.EOF:
		p.yamlError(err)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.errorf(1, "", "empty policy file")
		return nil
	}
	root = resolve(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		p.errorf(root.Line, "", "empty policy file")
		return nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root.Line, "", "top level must be a mapping, got %s", kindName(root))
		return nil
	}
	return root
}

// resolve follows aliases to the anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 64 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// kindName names the YAML type of n for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		switch t := n.ShortTag(); t {
		case "!!str":
			return "string"
		case "!!int":
			return "integer"
		case "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		default:
			return strings.TrimPrefix(t, "!!")
		}
	}
	return "alias"
}

// entry is one key of a mapping.
type entry struct {
	key, val *yaml.Node
}

// fields returns the entries of mapping m by key, reporting unknown keys,
// non-string keys and duplicate keys (where prefixes messages, rule labels
// them).
func (p *parser) fields(m *yaml.Node, rule, where string, allowed ...string) map[string]entry {
	out := make(map[string]entry, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.errorf(k.Line, rule, "%skeys must be strings, got %s", where, kindName(k))
			continue
		}
		name := k.Value
		if !slices.Contains(allowed, name) {
			p.errorf(k.Line, rule, "%sunknown key %q (want one of %s)", where, name, strings.Join(allowed, ", "))
			continue
		}
		if prev, dup := out[name]; dup {
			p.errorf(k.Line, rule, "%sduplicate key %q (first at line %d)", where, name, prev.key.Line)
			continue
		}
		out[name] = entry{k, v}
	}
	return out
}

// str returns the string value of e, reporting a value that is not a YAML
// string (or is blank, when required).
func (p *parser) str(e entry, rule, where string, required bool) (string, bool) {
	v := e.val
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		hint := ""
		if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
			hint = " (quote it)"
		}
		p.errorf(v.Line, rule, "%s%s must be a string, got %s%s", where, e.key.Value, kindName(v), hint)
		return "", false
	}
	if required && strings.TrimSpace(v.Value) == "" {
		p.errorf(v.Line, rule, "%s%s must not be empty", where, e.key.Value)
		return "", false
	}
	return v.Value, true
}

// isNull reports whether n is an explicit or implicit YAML null.
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// action validates an action value.
func (p *parser) action(e entry, rule, where string) (Action, bool) {
	s, ok := p.str(e, rule, where, true)
	if !ok {
		return "", false
	}
	switch a := Action(s); a {
	case ActionAllow, ActionDeny, ActionMonitor, ActionRedact, ActionQuarantine:
		return a, true
	default:
		p.errorf(e.val.Line, rule, "%sinvalid action %q (want allow, deny, monitor, redact or quarantine)", where, s)
	}
	return "", false
}

// enum validates a string value against its allowed values.
func (p *parser) enum(e entry, rule, where string, allowed ...string) (string, bool) {
	s, ok := p.str(e, rule, where, true)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, s) {
		p.errorf(e.val.Line, rule, "%sinvalid %s %q (want %s)", where, e.key.Value, s, orList(allowed))
		return "", false
	}
	return s, true
}

// orList formats ["a", "b", "c"] as "a, b or c".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func (p *parser) policy(root *yaml.Node) *Policy {
	pol := &Policy{defaultAction: ActionAllow, settings: defaultSettings, scanning: DefaultScanning(), drift: DefaultDrift(), lastShadow: noShadows}
	f := p.fields(root, "", "", "name", "version", "defaults", "receipts", "scanning", "drift", "rules")

	for _, k := range []string{"name", "version"} {
		e, ok := f[k]
		if !ok {
			p.errorf(root.Line, "", "missing %s", k)
			continue
		}
		s, _ := p.str(e, "", "", true)
		if k == "name" {
			pol.name = s
		} else {
			pol.version = s
		}
	}

	if e, ok := f["defaults"]; ok && !isNull(e.val) {
		p.defaults(e.val, pol)
	}

	if e, ok := f["receipts"]; ok && !isNull(e.val) {
		p.receipts(e.val, pol)
	}

	if e, ok := f["scanning"]; ok && !isNull(e.val) {
		p.scanningBlock(e.val, pol)
	}

	if e, ok := f["drift"]; ok && !isNull(e.val) {
		p.driftBlock(e.val, pol)
	}

	if e, ok := f["rules"]; ok && !isNull(e.val) {
		if e.val.Kind != yaml.SequenceNode {
			p.errorf(e.val.Line, "", "rules must be a list, got %s", kindName(e.val))
		} else {
			p.rules(e.val, pol)
		}
	}
	return pol
}

func (p *parser) defaults(n *yaml.Node, pol *Policy) {
	const where = "defaults: "
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "defaults must be a mapping, got %s", kindName(n))
		return
	}
	f := p.fields(n, "", where, "action", "unknown_tool", "deny_response", "on_log_failure", "mode")
	if e, ok := f["action"]; ok {
		if a, ok := p.action(e, "", where); ok {
			switch a {
			case ActionRedact:
				// Redact rewrites what a scan found; a default has no
				// finding to rewrite.
				p.errorf(e.val.Line, "", "%saction redact is for rules and scanning.actions, not the default (want allow, deny or monitor)", where)
			case ActionQuarantine:
				// A default quarantine would hold every tool at its first
				// call.
				p.errorf(e.val.Line, "", "%saction quarantine is for rules and drift.actions, not the default (want allow, deny or monitor)", where)
			default:
				pol.defaultAction = a
			}
		}
	}
	set := func(key string, dst *string, allowed ...string) {
		if e, ok := f[key]; ok {
			if s, ok := p.enum(e, "", where, allowed...); ok {
				*dst = s
			}
		}
	}
	set("unknown_tool", &pol.settings.UnknownTool, UnknownToolFetch, UnknownToolDeny)
	set("deny_response", &pol.settings.DenyResponse, DenyResponseError, DenyResponseToolResult)
	set("on_log_failure", &pol.settings.OnLogFailure, OnLogFailureFailClosed, OnLogFailureFailOpen)
	mode := string(pol.settings.Mode)
	set("mode", &mode, string(ModeEnforce), string(ModeShadow))
	pol.settings.Mode = Mode(mode)
}

// receipts reads the receipts block: require (for every server) and
// servers (server_id -> requirement).
func (p *parser) receipts(n *yaml.Node, pol *Policy) {
	const where = "receipts: "
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "receipts must be a mapping, got %s", kindName(n))
		return
	}
	levels := []string{ReceiptsNone, ReceiptsPresent, ReceiptsVerified}
	f := p.fields(n, "", where, "require", "servers")
	if e, ok := f["require"]; ok {
		if s, ok := p.enum(e, "", where, levels...); ok {
			pol.settings.ReceiptsRequire = s
		}
	}
	e, ok := f["servers"]
	if !ok || isNull(e.val) {
		return
	}
	if e.val.Kind != yaml.MappingNode {
		p.errorf(e.val.Line, "", "%sservers must be a mapping of server_id to requirement, got %s", where, kindName(e.val))
		return
	}
	pol.settings.ReceiptsServers = map[string]string{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := resolve(e.val.Content[i]), resolve(e.val.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			p.errorf(k.Line, "", "%sservers: keys must be server ids", where)
			continue
		}
		if _, dup := pol.settings.ReceiptsServers[k.Value]; dup {
			p.errorf(k.Line, "", "%sservers: duplicate server %q", where, k.Value)
			continue
		}
		if s, ok := p.enum(entry{k, v}, "", where+"servers: ", levels...); ok {
			pol.settings.ReceiptsServers[k.Value] = s
		}
	}
}

// mentionsArguments finds the identifier `arguments` in a condition.
var mentionsArguments = regexp.MustCompile(`\barguments\b`)

// mentionsMeta finds a mention of the `meta` variable (the request's
// params._meta). CEL identifiers are ASCII letters, digits and '_', exactly
// what \b delimits, so a condition that reads the variable mentions it.
var mentionsMeta = regexp.MustCompile(`\bmeta\b`)

// mentionsArgumentScan finds a mention of `argument_scan`: a decision that
// reads it depends on the call, not only on the tool.
var mentionsArgumentScan = regexp.MustCompile(`\bargument_scan\b`)

var ruleID = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func (p *parser) rules(seq *yaml.Node, pol *Policy) {
	firstLine := map[string]int{} // rule id -> line of its id
	for i, item := range seq.Content {
		n := resolve(item)
		label := "#" + strconv.Itoa(i+1)
		if n.Kind != yaml.MappingNode {
			p.errorf(n.Line, label, "must be a mapping, got %s", kindName(n))
			continue
		}

		// The id comes first so that every other message can name it.
		r := rule{line: n.Line, mode: ModeEnforce}
		idOK := false
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := resolve(n.Content[j])
			if k.Kind == yaml.ScalarNode && k.Value == "id" {
				v := resolve(n.Content[j+1])
				switch {
				case v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str":
					p.errorf(v.Line, label, "id must be a string, got %s", kindName(v))
				case !ruleID.MatchString(v.Value):
					p.errorf(v.Line, label, "invalid id %q (want letters, digits, '_', '.' and '-')", v.Value)
				case v.Value == "default":
					p.errorf(v.Line, label, "id %q is reserved for decisions no rule matched", v.Value)
				default:
					r.id, label, idOK = v.Value, v.Value, true
					if first, dup := firstLine[r.id]; dup {
						p.errorf(v.Line, label, "duplicate id (first defined at line %d)", first)
					} else {
						firstLine[r.id] = v.Line
					}
				}
				break
			}
		}

		f := p.fields(n, label, "", "id", "tools", "when", "action", "reason", "mode")
		if _, ok := f["id"]; !ok {
			p.errorf(n.Line, label, "missing id")
		}
		ok := idOK

		if e, has := f["tools"]; has {
			if r.tools = p.tools(e, label); r.tools == nil {
				ok = false
			}
			for _, g := range r.tools {
				if sg, err := compileGlob(scan.Skeleton(g.pattern)); err == nil && sg.pattern != "" {
					r.toolSkeletons = append(r.toolSkeletons, sg)
				}
			}
		}

		if e, has := f["when"]; has {
			if src, sok := p.str(e, label, "", true); sok {
				prg, loops, ph, err := compileCondition(src)
				if err != nil {
					p.errorf(e.key.Line, label, "condition: %v", err)
					ok = false
				}
				r.prg, r.loops, r.src, r.phase = prg, loops, src, ph
				// A mention anywhere, even in a string literal, counts:
				// decoding arguments that are not read costs only time.
				// Response and receipt rules never run on the request.
				if ph == phaseRequest && mentionsArguments.MatchString(src) {
					pol.usesArguments = true
				}
				if ph == phaseRequest && (mentionsMeta.MatchString(src) || mentionsArgumentScan.MatchString(src) || loops) {
					pol.perCall = true
				}
			} else {
				ok = false
			}
		}

		if e, has := f["action"]; has {
			a, aok := p.action(e, label, "")
			r.action, ok = a, ok && aok
		} else {
			p.errorf(n.Line, label, "missing action")
			ok = false
		}

		if e, has := f["reason"]; has {
			s, sok := p.str(e, label, "", true)
			r.reason, ok = s, ok && sok
		} else {
			p.errorf(n.Line, label, "missing reason")
			ok = false
		}

		if e, has := f["mode"]; has {
			s, mok := p.enum(e, label, "", string(ModeEnforce), string(ModeShadow))
			r.mode, ok = Mode(s), ok && mok
		}

		if ok {
			r.condErr = "condition of rule " + r.id + " failed to evaluate"
			if r.mode == ModeShadow {
				pol.lastShadow[r.phase] = len(pol.rules)
			}
			pol.rules = append(pol.rules, r)
		}
	}
}

// tools returns the compiled tool patterns of a rule, or nil after
// reporting an error.
func (p *parser) tools(e entry, label string) []glob {
	v := e.val
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, label, "tools must be a list of glob patterns, got %s", kindName(v))
		return nil
	}
	if len(v.Content) == 0 {
		p.errorf(v.Line, label, "tools must not be empty (leave it out to match every tool)")
		return nil
	}
	globs := make([]glob, 0, len(v.Content))
	ok := true
	for _, item := range v.Content {
		n := resolve(item)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			p.errorf(n.Line, label, "tool pattern must be a string, got %s", kindName(n))
			ok = false
			continue
		}
		if n.Value == "" {
			p.errorf(n.Line, label, "empty tool pattern")
			ok = false
			continue
		}
		g, err := compileGlob(n.Value)
		if err != nil {
			p.errorf(n.Line, label, "invalid tool pattern %q: %v", n.Value, err)
			ok = false
			continue
		}
		globs = append(globs, g)
	}
	if !ok {
		return nil
	}
	return globs
}
