package scan

import (
	"strings"
	"testing"
)

func TestSecretLikeKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"api_key", true}, {"apiKey", true}, {"X-Api-Key", true}, {"APIKEY", true},
		{"password", true}, {"db_password", true}, {"clientSecret", true}, {"client_secret", true},
		{"AWS_SECRET_ACCESS_KEY", true}, {"aws_access_key_id", true}, {"GITHUB_TOKEN", true},
		{"X-Auth-Token", true}, {"Authorization", true}, {"private_key", true}, {"sessionToken", true}, {"receipt_signature", false},
		{"PWD", false}, {"author", false}, {"tokenizer", false}, {"keyboard", false}, {"session_id", false},
		{"monkey", false}, {"path", false}, {"", false}, {"OLDPWD", false}, {"authors", false},
		// A non-ASCII word matches nothing (and once made end() slice
		// past its 64-byte buffer: a panic on any such member name).
		{"Ӗ", false}, {"ключ", false}, {"пароль_token", true}, {"token_ключ", true}, {"Ӗ_key", false},
		{"secret_" + strings.Repeat("x", 70), true}, {strings.Repeat("x", 70) + "_token", true},
	} {
		if got := SecretLikeKey(c.key); got != c.want {
			t.Errorf("SecretLikeKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}
