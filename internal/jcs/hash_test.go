package jcs

import (
	"errors"
	"strings"
	"testing"
)

func TestHash(t *testing.T) {
	// The same value in two spellings has one hash; the digest is of the
	// canonical form.
	a, err := Hash([]byte(`{"b":"x","a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Hash([]byte("{ \"a\" : 1.0, \"b\" : \"\\u0078\" }"))
	if err != nil || a != b {
		t.Fatalf("Hash = %s, %v; want %s for both spellings", b, err, a)
	}
	if a != HashBytes([]byte(`{"a":1,"b":"x"}`)) {
		t.Fatalf("Hash = %s, not HashBytes of the canonical form", a)
	}
	if !ValidHash(a) {
		t.Fatalf("ValidHash(%s) = false", a)
	}
	if _, err := Hash([]byte(`{"n":12345678901234567890}`)); !errors.Is(err, ErrInexactNumber) {
		t.Fatalf("Hash of an inexact number = %v, want ErrInexactNumber", err)
	}
}

func TestValidHash(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"sha256:" + hex, true},
		{"sha256:" + strings.ToUpper(hex), false},
		{"SHA256:" + hex, false},
		{"sha256:" + hex[:63], false},
		{"sha256:" + hex + "0", false},
		{"sha512:" + hex, false},
		{hex, false},
		{"sha256:" + hex[:63] + "g", false},
		{"", false},
	} {
		if got := ValidHash(tt.s); got != tt.want {
			t.Errorf("ValidHash(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
	if !IsHexDigest([]byte(hex)) || IsHexDigest([]byte(hex[1:])) {
		t.Error("IsHexDigest: wrong answer for 64 and 63 digits")
	}
}
