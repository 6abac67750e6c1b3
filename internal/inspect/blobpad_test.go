package inspect

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestRedactedBlobKeepsPadding: a blob of a multiple of 3 bytes has no
// '=' in its padded base64; redacted, its length changes, and the
// re-encoded blob must be padded base64 still (server-filesystem's
// read_media_file of a .env file came back unpadded and undecodable).
func TestRedactedBlobKeepsPadding(t *testing.T) {
	sc := testScanner(t)
	text := "key SECRET-ABCD1234 ok\n" // 23 bytes: padded
	for len(text)%3 != 0 {
		text += "x"
	}
	blob := base64.StdEncoding.EncodeToString([]byte(text))
	if strings.Contains(blob, "=") {
		t.Fatalf("fixture: %q has padding", blob)
	}
	doc := []byte(`{"type":"resource","resource":{"uri":"file:///a","mimeType":"application/octet-stream","blob":"` + blob + `"}}`)
	rep, err := Inspect(sc, doc, Options{})
	if err != nil || len(rep.Findings) == 0 {
		t.Fatalf("Inspect: %v, %d findings", err, len(rep.Findings))
	}
	out, _, err := rep.Redact(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(out), `"blob":"`) + len(`"blob":"`)
	enc := string(out[i : i+strings.IndexByte(string(out[i:]), '"')])
	dec, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		t.Fatalf("redacted blob %q is not padded base64: %v", enc, err)
	}
	if strings.Contains(string(dec), "SECRET-") || !strings.Contains(string(dec), "[REDACTED_SECRET]") {
		t.Errorf("redacted blob decodes to %q", dec)
	}
}
