package scan

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// benign64KiB is 64 KiB of realistic benign text (testdata/benign.txt:
// prose from the project's docs, Go code, JSON records with UUIDs,
// digests and integrity strings, log lines with timestamps and IPs,
// OCI digests and ULIDs), cut at a rune boundary.
func benign64KiB(tb testing.TB) string {
	b, err := os.ReadFile("testdata/benign.txt")
	if err != nil {
		tb.Fatal(err)
	}
	n := 64 << 10
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}

// benign4KiB is the first 4 KiB of testdata/benign.txt (the size of a
// typical tool result), cut at a rune boundary.
func benign4KiB(tb testing.TB) string {
	t := benign64KiB(tb)
	n := 4 << 10
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n]
}

func benchScan(b *testing.B, opts Options) { benchScanText(b, opts, benign64KiB(b)) }

func benchScanText(b *testing.B, opts Options, text string) {
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s.Scan(Input{Text: text}, func(Finding) { n++ })
	}
}

// BenchmarkScanBenign64KiB scans 64 KiB of benign text with every family
// on (the target: 200 MB/s per core).
func BenchmarkScanBenign64KiB(b *testing.B) { benchScan(b, Options{}) }

// BenchmarkScanBenign4KiB scans 4 KiB of the same text with every family
// on: per-string fixed costs weigh more.
func BenchmarkScanBenign4KiB(b *testing.B) { benchScanText(b, Options{}, benign4KiB(b)) }

// BenchmarkScanBenign64KiBSecrets is the secret family alone.
func BenchmarkScanBenign64KiBSecrets(b *testing.B) {
	benchScan(b, Options{NoPII: true, NoInjection: true})
}

// BenchmarkScanBenign64KiBPII is the personal-data family alone.
func BenchmarkScanBenign64KiBPII(b *testing.B) {
	benchScan(b, Options{NoSecrets: true, NoInjection: true})
}

// BenchmarkScanBenign64KiBInjection is the injection family alone.
func BenchmarkScanBenign64KiBInjection(b *testing.B) {
	benchScan(b, Options{NoSecrets: true, NoPII: true})
}

// TestBenignCorpus: the benign corpus has no finding.
func TestBenignCorpus(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/benign.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	s.Scan(Input{Text: text}, func(f Finding) {
		t.Errorf("benign text: %s (%s, %s) at %d: %q", f.Rule, f.Class, f.Confidence, f.Start, text[max(0, f.Start-20):min(len(text), f.End+10)])
	})
}

// BenchmarkScanAdversarial64KiB scans 64 KiB of texts built to make
// hits expensive: every keyword hit passing its precheck.
func BenchmarkScanAdversarial64KiB(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, unit string }{
		{"pem-begin", "-----BEGIN RSA PRIVATE KEY-----\n"},
		{"generic-assign", "api_key = 'q8Zr2Lm0Xv7Tn4Wp' "},
		{"keyword-only", "key token secret api auth "},
		{"url", "https://u:p4ss@h/ "},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJhIjoxfQ.c2lnbmF0dXJlc2lnbmF0dXJl "},
		{"digits", "4539 1488 0343 6467 +14155552671 536-90-4399 "},
		{"vault", "s.abcdefghijklmnopqrstuvwx "},
	} {
		text := strings.Repeat(tc.unit, (64<<10)/len(tc.unit)+1)[:64<<10]
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scan(Input{Text: text}, func(Finding) {})
			}
		})
	}
}
