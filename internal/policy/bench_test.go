package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

// benchArguments returns arguments whose JSON encoding is about size bytes.
func benchArguments(size int) map[string]any {
	args := map[string]any{
		"path":      "/tmp/allowed/report.txt",
		"overwrite": true,
		"mode":      int64(420),
		"tags":      []any{"a", "b", "c"},
	}
	for i := 0; ; i++ {
		b, _ := json.Marshal(args)
		if len(b) >= size {
			return args
		}
		args[fmt.Sprintf("field_%02d", i)] = "lorem ipsum dolor sit amet consectetur adipiscing"
	}
}

// BenchmarkEvaluate: the readonly-agent example with 1 KiB of arguments, for
// a call it denies and one it allows.
func BenchmarkEvaluate(b *testing.B) {
	p, err := Load("../../examples/policies/readonly-agent.yaml")
	if err != nil {
		b.Fatal(err)
	}
	args := benchArguments(1024)
	yes, no := true, false
	ro := mcp.Annotations{ReadOnlyHint: &yes}
	mut := mcp.Annotations{DestructiveHint: &no}
	cases := []struct {
		name string
		in   Input
		want Action
	}{
		{"deny_mutating", Input{Principal: Principal{ID: "u", Role: "readonly_agent"}, ServerID: "fs",
			Tool:      Tool{Name: "write_file", Known: true, Annotations: mut.Map(), SideEffect: mut.SideEffect()},
			Arguments: args}, ActionDeny},
		{"allow_read_only", Input{Principal: Principal{ID: "u", Role: "readonly_agent"}, ServerID: "fs",
			Tool:      Tool{Name: "read_file", Known: true, Annotations: ro.Map(), SideEffect: ro.SideEffect()},
			Arguments: args}, ActionAllow},
	}
	// The gateway's form: one ToolView per tool definition.
	viewed := cases[0]
	viewed.name = "deny_mutating_view"
	viewed.in.ToolView = NewToolView(viewed.in.Tool)
	cases = append(cases, viewed)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := p.Evaluate(&c.in); d.Action != c.want {
					b.Fatalf("got %s", d.Action)
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		in := cases[0].in
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Evaluate(&in)
			}
		})
	})
}

// BenchmarkEvaluateArguments: the sandboxed-writes example, whose conditions
// read the arguments.
func BenchmarkEvaluateArguments(b *testing.B) {
	p, err := Load("../../examples/policies/sandboxed-writes.yaml")
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Principal: Principal{Role: "ci_agent"},
		Tool:      Tool{Name: "write_file", Known: true, Annotations: map[string]any{"openWorldHint": false}, SideEffect: "mutating"},
		Arguments: benchArguments(1024)}
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(&in)
	}
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("../../examples/policies/sandboxed-writes.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("b.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
