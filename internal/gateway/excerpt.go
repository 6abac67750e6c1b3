package gateway

import "strings"

// safeExcerpt is a detector's excerpt as the records keep it: every token
// that could be a credential or a number a detector did not mask itself
// (a quote of an injection phrase can hold the very secret it tries to
// exfiltrate) is cut to its first two characters and "…". A token is a
// run of letters, digits and the characters credentials are written
// with (+ / = _ - . : @ ~); it is cut when it is 16 bytes or longer, or
// holds 4 or more digits. Words and short names of an injection phrase
// stay readable ("ignore previous instructions").
func safeExcerpt(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if !tokenByte(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j, digits := i, 0
		for j < len(s) && tokenByte(s[j]) {
			if '0' <= s[j] && s[j] <= '9' {
				digits++
			}
			j++
		}
		tok := s[i:j]
		if len(tok) >= 16 || digits >= 4 {
			b.WriteString(tok[:2])
			b.WriteString("…")
		} else {
			b.WriteString(tok)
		}
		i = j
	}
	return b.String()
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("+/=_-.:@~", c) >= 0
}
