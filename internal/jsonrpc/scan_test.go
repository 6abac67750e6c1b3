package jsonrpc

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// fastSeeds are frames for the differential fuzz targets: the common
// shapes, and every kind of input the fast path must decline.
var fastSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo","arguments":{"a":1.0,"b":1e2,"c":12345678901234567890,"d":[true,false,null,-0.5E+3]}}}`,
	` { "jsonrpc" : "2.0" , "method" : "notifications/cancelled" , "params" : { "requestId" : 7 } } `,
	"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"d\":\"\u2028 é 日本 \U0001F600\"}}",
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"a":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"A":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"\u0061":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":1,"` + "\u212a" + `":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud800"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud83d\ude00"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\u00e9\n\t\"\\\/"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xed\xa0\x80\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\x01\"}}",
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":01}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1.}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":tru}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"b""c":1}}`,
	`{"jsonrpc":"2.0","ID":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x"} x`,
	`{"jsonrpc":"2.0","id":1,"method":"x"}{}`,
	`{"jsonrpc":"2.0","id":{},"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`,
	`{"\u006aSONRPC":"2.0"}`,
	`[]`, `{}`, `1`, `"x"`, ``, `{`, `{"id":`, `{"a":1,}`, `{,}`, `{"a"}`,
	`{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
}

// TestFastPathTaken: the frames of a normal session are classified by the
// fast path (declining them would be correct but slow, so a regression
// there would only show in benchmarks).
func TestFastPathTaken(t *testing.T) {
	many := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{`
	for i := 0; i < 40; i++ {
		if i > 0 {
			many += ","
		}
		many += `"k` + strings.Repeat("x", i) + `":` + `[{"n":1},"s"]`
	}
	many += `}}}`
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"caf\u00e9 – naïve 日本語 😀","n":-1.5e-3,"ok":true,"none":null,"list":[1,2,3]},"_meta":{"progressToken":"p"}}}` + "\r\n",
		`{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"line\nnext \"quoted\""}],"isError":false}}` + "\n",
		`{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found"}}`,
		many,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"naïve\":1,\"NAÏVE2\":2}}",
	} {
		m, ok := parseFast(Body([]byte(frame)))
		if !ok {
			t.Errorf("fast path declined %.80s", frame)
			continue
		}
		ref, err := parseRef(Body([]byte(frame)))
		if err != nil || !reflect.DeepEqual(m, ref) {
			t.Errorf("fast %+v, reference %+v (%v)", m, ref, err)
		}
	}
}

// TestFastPathDeclines: the cases the fast path leaves to the reference,
// so that every error and every rare spelling has one source of truth.
func TestFastPathDeclines(t *testing.T) {
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"a":2}}`,                // duplicate
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"A":2}}`,                // case-folded duplicate
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":1,"` + "\u212a" + `":2}}`, // Kelvin sign folds to k
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"\u0061":1}}`,                 // escaped name
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud83d\ude00"}}`,         // surrogate escapes
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":01}}`,                     // leading zero
		`{"jsonrpc":"2.0","ID":1,"method":"x"}`,                                       // near miss
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`,                              // shape error
		`{"jsonrpc":"2.0","id":1,"method":"x"} x`,                                     // trailing data
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,                                     // batch
		`{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,           // deep
	} {
		if m, ok := parseFast([]byte(frame)); ok {
			t.Errorf("fast path accepted %.80s as %+v", frame, m)
		}
	}
}

// FuzzFastParse: whenever the fast path accepts a frame, the reference
// accepts it too and classifies it identically (every field, the same
// sub-slices' text); and Parse always answers as the reference does.
func FuzzFastParse(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		body := Body(frame)
		ref, refErr := parseRef(body)
		got, gotErr := Parse(frame)
		if !reflect.DeepEqual(got, ref) || !reflect.DeepEqual(gotErr, refErr) {
			t.Fatalf("Parse(%q) = %+v, %v; reference %+v, %v", frame, got, gotErr, ref, refErr)
		}
		m, ok := parseFast(body)
		if !ok {
			return
		}
		if refErr != nil {
			t.Fatalf("fast path accepted %q, reference refused it: %v", frame, refErr)
		}
		if !reflect.DeepEqual(m, ref) {
			t.Fatalf("fast %+v, reference %+v for %q", m, ref, frame)
		}
	})
}

type memberPair struct {
	name  string
	value string
}

// FuzzFastMembers: ObjectMembers gives the reference's members for every
// input, whichever path it takes.
func FuzzFastMembers(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
		if m, err := Parse([]byte(s)); err == nil && m.Params != nil {
			f.Add(m.Params)
		}
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var got, want []memberPair
		gotErr := ObjectMembers(obj, func(n string, v []byte) { got = append(got, memberPair{n, string(v)}) })
		wantErr := objectMembersRef(obj, func(n string, v []byte) { want = append(want, memberPair{n, string(v)}) })
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("ObjectMembers(%q) = %v, %v; reference %v, %v", obj, got, gotErr, want, wantErr)
		}
	})
}

// FuzzPlainRun checks the word-at-a-time test against a byte loop.
func FuzzPlainRun(f *testing.F) {
	for _, s := range []string{"", "abcdefgh", "abcdefghijklmnopq", "abc\"\\\x1f\x7f\x80", "       !", "\x00aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaa\xff", "aaaaaaa\x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := true
		for _, c := range b {
			if c < 0x20 || c >= 0x80 {
				want = false
			}
		}
		if got := plainRun(b); got != want {
			t.Fatalf("plainRun(%q) = %v, want %v", b, got, want)
		}
	})
}

// TestPlainRunExhaustive checks plainRun for every byte value in every
// position of a word, around plain neighbours.
func TestPlainRunExhaustive(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				want := c >= 0x20 && c < 0x80
				if got := plainRun(b); got != want {
					t.Fatalf("plainRun(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

func BenchmarkParse(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"data":"` + strings.Repeat("abcdefghij", 102) + `"}}}` + "\n")
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, err := Parse(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, err := parseRef(Body(frame)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestManyEscapesLinear: a string of many escapes is read in one pass. The
// search for the closing quote once started again after every escape, so
// that a 4 MiB string of "\n" took minutes (a frame could stall its relay
// loop); read in one pass it takes milliseconds. The minute allowed here is
// a bound on the complexity, thousands of times the linear time.
func TestManyEscapesLinear(t *testing.T) {
	s := strings.Repeat(`\n`, 2<<20)
	frame := []byte(`{"jsonrpc":"2.0","method":"notifications/x","params":{"s":"` + s + `","t":"` + strings.Repeat(`a\"`, 1<<20) + `"}}` + "\n")
	done := make(chan error, 1)
	go func() {
		m, err := Parse(frame)
		if err == nil {
			err = ObjectMembers(m.Params, func(string, []byte) {})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a frame of 3 MiB of escapes was not read within a minute")
	}
	if _, ok := parseFast(Body(frame)); !ok {
		t.Fatal("the fast path declined a valid frame of escapes")
	}
}
