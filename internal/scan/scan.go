// Package scan holds Gatehouse's text detectors (../../docs/scanning.md;
// shared/spec/evidence.md §8): secrets (provider formats from the gitleaks
// rule set, PEM and OpenSSH keys, JWTs, credentials in URLs, bearer and
// basic headers, keyword plus entropy), personal data (e-mail, phone
// numbers, payment cards, national ids, IBAN), prompt injection in tool
// output and poisoning in tool definitions.
//
// A [Scanner] is compiled once (every regular expression, the keyword
// automaton) and is then immutable and safe for concurrent use: nothing is
// compiled on the hot path. It scans one decoded string at a time; walking
// JSON documents, JSON paths and redaction belong to package inspect.
//
// A [Finding] never holds the matched value: only a rule id, a class, a
// confidence, the span (byte offsets into the scanned string, for the
// caller's redaction; never serialized) and a masked excerpt.
package scan

// Class is what kind of thing a finding is.
type Class string

// The classes.
const (
	// ClassSecret: a credential (token, key, password).
	ClassSecret Class = "secret"
	// ClassPII: personal data (e-mail, phone, card, national id, IBAN).
	ClassPII Class = "pii"
	// ClassInjection: prompt injection in content the model will read.
	ClassInjection Class = "prompt_injection"
	// ClassPoisoning: a poisoned tool definition (hidden directives,
	// cross-tool instructions, lookalike names).
	ClassPoisoning Class = "tool_poisoning"
)

// Confidence is how sure a rule is. High-confidence rules act (the
// built-in policy redacts high-confidence secrets); medium and low ones
// flag.
type Confidence string

// The confidences, most sure first.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

// Mode says what a scanned string is, which selects the detectors that run.
type Mode uint8

const (
	// ModeData is an argument or result value: secrets, personal data and
	// prompt injection.
	ModeData Mode = iota
	// ModeToolDefinition is a tool's name, title, description or a schema
	// property's name or description from tools/list: poisoning (hidden
	// directives, file-read and exfiltration instructions, cross-tool
	// shadowing) plus secrets.
	ModeToolDefinition
)

// Input is one string to scan and where it sits.
type Input struct {
	// Text is the decoded string (JSON escapes already resolved).
	Text string
	// Key is the name of the object member holding the string ("" for an
	// array element or the top level): "api_key": "..." makes a
	// keyword-plus-entropy secret likelier, and an encoded value next to a
	// secret-like key is decoded.
	Key string
	// Mode selects the detectors.
	Mode Mode
}

// Finding is one match of one rule in one string. It never holds the
// matched value.
type Finding struct {
	// Rule is the rule id ("aws-access-token", "pii-email",
	// "injection-ignore-instructions", ...).
	Rule string
	// Class and Confidence are the rule's (Confidence may be lowered by
	// context, for example a quoted phrase in prose about injection).
	Class      Class
	Confidence Confidence
	// Start and End are the byte offsets of the matched span in
	// Input.Text (End exclusive): what a redaction replaces. For an
	// injection finding it is the phrase; for a poisoning finding the
	// directive.
	Start, End int
	// Excerpt is a masked excerpt safe to log: at most a few leading
	// characters of a secret or personal value and its length, never the
	// value; for injection and poisoning a short, line-safe quote of the
	// phrase matched.
	Excerpt string
}

// family is one group of detectors (secrets, personal data, injection and
// poisoning), compiled once by New.
type family interface {
	// scan emits every finding of the family in in; it must not retain
	// in.Text.
	scan(in Input, emit func(Finding))
}

// Scanner is a compiled set of detectors. It is immutable and safe for
// concurrent use.
type Scanner struct {
	families []family
	// With both the secret and the injection family on: the families
	// by name, and per mode (ModeData, ModeToolDefinition) one keyword
	// automaton over both families' keywords, so that a string costs
	// one keyword pass, not two (Scan).
	sec    *secretFamily
	pii    family
	inj    *injectionFamily
	shared [2]*sharedKeywords
}

// sharedKeywords is one automaton over the secret family's keywords and
// the injection family's keywords of one mode; each of its words maps
// to the index of the word in either family's list (-1: not one of its
// words).
type sharedKeywords struct {
	kw       *keywords
	sec, inj []int32
}

// newSharedKeywords merges the secret family's words and those of one
// injection anchor set, or returns nil when a secret keyword is not
// printable ASCII (the shared pass finds secret keywords in the view,
// which keeps every printable ASCII run of the original: view.dropsASCII).
func newSharedKeywords(sec []string, inj []string) *sharedKeywords {
	sk := &sharedKeywords{}
	index := map[string]int{}
	var words []string
	add := func(w string) int {
		i, ok := index[w]
		if !ok {
			i = len(words)
			index[w] = i
			words = append(words, w)
			sk.sec, sk.inj = append(sk.sec, -1), append(sk.inj, -1)
		}
		return i
	}
	for wi, w := range sec {
		for k := 0; k < len(w); k++ {
			if w[k] < 0x20 || w[k] > 0x7e {
				return nil
			}
		}
		sk.sec[add(w)] = int32(wi)
	}
	for wi, w := range inj {
		sk.inj[add(w)] = int32(wi)
	}
	sk.kw = newKeywords(words)
	return sk
}

// Detector is a detector added to a Scanner besides the built-in
// families (Options.Detectors): custom rules, or a test's. Scan must be
// safe for concurrent use and must not retain in.Text.
type Detector interface {
	Scan(in Input, emit func(Finding))
}

// Options selects detector families; the zero value turns every family
// on.
type Options struct {
	// NoSecrets, NoPII and NoInjection turn a family off (NoInjection
	// also turns off poisoning in ModeToolDefinition).
	NoSecrets, NoPII, NoInjection bool
	// Detectors run after the built-in families, in order.
	Detectors []Detector
}

// New compiles the detectors opts selects. It returns an error only when
// an embedded rule does not compile (a defect of the build, reported with
// the rule id).
func New(opts Options) (*Scanner, error) {
	s := &Scanner{}
	for _, f := range []struct {
		off bool
		new func() (family, error)
	}{
		{opts.NoSecrets, newSecretFamily},
		{opts.NoPII, newPIIFamily},
		{opts.NoInjection, newInjectionFamily},
	} {
		if f.off {
			continue
		}
		fam, err := f.new()
		if err != nil {
			return nil, err
		}
		s.families = append(s.families, fam)
	}
	for _, f := range s.families {
		switch f := f.(type) {
		case *secretFamily:
			s.sec = f
		case *piiFamily:
			s.pii = f
		case *injectionFamily:
			s.inj = f
		}
	}
	if s.sec != nil && s.inj != nil {
		s.shared[0] = newSharedKeywords(s.sec.kw.words, s.inj.data.words)
		s.shared[1] = newSharedKeywords(s.sec.kw.words, s.inj.def.words)
	}
	for _, d := range opts.Detectors {
		s.families = append(s.families, detectorFamily{d})
	}
	return s, nil
}

// Scan calls emit for every finding in in, family by family, in the
// order of each family's rules and positions. It does not retain in.Text.
//
// With the secret and the injection family both on, one keyword pass
// serves both (scanShared); the findings and their order are those of
// the families run one after the other.
func (s *Scanner) Scan(in Input, emit func(Finding)) {
	if s.sec != nil && s.inj != nil {
		s.scanShared(in, emit)
		return
	}
	for _, f := range s.families {
		f.scan(in, emit)
	}
}

// scanShared runs the built-in families with one keyword pass: the
// shared automaton of in.Mode over the injection family's view, each
// hit handed to the family that owns the keyword. A secret keyword hit
// in the view counts only where it is the same keyword at the same
// length in the original (a view built from the text adds folded
// characters: "…" is "..."; it never drops a printable ASCII run
// unless view.dropsASCII, and then the secret family makes its own pass
// over the original).
func (s *Scanner) scanShared(in Input, emit func(Finding)) {
	sk := s.shared[0]
	if in.Mode == ModeToolDefinition {
		sk = s.shared[1]
	}
	st := s.inj.begin(in)
	sc := s.sec.begin(in.Text)
	if sk == nil || st.v.dropsASCII {
		s.sec.kw.each(in.Text, func(w, end int) bool {
			s.sec.hit(sc, in.Text, w, end)
			return true
		})
		st.as.kw.each(st.t, func(w, end int) bool {
			st.hit(w, end)
			return true
		})
	} else {
		v, orig := &st.v, in.Text
		sk.kw.each(st.t, func(w, end int) bool {
			if sw := sk.sec[w]; sw >= 0 {
				if v.segs == nil {
					s.sec.hit(sc, orig, int(sw), end)
				} else {
					n := s.sec.kwLen[sw]
					os, oe := v.span(end-n, end)
					if oe-os == n && asciiEqualFold(orig[os:oe], st.t[end-n:end]) {
						s.sec.hit(sc, orig, int(sw), oe)
					}
				}
			}
			if iw := sk.inj[w]; iw >= 0 {
				st.hit(int(iw), end)
			}
			return true
		})
	}
	s.sec.finish(sc, in, emit)
	if s.pii != nil {
		s.pii.scan(in, emit)
	}
	st.finish(emit)
	for _, f := range s.families {
		if d, ok := f.(detectorFamily); ok {
			d.scan(in, emit)
		}
	}
}

// asciiEqualFold reports whether a and b are equal with ASCII letters
// folded.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

type detectorFamily struct{ d Detector }

func (f detectorFamily) scan(in Input, emit func(Finding)) { f.d.Scan(in, emit) }
