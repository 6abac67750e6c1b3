package inspect

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// The replacements, by class (Replacement).
const (
	// ReplacementSecret replaces a scan.ClassSecret value.
	ReplacementSecret = "[REDACTED_SECRET]"
	// ReplacementPII replaces a scan.ClassPII value.
	ReplacementPII = "[REDACTED_PII]"
	// ReplacementInjection replaces a prompt-injection or poisoning
	// phrase, and a value of any other class.
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

// The redaction methods.
const (
	methodPattern uint8 = iota
	methodEntropy
	methodDecoded
	methodConsistent
)

var methodNames = [...]string{"pattern", "entropy", "decoded", "consistent"}

// method returns a selected finding's redaction method: "decoded" when
// it was found in nested JSON or an encoded value, "entropy" when its rule
// id says generic or entropy (keyword-plus-entropy rules), else "pattern".
func method(f *Finding) uint8 {
	switch {
	case f.at.n > 0:
		return methodDecoded
	case strings.Contains(f.Rule, "generic"), strings.Contains(f.Rule, "entropy"):
		return methodEntropy
	}
	return methodPattern
}

// span is one span of a scanned text to replace: class indexes
// redactor.classes.
type span struct {
	start, end int32
	class      uint16
	method     uint8
}

// edit is one span of the document to replace by redactor.repls[repl]
// (repl < 0: merged into the edit before it, same span), with the record
// redactor.recs[rec]. Compact: a document may hold many occurrences.
type edit struct {
	start, end int32
	repl, rec  int32
}

// redactor is one Redact call's state.
type redactor struct {
	w       *walker
	classes []scan.Class
	repls   []string // by class index; then re-encoded blobs
	recs    []Redaction
	recIdx  map[Redaction]int32
	// edits in chunks of editChunk (no copying as they grow); sorted
	// stays true while they come in document order (the usual case).
	edits  [][]edit
	sorted bool
	lastAt int32
}

const editChunk = 4096

func (rd *redactor) push(e edit) {
	if e.start < rd.lastAt {
		rd.sorted = false
	}
	rd.lastAt = e.start
	if n := len(rd.edits); n == 0 || len(rd.edits[n-1]) == cap(rd.edits[n-1]) {
		c := 16
		if n > 0 {
			c = min(editChunk, 2*cap(rd.edits[n-1]))
		}
		rd.edits = append(rd.edits, make([]edit, 0, c))
	}
	n := len(rd.edits) - 1
	rd.edits[n] = append(rd.edits[n], e)
}

func (rd *redactor) class(c scan.Class) uint16 {
	for i, x := range rd.classes {
		if x == c {
			return uint16(i)
		}
	}
	rd.classes = append(rd.classes, c)
	rd.repls = append(rd.repls[:len(rd.classes)-1], Replacement(c))
	return uint16(len(rd.classes) - 1)
}

func (rd *redactor) rec(r Redaction) int32 {
	if i, ok := rd.recIdx[r]; ok {
		return i
	}
	rd.recs = append(rd.recs, r)
	rd.recIdx[r] = int32(len(rd.recs) - 1)
	return int32(len(rd.recs) - 1)
}

// matcher finds the selected findings' values (minConsistent bytes or
// more) in a text: with few values by strings.Index, with many by their
// first four bytes (a 2-byte filter, then a map), in one pass.
type matcher struct {
	vals   []value
	seen   map[string]bool
	first  map[uint32][]int
	filter []uint64 // bit per first two bytes
}

// value is a selected finding's value, searched everywhere.
type value struct {
	text  string
	class uint16
}

// fewValues is how many values are searched one by one.
const fewValues = 4

func (m *matcher) add(v []byte, c uint16) {
	if len(v) < minConsistent {
		return
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	if m.seen[string(v)] {
		return
	}
	m.seen[string(v)] = true
	m.vals = append(m.vals, value{text: string(v), class: c})
}

func (m *matcher) build() {
	if len(m.vals) <= fewValues {
		return
	}
	m.first = map[uint32][]int{}
	m.filter = make([]uint64, 1<<16/64)
	for i, v := range m.vals {
		k := uint32(v.text[0]) | uint32(v.text[1])<<8 | uint32(v.text[2])<<16 | uint32(v.text[3])<<24
		m.first[k] = append(m.first[k], i)
		f := uint16(v.text[0]) | uint16(v.text[1])<<8
		m.filter[f/64] |= 1 << (f % 64)
	}
}

// find calls fn for the occurrences of the values in t (per value when
// there are few, in one increasing pass when many), without overlaps
// between occurrences of one value; at one position the longest value
// wins.
func (m *matcher) find(t string, fn func(s, e int, c uint16)) {
	if m.first == nil {
		for _, v := range m.vals {
			for off := 0; off < len(t); {
				k := strings.Index(t[off:], v.text)
				if k < 0 {
					break
				}
				fn(off+k, off+k+len(v.text), v.class)
				off += k + len(v.text)
			}
		}
		return
	}
	for i := 0; i+minConsistent <= len(t); {
		f := uint16(t[i]) | uint16(t[i+1])<<8
		if m.filter[f/64]&(1<<(f%64)) == 0 {
			i++
			continue
		}
		k := uint32(t[i]) | uint32(t[i+1])<<8 | uint32(t[i+2])<<16 | uint32(t[i+3])<<24
		best := -1
		for _, j := range m.first[k] {
			if v := m.vals[j].text; strings.HasPrefix(t[i:], v) && (best < 0 || len(v) > len(m.vals[best].text)) {
				best = j
			}
		}
		if best < 0 {
			i++
			continue
		}
		fn(i, i+len(m.vals[best].text), m.vals[best].class)
		i += len(m.vals[best].text)
	}
}

// Redact returns doc with the span of every finding sel selects (nil
// selects every finding) replaced by its class's Replacement, and the
// redaction records: one per leaf, class, method and replacement, in the
// order the walk meets them. doc must be the document Inspect (or
// InspectTool) was given.
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
//   - Overlapping spans are replaced once, by the first one's
//     replacement.
//
// With no span to replace, Redact returns doc itself and no records. It
// fails with ErrMismatch when doc is not the inspected document (length
// and CRC-32C) or a finding does not fit it, with ErrLimit for a document
// of 2 GiB or more, and with the walk's errors when doc is malformed
// beyond where Inspect stopped (a truncated report).
func (r *Report) Redact(doc []byte, sel func(Finding) bool) (out []byte, recs []Redaction, err error) {
	if len(doc) != r.size || checksum(doc) != r.sum {
		return nil, nil, fmt.Errorf("inspect: redact: %w", ErrMismatch)
	}
	if len(doc) > math.MaxInt32 {
		return nil, nil, fmt.Errorf("inspect: redact: %w", &LimitError{Limit: "bytes", Max: math.MaxInt32})
	}
	// Each leaf is decoded once, however many findings it has.
	byLoc := map[loc][]int{}
	var locs []loc
	for i := range r.Findings {
		f := &r.Findings[i]
		if sel != nil && !sel(*f) {
			continue
		}
		if byLoc[f.at] == nil {
			locs = append(locs, f.at)
		}
		byLoc[f.at] = append(byLoc[f.at], i)
	}
	if len(locs) == 0 {
		return doc, nil, nil
	}
	w := getWalker(doc, r.opts)
	defer putWalker(w)
	rd := &redactor{w: w, recIdx: map[Redaction]int32{}, sorted: true}
	for _, c := range []scan.Class{scan.ClassSecret, scan.ClassPII, scan.ClassInjection} {
		rd.class(c)
	}
	selected := map[loc][]span{}
	var m matcher
	for _, l := range locs {
		t, ok := w.resolve(l)
		if !ok {
			return nil, nil, fmt.Errorf("inspect: redact: finding at %s: %w", r.Findings[byLoc[l][0]].Path, ErrMismatch)
		}
		for _, i := range byLoc[l] {
			f := &r.Findings[i]
			if f.Start < 0 || f.End > len(t) || f.Start > f.End {
				return nil, nil, fmt.Errorf("inspect: redact: finding %d (%s at %s): %w", i, f.Rule, f.Path, ErrMismatch)
			}
			if f.Start == f.End {
				continue
			}
			c := rd.class(f.Class)
			m.add(t[f.Start:f.End], c)
			if !l.name {
				selected[l] = append(selected[l], span{int32(f.Start), int32(f.End), c, method(f)})
			}
		}
	}
	// The selected locs sorted by their leaf's offset: a visit finds its
	// spans by binary search (no hashing of every text's loc).
	selLocs := make([]loc, 0, len(selected))
	for l, ss := range selected {
		slices.SortStableFunc(ss, func(a, b span) int { return int(a.start - b.start) })
		selLocs = append(selLocs, l)
	}
	slices.SortFunc(selLocs, func(a, b loc) int { return a.start - b.start })
	lookup := func(l loc) []span {
		k, _ := slices.BinarySearchFunc(selLocs, l.start, func(x loc, s int) int { return x.start - s })
		for ; k < len(selLocs) && selLocs[k].start == l.start; k++ {
			if selLocs[k] == l {
				return selected[l]
			}
		}
		return nil
	}
	m.build()
	var (
		spans  []span
		maxEnd []int32
	)
	w.visit = func(t, _ string) error {
		if w.cur.name {
			return nil
		}
		sel := lookup(w.cur)
		// sel is sorted by start; maxEnd[k] is the furthest end of
		// sel[:k+1]: an occurrence [s, e) overlaps a selected span when
		// one starting before e ends after s.
		maxEnd = maxEnd[:0]
		for k, x := range sel {
			if k > 0 {
				x.end = max(x.end, maxEnd[k-1])
			}
			maxEnd = append(maxEnd, x.end)
		}
		// Plain and nested-JSON text: each span becomes an edit at once;
		// decoded text is replaced whole, from all its spans.
		direct := w.cur.n == 0 || w.cur.layers[w.cur.n-1].kind == layerJSON
		field, fieldOK := "", false
		emit := func(sp span) {
			if !direct {
				spans = append(spans, sp)
				return
			}
			if !fieldOK {
				field, fieldOK = w.pointer(), true
			}
			rd.addSpan(field, sp)
		}
		spans = spans[:0]
		for _, sp := range sel {
			emit(sp)
		}
		m.find(t, func(s, e int, c uint16) {
			k, _ := slices.BinarySearchFunc(sel, e, func(x span, e int) int {
				if int(x.start) < e {
					return -1
				}
				return 1
			})
			if k > 0 && int(maxEnd[k-1]) > s {
				return // a selected span covers it
			}
			emit(span{int32(s), int32(e), c, methodConsistent})
		})
		if !direct && len(spans) > 0 {
			slices.SortStableFunc(spans, func(a, b span) int { return int(a.start - b.start) })
			rd.addDecoded(t, spans)
		}
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
	if len(rd.edits) == 0 {
		return doc, nil, nil
	}
	chunks := rd.edits
	if !rd.sorted {
		var all []edit
		for _, c := range chunks {
			all = append(all, c...)
		}
		slices.SortStableFunc(all, func(a, b edit) int { return int(a.start - b.start) })
		chunks = [][]edit{all}
	}
	// Overlapping edits are merged: the union is replaced by the first's
	// replacement. Two passes: the output's size, then the output.
	merged := func(fn func(e edit)) {
		var cur edit
		open := false
		for _, c := range chunks {
			for _, e := range c {
				if open && e.start < cur.end {
					cur.end = max(cur.end, e.end)
					continue
				}
				if open {
					fn(cur)
				}
				cur, open = e, true
			}
		}
		fn(cur)
	}
	size := len(doc)
	merged(func(e edit) { size += len(rd.repls[e.repl]) - int(e.end-e.start) })
	out = make([]byte, 0, size)
	last := int32(0)
	merged(func(e edit) {
		out = append(out, doc[last:e.start]...)
		out = append(out, rd.repls[e.repl]...)
		last = e.end
	})
	out = append(out, doc[last:]...)
	return out, rd.recs, nil
}

// recFor returns the record of span sp at the current text, field its
// pointer.
func (rd *redactor) recFor(field string, sp span) int32 {
	m := sp.method
	if rd.w.cur.n > 0 && m != methodConsistent {
		m = methodDecoded
	}
	return rd.rec(Redaction{Field: field, Class: string(rd.classes[sp.class]), Method: methodNames[m], Replacement: rd.repls[sp.class]})
}

// addSpan adds the edit for span sp of the current text (plain or nested
// JSON).
func (rd *redactor) addSpan(field string, sp span) {
	ds, de := rd.w.mapUp(int(sp.start), int(sp.end), int(rd.w.cur.n))
	rd.push(edit{int32(ds), int32(de), int32(sp.class), rd.recFor(field, sp)})
}

// addDecoded adds the edit for spans (sorted) of t, a decoded value: the
// encoded value replaced whole (a textual blob by its re-encoding, with
// the spans redacted), one edit carrying every span's record.
func (rd *redactor) addDecoded(t string, spans []span) {
	w := rd.w
	field := w.pointer()
	n := int(w.cur.n)
	ly := w.cur.layers[n-1]
	ds, de := w.mapUp(0, len(w.texts[n-1]), n-1)
	repl := int32(spans[0].class)
	if ly.kind == layerBlob {
		var sb strings.Builder
		last := 0
		for _, s := range spans {
			st, en := max(int(s.start), last), int(s.end)
			if en <= st {
				continue
			}
			sb.WriteString(t[last:st])
			sb.WriteString(rd.repls[s.class])
			last = en
		}
		sb.WriteString(t[last:])
		rd.repls = append(rd.repls, b64encodings[ly.enc].EncodeToString([]byte(sb.String())))
		repl = int32(len(rd.repls) - 1)
	}
	for _, s := range spans {
		rd.push(edit{int32(ds), int32(de), repl, rd.recFor(field, s)})
	}
}

// mapUp maps the span [s, e) of text n at w.cur to the document's bytes.
func (w *walker) mapUp(s, e, n int) (int, int) {
	for j := n - 1; j >= 0; j-- {
		ly := w.cur.layers[j]
		if ly.kind == layerJSON {
			m := &w.maps[j+1]
			m.reset(w.texts[j][ly.start:ly.end], w.gens[j], int(ly.start))
			rs, re := m.span(s, e)
			s, e = int(ly.start)+rs, int(ly.start)+re
		} else {
			s, e = 0, len(w.texts[j])
		}
	}
	m := &w.maps[0]
	m.reset(w.doc[w.cur.start:w.cur.end], 0, w.cur.start)
	rs, re := m.span(s, e)
	return w.cur.start + rs, w.cur.start + re
}

// resolve returns the text at l in w.doc (in w's buffers: valid until
// the walker decodes again).
func (w *walker) resolve(l loc) ([]byte, bool) {
	doc := w.doc
	if l.start < 0 || l.end > len(doc) || l.start > l.end || l.n < 0 || int(l.n) > maxLayers {
		return nil, false
	}
	t, err := w.text(doc, l.start, l.end, true, 0)
	if err != nil {
		return nil, false
	}
	for j := 0; j < int(l.n); j++ {
		ly := l.layers[j]
		var ok bool
		switch ly.kind {
		case layerJSON:
			if ly.start < 0 || int(ly.end) > len(t) || ly.start > ly.end {
				return nil, false
			}
			if t, err = w.text(t, int(ly.start), int(ly.end), true, j+1); err != nil {
				return nil, false
			}
			continue
		case layerBlob:
			_, t, ok = decodeBase64(w.bufs[j+1][:0], t)
		default:
			var kind layerKind
			kind, _, t, ok = decodeValue(w.bufs[j+1][:0], t)
			ok = ok && kind == ly.kind
		}
		if !ok {
			return nil, false
		}
		w.bufs[j+1] = t
	}
	return t, true
}
