package scan

import "strings"

// secretKeyWords are the words of an object member name that make its
// value likely a credential.
var secretKeyWords = []string{"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key", "access_key", "accesskey", "private_key", "privatekey", "credential", "auth", "session", "cookie", "signature", "bearer"}

// SecretLikeKey reports whether an object member named key likely holds a
// credential ("api_key", "X-Auth-Token", "clientSecret", ...): its value
// is then a keyword-plus-entropy candidate, and an encoded value is
// decoded before scanning. The match is case-insensitive on the words of
// secretKeyWords anywhere in the name.
func SecretLikeKey(key string) bool {
	if key == "" {
		return false
	}
	k := strings.ToLower(key)
	for _, w := range secretKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
