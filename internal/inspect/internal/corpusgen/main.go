// Command corpusgen writes Gatehouse's labeled inspection corpus
// (../../testdata/corpus, read by internal/inspect's quality test; see
// docs/scanning.md, "The labeled corpus and measured quality").
//
// Usage:
//
//	go run ./internal/inspect/internal/corpusgen -out internal/inspect/testdata/corpus
//
// It writes positives.jsonl and negatives.jsonl, one record a line:
// {"id","label","class","type","location","form","mode","doc",
// "expect_path","value"}. "doc" is the JSON value the gateway would scan
// at that location (a CallToolResult, a tools/call's params.arguments, a
// tool object from tools/list, ...); "expect_path" is the RFC 6901 pointer
// of the leaf a positive was planted in; "value" is the planted secret or
// personal value (synthetic: random bodies of the right alphabet and
// length, valid checksums where the format has one — never a real
// credential), kept so the test can check that redaction removed it.
//
// The output is a pure function of the seed: the same binary writes the
// same bytes (math/rand/v2 PCG, no map iteration, no clock).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// Record is one labeled corpus entry.
type Record struct {
	ID         string          `json:"id"`
	Label      string          `json:"label"`
	Class      string          `json:"class"`
	Type       string          `json:"type"`
	Location   string          `json:"location"`
	Form       string          `json:"form"`
	Mode       string          `json:"mode"`
	Doc        json.RawMessage `json:"doc"`
	ExpectPath string          `json:"expect_path,omitempty"`
	Value      string          `json:"value,omitempty"`
}

const (
	seed1, seed2 = 0x6761746568, 0x6f757365 // fixed: the corpus is reproducible
)

func main() {
	out := flag.String("out", "internal/inspect/testdata/corpus", "directory to write positives.jsonl and negatives.jsonl into")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "corpusgen:", err)
		os.Exit(1)
	}
}

// generate writes the corpus files into dir.
func generate(dir string) error {
	files, err := build()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, name := range []string{"positives.jsonl", "negatives.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// build returns the corpus files by name.
func build() (map[string][]byte, error) {
	g := &gen{r: rand.New(rand.NewPCG(seed1, seed2))}
	pos := g.positives()
	neg := g.negatives()
	pb, err := encode(pos)
	if err != nil {
		return nil, err
	}
	nb, err := encode(neg)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"positives.jsonl": pb, "negatives.jsonl": nb}, nil
}

func encode(recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	seen := map[string]bool{}
	for _, rec := range recs {
		if seen[rec.ID] {
			return nil, fmt.Errorf("duplicate id %s", rec.ID)
		}
		seen[rec.ID] = true
		if err := strictjson.Validate(rec.Doc); err != nil {
			return nil, fmt.Errorf("record %s: doc is not strict JSON: %w", rec.ID, err)
		}
		if err := enc.Encode(rec); err != nil {
			return nil, fmt.Errorf("record %s: %w", rec.ID, err)
		}
	}
	return buf.Bytes(), nil
}

// gen holds the generator's random source and counters.
type gen struct {
	r   *rand.Rand
	seq map[string]int
	cyc map[string]int
}

func (g *gen) id(prefix string) string {
	if g.seq == nil {
		g.seq = map[string]int{}
	}
	g.seq[prefix]++
	return fmt.Sprintf("%s-%03d", prefix, g.seq[prefix])
}
