package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/evidence"
	"github.com/gatehouse-mcp/gatehouse/internal/inspect"
	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// RuleScanning is the matched rule of a verdict given by the scanning
// block's actions (policy.Scanning.ActionFor) rather than by a rule.
const RuleScanning = "scanning"

// scanStage inspects every tools/call (docs/scanning.md): its arguments
// before the call is forwarded (a Decider, before policy, so that policy
// reads argument_scan), and the server's response before the client sees
// it (a Filter). Each finding gets the action of the policy's
// scanning.actions (after scanning.suppress); the most severe is the
// stage's verdict. Redact rewrites the forwarded bytes: only the matched
// spans (inspect.Report.Redact). On the response, the policy's response
// rules (those reading response_scan) are decided too.
//
// What it found is kept on the call (callState.argScan, respScan) for the
// decision event, the gateway decision receipts and the gatehouse.scan.v1
// event of a response with findings.
//
// In shadow (pipeline.InShadow) nothing is rewritten or withheld: the
// verdicts are recorded as shadow verdicts, no redaction is prepared (the
// scan result then has no redaction records: nothing was rewritten), and
// the gatehouse.scan.v1 event says allow with the would-have verdict in
// its shadow_decisions.
type scanStage struct {
	scanner  *scan.Scanner
	policy   *policy.Policy
	settings policy.Scanning
	session  *Session

	// toolScans caches the findings of listed definitions (toolFindings),
	// by definition.
	toolMu    sync.Mutex
	toolScans map[string][]policy.Finding
	// policyNames are the tool names the policy gives, by skeleton
	// (policyNamesBySkeleton).
	policyNames map[string][]string
}

func (*scanStage) Name() string { return StageScan }

// scanOutcome is one scanned document: its report, the findings left
// after suppressions with their actions, and the verdict.
type scanOutcome struct {
	report   *inspect.Report
	findings []inspect.Finding
	actions  []policy.Action
	// action is the most severe action of the findings (allow when none).
	action policy.Action
	// result is the evidence form (paths prefixed with the part of the
	// message), view the policy's.
	result *evidence.ScanResult
	view   *policy.ScanView
	// prefix is the part of the message the document is ("/arguments",
	// "/result", "/error", "/params").
	prefix string
	// secretNames are the member names (RFC 6901 escaped reference
	// tokens) in which a finding was made: masked in every path the
	// records keep (maskNames), and in the decision record's
	// argument_keys.
	secretNames map[string]bool
}

// newScanOutcome returns an outcome of status with its own result and
// view, made in one allocation (a call's scans are on the hot path).
func newScanOutcome(status string) *scanOutcome {
	a := &struct {
		o scanOutcome
		r evidence.ScanResult
		v policy.ScanView
	}{}
	a.r.Status, a.v.Status = status, status
	a.o.result, a.o.view = &a.r, &a.v
	return &a.o
}

// notRunScan is the outcome of a document not scanned, with why.
func notRunScan(reason string) *scanOutcome {
	o := newScanOutcome(evidence.ScanNotRun)
	o.result.Reason = reason
	return o
}

// inspectDoc scans doc (the part of the message at prefix) and judges
// its findings for a call of tool on the session's server: suppressions,
// then each finding's action for where (policy.WhereArguments or
// WhereResponse). A document that cannot be scanned completely (a bound
// of inspect.Options, findings past the cap) is denied: what was not
// scanned could hold a secret.
func (s *scanStage) inspectDoc(doc []byte, prefix, tool, server, where string) *scanOutcome {
	// Member names are scanned too: a secret can be a key of
	// structuredContent as well as a value.
	rep, err := inspect.Inspect(s.scanner, doc, inspect.Options{Mode: scan.ModeData, ScanNames: true})
	if err != nil {
		o := notRunScan("not scanned: " + err.Error())
		o.action = policy.ActionDeny
		o.result.Action = string(policy.ActionDeny)
		return o
	}
	o := newScanOutcome(evidence.ScanPass)
	o.report, o.prefix = rep, prefix
	for _, f := range rep.Findings {
		pf := policyFinding(f)
		// The path policy sees and suppressions match is the one the
		// records show: under the part of the message.
		pf.Path = prefix + f.Path
		if s.settings.Suppressed(pf, tool, server) {
			continue
		}
		act := s.settings.ActionFor(pf, where)
		if act == policy.ActionRedact && f.InName() {
			// A name cannot be rewritten: what would be redacted is
			// refused instead.
			act = policy.ActionDeny
		}
		if f.InName() {
			if o.secretNames == nil {
				o.secretNames = map[string]bool{}
			}
			o.secretNames[f.Path[strings.LastIndexByte(f.Path, '/')+1:]] = true
		}
		o.findings = append(o.findings, f)
		o.actions = append(o.actions, act)
		o.view.Findings = append(o.view.Findings, pf)
		o.result.Findings = append(o.result.Findings, evidence.ScanFinding{
			Rule: f.Rule, Class: string(f.Class), Confidence: string(f.Confidence),
			Path: prefix + f.Path, Excerpt: safeExcerpt(f.Excerpt), Action: string(act),
		})
		if severity(act) > severity(o.action) {
			o.action = act
		}
	}
	if o.secretNames != nil {
		for i := range o.result.Findings {
			o.result.Findings[i].Path = maskNames(o.result.Findings[i].Path, o.secretNames)
		}
	}
	if o.action == "" {
		o.action = policy.ActionAllow
	}
	if len(o.findings) > 0 {
		o.view.Status, o.result.Status = evidence.ScanFail, evidence.ScanFail
	}
	if rep.Truncated {
		// Findings past the cap were not looked at.
		o.action = policy.ActionDeny
		o.result.Reason = "too many findings: the rest of the document was not scanned"
	}
	o.result.Action = string(o.action)
	return o
}

// maskedName stands in the records for a member name that holds a
// finding.
const maskedName = "[REDACTED_NAME]"

// maskNames replaces, in the RFC 6901 pointer p, every reference token
// that is one of names with maskedName: a secret used as a member name
// must not be written by the path of its own finding (or of one under it).
func maskNames(p string, names map[string]bool) string {
	if len(names) == 0 {
		return p
	}
	segs := strings.Split(p, "/")
	for i, sg := range segs {
		if i > 0 && names[sg] {
			segs[i] = maskedName
		}
	}
	return strings.Join(segs, "/")
}

// policyFinding is f as policy conditions and the scanning block see it.
func policyFinding(f inspect.Finding) policy.Finding {
	return policy.Finding{Rule: f.Rule, Class: string(f.Class), Confidence: string(f.Confidence), Path: f.Path}
}

// severity orders policy actions as pipeline.Action does.
func severity(a policy.Action) int {
	act, err := pipeline.ParseAction(string(a))
	if err != nil {
		return -1
	}
	return int(act)
}

// redact rewrites doc: every finding whose action is redact (all of them
// when all), and the same values wherever else they occur in doc. It
// records the redaction records in o.result.
func (o *scanOutcome) redact(doc []byte, all bool) ([]byte, error) {
	if o.report == nil {
		return doc, nil
	}
	selected := map[int]bool{}
	for i := range o.findings {
		if all || o.actions[i] == policy.ActionRedact {
			selected[i] = true
		}
	}
	if len(selected) == 0 {
		return doc, nil
	}
	// The report's findings include suppressed ones; select by identity
	// of the kept findings.
	keep := map[inspect.Finding]bool{}
	for i := range selected {
		if o.findings[i].InName() {
			// A name is never rewritten: redacting everything cannot
			// be done, and the caller refuses instead.
			return nil, fmt.Errorf("a member name holds a finding")
		}
		keep[o.findings[i]] = true
	}
	out, recs, err := o.report.Redact(doc, func(f inspect.Finding) bool { return keep[f] })
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	for _, r := range recs {
		o.result.Redactions = append(o.result.Redactions, evidence.Redaction{
			Field: maskNames(o.prefix+r.Field, o.secretNames), Class: r.Class, Method: r.Method, Replacement: r.Replacement,
		})
	}
	return out, nil
}

// Decide scans params.arguments.
func (s *scanStage) Decide(_ context.Context, c *pipeline.Call) error {
	st, err := stateOf(c)
	if err != nil {
		return fmt.Errorf("scan stage: %w", err)
	}
	if !s.settings.Arguments {
		st.argScan = notRunScan("argument scanning is off (scanning.arguments)")
		return nil
	}
	if len(c.Arguments) == 0 {
		st.argScan = newScanOutcome(evidence.ScanPass)
		st.argScan.action = policy.ActionAllow
		return nil
	}
	o := s.inspectDoc(c.Arguments, "/arguments", c.Name, c.Session.ServerID, policy.WhereArguments)
	st.argScan = o
	if o.action == policy.ActionAllow {
		return nil
	}
	v, _ := verdictOf(StageScan, o.action, RuleScanning, RuleScanning, scanReason("arguments", o))
	if v.Action == pipeline.Redact && !c.Shadowing() {
		if err := s.redactArguments(c, st, false); err != nil {
			v = pipeline.Verdict{Action: pipeline.Deny, Stage: StageScan, Rule: RuleScanning, ReasonCode: RuleScanning,
				Reason: "the arguments hold findings to redact and could not be redacted: " + err.Error(), Code: CodeDenied}
		}
	}
	c.Decide(v)
	return nil
}

// redactArguments rewrites the call's frame with its arguments redacted
// (every finding when all: a policy rule's redact). A call inside a batch
// cannot be rewritten (the batch is relayed from its members' original
// bytes): it is an error, and the call is refused.
func (s *scanStage) redactArguments(c *pipeline.Call, st *callState, all bool) error {
	o := st.argScan
	if o == nil || o.report == nil {
		return nil
	}
	if st.line == nil {
		return fmt.Errorf("a tools/call inside a JSON-RPC batch cannot be rewritten")
	}
	red, err := o.redact(c.Arguments, all)
	if err != nil {
		return err
	}
	if len(o.result.Redactions) == 0 {
		return nil
	}
	frame, err := splice(st.line, c.Arguments, red)
	if err != nil {
		return err
	}
	c.Rewrite(frame)
	return nil
}

// splice returns frame with part (a subslice of frame) replaced by with.
func splice(frame, part, with []byte) ([]byte, error) {
	off, ok := offsetIn(frame, part)
	if !ok {
		return nil, fmt.Errorf("the value is not part of the frame")
	}
	out := make([]byte, 0, len(frame)-len(part)+len(with))
	out = append(out, frame[:off]...)
	out = append(out, with...)
	return append(out, frame[off+len(part):]...), nil
}

// offsetIn returns the offset of part within frame when part is a
// subslice of frame (it aliases frame's bytes; its capacity may be cut, so
// the occurrence whose first byte is part's is looked for).
func offsetIn(frame, part []byte) (int, bool) {
	if len(part) == 0 {
		return 0, false
	}
	for base := 0; base+len(part) <= len(frame); {
		i := bytes.Index(frame[base:], part)
		if i < 0 {
			return 0, false
		}
		if &frame[base+i] == &part[0] {
			return base + i, true
		}
		base += i + 1
	}
	return 0, false
}

// scanReason says what a scan of where ("arguments", "response",
// "params", "result") found, by class and rule (never a value).
func scanReason(where string, o *scanOutcome) string {
	verb := "hold"
	if !strings.HasSuffix(where, "s") {
		verb = "holds"
	}
	if len(o.findings) == 0 {
		if o.result.Reason != "" {
			return "the " + where + " could not be scanned completely; refused (fail closed)"
		}
		return "the " + where + " " + verb + " no finding"
	}
	seen := map[string]bool{}
	var parts []string
	for i, f := range o.findings {
		k := string(f.Class) + " (" + f.Rule + ")"
		if !seen[k] && o.actions[i] == o.action {
			seen[k] = true
			parts = append(parts, k)
		}
	}
	if len(parts) == 0 {
		// Truncated: denied for the findings past the cap.
		return "the " + where + " " + verb + " more findings than a scan keeps; refused (fail closed)"
	}
	return "the " + where + " " + verb + " " + strings.Join(parts, ", ") + ": " + string(o.action) + " by scanning.actions"
}

// Filter scans the response to a forwarded call and decides the policy's
// response rules on it.
func (s *scanStage) Filter(_ context.Context, c *pipeline.Call, r *pipeline.Response) error {
	st, err := stateOf(c)
	if err != nil {
		return fmt.Errorf("scan stage: %w", err)
	}
	if !s.settings.Responses {
		st.respScan = notRunScan("response scanning is off (scanning.responses)")
		return nil
	}
	doc, prefix := r.Result, "/result"
	if doc == nil {
		doc, prefix = r.Error, "/error"
	}
	o := s.inspectDoc(doc, prefix, c.Name, c.Session.ServerID, policy.WhereResponse)
	st.respScan = o
	v, _ := verdictOf(StageScan, o.action, RuleScanning, RuleScanning, scanReason("response", o))
	redactAll := false
	if s.policy.HasResponseRules() {
		in := &policy.Input{
			Principal:    policy.Principal{ID: c.Session.PrincipalID, Role: c.Session.Role},
			ServerID:     c.Session.ServerID,
			Tool:         st.facts.policyTool(c.Name),
			ToolView:     st.facts.viewFor(c.Name),
			ResponseScan: o.view,
		}
		d, matched := s.policy.EvaluateResponse(in)
		if matched {
			if rv, ok := verdictOf(StagePolicy, d.Action, d.Rule, d.ReasonCode, d.Reason); ok && rv.Action >= v.Action {
				v, redactAll = rv, rv.Action == pipeline.Redact
			}
			o.result.Action = string(d.Action)
		}
		policyShadows(StagePolicy, d.Shadows, r.Shadow)
	}
	shadowing := r.Shadowing()
	if v.Action == pipeline.Redact && !shadowing {
		if err := s.redactResponse(c, st, r, doc, redactAll); err != nil {
			v = pipeline.Verdict{Action: pipeline.Deny, Stage: StageScan, Rule: RuleScanning, ReasonCode: RuleScanning,
				Reason: "the response holds findings to redact and could not be redacted: " + err.Error()}
		}
	}
	o.result.Action = v.Action.String()
	if v.Action != pipeline.Allow {
		r.Decide(v) // in shadow: recorded as a shadow verdict of the response
	}
	if len(o.findings) > 0 || v.Action != pipeline.Allow || len(r.Shadows()) > 0 {
		ev := decisionlog.Scanned{Method: mcp.MethodToolsCall, Direction: dirServerToClient, Tool: c.Name,
			DecisionEventID: st.eventID, Action: v.Action.String(), MatchedRule: v.Rule, Reason: v.Reason,
			ShadowMode: st.shadow, ShadowDecisions: logShadows(shadowDecisions(r.Shadows()))}
		if shadowing && v.Action != pipeline.Allow {
			// What was done: relayed as received.
			ev.Action, ev.MatchedRule, ev.Reason = string(policy.ActionAllow), RuleShadowMode, reasonShadowMode
		}
		s.session.emitScanned(ev, c.ID, o.result)
	}
	if v.Action == pipeline.Allow || shadowing {
		return nil
	}
	st.respVerdict = &v
	return nil
}

// redactResponse rewrites the response frame with its result (or error)
// redacted, and checks a redacted structuredContent against the tool's
// outputSchema: a result that no longer matches is an error (the
// response is then withheld rather than relayed invalid).
func (s *scanStage) redactResponse(c *pipeline.Call, st *callState, r *pipeline.Response, doc []byte, all bool) error {
	red, err := st.respScan.redact(doc, all)
	if err != nil {
		return err
	}
	if len(st.respScan.result.Redactions) == 0 {
		return nil
	}
	if len(c.Tool.OutputSchema) > 0 && r.Result != nil {
		if sc := member(red, "structuredContent"); sc != nil {
			if err := inspect.CheckSchema(c.Tool.OutputSchema, sc); err != nil {
				return fmt.Errorf("the redacted structuredContent does not match the tool's outputSchema: %w", err)
			}
		}
	}
	frame, err := splice(r.Raw, doc, red)
	if err != nil {
		return err
	}
	r.Rewrite(frame)
	return nil
}

// scanJSON is result as the compact JSON a decision event carries. The
// result of most calls, a pass with action allow and nothing else, is
// encoded once (passAllowJSON): never modify what scanJSON returns.
func scanJSON(result *evidence.ScanResult) json.RawMessage {
	if result == nil {
		return nil
	}
	if isPassAllow(result) {
		if b := passAllowJSON(); b != nil {
			return b
		}
	}
	b, err := jcs.Marshal(result)
	if err != nil {
		return nil
	}
	return b
}

// isPassAllow reports whether r is a pass with action allow and nothing
// else: every field but Status and Action zero.
func isPassAllow(r *evidence.ScanResult) bool {
	return r.Status == evidence.ScanPass && r.Action == string(policy.ActionAllow) && r.Reason == "" &&
		r.ArgumentKeys == nil && r.Findings == nil && r.Redactions == nil
}

// passAllowJSON is scanJSON of a pass with action allow, encoded once by
// jcs.Marshal (nil if that failed); its capacity is its length, so that
// an append copies.
var passAllowJSON = sync.OnceValue(func() json.RawMessage {
	b, err := jcs.Marshal(&evidence.ScanResult{Status: evidence.ScanPass, Action: string(policy.ActionAllow)})
	if err != nil {
		return nil
	}
	return b[:len(b):len(b)]
})

// maxToolScans bounds the cache of scanned tool definitions (toolScans).
const maxToolScans = 4096

// toolFindings scans one listed tool definition (inspect.InspectTool:
// name, title, description, input and output schemas) for poisoning and
// secrets, and returns its findings after suppressions, as the policy's
// tool.findings. A definition is scanned and flagged (a warning and a
// gatehouse.scan.v1 event with method tools/list) once per session; later
// listings of the same definition reuse the result.
//
// names are the findings about t's name in its listing (nameFindings);
// they are part of the result and of the flag.
func (s *scanStage) toolFindings(t mcp.Tool, names []policy.Finding) []policy.Finding {
	def, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	key := string(def)
	for _, f := range names {
		key += "\x00" + f.Rule
	}
	s.toolMu.Lock()
	fs, ok := s.toolScans[key]
	s.toolMu.Unlock()
	if ok {
		return fs
	}
	o := &scanOutcome{prefix: "/tools/" + t.Name, result: &evidence.ScanResult{Status: evidence.ScanPass}, view: &policy.ScanView{Status: evidence.ScanPass}}
	for _, f := range names {
		if s.settings.Suppressed(f, t.Name, s.session.info.ServerID) {
			continue
		}
		fs = append(fs, f)
		o.result.Findings = append(o.result.Findings, evidence.ScanFinding{Rule: f.Rule, Class: f.Class,
			Confidence: f.Confidence, Path: f.Path, Action: string(policy.ActionMonitor)})
	}
	rep, err := inspect.InspectTool(s.scanner, def)
	if err != nil {
		s.session.log.Warn("tools/list: tool definition not scanned", "tool", t.Name, "err", err)
	} else {
		for _, f := range rep.Findings {
			pf := policyFinding(f)
			if s.settings.Suppressed(pf, t.Name, s.session.info.ServerID) {
				continue
			}
			fs = append(fs, pf)
			path := f.Path
			if f.InName() {
				// A secret as a property name: not written by its path.
				path = maskNames(path, map[string]bool{path[strings.LastIndexByte(path, '/')+1:]: true})
			}
			o.result.Findings = append(o.result.Findings, evidence.ScanFinding{Rule: f.Rule, Class: string(f.Class),
				Confidence: string(f.Confidence), Path: path, Excerpt: safeExcerpt(f.Excerpt), Action: string(policy.ActionMonitor)})
		}
	}
	if len(fs) > 0 {
		o.result.Status, o.result.Action = evidence.ScanFail, string(policy.ActionMonitor)
		s.session.log.Warn("tools/list: tool definition flagged", "tool", t.Name, "findings", len(fs), "first_rule", fs[0].Rule)
		s.session.emitScanned(decisionlog.Scanned{Method: mcp.MethodToolsList, Direction: dirServerToClient, Tool: t.Name,
			Action: string(policy.ActionMonitor), MatchedRule: RuleScanning,
			Reason: "the tool's definition holds " + findingClasses(fs) + "; policy rules can deny it by tool.findings"}, jsonrpc.ID{}, o.result)
	}
	s.toolMu.Lock()
	if len(s.toolScans) >= maxToolScans {
		clear(s.toolScans)
	}
	s.toolScans[key] = fs
	s.toolMu.Unlock()
	return fs
}

// Rules of the findings about tool names (nameFindings); defined in
// package scan, with every other rule id (scan.RuleIDs).
const (
	RuleLookalikeName       = scan.RuleLookalikeName
	RuleNameCollision       = scan.RuleNameCollision
	RuleLookalikePolicyName = scan.RuleLookalikePolicyName
)

// nameFindings returns, per tool name of one listing, the findings about
// the name (path /name, class tool_poisoning): a lookalike name (high,
// medium for outer white space only), a collision of skeletons with
// another listed tool (high), a lookalike of a name the policy's rules
// give (high). Policy rules decide a lookalike as the tool it imitates
// (policy.rule.matchTool); these findings let a rule block it outright.
func (s *scanStage) nameFindings(tools []mcp.Tool) map[string][]policy.Finding {
	out := map[string][]policy.Finding{}
	add := func(name, rule, conf string) {
		out[name] = append(out[name], policy.Finding{Rule: rule, Class: string(scan.ClassPoisoning), Confidence: conf, Path: "/name"})
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
		if reasons := scan.NameLookalike(t.Name); len(reasons) > 0 {
			conf := string(scan.High)
			if len(reasons) == 1 && reasons[0] == "leading or trailing white space" {
				conf = string(scan.Medium)
			}
			add(t.Name, RuleLookalikeName, conf)
		}
		if lit, ok := s.policyNames[scan.Skeleton(t.Name)]; ok && !slices.Contains(lit, t.Name) {
			add(t.Name, RuleLookalikePolicyName, string(scan.High))
		}
	}
	for _, group := range scan.SkeletonCollisions(names) {
		for _, n := range group {
			add(n, RuleNameCollision, string(scan.High))
		}
	}
	return out
}

// policyNamesBySkeleton maps the skeleton of every tool name the policy's
// rules give literally to those names.
func policyNamesBySkeleton(p *policy.Policy) map[string][]string {
	m := map[string][]string{}
	for _, n := range p.ToolNames() {
		sk := scan.Skeleton(n)
		m[sk] = append(m[sk], n)
	}
	return m
}

// findingClasses lists the classes of fs, in order of first appearance.
func findingClasses(fs []policy.Finding) string {
	var cs []string
	for _, f := range fs {
		if !slices.Contains(cs, f.Class) {
			cs = append(cs, f.Class)
		}
	}
	return strings.Join(cs, ", ")
}
