package inspect_test

// The quality test: the labeled corpus in testdata/corpus (written by
// ./internal/corpusgen; docs/scanning.md, "The labeled corpus and measured
// quality") is inspected with the built-in detectors, and precision and
// recall per class must stay at or above testdata/corpus/thresholds.json.
// Failures name records by id only: the corpus values are synthetic, but
// the test prints no value all the same.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/inspect"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

var corpusReport = flag.String("corpus-report", "", "write the corpus quality tables (markdown, for docs/scanning.md) to this file")

const corpusDir = "testdata/corpus"

// corpusRecord is one line of testdata/corpus/*.jsonl.
type corpusRecord struct {
	ID         string          `json:"id"`
	Label      string          `json:"label"`
	Class      string          `json:"class"`
	Type       string          `json:"type"`
	Location   string          `json:"location"`
	Form       string          `json:"form"`
	Mode       string          `json:"mode"`
	Doc        json.RawMessage `json:"doc"`
	ExpectPath string          `json:"expect_path"`
	Value      string          `json:"value"`
}

func (r corpusRecord) positive() bool { return r.Label == "positive" }

type corpusThresholds struct {
	Classes map[string]struct {
		Precision float64 `json:"precision"`
		Recall    float64 `json:"recall"`
	} `json:"classes"`
	// MaxBenignAltered is how many negatives the built-in policy's
	// selection (high-confidence secrets) may alter.
	MaxBenignAltered int `json:"max_benign_altered"`
}

var corpusClasses = []string{string(scan.ClassSecret), string(scan.ClassPII), string(scan.ClassInjection), string(scan.ClassPoisoning)}

func loadCorpus(t *testing.T) []corpusRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no corpus in %s (glob: %v)", corpusDir, err)
	}
	var recs []corpusRecord
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<22)
		line := 0
		for sc.Scan() {
			line++
			var r corpusRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s:%d: %v", name, line, err)
			}
			recs = append(recs, r)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	return recs
}

func loadThresholds(t *testing.T) corpusThresholds {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "thresholds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var th corpusThresholds
	if err := json.Unmarshal(b, &th); err != nil {
		t.Fatalf("thresholds.json: %v", err)
	}
	for _, c := range corpusClasses {
		if _, ok := th.Classes[c]; !ok {
			t.Fatalf("thresholds.json: no entry for class %s", c)
		}
	}
	return th
}

func newCorpusScanner(t testing.TB) *scan.Scanner {
	t.Helper()
	sc, err := scan.New(scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// inspectRecord inspects r's document as the gateway would at its
// location: a tools/list entry with InspectTool, anything else as data.
// It returns the report and the findings to count: the report's, and for
// a tool a lookalike name (scan.NameLookalike) as a medium-confidence
// poisoning finding at /name (rule "tool-name-lookalike"), which is not
// the report's (Redact never sees it).
func inspectRecord(sc *scan.Scanner, r corpusRecord) (*inspect.Report, []inspect.Finding, error) {
	if r.Mode != "tool_definition" {
		rep, err := inspect.Inspect(sc, r.Doc, inspect.Options{Mode: scan.ModeData})
		if err != nil {
			return nil, nil, err
		}
		return rep, rep.Findings, nil
	}
	rep, err := inspect.InspectTool(sc, r.Doc)
	if err != nil {
		return nil, nil, err
	}
	name := ""
	if err := strictjson.Members(r.Doc, func(n string, v []byte) error {
		if n == "name" {
			s, err := strictjson.String(v)
			name = s
			return err
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("tool name: %w", err)
	}
	findings := rep.Findings
	if len(scan.NameLookalike(name)) > 0 {
		findings = append(slices.Clip(findings), inspect.Finding{
			Finding: scan.Finding{Rule: "tool-name-lookalike", Class: scan.ClassPoisoning, Confidence: scan.Medium},
			Path:    "/name",
		})
	}
	return rep, findings, nil
}

// TestCorpusWellFormed checks the corpus itself, independently of the
// detectors: sizes, unique ids, strict JSON documents, expect_path
// naming a leaf of the document, and the planted value present in it.
func TestCorpusWellFormed(t *testing.T) {
	recs := loadCorpus(t)
	ids := map[string]bool{}
	pos, neg := 0, 0
	types := map[string]bool{}
	for _, r := range recs {
		if ids[r.ID] {
			t.Errorf("duplicate id %s", r.ID)
		}
		ids[r.ID] = true
		if !slices.Contains(corpusClasses, r.Class) {
			t.Errorf("%s: unknown class", r.ID)
		}
		if r.Mode != "data" && r.Mode != "tool_definition" {
			t.Errorf("%s: unknown mode", r.ID)
		}
		if err := strictjson.Validate(r.Doc); err != nil {
			t.Errorf("%s: doc is not strict JSON: %v", r.ID, err)
		}
		switch r.Label {
		case "positive":
			pos++
			if r.Class == "secret" || r.Class == "pii" {
				types[r.Type] = true
				if r.Value == "" {
					t.Errorf("%s: positive %s without a value", r.ID, r.Class)
				} else if !strings.Contains(reveal(r.Doc), r.Value) {
					t.Errorf("%s: planted value not found in the decoded document", r.ID)
				}
			}
			if !pointerExists(r.Doc, r.ExpectPath) {
				t.Errorf("%s: expect_path names nothing in the document", r.ID)
			}
		case "negative":
			neg++
		default:
			t.Errorf("%s: unknown label", r.ID)
		}
	}
	if pos < 300 || neg < 300 {
		t.Errorf("%d positives and %d negatives, want at least 300 of each", pos, neg)
	}
	if len(types) < 40 {
		t.Errorf("%d secret and PII types, want at least 40", len(types))
	}
}

// classStats are one class's counts.
type classStats struct {
	pos, hit, located int
	high              int      // positives with a high-confidence finding of their class
	missed            []string // positives with no finding of their class
	falseHits         []string // negatives with a medium or high finding of the class
	noise             []string // negatives with only low findings of the class
}

func (s *classStats) recall() float64 {
	if s.pos == 0 {
		return 1
	}
	return float64(s.hit) / float64(s.pos)
}

func (s *classStats) precision() float64 {
	if s.hit+len(s.falseHits) == 0 {
		return 1
	}
	return float64(s.hit) / float64(s.hit+len(s.falseHits))
}

type countPair struct{ pos, hit int }

// TestCorpusQuality measures precision and recall per class and holds
// them at thresholds.json's floors. Recall is the share of a class's
// positives with at least one finding of that class (any confidence);
// precision is TP / (TP + FP), FP being the negatives (of any class) with
// a medium- or high-confidence finding of the class. Low-confidence
// findings on negatives are counted separately as noise: generic rules
// flag, they do not act.
func TestCorpusQuality(t *testing.T) {
	recs := loadCorpus(t)
	th := loadThresholds(t)
	sc := newCorpusScanner(t)
	stats := map[string]*classStats{}
	for _, c := range corpusClasses {
		stats[c] = &classStats{}
	}
	byType := map[string]*countPair{}
	byForm := map[string]*countPair{}
	byLoc := map[string]*countPair{}
	count := func(m map[string]*countPair, k string, hit bool) {
		if m[k] == nil {
			m[k] = &countPair{}
		}
		m[k].pos++
		if hit {
			m[k].hit++
		}
	}
	for _, r := range recs {
		_, findings, err := inspectRecord(sc, r)
		if err != nil {
			t.Errorf("%s: inspect: %v", r.ID, err)
			continue
		}
		any_ := map[string]bool{}
		acting := map[string]bool{}
		located, high := false, false
		for _, f := range findings {
			c := string(f.Class)
			any_[c] = true
			if f.Confidence == scan.High || f.Confidence == scan.Medium {
				acting[c] = true
			}
			if r.positive() && c == r.Class && f.Path == r.ExpectPath {
				located = true
			}
			if r.positive() && c == r.Class && f.Confidence == scan.High {
				high = true
			}
		}
		if r.positive() {
			s := stats[r.Class]
			s.pos++
			hit := any_[r.Class]
			if hit {
				s.hit++
			} else {
				s.missed = append(s.missed, r.ID)
			}
			if located {
				s.located++
			}
			if high {
				s.high++
			}
			count(byType, r.Class+"\t"+r.Type, hit)
			count(byForm, r.Form, hit)
			count(byLoc, r.Location, hit)
			continue
		}
		for _, c := range corpusClasses {
			switch {
			case acting[c]:
				stats[c].falseHits = append(stats[c].falseHits, r.ID)
				if testing.Verbose() {
					for _, f := range findings {
						if string(f.Class) == c && f.Confidence != scan.Low {
							t.Logf("false hit %s: rule %s (%s) at %s", r.ID, f.Rule, f.Confidence, f.Path)
						}
					}
				}
			case any_[c]:
				stats[c].noise = append(stats[c].noise, r.ID)
			}
		}
	}

	negatives := 0
	for _, r := range recs {
		if !r.positive() {
			negatives++
		}
	}
	t.Log("\n" + qualityTables(stats, byType, byForm, byLoc, negatives, true))
	if *corpusReport != "" {
		report := qualityTables(stats, byType, byForm, byLoc, negatives, false)
		if err := os.WriteFile(*corpusReport, []byte(report), 0o644); err != nil {
			t.Fatalf("write -corpus-report: %v", err)
		}
	}
	const eps = 1e-9
	for _, c := range corpusClasses {
		s, floor := stats[c], th.Classes[c]
		if s.recall()+eps < floor.Recall {
			t.Errorf("%s: recall %.3f below the floor %.3f; missed: %s", c, s.recall(), floor.Recall, strings.Join(s.missed, " "))
		}
		if s.precision()+eps < floor.Precision {
			t.Errorf("%s: precision %.3f below the floor %.3f; negatives hit at medium or high confidence: %s", c, s.precision(), floor.Precision, strings.Join(s.falseHits, " "))
		}
		if testing.Verbose() {
			if len(s.missed) > 0 {
				t.Logf("%s missed: %s", c, strings.Join(s.missed, " "))
			}
			if len(s.falseHits) > 0 {
				t.Logf("%s false hits: %s", c, strings.Join(s.falseHits, " "))
			}
			if len(s.noise) > 0 {
				t.Logf("%s low-confidence noise: %s", c, strings.Join(s.noise, " "))
			}
		}
	}
}

func pct(n, d int) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// qualityTables renders the figures as markdown: per class, per form, per
// location and per type (allTypes false: only the types below 100%).
func qualityTables(stats map[string]*classStats, byType, byForm, byLoc map[string]*countPair, negatives int, allTypes bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| Class | Positives | Recall | At the expected path | High confidence | Precision | Negatives hit (medium/high) | Low-confidence noise |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range corpusClasses {
		s := stats[c]
		fmt.Fprintf(&b, "| %s | %d | %s (%d) | %s | %s | %.1f%% | %d of %d | %d of %d |\n", c, s.pos, pct(s.hit, s.pos), s.hit, pct(s.located, s.pos), pct(s.high, s.pos), 100*s.precision(), len(s.falseHits), negatives, len(s.noise), negatives)
	}
	table := func(title string, m map[string]*countPair, all bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "\n| %s | Positives | Recall |\n|---|---:|---:|\n", title)
		full := 0
		for _, k := range keys {
			if !all && m[k].hit == m[k].pos {
				full++
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s |\n", strings.ReplaceAll(k, "\t", " / "), m[k].pos, pct(m[k].hit, m[k].pos))
		}
		if full > 0 {
			fmt.Fprintf(&b, "| %d other types | | 100.0%% |\n", full)
		}
	}
	table("Form", byForm, true)
	table("Location", byLoc, true)
	table("Class / type", byType, allTypes)
	return b.String()
}

func highSecret(f inspect.Finding) bool {
	return f.Class == scan.ClassSecret && f.Confidence == scan.High
}

// TestCorpusRedaction: the benign corpus passes byte for byte (a negative
// with no finding is returned unchanged with every finding selected, and
// the built-in policy's selection, high-confidence secrets, alters at
// most thresholds.json's max_benign_altered negatives); every positive
// with a high-confidence secret finding redacts to strict JSON in which
// the planted value no longer occurs, however it was encoded.
func TestCorpusRedaction(t *testing.T) {
	recs := loadCorpus(t)
	th := loadThresholds(t)
	sc := newCorpusScanner(t)
	var altered []string
	redacted := 0
	for _, r := range recs {
		rep, _, err := inspectRecord(sc, r)
		if err != nil {
			t.Errorf("%s: inspect: %v", r.ID, err)
			continue
		}
		if !r.positive() {
			if len(rep.Findings) == 0 {
				out, reds, err := rep.Redact(r.Doc, func(inspect.Finding) bool { return true })
				if err != nil || !bytes.Equal(out, r.Doc) || len(reds) != 0 {
					t.Errorf("%s: a document without findings is not returned byte for byte (err %v, %d redactions)", r.ID, err, len(reds))
				}
			}
			out, _, err := rep.Redact(r.Doc, highSecret)
			if err != nil {
				t.Errorf("%s: redact: %v", r.ID, err)
			} else if !bytes.Equal(out, r.Doc) {
				altered = append(altered, r.ID)
			}
			continue
		}
		if !slices.ContainsFunc(rep.Findings, highSecret) {
			continue
		}
		out, reds, err := rep.Redact(r.Doc, highSecret)
		if err != nil {
			t.Errorf("%s: redact: %v", r.ID, err)
			continue
		}
		redacted++
		if err := strictjson.Validate(out); err != nil {
			t.Errorf("%s: redacted document is not strict JSON: %v", r.ID, err)
			continue
		}
		if len(reds) == 0 {
			t.Errorf("%s: redacted without a redaction record", r.ID)
		}
		if r.Class == "secret" && r.Value != "" && strings.Contains(reveal(out), r.Value) {
			t.Errorf("%s: the planted %s still occurs after redaction", r.ID, r.Type)
		}
	}
	if len(altered) > th.MaxBenignAltered {
		t.Errorf("the built-in selection altered %d negatives (at most %d): %s", len(altered), th.MaxBenignAltered, strings.Join(altered, " "))
	}
	t.Logf("%d positives redacted; %d negatives altered by the built-in selection", redacted, len(altered))
}

// reveal returns every string of doc, decoded as far as a reader could:
// member names and string values, JSON nested in strings, and base64,
// hex and percent-encoded strings, joined by newlines.
func reveal(doc []byte) string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return string(doc)
	}
	var b strings.Builder
	revealValue(&b, v, 0)
	return b.String()
}

func revealValue(b *strings.Builder, v any, depth int) {
	if depth > 8 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			b.WriteString(k + "\n")
			revealValue(b, e, depth)
		}
	case []any:
		for _, e := range x {
			revealValue(b, e, depth)
		}
	case string:
		revealString(b, x, depth)
	}
}

func revealString(b *strings.Builder, s string, depth int) {
	b.WriteString(s + "\n")
	var inner any
	if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &inner) == nil {
		revealValue(b, inner, depth+1)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(s); err == nil && len(d) > 0 {
			revealString(b, string(d), depth+1)
			break
		}
	}
	if d, err := hex.DecodeString(s); err == nil && len(d) > 0 {
		revealString(b, string(d), depth+1)
	}
	if strings.Contains(s, "%") {
		if d, err := url.PathUnescape(s); err == nil && d != s {
			revealString(b, d, depth+1)
		}
	}
}

// pointerExists reports whether the RFC 6901 pointer p names a value,
// or a member (the name itself being the leaf), in doc.
func pointerExists(doc []byte, p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return false
			}
			v = e
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}
