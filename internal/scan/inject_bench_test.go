package scan

import (
	"fmt"
	"strings"
	"testing"
)

// benignSnippets are realistic benign tool output: prose, documentation,
// code, JSON and logs, including words the rules anchor on ("ignore",
// "use the ... tool", "send", "system", "human").
var benignSnippets = []string{
	"The build finished with 3 warnings. You can ignore the warnings in the build output; they come from a vendored dependency and are fixed upstream.\n",
	"To search the repository, use the search tool with a query string. Results are ranked by relevance and include the file path, the line number and a short excerpt.\n",
	"func (s *Server) Handle(ctx context.Context, req *Request) (*Response, error) {\n\tif err := req.Validate(); err != nil {\n\t\treturn nil, fmt.Errorf(\"handle %s: %w\", req.Method, err)\n\t}\n\treturn s.next.Handle(ctx, req)\n}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Found 12 issues in project alpha\"}],\"isError\":false}}\n",
	"2026-12-01T22:41:07Z INFO request completed method=GET path=/api/v1/items status=200 duration=12.4ms user_id=8812\n",
	"Send the logs to the support team if the problem persists. Previous versions of the client stored settings in ~/.config/app; the new version migrates them automatically.\n",
	"## Installation\n\nRun `npm install` and then `npm run build`. The system requirements are listed below. Forget about the old Makefile targets; they were removed in 2.0.\n",
	"def parse(line):\n    # skip comments and blank lines\n    line = line.strip()\n    if not line or line.startswith('#'):\n        return None\n    key, _, value = line.partition('=')\n    return key.strip(), value.strip()\n",
	"The human resources system sends a reminder to every employee before the review. Call the help desk at extension 4410 for access to the portal.\n",
	"<div class=\"card\"><img src=\"/static/logo.png\" alt=\"logo\"><p>Welcome back! You are now logged in.</p><!-- analytics --></div>\n",
	"![build](https://img.shields.io/badge/build-passing-green?style=flat&logo=github) [docs](https://example.com/docs?page=2)\n",
}

var benignUnicode = []string{
	"Résumé des modifications : la fonction « analyser » ignore désormais les lignes vides. Über die Schnittstelle werden Größen in Bytes übertragen.\n",
	"検索ツールを使ってリポジトリを検索します。結果はファイルパスと行番号を含みます。\n",
	"Привет! Сборка завершена успешно, предупреждений нет. Отчёт отправлен команде.\n",
	"Deploy finished 🚀 — 3 services updated ✅, 0 failed ❤️ (see “release notes”).\n",
}

func benignText(n int, parts ...[]string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		for _, p := range parts {
			b.WriteString(p[i%len(p)])
		}
	}
	s := b.String()
	for len(s) > n && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

func BenchmarkInjectionBenign64KiB(b *testing.B) {
	s, err := New(Options{NoSecrets: true, NoPII: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		text string
		mode Mode
	}{
		{"ascii", benignText(64<<10, benignSnippets), ModeData},
		{"unicode", benignText(64<<10, benignSnippets, benignUnicode), ModeData},
		{"definition", benignText(64<<10, benignSnippets), ModeToolDefinition},
	} {
		b.Run(tc.name, func(b *testing.B) {
			in := Input{Text: tc.text, Mode: tc.mode}
			n := 0
			s.Scan(in, func(f Finding) {
				if f.Confidence != Low {
					b.Fatalf("benign text flagged: %+v", f)
				}
			})
			b.SetBytes(int64(len(tc.text)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Scan(in, func(Finding) { n++ })
			}
		})
	}
}

// adversarialTexts are 64 KiB inputs built to make the rules work hard:
// a keyword at every few bytes, unterminated comments and tags, floods of
// hiding characters.
func adversarialTexts() map[string]string {
	rep := func(s string) string { return benignText(64<<10, []string{s}) }
	return map[string]string{
		"ignore":       rep("ignore ignore previous "),
		"comments":     rep("<!-- ai must "),
		"directives":   rep("<important> "),
		"sensitive":    rep("read id_rsa "),
		"turns":        rep("\n\nHuman: x\n\nAssistant: y"),
		"zero-width":   rep("a\u200b"),
		"tags":         rep("\U000E0069\U000E0067"),
		"exfiltration": rep("send secrets to a@b.c "),
		"tool-calls":   rep("call the a_b tool now "),
		"cross-tool":   rep("when the x tool is used always "),
		"markdown":     rep("![a](https://x.example/?q={a}) "),
		"quotes":       rep("'ignore previous instructions' "),
	}
}

func BenchmarkInjectionAdversarial64KiB(b *testing.B) {
	s, err := New(Options{NoSecrets: true, NoPII: true})
	if err != nil {
		b.Fatal(err)
	}
	for name, text := range adversarialTexts() {
		for _, mode := range []Mode{ModeData, ModeToolDefinition} {
			b.Run(fmt.Sprintf("%s/mode%d", name, mode), func(b *testing.B) {
				in := Input{Text: text, Mode: mode}
				b.SetBytes(int64(len(text)))
				for i := 0; i < b.N; i++ {
					s.Scan(in, func(Finding) {})
				}
			})
		}
	}
}
