package scan

import (
	"strings"
	"unicode"
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
	words := splitKey(key)
	for i, w := range words {
		if secretKeyWords[w] {
			return true
		}
		if i > 0 && secretKeyPairs[[2]string{words[i-1], w}] {
			return true
		}
	}
	return false
}

// splitKey splits a member name into lower-case words.
func splitKey(key string) []string {
	var words []string
	var b strings.Builder
	var prev rune
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range key {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(unicode.ToLower(r))
		}
		prev = r
	}
	flush()
	return words
}
