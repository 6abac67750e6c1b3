package strictjson

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestValidate(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	for _, tt := range []struct {
		name, in string
		want     error
	}{
		{"object", `{"a":1,"b":[true,null,"x"]}`, nil},
		{"whitespace around", " \t{\"a\":1}\r\n", nil},
		{"scalar", `"x"`, nil},
		{"max depth", ok, nil},
		{"empty", ``, ErrSyntax},
		{"truncated", `{"a":`, ErrSyntax},
		{"bad syntax", `{"a" 1}`, ErrSyntax},
		{"trailing", `{"a":1} {}`, ErrTrailing},
		{"trailing comma", `{"a":1,}`, ErrSyntax},
		{"invalid UTF-8 in a value", "{\"a\":\"\xff\"}", ErrUTF8},
		{"invalid UTF-8 in a name", "{\"\xc3\":1}", ErrUTF8},
		{"lone surrogate", `{"a":"\ud800"}`, ErrUTF8},
		{"duplicate", `{"a":1,"a":2}`, ErrDuplicate},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, ErrDuplicate},
		{"duplicate deep", `{"x":[{"a":1,"a":2}]}`, ErrDuplicate},
		{"folded", `{"a":1,"A":2}`, ErrFoldedDuplicate},
		{"folded deep", `{"x":{"y":[{"path":1,"PATH":2}]}}`, ErrFoldedDuplicate},
		{"folded long s", `{"s":1,"\u017f":2}`, ErrFoldedDuplicate},
		{"folded kelvin", `{"k":1,"\u212a":2}`, ErrFoldedDuplicate},
		{"same name in two objects", `{"a":{"b":1},"c":{"b":1,"B":{}}}`, ErrFoldedDuplicate},
		{"too deep", deep, ErrDepth},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate([]byte(tt.in))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Validate = %v, want %v", err, tt.want)
			}
			if err != nil {
				var se *Error
				if !errors.As(err, &se) {
					t.Fatalf("%T is not an *Error", err)
				}
			}
		})
	}
}

func TestErrorQuotesNoInput(t *testing.T) {
	for _, in := range []string{`{"secret-name":1,"secret-name":2}`, `{"secret-name":1,"SECRET-NAME":2}`, "{\"secret-name\":\"\xff\"}", `{"secret-name":1} secret`} {
		err := Validate([]byte(in))
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("Validate(%q) = %v: want an error without input text", in, err)
		}
	}
}

func TestDuplicateNamesTheMember(t *testing.T) {
	err := Validate([]byte(`{"annotations":{"readOnlyHint":false,"readOnlyHint":true}}`))
	var se *Error
	if !errors.As(err, &se) || se.Pointer != "/annotations/readOnlyHint" || se.Name != "readOnlyHint" {
		t.Fatalf("err = %#v, want the pointer /annotations/readOnlyHint", err)
	}
	err = Validate([]byte(`{"a":{"path":1,"PATH":2}}`))
	if !errors.As(err, &se) || se.Name != "PATH" {
		t.Fatalf("err = %#v, want the name PATH", err)
	}
}

func TestMembers(t *testing.T) {
	type m = Member
	for _, tt := range []struct {
		name, in string
		want     []m
		err      error
	}{
		{"in order", `{"b":1, "a" : {"x":[1]} ,"c":"\u0041"}`, []m{{"b", []byte("1")}, {"a", []byte(`{"x":[1]}`)}, {"c", []byte(`"\u0041"`)}}, nil},
		{"escaped name decoded", `{"\u0061b":true}`, []m{{"ab", []byte("true")}}, nil},
		{"empty", `{}`, nil, nil},
		{"not an object", `[1]`, nil, ErrKind},
		{"bad JSON that is not an object", `[1`, nil, ErrSyntax},
		{"duplicate", `{"a":1,"a":2}`, nil, ErrDuplicate},
		{"trailing", `{"a":1}x`, nil, ErrTrailing},
		{"folded: members kept", `{"a":1,"A":2}`, []m{{"a", []byte("1")}, {"A", []byte("2")}}, ErrFoldedDuplicate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Object([]byte(tt.in))
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Object = %v, want %v", err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Object = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || !bytes.Equal(got[i].Value, tt.want[i].Value) {
					t.Fatalf("member %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestMembersStopsAtFnError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Members([]byte(`{"a":1,"b":2,"b":3}`), func(string, []byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err = %v after %d calls, want fn's error after 1", err, n)
	}
}

func TestElementsAndString(t *testing.T) {
	es, err := Elements([]byte(` [1, {"a":"b"} ,"x"] `))
	if err != nil || len(es) != 3 || string(es[1]) != `{"a":"b"}` {
		t.Fatalf("Elements = %q, %v", es, err)
	}
	if _, err := Elements([]byte(`{}`)); !errors.Is(err, ErrKind) {
		t.Fatalf("Elements of an object = %v, want ErrKind", err)
	}
	if s, err := String([]byte(`"a\u00e9\n"`)); err != nil || s != "aé\n" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if _, err := String([]byte(`1`)); !errors.Is(err, ErrKind) {
		t.Fatalf("String(1) = %v, want ErrKind", err)
	}
	if _, err := String([]byte("\"\xff\"")); err == nil {
		t.Fatal("String of invalid UTF-8: no error")
	}
}

func TestValidatedMembers(t *testing.T) {
	in := []byte(` { "a" : "x\"}" , "\u0062":[{"c":"]"}], "n":-1.5e3,"t":true}`)
	var got []string
	if err := ValidatedMembers(in, func(n string, v []byte) bool { got = append(got, n+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	want := []string{`a="x\"}"`, `b=[{"c":"]"}]`, `n=-1.5e3`, `t=true`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
	n := 0
	_ = ValidatedMembers(in, func(string, []byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("the walk went on after fn returned false (%d calls)", n)
	}
	if err := ValidatedMembers([]byte(`[1]`), func(string, []byte) bool { return true }); !errors.Is(err, ErrKind) {
		t.Fatalf("ValidatedMembers of an array = %v, want ErrKind", err)
	}
}

// FuzzMembers holds the strict reader to jsontext (the library it is built
// on, with its strict defaults) plus the folding rule, and the
// validated-input walker to Members on every strict object.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, `{"a":1,"a":2}`, `{"a":{"b":[1,"\"",{"c":null}]}}`, `[1,2]`, `{"\u0061":1}`, `{"x":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1} `, `{"a":1}x`, `{"s":1,"\u017f":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Validate(b)
		libOK := jsontext.Value(b).IsValid()
		switch {
		case libOK && foldedDuplicate(b) == "" && err != nil:
			t.Fatalf("Validate refused strict JSON: %v", err)
		case libOK && foldedDuplicate(b) != "" && !errors.Is(err, ErrFoldedDuplicate):
			t.Fatalf("Validate = %v, want ErrFoldedDuplicate", err)
		case !libOK && err == nil:
			t.Fatal("Validate accepted what jsontext refuses")
		}
		ms, merr := Object(b)
		isObj := libOK && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
		if (merr == nil || errors.Is(merr, ErrFoldedDuplicate)) != isObj {
			t.Fatalf("Object = %v; valid object: %v", merr, isObj)
		}
		if !isObj {
			_ = ValidatedMembers(b, func(string, []byte) bool { return true }) // no panic
			return
		}
		var walked []Member
		if err := ValidatedMembers(b, func(n string, v []byte) bool {
			walked = append(walked, Member{n, v})
			return true
		}); err != nil {
			t.Fatalf("ValidatedMembers of a strict object: %v", err)
		}
		if len(walked) != len(ms) {
			t.Fatalf("ValidatedMembers found %d members, Members %d", len(walked), len(ms))
		}
		for i := range ms {
			if walked[i].Name != ms[i].Name || !bytes.Equal(walked[i].Value, ms[i].Value) {
				t.Fatalf("member %d: ValidatedMembers %q, Members %q", i, walked[i], ms[i])
			}
		}
	})
}
