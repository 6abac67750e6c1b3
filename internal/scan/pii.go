package scan

import (
	"math/bits"
	"strings"
)

// Personal-data rules (docs/scanning.md, "Secrets and personal data").
const (
	RuleEmail       = "pii-email"        // addr-spec local@domain.tld (RFC 5322 §3.4.1, dot-atom form)
	RulePhone       = "pii-phone"        // E.164 (+ and 8-15 digits) or a national format
	RuleCard        = "pii-payment-card" // 13-19 digits, an IIN prefix, Luhn
	RuleUSSSN       = "pii-us-ssn"       // AAA-GG-SSSS with the SSA's area/group/serial rules
	RuleUKNINO      = "pii-uk-nino"      // UK National Insurance number
	RuleESDNI       = "pii-es-dni"       // Spanish DNI/NIE with its check letter
	RuleNLBSN       = "pii-nl-bsn"       // Dutch BSN, 11-test, only next to "BSN"
	RuleINAadhaar   = "pii-in-aadhaar"   // Indian Aadhaar, Verhoeff check digit
	RuleIBAN        = "pii-iban"         // ISO 13616 IBAN: country length and mod-97
	piiContextBytes = 48                 // how far before a number its context word may end
)

// piiFamily finds personal data in ModeData strings (not in tool
// definitions) with one byte pass: it stops only at
// '@' (e-mail) and at digits (every other rule), so text without either
// costs one comparison per byte, and it skips alphanumeric tokens that
// merely contain digits (hex ids, digests) in one step.
type piiFamily struct {
	phoneCtx, ssnCtx, bsnCtx, aadhaarCtx, dniCtx *keywords
}

func newPIIFamily() (family, error) {
	return &piiFamily{
		phoneCtx:   newKeywords([]string{"phone", "tel", "mobile", "cell", "call", "fax", "contact", "whatsapp", "sms", "telefon", "téléphone"}),
		ssnCtx:     newKeywords([]string{"ssn", "social security", "social-security", "ss#"}),
		bsnCtx:     newKeywords([]string{"bsn", "burgerservicenummer", "sofinummer", "sofi-nummer"}),
		aadhaarCtx: newKeywords([]string{"aadhaar", "aadhar", "uidai"}),
		dniCtx:     newKeywords([]string{"dni", "nie", "nif", "documento"}),
	}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// context reports whether one of k's words ends within piiContextBytes
// before pos.
func context(k *keywords, text string, pos int) bool {
	return k.any(text[max(0, pos-piiContextBytes):pos])
}

// digitRun is a run of digit groups joined by single separators.
type digitRun struct {
	start, end int // span in the text
	digits     int
	groups     [8]uint8 // lengths of the first groups
	ngroups    int
	seps       [8]byte // separator after each group
	paren      bool    // the first group is in parentheses: (555) 123-4567
	open       bool    // a parenthesis after the country code is open: +1 (415) ...
	openAt     int     // the group it opened before
}

func (r *digitRun) sameSeps() (byte, bool) {
	if r.ngroups < 2 {
		return 0, true
	}
	s := r.seps[0]
	for i := 1; i < r.ngroups-1; i++ {
		if r.seps[i] != s {
			return 0, false
		}
	}
	return s, true
}

func (r *digitRun) shape(lens ...uint8) bool {
	if r.ngroups != len(lens) {
		return false
	}
	for i, l := range lens {
		if r.groups[i] != l {
			return false
		}
	}
	return true
}

func (f *piiFamily) scan(in Input, emit func(Finding)) {
	if in.Mode == ModeToolDefinition {
		return // tool definitions are scanned for poisoning and secrets only
	}
	text := in.Text
	n := len(text)
	for i := 0; i < n; {
		if i = piiSkip(text, i); i >= n {
			break
		}
		c := text[i]
		if c == '@' {
			if s, e, ok := emailAt(text, i); ok {
				emit(piiFinding(RuleEmail, High, text, s, e))
				i = e
				continue
			}
			i++
			continue
		}
		if !isDigit(c) {
			i++
			continue
		}
		if i > 0 && isAlnum(text[i-1]) {
			// Digits inside a token: an IBAN, NINO or NIE starts with
			// letters; anything else (hex ids, digests, words) is
			// skipped whole.
			ts := i
			for ts > 0 && i-ts < 3 && isAlnum(text[ts-1]) {
				ts--
			}
			if ts == 0 || !isAlnum(text[ts-1]) {
				if fd, ok := f.lettered(text, ts); ok {
					emit(fd)
					i = fd.End
					continue
				}
			}
			for i < n && isAlnum(text[i]) {
				i++
			}
			continue
		}
		r := readDigitRun(text, i)
		if fd, ok := f.numeric(text, &r); ok {
			emit(fd)
			i = fd.End
			continue
		}
		i = r.end
		for i < n && isAlnum(text[i]) {
			i++
		}
	}
}

// piiSkip returns the offset of the first byte at or after i that may
// start a personal-data match (0x30-0x40: a digit, '@' or one of
// ":;<=>?"), or len(text). It tests eight bytes at a time (a SWAR
// "has byte between" test; bytes >= 0x80 never qualify).
func piiSkip(text string, i int) int {
	const (
		ones = 0x0101010101010101
		lo7  = 0x7f7f7f7f7f7f7f7f
		hi   = 0x8080808080808080
	)
	for ; i+8 <= len(text); i += 8 {
		x := uint64(text[i]) | uint64(text[i+1])<<8 | uint64(text[i+2])<<16 | uint64(text[i+3])<<24 |
			uint64(text[i+4])<<32 | uint64(text[i+5])<<40 | uint64(text[i+6])<<48 | uint64(text[i+7])<<56
		t := x & lo7
		if v := (ones*(127+0x41) - t) &^ x & (t + ones*(127-0x2f)) & hi; v != 0 {
			return i + bits.TrailingZeros64(v)/8
		}
	}
	for ; i < len(text); i++ {
		if c := text[i]; c >= 0x30 && c <= 0x40 {
			return i
		}
	}
	return i
}

func piiFinding(rule string, conf Confidence, text string, s, e int) Finding {
	s, e = runeSpan(text, s, e)
	return Finding{Rule: rule, Class: ClassPII, Confidence: conf, Start: s, End: e, Excerpt: mask(text[s:e])}
}

// readDigitRun reads digit groups from i (a digit) joined by single
// ' ', '-', '.' separators (and "(ddd) " at the start, when i follows
// '(').
func readDigitRun(text string, i int) digitRun {
	r := digitRun{start: i}
	if i > 0 && text[i-1] == '(' {
		r.paren = true
	}
	j := i
	for {
		g := j
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		if r.ngroups < len(r.groups) {
			r.groups[r.ngroups] = uint8(min(j-g, 255))
		}
		r.digits += j - g
		r.end = j
		if j >= len(text) || r.ngroups >= len(r.groups)-1 {
			r.ngroups++
			break
		}
		sep := text[j]
		k := j + 1
		switch {
		case sep == ')' && r.paren && r.ngroups == 0 || sep == ')' && r.open && r.ngroups == r.openAt:
			// "(415) 555" or "+1 (415) 555": the closing parenthesis,
			// then a space or dash.
			if k < len(text) && (text[k] == ' ' || text[k] == '-') {
				k++
			}
			r.open = false
		case sep == ' ' && !r.paren && !r.open && r.ngroups == 0 && k+1 < len(text) && text[k] == '(' && i > 0 && text[i-1] == '+':
			// "+1 (415) ...": E.164 written with a parenthesized area.
			k++
			r.open, r.openAt = true, 1
		case sep == ' ' || sep == '-' || sep == '.':
		default:
			k = -1
		}
		if k < 0 {
			r.ngroups++
			break
		}
		if k >= len(text) || !isDigit(text[k]) {
			r.ngroups++
			break
		}
		r.seps[r.ngroups] = sep
		r.ngroups++
		j = k
	}
	if r.paren {
		r.start = i - 1
	}
	return r
}

// numeric tries the digit-only rules on a run. The run must stand alone:
// no letter or digit right after it, and no "." or "-" plus digit
// (part of a longer number or version).
func (f *piiFamily) numeric(text string, r *digitRun) (Finding, bool) {
	after := byte(' ')
	if r.end < len(text) {
		after = text[r.end]
	}
	before := byte(' ')
	if r.start > 0 {
		before = text[r.start-1]
	}
	if before == '.' || before == '-' || before == '/' || before == ':' || before == '_' {
		return Finding{}, false
	}
	// Spanish DNI: 8 digits and the check letter.
	if r.ngroups == 1 && r.digits == 8 && isUpper(after) && (r.end+1 >= len(text) || !isAlnum(text[r.end+1])) {
		if dniLetter(text[r.start:r.end]) == after {
			conf := Medium
			if context(f.dniCtx, text, r.start) {
				conf = High
			}
			return piiFinding(RuleESDNI, conf, text, r.start, r.end+1), true
		}
		return Finding{}, false
	}
	if isAlnum(after) || after == '_' {
		return Finding{}, false
	}
	if (after == '.' || after == ':' || after == '/') && r.end+1 < len(text) && isDigit(text[r.end+1]) {
		return Finding{}, false
	}
	span := text[r.start:r.end]
	sep, same := r.sameSeps()
	// Payment cards.
	if r.digits >= 13 && r.digits <= 19 && same && (sep == 0 || sep == ' ' || sep == '-') && !r.paren {
		if cardOK(span) {
			return piiFinding(RuleCard, High, text, r.start, r.end), true
		}
	}
	// US SSN.
	if r.shape(3, 2, 4) && same && sep == '-' || r.shape(9) && context(f.ssnCtx, text, r.start) {
		if ssnOK(span) {
			conf := Medium
			if context(f.ssnCtx, text, r.start) {
				conf = High
			}
			return piiFinding(RuleUSSSN, conf, text, r.start, r.end), true
		}
	}
	// Aadhaar.
	if (r.shape(4, 4, 4) && same && (sep == ' ' || sep == '-')) || (r.shape(12) && context(f.aadhaarCtx, text, r.start)) {
		if span[0] >= '2' && verhoeffOK(span) {
			conf := Medium
			if context(f.aadhaarCtx, text, r.start) {
				conf = High
			}
			return piiFinding(RuleINAadhaar, conf, text, r.start, r.end), true
		}
	}
	// Dutch BSN: only next to its name.
	if r.shape(9) && context(f.bsnCtx, text, r.start) && bsnOK(span) {
		return piiFinding(RuleNLBSN, High, text, r.start, r.end), true
	}
	// Phones.
	if before == '+' {
		if r.digits >= 8 && r.digits <= 15 && span[0] != '0' && !looksLikeDate(r) {
			return piiFinding(RulePhone, Medium, text, r.start-1, r.end), true
		}
		return Finding{}, false
	}
	ctx := false
	nanp := (r.shape(3, 3, 4) && same && sep != 0 || r.paren && r.shape(3, 3, 4) && r.seps[1] == '-') &&
		span[boolIdx(r.paren)] >= '2' && nanpExchange(r, span)
	if nanp {
		conf := Low
		if context(f.phoneCtx, text, r.start) {
			conf = Medium
		}
		return piiFinding(RulePhone, conf, text, r.start, r.end), true
	}
	if r.ngroups >= 2 && r.digits >= 9 && r.digits <= 12 && span[0] == '0' && sep != '.' && !looksLikeDate(r) {
		ctx = context(f.phoneCtx, text, r.start)
		if ctx {
			return piiFinding(RulePhone, Medium, text, r.start, r.end), true
		}
	}
	return Finding{}, false
}

func boolIdx(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nanpExchange: the exchange code (second group) starts with 2-9.
func nanpExchange(r *digitRun, span string) bool {
	i := 0
	for i < len(span) && !isDigit(span[i]) {
		i++
	}
	for i < len(span) && isDigit(span[i]) {
		i++
	}
	for i < len(span) && !isDigit(span[i]) {
		i++
	}
	return i < len(span) && span[i] >= '2'
}

// looksLikeDate: a first group of 4 digits 19xx/20xx followed by two
// groups of at most 2 (2024-01-31, 2024.01.31).
func looksLikeDate(r *digitRun) bool {
	return r.ngroups >= 3 && r.groups[0] == 4 && r.groups[1] <= 2 && r.groups[2] <= 2
}

// lettered tries the rules that start with letters, at token start ts:
// IBAN, UK NINO, Spanish NIE.
func (f *piiFamily) lettered(text string, ts int) (Finding, bool) {
	if s, e, ok := ibanAt(text, ts); ok {
		return piiFinding(RuleIBAN, High, text, s, e), true
	}
	if s, e, ok := ninoAt(text, ts); ok {
		return piiFinding(RuleUKNINO, Medium, text, s, e), true
	}
	// NIE: X, Y or Z, 7 digits, check letter.
	if ts+9 <= len(text) && strings.IndexByte("XYZ", text[ts]) >= 0 && allDigits(text[ts+1:ts+8]) && (ts+9 == len(text) || !isAlnum(text[ts+9])) {
		num := string(rune('0'+strings.IndexByte("XYZ", text[ts]))) + text[ts+1:ts+8]
		if dniLetter(num) == text[ts+8] {
			conf := Medium
			if context(f.dniCtx, text, ts) {
				conf = High
			}
			return piiFinding(RuleESDNI, conf, text, ts, ts+9), true
		}
	}
	return Finding{}, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// emailAt matches an address around the '@' at at: a dot-atom local part
// of 1-64 bytes and a domain of labels with a TLD of 2 or more letters;
// documentation domains (RFC 2606: example.*, .test, .invalid,
// .localhost), image names like "icon@2x.png" and scp-like SSH targets
// ("git@github.com:org/repo.git") are not addresses.
func emailAt(text string, at int) (int, int, bool) {
	s := at
	for s > 0 && at-s < 64 {
		c := text[s-1]
		if isAlnum(c) || strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", c) >= 0 {
			s--
			continue
		}
		break
	}
	if s > 0 && (text[s-1] == ':' || text[s-1] == '/') {
		return 0, 0, false // URL userinfo, not an address
	}
	for s < at && (text[s] == '.' || text[s] == '\'') {
		s++
	}
	if s == at || text[at-1] == '.' {
		return 0, 0, false
	}
	e := at + 1
	lastDot := -1
	for e < len(text) && e-at < 255 {
		c := text[e]
		if isAlnum(c) || c == '-' {
			e++
			continue
		}
		if c == '.' && e+1 < len(text) && isAlnum(text[e+1]) && text[e-1] != '.' && e > at+1 {
			lastDot = e
			e++
			continue
		}
		break
	}
	if lastDot < 0 || e-lastDot-1 < 2 {
		return 0, 0, false
	}
	tld := strings.ToLower(text[lastDot+1 : e])
	for i := 0; i < len(tld); i++ {
		if !('a' <= tld[i] && tld[i] <= 'z') {
			return 0, 0, false
		}
	}
	switch tld {
	case "png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "css", "json", "test", "invalid", "localhost", "example", "local":
		return 0, 0, false
	}
	if e < len(text) && text[e] == ':' && e+1 < len(text) && !isDigit(text[e+1]) {
		return 0, 0, false // scp-like "git@github.com:org/repo.git": an SSH login, not an address
	}
	dom := strings.ToLower(text[at+1 : e])
	if strings.HasPrefix(dom, "example.") || strings.Contains(dom, ".example.") {
		return 0, 0, false
	}
	return s, e, true
}

// Luhn and IIN (ISO/IEC 7812): Visa 4, Mastercard 51-55 and 2221-2720,
// American Express 34/37, Discover 6011/644-649/65, JCB 3528-3589,
// Diners 300-305/36/38-39, UnionPay 62, Maestro 50/56-58/6304/67.
func cardOK(span string) bool {
	var d [19]byte
	n := 0
	for i := 0; i < len(span); i++ {
		if isDigit(span[i]) {
			if n == len(d) {
				return false
			}
			d[n] = span[i] - '0'
			n++
		}
	}
	p := func(k int) int {
		v := 0
		for i := 0; i < k; i++ {
			v = v*10 + int(d[i])
		}
		return v
	}
	ok := false
	switch {
	case d[0] == 4:
		ok = n == 13 || n == 16 || n == 19
	case p(2) >= 51 && p(2) <= 55, p(4) >= 2221 && p(4) <= 2720:
		ok = n == 16
	case p(2) == 34 || p(2) == 37:
		ok = n == 15
	case p(4) == 6011, p(3) >= 644 && p(3) <= 649, p(2) == 65:
		ok = n >= 16
	case p(4) >= 3528 && p(4) <= 3589:
		ok = n >= 16
	case p(3) >= 300 && p(3) <= 305, p(2) == 36, p(2) == 38, p(2) == 39:
		ok = n >= 14
	case p(2) == 62:
		ok = n >= 16
	case p(2) == 50, p(2) >= 56 && p(2) <= 58, p(4) == 6304, p(2) == 67:
		ok = n >= 12
	}
	if !ok {
		return false
	}
	// Reject one digit repeated (4444 4444 4444 4448 is valid Luhn).
	same := true
	for i := 1; i < n-1; i++ {
		if d[i] != d[1] {
			same = false
		}
	}
	if same {
		return false
	}
	sum := 0
	for i := 0; i < n; i++ {
		v := int(d[n-1-i])
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// ssnOK: area not 000, 666 or 900-999; group not 00; serial not 0000;
// not an SSA-published advertising number.
func ssnOK(span string) bool {
	var d []byte
	for i := 0; i < len(span); i++ {
		if isDigit(span[i]) {
			d = append(d, span[i])
		}
	}
	if len(d) != 9 {
		return false
	}
	area, group, serial := string(d[:3]), string(d[3:5]), string(d[5:])
	if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
		return false
	}
	switch string(d) {
	case "078051120", "219099999", "123456789":
		return false
	}
	return true
}

// dniLetter is the check letter of a DNI number (8 digits; NIE with X,
// Y, Z as 0, 1, 2): "TRWAGMYFPDXBNJZSQVHLCKE"[n mod 23].
func dniLetter(num string) byte {
	v := 0
	for i := 0; i < len(num); i++ {
		v = (v*10 + int(num[i]-'0')) % 23
	}
	return "TRWAGMYFPDXBNJZSQVHLCKE"[v]
}

// bsnOK is the Dutch 11-test: 9·d1 + 8·d2 + ... + 2·d8 − d9 ≡ 0 mod 11.
func bsnOK(s string) bool {
	if len(s) != 9 || s == "000000000" {
		return false
	}
	sum := 0
	for i := 0; i < 8; i++ {
		sum += (9 - i) * int(s[i]-'0')
	}
	sum -= int(s[8] - '0')
	return sum%11 == 0
}

var verhoeffD = [10][10]uint8{
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 0, 6, 7, 8, 9, 5}, {2, 3, 4, 0, 1, 7, 8, 9, 5, 6},
	{3, 4, 0, 1, 2, 8, 9, 5, 6, 7}, {4, 0, 1, 2, 3, 9, 5, 6, 7, 8}, {5, 9, 8, 7, 6, 0, 4, 3, 2, 1},
	{6, 5, 9, 8, 7, 1, 0, 4, 3, 2}, {7, 6, 5, 9, 8, 2, 1, 0, 4, 3}, {8, 7, 6, 5, 9, 3, 2, 1, 0, 4},
	{9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
}

var verhoeffP = [8][10]uint8{
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 5, 7, 6, 2, 8, 3, 0, 9, 4}, {5, 8, 0, 3, 7, 9, 6, 1, 4, 2},
	{8, 9, 1, 6, 0, 4, 3, 5, 2, 7}, {9, 4, 5, 3, 1, 2, 6, 8, 7, 0}, {4, 2, 8, 6, 5, 7, 3, 9, 0, 1},
	{2, 7, 9, 3, 8, 0, 6, 4, 1, 5}, {7, 0, 4, 6, 9, 1, 3, 2, 5, 8},
}

// verhoeffOK checks the Verhoeff check digit over the digits of s.
func verhoeffOK(s string) bool {
	c := uint8(0)
	k := 0
	for i := len(s) - 1; i >= 0; i-- {
		if !isDigit(s[i]) {
			continue
		}
		c = verhoeffD[c][verhoeffP[k%8][s[i]-'0']]
		k++
	}
	return c == 0
}

// ibanLengths is the IBAN length per country (SWIFT IBAN registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22,
	"MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
	"QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25,
	"SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// ibanAt matches an IBAN at ts: country code, 2 check digits, the BBAN,
// written together or in groups of 4 separated by single spaces; the
// length must be the country's and the ISO 7064 mod-97 remainder 1.
func ibanAt(text string, ts int) (int, int, bool) {
	if ts+4 > len(text) || !isUpper(text[ts]) || !isUpper(text[ts+1]) || !isDigit(text[ts+2]) || !isDigit(text[ts+3]) {
		return 0, 0, false
	}
	want, ok := ibanLengths[text[ts:ts+2]]
	if !ok {
		return 0, 0, false
	}
	var buf [34]byte
	n := 0
	e := ts
	for e < len(text) && n < want {
		c := text[e]
		if isDigit(c) || isUpper(c) {
			buf[n] = c
			n++
			e++
			continue
		}
		if c == ' ' && n%4 == 0 && e+1 < len(text) && isAlnum(text[e+1]) {
			e++
			continue
		}
		break
	}
	if n != want || (e < len(text) && isAlnum(text[e])) {
		return 0, 0, false
	}
	// Move the first four characters to the end; letters are 10..35.
	rem := 0
	for k := 0; k < n; k++ {
		c := buf[(k+4)%n]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	return ts, e, rem == 1
}

// ninoAt matches a UK National Insurance number at ts: two prefix
// letters (not D, F, I, Q, U, V; the second not O; not BG, GB, NK, KN,
// TN, NT, ZZ), six digits (optionally in pairs with spaces), and a
// suffix A-D.
func ninoAt(text string, ts int) (int, int, bool) {
	if ts+9 > len(text) || !isUpper(text[ts]) || !isUpper(text[ts+1]) {
		return 0, 0, false
	}
	a, b := text[ts], text[ts+1]
	if strings.IndexByte("DFIQUV", a) >= 0 || strings.IndexByte("DFIQUVO", b) >= 0 {
		return 0, 0, false
	}
	switch text[ts : ts+2] {
	case "BG", "GB", "NK", "KN", "TN", "NT", "ZZ":
		return 0, 0, false
	}
	e := ts + 2
	spaced := e < len(text) && text[e] == ' '
	digits := 0
	for digits < 6 {
		if spaced {
			if e >= len(text) || text[e] != ' ' {
				return 0, 0, false
			}
			e++
		}
		if e+2 > len(text) || !isDigit(text[e]) || !isDigit(text[e+1]) {
			return 0, 0, false
		}
		e += 2
		digits += 2
	}
	if spaced && e < len(text) && text[e] == ' ' {
		e++
	}
	if e >= len(text) || text[e] < 'A' || text[e] > 'D' {
		return 0, 0, false
	}
	e++
	if e < len(text) && isAlnum(text[e]) {
		return 0, 0, false
	}
	return ts, e, true
}
