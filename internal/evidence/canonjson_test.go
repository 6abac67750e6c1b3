package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/jcs"
)

// ledgerRecords are the record types whose canonical JSON the gateway
// writes to the ledger (directly or nested), plus the declaration, plus
// rawRecord.
var ledgerRecords = []any{
	&GatewayDecisionReceipt{}, &ServerReceipt{}, &ScanResult{}, &ScanFinding{}, &DriftResult{}, &Redaction{}, &ToolDeclaration{}, &rawRecord{},
}

// rawRecord holds raw JSON, which CanonicalJSON writes through Canonical:
// no record type has such a member today, the encoder supports one.
type rawRecord struct {
	ID  string          `json:"id"`
	Raw json.RawMessage `json:"raw,omitempty"`
}

// fillVariant is how fill populates a value.
type fillVariant struct {
	str   string
	float float64
	int   int64
	// emptySlices: non-nil empty slices instead of two items.
	emptySlices bool
}

var fillVariants = []fillVariant{
	{str: "plain-value_1", float: 0.91, int: 2},
	{str: "<&> \u2028\u2029 \x00\x01\x1f\x7f \"q\" \\ / é😀ﬀ \xff\xc3", float: 1e21, int: 9007199254740992, emptySlices: true},
	{str: "", float: 1e-7, int: -1},
	{str: "x", float: 123456789012345680000, int: 1e18},
}

// fill sets every field of v, recursively, from fv. It fails the test on a
// kind it does not know, so that a new kind of field gets a test.
func fill(t *testing.T, v reflect.Value, fv fillVariant) {
	t.Helper()
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(` {"b": 1.0E0, "a": [ "x", {"d":null,"c":true} ], "u": "\u00e9"} `)) // not canonical
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fv.str)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(fv.float)
	case reflect.Int, reflect.Int64:
		v.SetInt(fv.int)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), fv)
	case reflect.Slice:
		n := 2
		if fv.emptySlices {
			n = 0
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(t, v.Index(i), fv)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), fv)
			}
		}
	default:
		t.Fatalf("fill: field kind %s (%s) not covered: extend fill and CanonicalJSON", v.Kind(), v.Type())
	}
}

// viaEncodingJSON is what the records were written as before
// CanonicalJSON: Canonical of encoding/json's output.
func viaEncodingJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonical(b)
}

// TestCanonicalJSONRecords: for every record type, zero and fully populated
// (every field, nested records included, with plain and awkward strings,
// numbers and empty slices), CanonicalJSON writes exactly Canonical of
// json.Marshal, directly (the type is supported: no fallback), and the
// result is accepted by the one-pass canonical check. A field added to a
// record is populated here automatically, so its encoding is checked too.
func TestCanonicalJSONRecords(t *testing.T) {
	for _, rec := range ledgerRecords {
		typ := reflect.TypeOf(rec)
		if err := jcs.Direct(typ); err != nil {
			t.Errorf("%s: no direct canonical encoding: %v", typ, err)
		}
		values := []reflect.Value{reflect.New(typ.Elem())} // the zero value
		for _, fv := range fillVariants {
			v := reflect.New(typ.Elem())
			fill(t, v.Elem(), fv)
			values = append(values, v)
		}
		for _, v := range values {
			want, err := viaEncodingJSON(v.Interface())
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got, err := CanonicalJSON(v.Interface())
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: CanonicalJSON =\n%s, %v\nwant\n%s", typ, got, err, want)
			}
			if err := jcs.Check(got); err != nil {
				t.Errorf("%s: %v", typ, err)
			}
			// A value (not a pointer) encodes alike.
			if got2, err := CanonicalJSON(v.Elem().Interface()); err != nil || !bytes.Equal(got2, want) {
				t.Errorf("%s value: CanonicalJSON = %s, %v", typ, got2, err)
			}
		}
	}
}

// TestCanonicalJSONErrors: the errors of CanonicalJSON are those of
// Canonical(json.Marshal(v)), and types it cannot write directly fall back
// to that.
func TestCanonicalJSONErrors(t *testing.T) {
	d := &GatewayDecisionReceipt{MetadataConfidence: math.NaN()}
	if _, err := CanonicalJSON(d); err == nil {
		t.Error("NaN metadata_confidence encoded")
	}
	seq := int64(1<<53 + 1)
	r := &ServerReceipt{LedgerSeq: &seq}
	if _, err := CanonicalJSON(r); !errors.Is(err, ErrInexactNumber) {
		t.Errorf("ledger_seq 2^53+1: %v, want ErrInexactNumber", err)
	}
	if _, err := viaEncodingJSON(r); !errors.Is(err, ErrInexactNumber) {
		t.Errorf("reference: ledger_seq 2^53+1: %v, want ErrInexactNumber", err)
	}
	e := &rawRecord{Raw: json.RawMessage(`{"n":12345678901234567890}`)}
	if _, err := CanonicalJSON(e); !errors.Is(err, ErrInexactNumber) {
		t.Errorf("inexact raw JSON: %v, want ErrInexactNumber", err)
	}
	e.Raw = json.RawMessage(`{"a":`)
	if _, err := CanonicalJSON(e); err == nil {
		t.Error("invalid raw JSON encoded")
	}
	// Fallback: a map (encoding/json sorts its keys; HTML is escaped and
	// then canonicalized back).
	m := map[string]any{"receipt_id": "<r>", "error": 1.0, "a": []int{1}}
	got, err := CanonicalJSON(m)
	if err != nil || string(got) != `{"a":[1],"error":1,"receipt_id":"<r>"}` {
		t.Errorf("map: %s, %v", got, err)
	}
	if got, err := CanonicalJSON(nil); err != nil || string(got) != "null" {
		t.Errorf("nil: %s, %v", got, err)
	}
}

// FuzzCanonicalJSON: with any strings and numbers in every field,
// CanonicalJSON agrees with Canonical of encoding/json (bytes and error
// class).
func FuzzCanonicalJSON(f *testing.F) {
	for _, fv := range fillVariants {
		f.Add(fv.str, fv.float, fv.int, fv.emptySlices)
	}
	f.Fuzz(func(t *testing.T, s string, x float64, n int64, empty bool) {
		fv := fillVariant{str: s, float: x, int: n, emptySlices: empty}
		for _, rec := range ledgerRecords {
			v := reflect.New(reflect.TypeOf(rec).Elem())
			fill(t, v.Elem(), fv)
			want, werr := viaEncodingJSON(v.Interface())
			got, err := CanonicalJSON(v.Interface())
			if (err == nil) != (werr == nil) || errors.Is(err, ErrInexactNumber) != errors.Is(werr, ErrInexactNumber) || !bytes.Equal(got, want) {
				t.Fatalf("%T: CanonicalJSON = %s, %v; want %s, %v", rec, got, err, want, werr)
			}
		}
	})
}
