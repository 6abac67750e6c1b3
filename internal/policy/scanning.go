package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// Finding is one scan finding as the policy sees it (docs/scanning.md):
// in CEL, an element of argument_scan.findings, response_scan.findings or
// tool.findings, a map with keys rule, class, confidence and path. It
// never holds the matched value.
type Finding struct {
	// Rule is the detector rule id ("github-pat", "pii-email", ...).
	Rule string `json:"rule"`
	// Class is secret, pii, prompt_injection or tool_poisoning.
	Class string `json:"class"`
	// Confidence is high, medium or low.
	Confidence string `json:"confidence"`
	// Path is the RFC 6901 pointer of the value within the scanned part
	// of the message ("/content/0/text").
	Path string `json:"path"`
}

// ScanView is the CEL variable argument_scan or response_scan: the
// status of the scan ("pass": scanned, no finding; "fail": findings;
// "not_run") and its findings after suppressions.
type ScanView struct {
	Status   string    `json:"status"`
	Findings []Finding `json:"findings"`
}

// ScanStatuses are the values of argument_scan.status and
// response_scan.status.
var ScanStatuses = []string{"pass", "fail", "not_run"}

// Finding classes and confidences, the vocabularies of the scanning block
// and of finding.class / finding.confidence in conditions.
var (
	FindingClasses     = []string{"secret", "pii", "prompt_injection", "tool_poisoning"}
	FindingConfidences = []string{"high", "medium", "low"}
)

// Where a finding was made, for FindingAction.Where.
const (
	// WhereArguments: a tools/call's params.arguments (before forwarding),
	// or the client's answer to a sampling or elicitation request.
	WhereArguments = "arguments"
	// WhereResponse: anything the server sends toward the client (a
	// result, an error, a notification, a sampling or elicitation
	// request).
	WhereResponse = "response"
)

// Scanning is the policy's scanning block (docs/scanning.md, "Policy"):
// which scanners run, what each finding does, and which findings are
// suppressed.
type Scanning struct {
	// Arguments, Responses and Tools say whether tools/call arguments (and
	// the client's answers to server requests), everything the server
	// sends toward the client, and tools/list definitions are scanned. All
	// true unless the block says otherwise; enabled: false turns all three
	// off.
	Arguments, Responses, Tools bool
	// Actions decide each finding's action, first match wins; a finding
	// no entry matches is allow (recorded, not flagged).
	Actions []FindingAction
	// Suppress lists findings that are dropped before anything sees them.
	Suppress []Suppression
}

// FindingAction is one entry of scanning.actions: the findings it matches
// (every field empty matches all; Rule is a glob over rule ids) and the
// action they get. Redact rewrites the matched span; deny refuses the
// call (arguments) or withholds the response; monitor flags it.
type FindingAction struct {
	Class, Confidence, Rule, Where string
	Action                         Action
	rule                           glob
	line                           int
}

// Suppression is one entry of scanning.suppress: a finding matching every
// non-empty field is dropped. Rule, Tool, Server and Path are globs
// (path.Match syntax, where '*' also matches '/'; Path is matched against
// the RFC 6901 pointer). Reason says why, for the reviewer.
type Suppression struct {
	Rule, Tool, Server, Path, Reason string
	rule, tool, server, path         glob
}

// DefaultScanning is the scanning block of a policy without one, and of
// the built-in policy: every scanner on; high-confidence secrets are
// redacted, in arguments and in responses; every other finding is
// monitored.
func DefaultScanning() Scanning {
	return Scanning{Arguments: true, Responses: true, Tools: true, Actions: []FindingAction{
		{Class: "secret", Confidence: "high", Action: ActionRedact, rule: anyGlob},
		{Action: ActionMonitor, rule: anyGlob},
	}}
}

var anyGlob = glob{pattern: "*", kind: globAny}

// Scanning returns the policy's scanning block.
func (p *Policy) Scanning() Scanning { return p.scanning }

// Suppressed reports whether f, found in a call of tool on server, is
// suppressed by scanning.suppress.
func (s *Scanning) Suppressed(f Finding, tool, server string) bool {
	for i := range s.Suppress {
		x := &s.Suppress[i]
		if (x.Rule == "" || x.rule.match(f.Rule)) && (x.Tool == "" || x.tool.match(tool)) &&
			(x.Server == "" || x.server.match(server)) && (x.Path == "" || x.path.match(f.Path)) {
			return true
		}
	}
	return false
}

// ActionFor returns the action of finding f made at where (WhereArguments
// or WhereResponse): the first matching scanning.actions entry's, allow
// when none matches.
func (s *Scanning) ActionFor(f Finding, where string) Action {
	for i := range s.Actions {
		a := &s.Actions[i]
		if (a.Class == "" || a.Class == f.Class) && (a.Confidence == "" || a.Confidence == f.Confidence) &&
			(a.Where == "" || a.Where == where) && a.rule.match(f.Rule) {
			return a.Action
		}
	}
	return ActionAllow
}

// scanning reads the scanning block.
func (p *parser) scanningBlock(n *yaml.Node, pol *Policy) {
	const where = "scanning: "
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "scanning must be a mapping, got %s", kindName(n))
		return
	}
	s := DefaultScanning()
	f := p.fields(n, "", where, "enabled", "arguments", "responses", "tools", "actions", "suppress")
	flag := func(key string, dst *bool) {
		if e, ok := f[key]; ok {
			if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!bool" {
				p.errorf(e.val.Line, "", "%s%s must be true or false, got %s", where, key, kindName(e.val))
				return
			}
			*dst = e.val.Value == "true"
		}
	}
	flag("arguments", &s.Arguments)
	flag("responses", &s.Responses)
	flag("tools", &s.Tools)
	enabled := true
	flag("enabled", &enabled)
	if !enabled {
		s.Arguments, s.Responses, s.Tools = false, false, false
	}
	if e, ok := f["actions"]; ok && !isNull(e.val) {
		s.Actions = p.findingActions(e.val)
	}
	if e, ok := f["suppress"]; ok && !isNull(e.val) {
		s.Suppress = p.suppressions(e.val)
	}
	pol.scanning = s
}

func (p *parser) findingActions(seq *yaml.Node) []FindingAction {
	const where = "scanning: actions: "
	if seq.Kind != yaml.SequenceNode {
		p.errorf(seq.Line, "", "%smust be a list, got %s", where, kindName(seq))
		return nil
	}
	out := []FindingAction{}
	for _, item := range seq.Content {
		n := resolve(item)
		if n.Kind != yaml.MappingNode {
			p.errorf(n.Line, "", "%seach entry must be a mapping, got %s", where, kindName(n))
			continue
		}
		f := p.fields(n, "", where, "class", "confidence", "rule", "where", "action")
		a := FindingAction{rule: anyGlob, line: n.Line}
		ok := true
		if e, has := f["class"]; has {
			a.Class, ok = p.enum(e, "", where, FindingClasses...)
		}
		if e, has := f["confidence"]; has && ok {
			a.Confidence, ok = p.enum(e, "", where, FindingConfidences...)
		}
		if e, has := f["where"]; has && ok {
			a.Where, ok = p.enum(e, "", where, WhereArguments, WhereResponse)
		}
		if e, has := f["rule"]; has && ok {
			a.Rule, a.rule, ok = p.globField(e, where)
		}
		if e, has := f["action"]; has {
			act, aok := p.action(e, "", where)
			if aok && act == ActionQuarantine {
				p.errorf(e.val.Line, "", "%saction quarantine holds a tool; a finding in one message does not (want allow, monitor, redact or deny)", where)
				aok = false
			}
			a.Action, ok = act, ok && aok
		} else {
			p.errorf(n.Line, "", "%smissing action", where)
			ok = false
		}
		if ok {
			out = append(out, a)
		}
	}
	return out
}

func (p *parser) suppressions(seq *yaml.Node) []Suppression {
	const where = "scanning: suppress: "
	if seq.Kind != yaml.SequenceNode {
		p.errorf(seq.Line, "", "%smust be a list, got %s", where, kindName(seq))
		return nil
	}
	var out []Suppression
	for _, item := range seq.Content {
		n := resolve(item)
		if n.Kind != yaml.MappingNode {
			p.errorf(n.Line, "", "%seach entry must be a mapping, got %s", where, kindName(n))
			continue
		}
		f := p.fields(n, "", where, "rule", "tool", "server", "path", "reason")
		var s Suppression
		ok, any := true, false
		for _, k := range []struct {
			key string
			s   *string
			g   *glob
		}{{"rule", &s.Rule, &s.rule}, {"tool", &s.Tool, &s.tool}, {"server", &s.Server, &s.server}, {"path", &s.Path, &s.path}} {
			if e, has := f[k.key]; has {
				var gok bool
				*k.s, *k.g, gok = p.globField(e, where)
				if gok && k.key == "path" && !strings.HasPrefix(*k.s, "/") && !strings.HasPrefix(*k.s, "*") {
					// A path never matches without its leading '/'.
					p.errorf(e.val.Line, "", "%spath %q must start with \"/\" (an RFC 6901 pointer as the records show it, e.g. /result/content/*/text)", where, *k.s)
					gok = false
				}
				ok, any = ok && gok, true
			}
		}
		if e, has := f["reason"]; has {
			r, rok := p.str(e, "", where, true)
			s.Reason, ok = r, ok && rok
		} else {
			p.errorf(n.Line, "", "%smissing reason (say why the finding is not a problem)", where)
			ok = false
		}
		if !any && ok {
			p.errorf(n.Line, "", "%san entry needs at least one of rule, tool, server or path (it would suppress every finding)", where)
			ok = false
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// globField reads a glob pattern value. A rule pattern must match one of
// the scanner's rule ids (scan.RuleIDs): a misspelled id in an action
// would never apply, one in a suppression never suppress.
func (p *parser) globField(e entry, where string) (string, glob, bool) {
	s, ok := p.str(e, "", where, true)
	if !ok {
		return "", glob{}, false
	}
	g, err := compileGlob(s)
	if err != nil {
		p.errorf(e.val.Line, "", "%sinvalid %s pattern %q: %v", where, e.key.Value, s, err)
		return "", glob{}, false
	}
	if e.key.Value == "rule" && !slices.ContainsFunc(scan.RuleIDs(), g.match) {
		p.errorf(e.val.Line, "", "%srule %q matches no rule id of the scanner (the ids are in the findings of docs/scanning.md and in every record; a glob such as \"aws-*\" matches several)", where, s)
		return "", glob{}, false
	}
	return s, g, true
}

// findingMaps is the CEL list of findings fs.
func findingMaps(fs []Finding) []any {
	out := make([]any, len(fs))
	for i, f := range fs {
		out[i] = map[string]any{"rule": f.Rule, "class": f.Class, "confidence": f.Confidence, "path": f.Path}
	}
	return out
}

// scanMap is the CEL map of argument_scan or response_scan.
func scanMap(v *ScanView) map[string]any {
	if v == nil {
		return map[string]any{"status": "not_run", "findings": []any{}, "classes": []string{}}
	}
	var classes []string
	for _, f := range v.Findings {
		if !slices.Contains(classes, f.Class) {
			classes = append(classes, f.Class)
		}
	}
	return map[string]any{"status": v.Status, "findings": findingMaps(v.Findings), "classes": listOrEmpty(classes)}
}

// Scan variables a condition can read, for Warnings.
var (
	mentionsResponseScan = regexp.MustCompile(`\bresponse_scan\b`)
	mentionsToolFindings = regexp.MustCompile(`\btool\s*(\.\s*\??\s*findings\b|\[\s*\??\s*["']findings["'])`)
)

// Warnings returns what is legal in p but almost certainly a mistake,
// one line each: a rule that reads a scan the scanning block turns off (or
// that scanOff, wrap --no-scan, turns off), and so never sees a finding;
// a scanning.actions entry no finding can reach, because an entry before
// it matches every finding.
func (p *Policy) Warnings(scanOff bool) []string {
	var out []string
	s := p.scanning
	for _, r := range p.rules {
		if r.src == "" {
			continue
		}
		for _, c := range []struct {
			re  *regexp.Regexp
			on  bool
			key string
			v   string
		}{
			{mentionsArgumentScan, s.Arguments, "scanning.arguments", "argument_scan"},
			{mentionsResponseScan, s.Responses, "scanning.responses", "response_scan"},
			{mentionsToolFindings, s.Tools, "scanning.tools", "tool.findings"},
		} {
			if !c.re.MatchString(r.src) {
				continue
			}
			switch {
			case scanOff:
				out = append(out, fmt.Sprintf("rule %s reads %s, but --no-scan turns scanning off: it sees no finding", r.id, c.v))
			case !c.on:
				out = append(out, fmt.Sprintf("rule %s reads %s, but %s is off: it sees no finding", r.id, c.v, c.key))
			}
		}
	}
	if len(s.Actions) == 0 && (s.Arguments || s.Responses) {
		out = append(out, "scanning.actions is empty: every finding is allowed (recorded, never redacted or refused); leave the key out for the built-in actions")
	}
	for i, a := range s.Actions {
		if a.Class == "" && a.Confidence == "" && a.Rule == "" && a.Where == "" && i < len(s.Actions)-1 {
			out = append(out, fmt.Sprintf("scanning.actions: the entry at line %d matches every finding: the %d after it are never reached", a.line, len(s.Actions)-1-i))
			break
		}
	}
	return out
}
