package inspect

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// maxNest is how many levels of JSON nested inside strings are parsed
// ("{\"a\":\"{\\\"b\\\":1}\"}" is two levels).
const maxNest = 3

// maxLayers is the longest chain of decodings from a leaf of the document
// to a scanned text: maxNest levels of nested JSON and one encoding.
const maxLayers = maxNest + 1

// layerKind is one decoding step from a text to the next.
type layerKind uint8

const (
	layerNone layerKind = iota
	// layerJSON: the next text is a string leaf of JSON nested in this
	// text; start and end are that string's content (between its quotes)
	// in this text.
	layerJSON
	// layerBase64, layerHex, layerPercent: the next text is this whole
	// text decoded (a value next to a secret-like key).
	layerBase64
	layerHex
	layerPercent
	// layerBlob: the next text is this whole text (an embedded
	// resource's blob) decoded from base64.
	layerBlob
)

func (k layerKind) String() string {
	switch k {
	case layerJSON:
		return "json"
	case layerBase64, layerBlob:
		return "base64"
	case layerHex:
		return "hex"
	case layerPercent:
		return "percent"
	}
	return ""
}

// layer is one decoding step (see layerKind). enc is the base64 alphabet
// and padding for layerBase64 and layerBlob (an index into b64encodings).
type layer struct {
	kind       layerKind
	enc        uint8
	start, end int32
}

// loc says where a scanned text is: text0 is the decoded content of the
// document's string token doc[start:end] (between its quotes); layers[j]
// leads from text j to text j+1; the scanned text is text n. name says the
// string at the last level is a member name, not a value. A loc is a map
// key: unused layers are zero.
type loc struct {
	start, end int
	n          int8
	name       bool
	layers     [maxLayers]layer
}

// seg is one reference token of a JSON pointer: a member name, or an array
// index when idx >= 0.
type seg struct {
	name string
	idx  int
}

// walker walks one JSON value and calls visit for every text to scan (see
// Inspect). The same walk serves Inspect (visit scans) and Redact (visit
// collects edits), so both see the same texts at the same locs.
type walker struct {
	opts  Options
	doc   []byte
	visit func(text, key string) error

	cur  loc
	path []seg
	// pathHigh is the longest path had in this walk (putWalker clears
	// that much).
	pathHigh int
	// lastKey, lastSecret: secretLikeKey's memory.
	lastKey            string
	lastSecret, keySet bool
	level              int // levels of nested JSON entered (0: the document)
	// budget is what remains of opts.MaxBytes.
	budget int
	// undecoded counts values not decoded because of MaxDecodedBytes.
	undecoded int
	// bufs[j] holds text j when it had to be decoded; texts[j] is text j.
	bufs  [maxLayers + 1][]byte
	texts [maxLayers + 1][]byte
	// gens[j] changes whenever texts[j] does (a buffer is reused for
	// another string at the same address).
	gens [maxLayers + 1]uint64
	// maps map spans of text j+1 (maps[0]: of text 0) to raw bytes, for
	// Redact, with a cursor kept while the spans asked for increase.
	maps [maxLayers + 1]spanMapper
	// sink is the scanning state when visit scans (Report.attach).
	sink scanSink
}

func (w *walker) setText(L int, t []byte) {
	w.texts[L] = t
	w.gens[L]++
}

// view returns b as a string without copying. The string is valid while b
// is unchanged; visit callbacks and detectors must not retain it.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// pointer returns the RFC 6901 JSON pointer of the current path (at the
// document's level: nested JSON keeps its outer leaf's path).
func (w *walker) pointer() string {
	if len(w.path) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, s := range w.path {
		sb.WriteByte('/')
		if s.idx >= 0 {
			sb.WriteString(strconv.Itoa(s.idx))
			continue
		}
		for i := 0; i < len(s.name); i++ {
			switch c := s.name[i]; c {
			case '~':
				sb.WriteString("~0")
			case '/':
				sb.WriteString("~1")
			default:
				sb.WriteByte(c)
			}
		}
	}
	return sb.String()
}

func (w *walker) push(s seg) {
	if w.level == 0 {
		w.path = append(w.path, s)
		w.pathHigh = max(w.pathHigh, len(w.path))
	}
}

// secretLikeKey is scan.SecretLikeKey(key), remembered for the last key
// asked (the members of an array's objects repeat their names).
func (w *walker) secretLikeKey(key string) bool {
	if !w.keySet || key != w.lastKey {
		w.lastKey, w.lastSecret, w.keySet = key, scan.SecretLikeKey(key), true
	}
	return w.lastSecret
}

func (w *walker) pop() {
	if w.level == 0 {
		w.path = w.path[:len(w.path)-1]
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// walk walks the one JSON value of w.doc.
func (w *walker) walk() error {
	b := w.doc
	i, err := w.value(b, skipSpace(b, 0), 0, "")
	if err != nil {
		return err
	}
	if i = skipSpace(b, i); i != len(b) {
		return &SyntaxError{Offset: i, What: "data after the value"}
	}
	return nil
}

// value walks the value at b[i] (no leading space), at nesting depth, held
// by member key; it returns the offset after it.
func (w *walker) value(b []byte, i, depth int, key string) (int, error) {
	if i >= len(b) {
		return i, w.syntax(i, "unexpected end")
	}
	switch b[i] {
	case '{':
		return w.object(b, i, depth+1)
	case '[':
		return w.array(b, i, depth+1)
	case '"':
		cs, ce, next, esc, err := stringToken(b, i)
		if err != nil {
			return i, w.wrapSyntax(err)
		}
		return next, w.leaf(b, cs, ce, esc, key, depth)
	default:
		n, err := scalar(b, i)
		if err != nil {
			return i, w.wrapSyntax(err)
		}
		return n, nil
	}
}

func (w *walker) checkDepth(depth int) error {
	if depth > w.opts.MaxDepth {
		return &LimitError{Limit: "depth", Max: w.opts.MaxDepth}
	}
	return nil
}

// object walks the object at b[i]. Image and audio content's data is not
// scanned; an embedded resource's blob is decoded when textual (blobText).
// Both are found by sibling members that may follow them, so "data" and
// "blob" string members are walked after the others.
func (w *walker) object(b []byte, i, depth int) (int, error) {
	if err := w.checkDepth(depth); err != nil {
		return i, err
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	var (
		typ, mime        string
		hasMime, typSeen bool
		dataS, dataE     int = -1, -1
		blobS, blobE     int = -1, -1
		dataEsc, blobEsc bool
	)
	for {
		if i >= len(b) || b[i] != '"' {
			return i, w.syntax(i, "member name expected")
		}
		ns, ne, next, esc, err := stringToken(b, i)
		if err != nil {
			return i, w.wrapSyntax(err)
		}
		name, err := w.name(b[ns:ne], esc)
		if err != nil {
			return i, w.wrapSyntax(offsetErr(err, ns))
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return i, w.syntax(i, "':' expected")
		}
		i = skipSpace(b, i+1)
		w.push(seg{name: name, idx: -1})
		if w.opts.ScanNames {
			if err := w.scanName(b, ns, ne, name); err != nil {
				return i, err
			}
		}
		deferred := false
		if i < len(b) && b[i] == '"' && (name == "data" || name == "blob" || name == "type" || name == "mimeType") {
			cs, ce, vnext, vesc, err := stringToken(b, i)
			if err != nil {
				return i, w.wrapSyntax(err)
			}
			switch name {
			case "data":
				// Walked now when the type is known, else after the
				// members (findings stay in document order when they can).
				switch {
				case typSeen && (typ == "image" || typ == "audio") && !vesc && plainBase64(b[cs:ce]):
					deferred = true // media bytes: not scanned
				case !typSeen:
					dataS, dataE, dataEsc, deferred = cs, ce, vesc, true
				}
			case "blob":
				deferred = true
				if hasMime {
					if err := w.blob(b, cs, ce, vesc, mime, true); err != nil {
						return i, err
					}
				} else {
					blobS, blobE, blobEsc = cs, ce, vesc
				}
			case "type":
				typSeen = true
				if !vesc {
					typ = view(b[cs:ce])
				} else if s, err := decodeString(nil, b[cs:ce]); err == nil {
					typ = string(s)
				}
			case "mimeType":
				hasMime = true
				if !vesc {
					mime = view(b[cs:ce])
				} else if s, err := decodeString(nil, b[cs:ce]); err == nil {
					mime = string(s)
				}
			}
			if deferred {
				i = vnext
			}
		}
		if !deferred {
			if i, err = w.value(b, i, depth, name); err != nil {
				return i, err
			}
		}
		w.pop()
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			i++
			break
		}
		return i, w.syntax(i, "',' or '}' expected")
	}
	if dataS >= 0 && (typ != "image" && typ != "audio" || dataEsc || !plainBase64(b[dataS:dataE])) {
		w.push(seg{name: "data", idx: -1})
		err := w.leaf(b, dataS, dataE, dataEsc, "data", depth)
		w.pop()
		if err != nil {
			return i, err
		}
	}
	if blobS >= 0 {
		w.push(seg{name: "blob", idx: -1})
		err := w.blob(b, blobS, blobE, blobEsc, mime, hasMime)
		w.pop()
		if err != nil {
			return i, err
		}
	}
	return i, nil
}

func (w *walker) array(b []byte, i, depth int) (int, error) {
	if err := w.checkDepth(depth); err != nil {
		return i, err
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		w.push(seg{idx: n})
		var err error
		if i, err = w.value(b, i, depth, ""); err != nil {
			return i, err
		}
		w.pop()
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, w.syntax(i, "',' or ']' expected")
	}
}

// name decodes a member name: a view of b when it has no escapes.
func (w *walker) name(raw []byte, esc bool) (string, error) {
	if !esc {
		return view(raw), nil
	}
	s, err := decodeString(nil, raw)
	if err != nil {
		return "", err
	}
	return string(s), nil
}

// setToken records that the string at the current level has its content
// at b[cs:ce], and returns the level.
func (w *walker) setToken(cs, ce int, name bool) int {
	L := w.level
	if L == 0 {
		w.cur.start, w.cur.end = cs, ce
	} else {
		w.cur.layers[L-1] = layer{kind: layerJSON, start: int32(cs), end: int32(ce)}
	}
	w.cur.n = int8(L)
	for j := L; j < maxLayers; j++ {
		w.cur.layers[j] = layer{}
	}
	w.cur.name = name
	return L
}

// spend takes n bytes from the budget.
func (w *walker) spend(n int) error {
	if n > w.budget {
		return &LimitError{Limit: "bytes", Max: w.opts.MaxBytes}
	}
	w.budget -= n
	return nil
}

func (w *walker) scanName(b []byte, ns, ne int, name string) error {
	if w.visit == nil {
		return nil
	}
	w.setToken(ns, ne, true)
	w.setText(w.level, b[ns:ne])
	if err := w.spend(len(name)); err != nil {
		return err
	}
	return w.visit(name, "")
}

// text decodes the string content b[cs:ce] at level L into text L.
func (w *walker) text(b []byte, cs, ce int, esc bool, L int) ([]byte, error) {
	raw := b[cs:ce]
	if !esc {
		w.setText(L, raw)
		return raw, nil
	}
	buf := w.bufs[L][:0]
	if cap(buf) < len(raw) {
		// Once, at the upper bound: the decoded string is never longer.
		buf = make([]byte, 0, len(raw))
	}
	buf, err := decodeString(buf, raw)
	if err != nil {
		return nil, offsetErr(err, cs)
	}
	w.bufs[L] = buf
	w.setText(L, buf)
	return buf, nil
}

// leaf handles the string value b[cs:ce] held by member key: JSON nested
// in it is walked instead of the string; otherwise the string is scanned,
// and next to a secret-like key its decoding too.
func (w *walker) leaf(b []byte, cs, ce int, esc bool, key string, depth int) error {
	if w.visit == nil {
		return nil
	}
	L := w.setToken(cs, ce, false)
	t, err := w.text(b, cs, ce, esc, L)
	if err != nil {
		return w.wrapSyntax(err)
	}
	if err := w.spend(len(t)); err != nil {
		return err
	}
	if L < maxNest && looksJSON(t) {
		if len(t) > w.opts.MaxDecodedBytes {
			w.undecoded++
		} else if s, e, ok := nestedValue(t, w.opts.MaxDepth-depth); ok {
			w.level++
			_, err := w.value(t[:e], s, depth, key)
			w.level--
			return err
		}
		w.setToken(cs, ce, false)
		w.setText(L, t)
	}
	if err := w.visit(view(t), key); err != nil {
		return err
	}
	// Cheapest first: most texts fail on their first bytes, most keys
	// are not secret-like.
	if L >= maxLayers || len(t) < minEncoded || !maybeEncoded(t[:min(len(t), 32)]) ||
		!w.secretLikeKey(key) || !maybeEncoded(t) {
		return nil
	}
	if len(t) > w.opts.MaxDecodedBytes {
		w.undecoded++
		return nil
	}
	kind, enc, d, ok := decodeValue(w.bufs[L+1][:0], t)
	if !ok {
		return nil
	}
	w.bufs[L+1] = d
	return w.visitLayer(L, layer{kind: kind, enc: enc, start: 0, end: int32(len(t))}, d, key)
}

// visitLayer scans d, text L+1 reached from text L by ly.
func (w *walker) visitLayer(L int, ly layer, d []byte, key string) error {
	w.cur.n = int8(L + 1)
	w.cur.layers[L] = ly
	w.setText(L+1, d)
	if err := w.spend(len(d)); err != nil {
		return err
	}
	return w.visit(view(d), key)
}

// blob handles an embedded resource's blob b[cs:ce]: decoded from base64
// and scanned when mime is textual, or when the bytes are UTF-8 text with
// any other mimeType or none (the type is the server's word); an image,
// audio or video blob is not scanned at all; a textual blob that is not
// base64 is scanned as it is.
func (w *walker) blob(b []byte, cs, ce int, esc bool, mime string, hasMime bool) error {
	if w.visit == nil {
		return nil
	}
	textual := textualMIME(mime)
	if hasMime && mediaMIME(mime) && !esc && plainBase64(b[cs:ce]) {
		// Image, audio and video bytes are not text to scan. Any other
		// declared type is only the server's word: a text file served
		// as application/octet-stream (server-filesystem's
		// read_media_file) is decoded and scanned when its bytes are
		// text.
		return nil
	}
	L := w.setToken(cs, ce, false)
	t, err := w.text(b, cs, ce, esc, L)
	if err != nil {
		return w.wrapSyntax(err)
	}
	if L >= maxLayers {
		return nil
	}
	if len(t) > w.opts.MaxDecodedBytes {
		w.undecoded++
		if textual {
			if err := w.spend(len(t)); err != nil {
				return err
			}
			return w.visit(view(t), "blob")
		}
		return nil
	}
	enc, d, ok := decodeBase64(w.bufs[L+1][:0], t)
	if ok {
		w.bufs[L+1] = d
		if textual || looksText(d) {
			return w.visitLayer(L, layer{kind: layerBlob, enc: enc, end: int32(len(t))}, d, "blob")
		}
		return nil
	}
	// Not base64: whatever the type says, it is text.
	if err := w.spend(len(t)); err != nil {
		return err
	}
	return w.visit(view(t), "blob")
}

// syntax returns the error for malformed JSON at b offset i of the current
// level (offsets inside nested JSON are reported at its outer leaf).
func (w *walker) syntax(i int, what string) error {
	return w.wrapSyntax(&SyntaxError{Offset: i, What: what})
}

func (w *walker) wrapSyntax(err error) error {
	if se, ok := err.(*SyntaxError); ok && w.level > 0 {
		return &SyntaxError{Offset: w.cur.start, What: "nested JSON: " + se.What}
	}
	return err
}

func offsetErr(err error, base int) error {
	if se, ok := err.(*SyntaxError); ok {
		return &SyntaxError{Offset: base + se.Offset, What: se.What}
	}
	return err
}

// stringToken reads the string token at b[i] (b[i] == '"'): its content
// is b[cs:ce], next is the offset after the closing quote, esc says it has
// escapes. It checks the escapes' syntax, control characters and UTF-8;
// escaped surrogates are checked when decoded. The bytes between escapes
// are passed over eight at a time (findStop).
func stringToken(b []byte, i int) (cs, ce, next int, esc bool, err error) {
	cs = i + 1
	hi := false
	for j := cs; ; j++ {
		var h bool
		j, h = findStop(b, j)
		hi = hi || h
		if j >= len(b) {
			break
		}
		switch c := b[j]; {
		case c == '"':
			if hi && !utf8.Valid(b[cs:j]) {
				return 0, 0, 0, false, &SyntaxError{Offset: cs, What: "invalid UTF-8 in a string"}
			}
			return cs, j, j + 1, esc, nil
		case c == '\\':
			esc = true
			if j+1 >= len(b) {
				return 0, 0, 0, false, &SyntaxError{Offset: j, What: "string cut off"}
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(b) || !isHex4(b[j+2:j+6]) {
					return 0, 0, 0, false, &SyntaxError{Offset: j, What: "invalid \\u escape"}
				}
				j += 5
			default:
				return 0, 0, 0, false, &SyntaxError{Offset: j, What: "invalid escape"}
			}
		default: // c < 0x20
			return 0, 0, 0, false, &SyntaxError{Offset: j, What: "control character in a string"}
		}
	}
	return 0, 0, 0, false, &SyntaxError{Offset: i, What: "string cut off"}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stopMask returns, for the eight bytes of x (little-endian), the high
// bit of every byte that is '"', '\\' or a control character (below
// 0x20), and possibly of bytes after the first of them (a borrow): the
// lowest bit set is exact, and 0 means there is none. Bytes from 0x80 up
// are never flagged. (x-ones*k)&^x&highs flags the bytes below k, and a
// byte equal to c is a zero byte of x^(ones*c); '"' and '\\' are below
// 0x80, so x^(ones*c) has the high bits of x.
func stopMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q - ones) | (s - ones) | (x - ones*0x20)) &^ x & highs
}

// findStop returns the offset of the first '"', '\\' or control byte of b
// from j (len(b) when there is none), and whether a byte from 0x80 up
// comes before it.
func findStop(b []byte, j int) (int, bool) {
	var hi uint64
	// The first word alone (most names and short values end in it), then
	// two words a step.
	if j+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[j:])
		if m := stopMask(x); m != 0 {
			k := bits.TrailingZeros64(m) >> 3
			return j + k, x&(1<<(8*k)-1)&highs != 0
		}
		hi, j = x, j+8
	}
	for ; j+16 <= len(b); j += 16 {
		x := binary.LittleEndian.Uint64(b[j:])
		y := binary.LittleEndian.Uint64(b[j+8:])
		m, n := stopMask(x), stopMask(y)
		if m|n != 0 {
			if m == 0 {
				hi |= x
				j, x, m = j+8, y, n
			}
			k := bits.TrailingZeros64(m) >> 3
			hi |= x & (1<<(8*k) - 1)
			return j + k, hi&highs != 0
		}
		hi |= x | y
	}
	for ; j < len(b); j++ {
		c := b[j]
		if strStop[c] {
			break
		}
		hi |= uint64(c)
	}
	return j, hi&highs != 0
}

// strStop marks the bytes stringToken stops at: the quote, the backslash
// and control characters.
var strStop = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20
	}
	return t
}()

func isHex4(h []byte) bool {
	for _, c := range h {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(h []byte) rune {
	return rune(hexVal(h[0])<<12 | hexVal(h[1])<<8 | hexVal(h[2])<<4 | hexVal(h[3]))
}

// unit reads one unit of a string's raw content at raw[i]: an escape (a
// surrogate pair's two escapes are one unit) or one UTF-8 character. It
// returns the unit's raw length and decoded rune (ok false for a lone
// surrogate or a cut escape).
func unit(raw []byte, i int) (n int, r rune, ok bool) {
	c := raw[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return 1, rune(c), true
		}
		r, n := utf8.DecodeRune(raw[i:])
		return n, r, true
	}
	if i+1 >= len(raw) {
		return 1, 0, false
	}
	switch raw[i+1] {
	case '"', '\\', '/':
		return 2, rune(raw[i+1]), true
	case 'b':
		return 2, '\b', true
	case 'f':
		return 2, '\f', true
	case 'n':
		return 2, '\n', true
	case 'r':
		return 2, '\r', true
	case 't':
		return 2, '\t', true
	case 'u':
		if i+6 > len(raw) || !isHex4(raw[i+2:i+6]) {
			return 2, 0, false
		}
		r := hex4(raw[i+2 : i+6])
		if r >= 0xD800 && r < 0xDC00 {
			if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' && isHex4(raw[i+8:i+12]) {
				lo := hex4(raw[i+8 : i+12])
				if lo >= 0xDC00 && lo < 0xE000 {
					return 12, 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), true
				}
			}
			return 6, 0, false
		}
		if r >= 0xDC00 && r < 0xE000 {
			return 6, 0, false
		}
		return 6, r, true
	}
	return 2, 0, false
}

// decodeString appends the decoded content raw of a JSON string to dst.
func decodeString(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			j := indexBackslash(raw, i+1)
			if j < 0 {
				return append(dst, raw[i:]...), nil
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		if i+1 < len(raw) {
			if c := simpleEscape[raw[i+1]]; c != 0 {
				dst = append(dst, c)
				i += 2
				continue
			}
		}
		n, r, ok := unit(raw, i)
		if !ok {
			return dst, &SyntaxError{Offset: i, What: "invalid escape or lone surrogate"}
		}
		dst = utf8.AppendRune(dst, r)
		i += n
	}
	return dst, nil
}

// simpleEscape maps the byte after a backslash to the byte it stands
// for, for the two-byte escapes (0: \u or invalid).
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// indexBackslash returns the offset of the first '\\' of b from i, -1
// if there is none: the first eight bytes are tested at once (escapes
// are often close together), the rest with bytes.IndexByte.
func indexBackslash(b []byte, i int) int {
	if i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:]) ^ (ones * '\\')
		if m := (x - ones) &^ x & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	if i >= len(b) {
		return -1
	}
	if k := bytes.IndexByte(b[i:], '\\'); k >= 0 {
		return i + k
	}
	return -1
}

// rawSpan maps the span [s, e) of the decoded content of raw (a JSON
// string's content) to the span of raw that covers it: a span that cuts
// an escape or a character covers all of it.
func rawSpan(raw []byte, s, e int) (rs, re int) {
	var m spanMapper
	m.reset(raw, 0, 0)
	return m.span(s, e)
}

// spanMapper maps spans of the decoded content of raw to raw (rawSpan),
// in time linear in raw for spans asked in increasing order: a cursor
// (raw offset i, decoded offset d, at a unit's start) is kept between
// calls. Without escapes the mapping is the identity widened to whole
// UTF-8 characters, in constant time.
type spanMapper struct {
	raw      []byte
	gen      uint64
	base     int
	esc, set bool
	i, d     int
}

// reset makes m map raw, identified by (gen, base), unless it already
// does.
func (m *spanMapper) reset(raw []byte, gen uint64, base int) {
	if m.set && m.gen == gen && m.base == base && len(m.raw) == len(raw) {
		return
	}
	*m = spanMapper{raw: raw, gen: gen, base: base, set: true, esc: bytes.IndexByte(raw, '\\') >= 0}
}

func (m *spanMapper) span(s, e int) (rs, re int) {
	raw := m.raw
	if !m.esc {
		rs, re = min(s, len(raw)), min(e, len(raw))
		for rs > 0 && rs < len(raw) && !utf8.RuneStart(raw[rs]) {
			rs--
		}
		for re < len(raw) && !utf8.RuneStart(raw[re]) {
			re++
		}
		return rs, re
	}
	if s < m.d {
		m.i, m.d = 0, 0
	}
	i, d := m.i, m.d
	rs = -1
	for i < len(raw) {
		n, r, ok := unit(raw, i)
		dn := n
		if raw[i] == '\\' {
			dn = 1
			if ok {
				dn = utf8.RuneLen(r)
			}
		}
		if rs < 0 && d+dn > s {
			rs = i
			m.i, m.d = i, d
		}
		if rs >= 0 && d+dn >= e {
			return rs, i + n
		}
		d += dn
		i += n
	}
	if rs < 0 {
		rs = len(raw)
		m.i, m.d = i, d
	}
	return rs, len(raw)
}

// scalar checks the number or literal at b[i] and returns the offset
// after it.
func scalar(b []byte, i int) (int, error) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if b[i] == lit[0] {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), nil
			}
			return i, &SyntaxError{Offset: i, What: "invalid literal"}
		}
	}
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return i, &SyntaxError{Offset: i, What: "value expected"}
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return i, &SyntaxError{Offset: j, What: "digit expected"}
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return i, &SyntaxError{Offset: j, What: "digit expected"}
		}
	}
	return j, nil
}

// skipValue checks the JSON value at b[i] without visiting it; depth is
// how deep it may nest.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{', '[':
		if depth <= 0 {
			return i, false
		}
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		obj := b[i] == '{'
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if obj {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				cs, ce, next, esc, err := stringToken(b, i)
				if err != nil {
					return i, false
				}
				if esc {
					if _, err := decodeString(nil, b[cs:ce]); err != nil {
						return i, false
					}
				}
				i = skipSpace(b, next)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			var ok bool
			if i, ok = skipValue(b, i, depth-1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == closer {
				return i + 1, true
			}
			return i, false
		}
	case '"':
		cs, ce, next, esc, err := stringToken(b, i)
		if err != nil {
			return i, false
		}
		if esc {
			// Surrogates are checked only by decoding the escapes (every
			// other unit is valid: stringToken checked it); no buffer is
			// kept.
			for k := cs; k < ce; {
				e := bytes.IndexByte(b[k:ce], '\\')
				if e < 0 {
					break
				}
				n, _, ok := unit(b, k+e)
				if !ok {
					return i, false
				}
				k += e + n
			}
		}
		return next, true
	default:
		n, err := scalar(b, i)
		return n, err == nil
	}
}

// looksJSON reports whether t, trimmed, starts and ends like an object or
// an array.
func looksJSON(t []byte) bool {
	s, e := 0, len(t)
	for s < e && isSpace(t[s]) {
		s++
	}
	for e > s && isSpace(t[e-1]) {
		e--
	}
	if e-s < 2 {
		return false
	}
	return (t[s] == '{' && t[e-1] == '}') || (t[s] == '[' && t[e-1] == ']')
}

// nestedValue reports whether t is one JSON object or array (with space
// around it) nesting at most depth deep, and where it starts and ends.
func nestedValue(t []byte, depth int) (s, e int, ok bool) {
	s = skipSpace(t, 0)
	e, ok = skipValue(t, s, depth)
	if !ok || skipSpace(t, e) != len(t) {
		return 0, 0, false
	}
	return s, e, true
}
