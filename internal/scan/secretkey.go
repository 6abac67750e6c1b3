package scan

import (
	"unicode"
	"unicode/utf8"
)

// secretKeyWords are the words of an object member name that make its
// value likely a credential on their own; secretKeyPairs are two
// consecutive words that do ("api key", "access key", ...).
var (
	secretKeyWords = map[string]bool{
		"password": true, "passwd": true, "passphrase": true, "secret": true, "secrets": true,
		"token": true, "tokens": true, "apikey": true, "credential": true, "credentials": true,
		"cookie": true, "authorization": true, "auth": true, "bearer": true, "privatekey": true,
		"accesskey": true, "secretkey": true, "clientsecret": true, "pat": true,
	}
	secretKeyPairs = map[[2]string]bool{
		{"api", "key"}: true, {"access", "key"}: true, {"private", "key"}: true, {"secret", "key"}: true,
		{"client", "secret"}: true, {"session", "token"}: true, {"session", "key"}: true,
		{"signing", "key"}: true, {"encryption", "key"}: true, {"master", "key"}: true,
		{"account", "key"}: true, {"app", "key"}: true, {"license", "key"}: true,
	}
)

// SecretLikeKey reports whether an object member named key likely holds a
// credential ("api_key", "X-Auth-Token", "clientSecret",
// "AWS_SECRET_ACCESS_KEY", ...): its value is then a keyword-plus-entropy
// candidate, and an encoded value is decoded before scanning. The name is
// split into words at '_', '-', '.', spaces and lower-to-upper case
// changes, and matched case-insensitively word by word, so that "author",
// "tokenizer" and "PWD" (a working directory) are not secret-like.
func SecretLikeKey(key string) bool {
	if key == "" || len(key) > 256 {
		return false
	}
	// Words are lowercased into buf (prev holds the word before): map
	// lookups by string(buf) do not allocate.
	var buf, prev [64]byte
	n, pn := 0, -1
	var last rune
	end := func() bool {
		if n == 0 {
			return false
		}
		if n > len(buf) {
			// A non-ASCII or over-long word: no word, nor a pair with
			// the next one.
			n, pn = 0, -1
			return false
		}
		w := buf[:n]
		if secretKeyWords[string(w)] {
			return true
		}
		if pn >= 0 && secretKeyPairs[[2]string{string(prev[:pn]), string(w)}] {
			return true
		}
		copy(prev[:], w)
		pn, n = min(n, len(prev)), 0
		return false
	}
	for _, orig := range key {
		r := orig
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			if end() {
				return true
			}
		case unicode.IsUpper(r) && unicode.IsLower(last):
			if end() {
				return true
			}
			fallthrough
		default:
			r = unicode.ToLower(r)
			if r < utf8.RuneSelf && n < len(buf) {
				buf[n] = byte(r)
				n++
			} else {
				n = len(buf) + 1 // a non-ASCII or over-long word matches nothing
			}
		}
		last = orig
	}
	return end()
}
