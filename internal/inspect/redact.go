package inspect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// The replacements, by class.
const (
	ReplacementSecret    = "[REDACTED_SECRET]"
	ReplacementPII       = "[REDACTED_PII]"
	ReplacementInjection = "[REDACTED_INJECTION]"
)

// minConsistent is the shortest value whose other occurrences are
// redacted too: a shorter one would hit unrelated text.
const minConsistent = 4

// Replacement returns the text that replaces a value of class c:
// ReplacementSecret, ReplacementPII, or ReplacementInjection (injection,
// poisoning and any other class).
func Replacement(c scan.Class) string {
	switch c {
	case scan.ClassSecret:
		return ReplacementSecret
	case scan.ClassPII:
		return ReplacementPII
	}
	return ReplacementInjection
}

// method returns a selected finding's redaction method: "decoded" when
// it was found in nested JSON or an encoded value, "entropy" when its rule
// id says generic or entropy (keyword-plus-entropy rules), else "pattern".
func method(f *Finding) string {
	switch {
	case f.at.n > 0:
		return "decoded"
	case strings.Contains(f.Rule, "generic"), strings.Contains(f.Rule, "entropy"):
		return "entropy"
	}
	return "pattern"
}

// span is one span of a scanned text to replace.
type span struct {
	start, end int
	class      scan.Class
	method     string
}

// edit is one span of the document to replace.
type edit struct {
	start, end int
	repl       string
	rec        Redaction
}

// value is a selected finding's value, searched everywhere.
type value struct {
	text  string
	class scan.Class
}

// Redact returns doc with the span of every finding sel selects (nil
// selects every finding) replaced by its class's Replacement, and one
// redaction record per leaf, class and method. doc must be the document
// Inspect (or InspectTool) was given.
//
// The rules:
//   - Spans are found in decoded strings and mapped back to doc's bytes:
//     a span that cuts a JSON escape (a \uXXXX surrogate pair being one)
//     or a character covers all of it. Every byte outside the replaced
//     spans stays as it was; the output is valid JSON.
//   - In JSON nested in a string, the span is replaced inside the inner
//     string, through both layers of escaping; the record's Field is the
//     outer leaf and its Method "decoded".
//   - A base64, hex or percent-encoded value is replaced whole (Method
//     "decoded"); a textual embedded resource blob is decoded, redacted
//     and re-encoded in its base64 variant.
//   - Every other occurrence of a selected finding's value (at least 4
//     bytes) in any scanned text of the document is redacted too
//     (Method "consistent").
//   - Findings in member names are not rewritten (renaming a member would
//     change the document's shape and could make names collide); their
//     values' other occurrences still are. A policy that must not forward
//     such a name denies.
//   - Method is "decoded" for a finding in nested or encoded text,
//     "entropy" when the rule id contains "generic" or "entropy", else
//     "pattern".
//
// With no span to replace, Redact returns doc itself and no records. It
// fails with ErrMismatch when doc is not the inspected document, and
// with the walk's errors when doc is malformed beyond where Inspect
// stopped (a truncated report).
func (r *Report) Redact(doc []byte, sel func(Finding) bool) (out []byte, recs []Redaction, err error) {
	if len(doc) != r.size || checksum(doc) != r.sum {
		return nil, nil, fmt.Errorf("inspect: redact: %w", ErrMismatch)
	}
	var (
		selected map[loc][]span
		values   []value
	)
	for i := range r.Findings {
		f := &r.Findings[i]
		if sel != nil && !sel(*f) {
			continue
		}
		t, err := resolve(doc, f.at)
		if err != nil || f.Start < 0 || f.End > len(t) || f.Start >= f.End {
			if err == nil && f.Start == f.End {
				continue
			}
			return nil, nil, fmt.Errorf("inspect: redact: finding %d (%s at %s): %w", i, f.Rule, f.Path, ErrMismatch)
		}
		if v := t[f.Start:f.End]; len(v) >= minConsistent && !slices.ContainsFunc(values, func(x value) bool { return x.text == string(v) }) {
			values = append(values, value{text: string(v), class: f.Class})
		}
		if f.at.name {
			continue
		}
		if selected == nil {
			selected = map[loc][]span{}
		}
		selected[f.at] = append(selected[f.at], span{f.Start, f.End, f.Class, method(f)})
	}
	if selected == nil && values == nil {
		return doc, nil, nil
	}
	w := newWalker(doc, r.opts)
	var edits []edit
	var spans []span
	w.visit = func(t, _ string) error {
		if w.cur.name {
			return nil
		}
		spans = append(spans[:0], selected[w.cur]...)
		for _, v := range values {
			for off := 0; off < len(t); {
				k := strings.Index(t[off:], v.text)
				if k < 0 {
					break
				}
				s, e := off+k, off+k+len(v.text)
				if !slices.ContainsFunc(spans, func(x span) bool { return x.start < e && s < x.end }) {
					spans = append(spans, span{s, e, v.class, "consistent"})
				}
				off = e
			}
		}
		if len(spans) == 0 {
			return nil
		}
		slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
		edits = w.edits(edits, t, spans)
		return nil
	}
	if r.tool {
		err = w.tool()
	} else {
		err = w.walk()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("inspect: redact: %w", err)
	}
	if len(edits) == 0 {
		return doc, nil, nil
	}
	slices.SortStableFunc(edits, func(a, b edit) int { return a.start - b.start })
	out = make([]byte, 0, len(doc)+len(edits)*len(ReplacementInjection))
	seen := map[Redaction]bool{}
	last := 0
	for i := 0; i < len(edits); {
		e := edits[i]
		// Merge overlapping edits: the union is replaced by the first's
		// replacement.
		j := i + 1
		for ; j < len(edits) && edits[j].start < e.end; j++ {
			e.end = max(e.end, edits[j].end)
		}
		out = append(out, doc[last:e.start]...)
		out = append(out, e.repl...)
		last = e.end
		for _, x := range edits[i:j] {
			if !seen[x.rec] {
				seen[x.rec] = true
				recs = append(recs, x.rec)
			}
		}
		i = j
	}
	out = append(out, doc[last:]...)
	return out, recs, nil
}

// edits appends the document edits for spans (sorted) of t, the text at
// w.cur.
func (w *walker) edits(edits []edit, t string, spans []span) []edit {
	field := w.pointer()
	n := int(w.cur.n)
	rec := func(s span) Redaction {
		m := s.method
		if n > 0 && m != "consistent" {
			m = "decoded"
		}
		return Redaction{Field: field, Class: string(s.class), Method: m, Replacement: Replacement(s.class)}
	}
	if n == 0 || w.cur.layers[n-1].kind == layerJSON {
		for _, s := range spans {
			ds, de := w.mapUp(s.start, s.end, n)
			edits = append(edits, edit{ds, de, Replacement(s.class), rec(s)})
		}
		return edits
	}
	ly := w.cur.layers[n-1]
	parent := w.texts[n-1]
	if ly.kind != layerBlob {
		// An encoded value is replaced whole.
		ds, de := w.mapUp(0, len(parent), n-1)
		for i, s := range spans {
			e := edit{ds, de, Replacement(spans[0].class), rec(s)}
			if i > 0 {
				e.repl = "" // merged into the first
			}
			edits = append(edits, e)
		}
		return edits
	}
	// A textual blob: redact the decoded text, re-encode it.
	var sb strings.Builder
	last := 0
	for _, s := range spans {
		if s.start < last {
			s.start = last
		}
		if s.end <= s.start {
			continue
		}
		sb.WriteString(t[last:s.start])
		sb.WriteString(Replacement(s.class))
		last = s.end
	}
	sb.WriteString(t[last:])
	blob := b64encodings[ly.enc].EncodeToString([]byte(sb.String()))
	ds, de := w.mapUp(0, len(parent), n-1)
	for i, s := range spans {
		e := edit{ds, de, blob, rec(s)}
		if i > 0 {
			e.repl = ""
		}
		edits = append(edits, e)
	}
	return edits
}

// mapUp maps the span [s, e) of text n at w.cur to the document's bytes.
func (w *walker) mapUp(s, e, n int) (int, int) {
	for j := n - 1; j >= 0; j-- {
		ly := w.cur.layers[j]
		if ly.kind == layerJSON {
			rs, re := rawSpan(w.texts[j][ly.start:ly.end], s, e)
			s, e = int(ly.start)+rs, int(ly.start)+re
		} else {
			s, e = 0, len(w.texts[j])
		}
	}
	rs, re := rawSpan(w.doc[w.cur.start:w.cur.end], s, e)
	return w.cur.start + rs, w.cur.start + re
}

// resolve returns the text at l in doc.
func resolve(doc []byte, l loc) ([]byte, error) {
	if l.start < 0 || l.end > len(doc) || l.start > l.end {
		return nil, ErrMismatch
	}
	t, err := decodeString(nil, doc[l.start:l.end])
	if err != nil {
		return nil, err
	}
	for j := 0; j < int(l.n); j++ {
		ly := l.layers[j]
		switch ly.kind {
		case layerJSON:
			if ly.start < 0 || int(ly.end) > len(t) || ly.start > ly.end {
				return nil, ErrMismatch
			}
			t, err = decodeString(nil, t[ly.start:ly.end])
			if err != nil {
				return nil, err
			}
		case layerBlob:
			_, d, ok := decodeBase64(nil, t)
			if !ok {
				return nil, ErrMismatch
			}
			t = d
		default:
			kind, _, d, ok := decodeValue(nil, t)
			if !ok || kind != ly.kind {
				return nil, ErrMismatch
			}
			t = d
		}
	}
	return t, nil
}
