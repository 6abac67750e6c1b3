package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCorpusUpToDate fails when testdata/corpus is not what the
// generator writes: regenerate with
// go run ./internal/inspect/internal/corpusgen -out internal/inspect/testdata/corpus.
func TestCorpusUpToDate(t *testing.T) {
	files, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/corpus/%s differs from the generator's output: regenerate it", name)
		}
	}
}

func TestChecksums(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{{"79927398713", true}, {"79927398710", false}, {"4111111111111111", true}, {"4111111111111112", false}} {
		if luhnValid(c.s) != c.want {
			t.Errorf("luhnValid(%s) = %v", c.s, !c.want)
		}
	}
	// ISO 13616's own example IBANs.
	for _, c := range []struct {
		s    string
		want bool
	}{{"GB82WEST12345698765432", true}, {"DE89370400440532013000", true}, {"GB82WEST12345698765433", false}} {
		if ibanValid(c.s) != c.want {
			t.Errorf("ibanValid(%s) = %v", c.s, !c.want)
		}
	}
	if got := ibanCheck("GB", "WEST12345698765432"); got != "82" {
		t.Errorf("ibanCheck = %s, want 82", got)
	}
	if got := ghChecksum(""); got != "000000" {
		t.Errorf("ghChecksum(\"\") = %s", got)
	}
}

type rec struct {
	Label, Class, Type, Value string
	Doc                       json.RawMessage
}

// TestSynthesizedValuesAreValid checks every planted value against its
// format: the checksums hold for positives and fail for the negatives
// built to fail them.
func TestSynthesizedValuesAreValid(t *testing.T) {
	files, err := build()
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]*regexp.Regexp{
		"aws-access-key":     regexp.MustCompile(`^(AKIA|ASIA)[A-Z2-7]{16}$`),
		"github-pat":         regexp.MustCompile(`^ghp_[0-9A-Za-z]{36}$`),
		"github-oauth-token": regexp.MustCompile(`^gho_[0-9A-Za-z]{36}$`),
		"npm-token":          regexp.MustCompile(`^npm_[0-9A-Za-z]{36}$`),
		"anthropic-key":      regexp.MustCompile(`^sk-ant-api03-[\w-]{93}AA$`),
		"slack-bot-token":    regexp.MustCompile(`^xoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]+$`),
	}
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(files["positives.jsonl"]), []byte("\n")) {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		v := r.Value
		switch {
		case strings.HasPrefix(r.Type, "github-") && r.Type != "github-fine-grained-pat", r.Type == "npm-token":
			if ghChecksum(v[4:34]) != v[34:] {
				t.Errorf("%s: bad GitHub checksum", r.Type)
			}
		case strings.HasPrefix(r.Type, "card-"):
			if !luhnValid(strings.NewReplacer(" ", "", "-", "").Replace(v)) {
				t.Errorf("%s: fails Luhn", r.Type)
			}
		case strings.HasPrefix(r.Type, "iban-"):
			if !ibanValid(strings.ReplaceAll(v, " ", "")) {
				t.Errorf("%s: fails mod-97", r.Type)
			}
		}
		if re := shapes[r.Type]; re != nil && !re.MatchString(v) {
			t.Errorf("%s: value does not have the format's shape", r.Type)
		}
		n++
	}
	for _, line := range bytes.Split(bytes.TrimSpace(files["negatives.jsonl"]), []byte("\n")) {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(r.Doc, &doc); err != nil {
			t.Fatal(err)
		}
		for _, s := range leaves(doc) {
			switch r.Type {
			case "card-failing-luhn":
				for _, m := range regexp.MustCompile(`\d{16}`).FindAllString(s, -1) {
					if luhnValid(m) {
						t.Errorf("card-failing-luhn negative passes Luhn")
					}
				}
			case "iban-failing-mod97":
				for _, m := range regexp.MustCompile(`[A-Z]{2}\d{2}[A-Z0-9]{10,30}`).FindAllString(s, -1) {
					if ibanValid(m) {
						t.Errorf("iban-failing-mod97 negative passes mod-97")
					}
				}
			}
		}
	}
	if n < 300 {
		t.Errorf("%d positives, want at least 300", n)
	}
}

func leaves(v any) []string {
	switch x := v.(type) {
	case string:
		var inner any
		if json.Unmarshal([]byte(x), &inner) == nil {
			if _, ok := inner.(map[string]any); ok {
				return append([]string{x}, leaves(inner)...)
			}
		}
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, leaves(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return nil
}
