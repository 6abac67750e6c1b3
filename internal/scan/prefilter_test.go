package scan

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

type kwHit struct{ word, end int }

// naiveHits is the reference: every occurrence of every non-empty word,
// ASCII case folded, found with strings.Index.
func naiveHits(words []string, text string) []kwHit {
	lt := asciiLowerString(text)
	var hits []kwHit
	for wi, w := range words {
		if w == "" {
			continue
		}
		lw := asciiLowerString(w)
		for from := 0; from <= len(lt); {
			j := strings.Index(lt[from:], lw)
			if j < 0 {
				break
			}
			hits = append(hits, kwHit{wi, from + j + len(lw)})
			from += j + 1
		}
	}
	sortHits(hits)
	return hits
}

func asciiLowerString(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] = lowerASCII(b[i])
	}
	return string(b)
}

func sortHits(h []kwHit) {
	sort.Slice(h, func(i, j int) bool {
		if h[i].end != h[j].end {
			return h[i].end < h[j].end
		}
		return h[i].word < h[j].word
	})
}

func automatonHits(k *keywords, text string) []kwHit {
	var hits []kwHit
	last := 0
	k.each(text, func(w, end int) bool {
		if end < last {
			panic("each: end offsets not ascending")
		}
		last = end
		hits = append(hits, kwHit{w, end})
		return true
	})
	sortHits(hits)
	return hits
}

func TestKeywords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		words []string
		text  string
		want  []kwHit
	}{
		{"none", []string{"key"}, "nothing here", nil},
		{"one", []string{"key"}, "a key", []kwHit{{0, 5}}},
		{"case folded", []string{"AKIA"}, "x akia Akia AKIA", []kwHit{{0, 6}, {0, 11}, {0, 16}}},
		{"keyword upper text lower", []string{"ghp_"}, "GHP_x", []kwHit{{0, 4}}},
		{"overlapping", []string{"aa"}, "aaaa", []kwHit{{0, 2}, {0, 3}, {0, 4}}},
		{"suffix via failure", []string{"she", "he", "hers", "his"}, "ushers", []kwHit{{0, 4}, {1, 4}, {2, 6}}},
		{"prefix of another", []string{"api", "apikey"}, "APIKEY", []kwHit{{0, 3}, {1, 6}}},
		{"empty word ignored", []string{"", "x"}, "x", []kwHit{{1, 1}}},
		{"duplicate word", []string{"tok", "TOK"}, "tok", []kwHit{{0, 3}, {1, 3}}},
		{"non-ascii exact", []string{"é"}, "É é", []kwHit{{0, 5}}},
		{"punctuation", []string{"-----begin"}, "-----BEGIN RSA", []kwHit{{0, 10}}},
		{"no words", nil, "anything", nil},
		{"long text, both streams", []string{"ab", "b"}, strings.Repeat("x", 100) + "ab" + strings.Repeat("y", 100) + "AB", []kwHit{{0, 102}, {1, 102}, {0, 204}, {1, 204}}},
		{"match across the midpoint", []string{"needle"}, strings.Repeat("z", 97) + "needle" + strings.Repeat("z", 97), []kwHit{{0, 103}}},
		{"buffer overflow", []string{"a"}, strings.Repeat("b", 100) + strings.Repeat("a", 150), hitsA(100, 250)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeywords(tc.words)
			got := automatonHits(k, tc.text)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if ref := naiveHits(tc.words, tc.text); !reflect.DeepEqual(ref, tc.want) {
				t.Errorf("reference disagrees with the table: %v", ref)
			}
		})
	}
}

func hitsA(from, to int) []kwHit {
	var h []kwHit
	for e := from + 1; e <= to; e++ {
		h = append(h, kwHit{0, e})
	}
	return h
}

func TestKeywordsStop(t *testing.T) {
	k := newKeywords([]string{"a"})
	n := 0
	k.each("aaaa", func(int, int) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("fn called %d times after returning false, want 2", n)
	}
	for _, stop := range []int{1, 60, 70, 200} {
		n = 0
		k.each(strings.Repeat("a", 250), func(int, int) bool { n++; return n < stop })
		if n != stop {
			t.Fatalf("long text: fn called %d times, want %d", n, stop)
		}
	}
	if !k.any("xxa") || k.any("xxx") {
		t.Fatal("any wrong")
	}
}

func TestKeywordsNoAlloc(t *testing.T) {
	k := newKeywords([]string{"token", "secret", "akia", "ghp_"})
	text := strings.Repeat("a token and a secret AKIA ghp_ ", 100)
	n := 0
	fn := func(int, int) bool { n++; return true }
	if a := testing.AllocsPerRun(100, func() { k.each(text, fn) }); a != 0 {
		t.Fatalf("each allocates %v times per run", a)
	}
}

func FuzzKeywords(f *testing.F) {
	f.Add("she\x00he\x00hers", "ushers HERS")
	f.Add("a\x00aa\x00aaa", "aaaaaa")
	f.Add("AKIA\x00-----BEGIN", "xx akia -----begin")
	f.Add("needle\x00ee\x00e", strings.Repeat("z", 61)+"NEEDLE"+strings.Repeat("e", 70)) // two streams, buffer overflow
	f.Fuzz(func(t *testing.T, wordList, text string) {
		words := strings.Split(wordList, "\x00")
		if len(words) > 64 {
			words = words[:64]
		}
		k := newKeywords(words)
		got := automatonHits(k, text)
		want := naiveHits(words, text)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("words %q text %q: got %v, want %v", words, text, got, want)
		}
	})
}

func BenchmarkKeywords64KiB(b *testing.B) {
	k := newKeywords([]string{"token", "secret", "akia", "ghp_", "password", "-----begin", "eyj", "bearer"})
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; func main() { x := 42 }\n", 1000)[:64<<10]
	b.SetBytes(int64(len(text)))
	n := 0
	for b.Loop() {
		k.each(text, func(int, int) bool { n++; return true })
	}
}

// TestKeywordsStreamBuffers: texts below and above 16 KiB whose second
// half holds fewer and more hits than the second stream's buffer (64,
// 512) report every hit, in order.
func TestKeywordsStreamBuffers(t *testing.T) {
	words := []string{"ab", "b", "abc"}
	k := newKeywords(words)
	for _, n := range []int{1 << 10, 15 << 10, 16 << 10, 64 << 10} {
		for _, every := range []int{3, 40, 300} {
			b := []byte(strings.Repeat("x", n))
			for i := 0; i+3 <= n; i += every {
				copy(b[i:], "abc")
			}
			text := string(b)
			got, want := automatonHits(k, text), naiveHits(words, text)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d every %d: %d hits, want %d", n, every, len(got), len(want))
			}
		}
	}
}
