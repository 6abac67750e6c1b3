package jcs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func zzCompare(t testing.TB, in []byte, splitMin int) {
	t.Helper()
	orig := bytes.Clone(in)
	ref, rerr := canonicalReference(in)
	var w bytes.Buffer
	err := writeCanonical(&w, in, splitMin)
	if errClass(err) != errClass(rerr) || err == nil && !bytes.Equal(w.Bytes(), ref) {
		t.Fatalf("splitMin=%d in=%q:\n got %q, %v\n ref %q, %v", splitMin, in, w.Bytes(), err, ref, rerr)
	}
	if !bytes.Equal(in, orig) {
		t.Fatalf("modified input %q", orig)
	}
}

var zzCases = []string{
	`{"a":1,"\u0061":2}`, `{"\u0061":1,"a":2}`, `{"a":{"b":1,"\u0062":2},"0":1}`, `[{"b":1,"a":1},{"x":1,"\u0078":2}]`,
	`{"\u0061":1,"b":2}`, `{"b":1,"\u0061":2}`, `{"":1,"\u0000":2," ":3}`, `{"\u0000":1,"":2}`,
	`{"\uffff":1,"\ud800\udc00":2}`, `{"\ud800\udc00":1,"\uffff":2}`, `{"\uffff":1,"\ue000":2,"\ud7ff":3,"\udbff\udfff":4}`,
	`{"` + "\uffff" + `":1,"` + "\U00010000" + `":2}`, `{"` + "\U00010000" + `":1,"` + "\uffff" + `":2}`,
	`{"\ud800":1}`, `{"\udc00":1,"a":1}`, `{"a":"\udc00","b":1}`, `{"b":"\ud800\u0041","a":1}`,
	"{\"\xff\":1,\"a\":1}", "{\"b\":\"\xff\",\"a\":1}", "{\"a\":1,\"b\":\"\xed\xa0\x80\"}", "{\"b\":1,\"a\":\"\xc0\x80\"}",
	` {"b" : -0 , "a" : 1E2 } `, "\t{\"b\":1.0,\"a\":[ -0.0 , 1e-7, 1E+21, 0.000001 ]}\r\n", `[-0]`, `[ -0 ]`, `[1.0,[2.0,[3.0,[4.0,[5.0,[6.0]]]]]]`,
	`{"b":1,"a":2}  `, `  {"b":1,"a":2}`, `{"b":1,"a":2} ,`, `{"b":1,"a":2}]`, `{"b":1,"a":2}}`, `[1,2]]`, `[1,2] 3`, `[1,2]"x"`, `[1 ,2] null`,
	`{"b":1,"a":2,}`, `{,"b":1}`, `{"b":1,,"a":2}`, `{"b":1 "a":2}`, `{"b":1:"a"}`, `{"b"1}`, `{"b":}`, `{"b"}`, `{"b":1,"a"`, `[1,2`, `[1 2]`, `[,1]`, `[1,,2]`,
	`{"b":[1,{"d":1,"c":2,"d":3}],"a":0}`, `[[[[[{"b":1,"b":2}]]]]]`, `[[[[[[{"b":1,"a":2,"b":3}]]]]]]`, `[[[[[[[[[["\xff"]]]]]]]]]]`,
	`[[[[[[[[1.0]]]]]]]]`, `[[[[[[[[{"b":1,"a":2}]]]]]]]]`, `{"x":{"x":{"x":{"x":{"x":{"b":1,"a":2}}}}}}`,
	`{"a":"\/","b":"\u00e9","c":"\u0041\u001F\u007f\u2028"}`, `{"\/":1,"\u002f":2}`, `{"\u002F":1,"/":2}`, `{"\"":1,"\\":2,"\b\f\n\r\t":3,"\u001f\u007f":4}`,
	`{"\u00e9":1,"e\u0301":2}`, `[true,false,null,"x",{}, [], {"":""}]`, `[{}]`, `{"a":[]}`, `[ ]`, `{ }`, ` [ ] `, ` { } `,
	`{"n":9007199254740993,"a":1}`, `{"b":1,"a":[1e400]}`, `[1e400,{"b":1,"b":2}]`, `[{"b":1,"b":2},1e400]`, `{"b":1,"b":1e400}`,
	`{"b":1,"a":12345678901234567890}`, `[0.10000000000000000001, 1.0]`, `[123456789012345680000,1e21]`,
	`{"b":1,"a":2}{"c":1}`, `[1][2]`, `"x" "y"`, ` 1.0 `, ` "\u0041" `, ``, ` `, `{`, `[`, `}`, `]`, `{"a":1}}`,
	"\ufeff{\"b\":1,\"a\":2}", `{"b":1,"a":2}` + "\x00", `{"b":1,"a":2}/*c*/`, `[nul]`, `[tru]`, `[NaN]`, `[Infinity]`, `[01]`, `[.5]`, `[1.]`, `[+1]`,
}

func TestZZCases(t *testing.T) {
	for _, c := range zzCases {
		for _, sm := range []int{0, 1, 2, 4, 8, 16, 32} {
			zzCompare(t, []byte(c), sm)
		}
		// Through WriteCanonical with its threshold: pad so the value is big.
		pad := strings.Repeat(" ", splitMinBytes)
		zzCompare(t, []byte(pad+c+pad), splitMinBytes)
		big := `"` + strings.Repeat("p", splitMinBytes) + `"`
		zzCompare(t, []byte(`{"zz":`+big+`,"v":`+c+`}`), splitMinBytes)
		zzCompare(t, []byte(`[`+big+`,`+c+`]`), splitMinBytes)
		zzCompare(t, []byte(`[`+c+`,`+big+`]`), splitMinBytes)
	}
}

// random JSON generator with noisy spellings
type zzGen struct{ r *rand.Rand }

func (g zzGen) ws() string {
	if g.r.Intn(4) != 0 {
		return ""
	}
	return []string{" ", "\t", "\n", "\r", "  \n "}[g.r.Intn(5)]
}

func (g zzGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	n := g.r.Intn(4)
	for i := 0; i < n; i++ {
		switch g.r.Intn(16) {
		case 0:
			b.WriteString(`\u0061`)
		case 1:
			b.WriteString(`\ud83d\ude00`)
		case 2:
			b.WriteString("😀")
		case 3:
			b.WriteString("\uffff")
		case 4:
			b.WriteString(`\uFFFF`)
		case 5:
			b.WriteString("\ue000")
		case 6:
			b.WriteString(`\u0000`)
		case 7:
			b.WriteString(`\n`)
		case 8:
			b.WriteString(`\/`)
		case 9:
			b.WriteString("é")
		case 10:
			b.WriteString(`\u00e9`)
		case 11:
			if g.r.Intn(20) == 0 {
				b.WriteString(`\ud800`)
			} else {
				b.WriteString("b")
			}
		case 12:
			if g.r.Intn(20) == 0 {
				b.WriteString("\xff")
			} else {
				b.WriteString("c")
			}
		default:
			b.WriteByte("abc"[g.r.Intn(3)])
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (g zzGen) num() string {
	return []string{"0", "-0", "1", "1.0", "1E2", "1e21", "1e-7", "0.000001", "-1.5e-7", "100e-2", "9007199254740993", "1e400", "12", "-0.0"}[g.r.Intn(14)]
}

func (g zzGen) value(depth int) string {
	k := g.r.Intn(10)
	if depth > 7 {
		k = g.r.Intn(4)
	}
	switch k {
	case 0:
		return g.str()
	case 1:
		return g.num()
	case 2:
		return []string{"true", "false", "null"}[g.r.Intn(3)]
	case 3:
		return g.num()
	case 4, 5, 6:
		n := g.r.Intn(5)
		var b strings.Builder
		b.WriteString("{" + g.ws())
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString("," + g.ws())
			}
			b.WriteString(g.str() + g.ws() + ":" + g.ws() + g.value(depth+1) + g.ws())
		}
		b.WriteString("}")
		return b.String()
	default:
		n := g.r.Intn(5)
		var b strings.Builder
		b.WriteString("[" + g.ws())
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString("," + g.ws())
			}
			b.WriteString(g.value(depth+1) + g.ws())
		}
		b.WriteString("]")
		return b.String()
	}
}

func TestZZRandom(t *testing.T) {
	g := zzGen{rand.New(rand.NewSource(1))}
	stats := map[string]int{}
	for i := 0; i < 300000; i++ {
		s := g.ws() + g.value(0) + g.ws()
		if g.r.Intn(50) == 0 {
			s += []string{"x", "{}", "]", ",", "1"}[g.r.Intn(5)]
		}
		_, rerr := canonicalReference([]byte(s))
		stats[errClass(rerr)]++
		zzCompare(t, []byte(s), 0)
		zzCompare(t, []byte(s), g.r.Intn(40))
	}
	fmt.Println(stats)
}

func FuzzZZSplit(f *testing.F) {
	for _, c := range zzCases {
		f.Add([]byte(c), uint8(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, sm uint8) {
		zzCompare(t, b, int(sm))
	})
}

var _ = errors.New
