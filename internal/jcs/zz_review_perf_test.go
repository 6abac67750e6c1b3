package jcs

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func zzMeasure(name string, in []byte, f func(io.Writer, []byte) error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// sample peak heap
	stop := make(chan struct{})
	peak := uint64(0)
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				close(done)
				return
			default:
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak {
				peak = m.HeapAlloc
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	h := sha256.New()
	t0 := time.Now()
	err := f(h, in)
	el := time.Since(t0)
	close(stop)
	<-done
	runtime.ReadMemStats(&after)
	fmt.Printf("%-40s len=%9d err=%v time=%v totalAlloc=%d MiB peakHeapAboveBase~%d MiB sum=%x\n", name, len(in), err, el,
		(after.TotalAlloc-before.TotalAlloc)>>20, (int64(peak)-int64(before.HeapAlloc))>>20, h.Sum(nil)[:4])
}

func TestZZPerf(t *testing.T) {
	const N = 16 << 20
	inputs := map[string][]byte{}
	// many small unsorted members in one object
	{
		var b bytes.Buffer
		b.WriteString("{")
		for i := 0; b.Len() < N; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%08d":0`, 1<<30-i)
		}
		b.WriteString("}")
		inputs["manyMembersReversed"] = b.Bytes()
	}
	// array of many small non-canonical objects
	{
		var b bytes.Buffer
		b.WriteString("[")
		for i := 0; b.Len() < N; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"b":1,"a":2}`)
		}
		b.WriteString("]")
		inputs["arrayOfSmallUnsorted"] = b.Bytes()
	}
	// one huge name, unsorted
	inputs["hugeName"] = []byte(`{"b":1,"` + strings.Repeat("a", N) + `":2}`)
	// huge name with escapes
	inputs["hugeEscapedName"] = []byte(`{"b":1,"` + strings.Repeat(`\u0061`, N/6) + `":2}`)
	// deep nesting wrapping a big value, non-canonical only at the end
	{
		d := 2000
		inputs["deepBigTailFault"] = []byte(strings.Repeat(`[`, d) + `"` + strings.Repeat("x", N) + `",1.0` + strings.Repeat(`]`, d))
	}
	{
		d := 5
		inputs["deep5ObjBig"] = []byte(strings.Repeat(`{"b":0,"a":`, d) + `"` + strings.Repeat("x", N) + `"` + strings.Repeat(`}`, d))
	}
	{
		// 4 levels of big arrays each with last element fault
		s := `"` + strings.Repeat("x", N) + `"`
		for i := 0; i < 6; i++ {
			s = `[` + s + `,1.0]`
		}
		inputs["nestedTailFault"] = []byte(s)
	}
	for _, name := range []string{"manyMembersReversed", "arrayOfSmallUnsorted", "hugeName", "hugeEscapedName", "deepBigTailFault", "deep5ObjBig", "nestedTailFault"} {
		in := inputs[name]
		zzMeasure(name+"/WriteCanonical", in, WriteCanonical)
		zzMeasure(name+"/encoder(old)", in, encodeCanonical)
		zzMeasure(name+"/reference", in, func(w io.Writer, b []byte) error {
			v, err := canonicalReference(b)
			w.Write(v)
			return err
		})
	}
}
