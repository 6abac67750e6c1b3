package inspect

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// reDetector reports every match of re as one finding of rule.
type reDetector struct {
	re    *regexp.Regexp
	rule  string
	class scan.Class
	conf  scan.Confidence
	mode  scan.Mode
	any   bool // every mode
}

func (d reDetector) Scan(in scan.Input, emit func(scan.Finding)) {
	if !d.any && in.Mode != d.mode {
		return
	}
	for _, m := range d.re.FindAllStringIndex(in.Text, -1) {
		emit(scan.Finding{Rule: d.rule, Class: d.class, Confidence: d.conf, Start: m[0], End: m[1], Excerpt: "masked"})
	}
}

// halfDetector reports, after every "CUT:", a span ending inside the next
// character (to test spans that cut a character or an escape).
type halfDetector struct{}

var cutRE = regexp.MustCompile(`CUT:`)

func (halfDetector) Scan(in scan.Input, emit func(scan.Finding)) {
	for _, m := range cutRE.FindAllStringIndex(in.Text, -1) {
		if m[1] < len(in.Text) {
			emit(scan.Finding{Rule: "test-cut", Class: scan.ClassSecret, Confidence: scan.High, Start: m[0], End: m[1] + 1})
		}
	}
}

// testDetectors are the detectors of the tests: SECRET-XXXXXXXX (high
// secret), GENERIC-xxxxxx (a generic rule), user@example.com (PII),
// "ignore previous instructions" (injection), <IMPORTANT> in tool
// definitions (poisoning).
func testDetectors() []scan.Detector {
	return []scan.Detector{
		reDetector{re: regexp.MustCompile(`SECRET-[A-Z0-9]{8}`), rule: "test-secret", class: scan.ClassSecret, conf: scan.High, any: true},
		reDetector{re: regexp.MustCompile(`GENERIC-[a-z]{6}`), rule: "generic-api-key", class: scan.ClassSecret, conf: scan.Medium, any: true},
		reDetector{re: regexp.MustCompile(`[a-z]+@example\.com`), rule: "test-email", class: scan.ClassPII, conf: scan.High, mode: scan.ModeData},
		reDetector{re: regexp.MustCompile(`(?i)ignore previous instructions`), rule: "test-injection", class: scan.ClassInjection, conf: scan.High, mode: scan.ModeData},
		reDetector{re: regexp.MustCompile(`<IMPORTANT>`), rule: "test-poisoning", class: scan.ClassPoisoning, conf: scan.High, mode: scan.ModeToolDefinition},
		halfDetector{},
	}
}

func testScanner(t testing.TB) *scan.Scanner {
	t.Helper()
	sc, err := scan.New(scan.Options{NoSecrets: true, NoPII: true, NoInjection: true, Detectors: testDetectors()})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// indexDetector reports every "SECRET-" and the 8 bytes after it, as
// cheaply as a keyword prefilter: the benchmarks measure the walk, not a
// detector.
type indexDetector struct{}

func (indexDetector) Scan(in scan.Input, emit func(scan.Finding)) {
	t := in.Text
	for off := 0; ; {
		k := strings.Index(t[off:], "SECRET-")
		if k < 0 || off+k+15 > len(t) {
			return
		}
		emit(scan.Finding{Rule: "test-secret", Class: scan.ClassSecret, Confidence: scan.High, Start: off + k, End: off + k + 15})
		off += k + 15
	}
}

func benchScanner(t testing.TB) *scan.Scanner {
	sc, err := scan.New(scan.Options{NoSecrets: true, NoPII: true, NoInjection: true, Detectors: []scan.Detector{indexDetector{}}})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
