package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runLines runs the server on the given input and returns stdout and the
// exit code.
func runLines(t *testing.T, cfg config, input string) (string, int) {
	t.Helper()
	var out, errOut syncBuffer
	code := run(cfg, strings.NewReader(input), &out, &errOut)
	return out.String(), code
}

func TestRequests(t *testing.T) {
	const initResult = `"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"gatehouse-fakeserver","version":"0.1.0"}}}`
	tests := []struct {
		name  string
		cfg   config
		input string
		want  string
	}{
		{
			name:  "initialize echoes the requested version",
			input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25",` + initResult + "\n",
		},
		{
			name:  "initialize with --protocol-version",
			cfg:   config{protocolVersion: "2024-11-05"},
			input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05",` + initResult + "\n",
		},
		{
			name:  "large integer id is copied as text",
			input: `{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}` + "\n",
		},
		{
			name:  "exponent id is copied as text",
			input: `{"jsonrpc":"2.0","id":1.0e2,"method":"ping"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":1.0e2,"result":{}}` + "\n",
		},
		{
			name:  "string id with escapes is copied as text",
			input: `{"jsonrpc":"2.0","id":"a\"b\u00e9","method":"ping"}` + "\r\n",
			want:  `{"jsonrpc":"2.0","id":"a\"b\u00e9","result":{}}` + "\n",
		},
		{
			name:  "explicit null id is a request",
			input: `{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":null,"result":{}}` + "\n",
		},
		{
			name:  "unknown method",
			input: `{"jsonrpc":"2.0","id":7,"method":"resources/list"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: resources/list"}}` + "\n",
		},
		{
			name:  "notifications and responses get no answer",
			input: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}` + "\n",
			want:  "",
		},
		{
			name:  "parse error",
			input: "not json\n",
			want:  `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u')"}}` + "\n",
		},
		{
			name:  "echo returns raw arguments",
			input: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"b": [1, 2.50], "a":"<&>"}}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"b\": [1, 2.50], \"a\":\"<&>\"}"}]}}` + "\n",
		},
		{
			name:  "unknown tool",
			input: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool: nope"}}` + "\n",
		},
		{
			name:  "stateless request gets resultType",
			input: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"write done"}]}}` + "\n",
		},
		{
			name:  "server/discover",
			input: `{"jsonrpc":"2.0","id":"d","method":"server/discover"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":"d","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gatehouse-fakeserver","version":"0.1.0"}},"ttlMs":0,"cacheScope":"private"}}` + "\n",
		},
		{
			name:  "banner comes first",
			cfg:   config{banner: "Fake server ready", bannerSet: true},
			input: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
			want:  "Fake server ready\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		},
		{
			name:  "emit writes verbatim, then answers",
			input: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"emit","arguments":{"lines":["{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"method\":\"roots/list\"}\r\n","partial"]}}}` + "\n",
			want:  `{"jsonrpc":"2.0","id":"r","method":"roots/list"}` + "\r\npartial" + `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"emitted 2 lines"}]}}` + "\n",
		},
		{
			name:  "emit without reply",
			input: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"emit","arguments":{"lines":["x\n"],"reply":false}}}` + "\n",
			want:  "x\n",
		},
		{
			name:  "echo-fast answers tools/call",
			cfg:   config{echoFast: true},
			input: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"k":"v"}}}` + "\n" + `{"jsonrpc":"2.0","id":10,"method":"ping"}` + "\n",
			want:  `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"k":"v"}}}` + "\n" + `{"jsonrpc":"2.0","id":10,"result":{}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code := runLines(t, tt.cfg, tt.input)
			if got != tt.want {
				t.Errorf("output:\n got %q\nwant %q", got, tt.want)
			}
			if code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		})
	}
}

func TestPaginationAndListChanged(t *testing.T) {
	names := func(cfg config, prefix string) []string {
		t.Helper()
		var all []string
		cursor := ""
		for page := 0; page < 20; page++ {
			params := `{}`
			if cursor != "" {
				params = `{"cursor":` + quote(cursor) + `}`
			}
			out, _ := runLines(t, cfg, prefix+`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+"}\n")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			var resp struct {
				Result struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
					NextCursor string `json:"nextCursor"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &resp); err != nil {
				t.Fatalf("page %d: %v in %q", page, err, out)
			}
			if cfg.pageSize > 0 && len(resp.Result.Tools) > cfg.pageSize {
				t.Fatalf("page %d has %d tools, page size %d", page, len(resp.Result.Tools), cfg.pageSize)
			}
			for _, tl := range resp.Result.Tools {
				all = append(all, tl.Name)
			}
			if resp.Result.NextCursor == "" {
				return all
			}
			cursor = resp.Result.NextCursor
		}
		t.Fatal("pagination does not end")
		return nil
	}
	first := "echo write delete emit sleep exit sendlistchanged"
	for _, size := range []int{0, 1, 2, 3, 7, 100} {
		if got := strings.Join(names(config{pageSize: size}, ""), " "); got != first {
			t.Errorf("page size %d: tools %q, want %q", size, got, first)
		}
	}
	changed := `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"sendlistchanged"}}` + "\n"
	if got := strings.Join(names(config{pageSize: 3}, changed), " "); got != first+" added" {
		t.Errorf("after sendlistchanged: tools %q", got)
	}

	out, _ := runLines(t, config{}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bogus"}}`+"\n")
	if !strings.Contains(out, `"code":-32602`) {
		t.Errorf("bogus cursor: %q", out)
	}
}

func TestToolsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(file, []byte(`[ {"name": "only", "inputSchema": {"type": "object"}} ]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := runLines(t, config{tools: file}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"only"}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other"}}`+"\n")
	want := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"only","inputSchema":{"type":"object"}}]}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"only done"}]}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool: other"}}` + "\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestLongLinesAreRecordedExactly(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "record")
	marker := filepath.Join(dir, "marker")
	big := strings.Repeat("x", 300<<10) // well past bufio.Scanner's 64 KiB
	input := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"s":"` + big + `"}}}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` // no terminator at EOF
	out, code := runLines(t, config{record: rec, marker: marker, exitCode: 3}, input)
	if code != 3 {
		t.Errorf("exit code %d, want --exit-code 3", code)
	}
	got, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != input {
		t.Errorf("record differs from input: %d bytes, want %d", len(got), len(input))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("marker: %v", err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], big) || lines[2] != `{"jsonrpc":"2.0","id":3,"result":{}}` {
		t.Errorf("unexpected output (%d lines)", len(lines))
	}
}

func TestStartup(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	var errOut syncBuffer
	code := run(config{stderrLines: 1000, grandchild: pidfile}, strings.NewReader(""), io.Discard, &errOut)
	if code != 0 {
		t.Errorf("exit code %d", code)
	}
	if n := strings.Count(errOut.String(), "\n"); n != 1000 {
		t.Errorf("%d stderr lines, want 1000", n)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := json.Unmarshal(bytes.TrimSpace(data), &pid); err != nil || pid <= 0 {
		t.Fatalf("pidfile %q", data)
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// pipeServer runs the server on a pipe and returns a line reader for its
// output, the stdin writer and a channel with its exit code.
func pipeServer(t *testing.T, cfg config) (*bufio.Reader, io.WriteCloser, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(cfg, inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return bufio.NewReader(outR), inW, done
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		ch <- l
	}()
	select {
	case l := <-ch:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("timeout reading server output")
		return ""
	}
}

func TestSleepProgressAndCancel(t *testing.T) {
	r, w, done := pipeServer(t, config{})
	io.WriteString(w, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":60,"steps":2},"_meta":{"progressToken":42}}}`+"\n")
	for i := 1; i <= 2; i++ {
		want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":42,"progress":` + string(rune('0'+i)) + `,"total":2}}` + "\n"
		if got := readLine(t, r); got != want {
			t.Fatalf("progress %d: got %q, want %q", i, got, want)
		}
	}
	if got := readLine(t, r); !strings.Contains(got, `"slept 60 ms"`) {
		t.Fatalf("sleep result: %q", got)
	}

	// A cancelled sleep never answers; the server keeps serving.
	io.WriteString(w, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300}}}`+"\n")
	io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`+"\n")
	time.Sleep(400 * time.Millisecond)
	io.WriteString(w, `{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n")
	if got := readLine(t, r); got != `{"jsonrpc":"2.0","id":8,"result":{}}`+"\n" {
		t.Fatalf("after cancel: got %q, want the ping answer", got)
	}

	io.WriteString(w, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exit","arguments":{"code":7}}}`+"\n")
	select {
	case code := <-done:
		if code != 7 {
			t.Errorf("exit code %d, want 7", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit tool did not end the server")
	}
}

func TestListDelay(t *testing.T) {
	r, w, _ := pipeServer(t, config{listDelayMS: 300})
	start := time.Now()
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	if got := readLine(t, r); got != `{"jsonrpc":"2.0","id":2,"result":{}}`+"\n" {
		t.Fatalf("first answer %q, want the ping's", got)
	}
	if got := readLine(t, r); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":{"tools":[`) {
		t.Fatalf("second answer %q, want the tools/list", got)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("tools/list answered after %v, before --list-delay-ms", d)
	}
}

func TestIgnoreEOFAndExitAfter(t *testing.T) {
	start := time.Now()
	_, code := runLines(t, config{ignoreEOF: true, exitAfterMS: 200, exitCode: 5}, "")
	if code != 5 {
		t.Errorf("exit code %d, want 5", code)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("exited after %v, before --exit-after-ms", d)
	}
}

func TestFastEchoAllocations(t *testing.T) {
	s := &server{cfg: config{echoFast: true}, stdout: io.Discard}
	line := []byte(`{"jsonrpc":"2.0","id":123,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello, world","n":[1,2,{"x":"]}"}]}}}`)
	if !s.fastEcho(line) {
		t.Fatal("fast path refused a tools/call")
	}
	if n := testing.AllocsPerRun(100, func() { s.fastEcho(line) }); n != 0 {
		t.Errorf("fastEcho allocates %v times per call", n)
	}
}

func TestScanObject(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		keys string
	}{
		{`{}`, true, ""},
		{` { "a" : 1 , "b":"}" ,"c":{"d":[1,"]"]}} `, true, "a b c"},
		{`{"a\"b":null}`, true, `a\"b`},
		{`{"a":1,}`, false, "a"},
		{`{"a":1`, false, "a"},
		{`{"a" 1}`, false, ""},
		{`{"a":[1}`, false, ""},
		{`[1]`, false, ""},
		{`{"a":1} x`, false, "a"},
		{``, false, ""},
	}
	for _, tt := range tests {
		var keys []string
		ok := scanObject([]byte(tt.in), func(k, v []byte) bool {
			keys = append(keys, string(k))
			return true
		})
		if ok != tt.ok || strings.Join(keys, " ") != tt.keys {
			t.Errorf("scanObject(%q) = %v, keys %q; want %v, %q", tt.in, ok, keys, tt.ok, tt.keys)
		}
	}
}

// FuzzScanObject checks that scanObject never panics and accepts every
// valid JSON object, handing out values that are valid JSON.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"id":"x","method":"tools/call","params":{"arguments":{"a":[{}]}}}`, `{"a":"\\\""}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var vals [][]byte
		ok := scanObject(b, func(k, v []byte) bool {
			vals = append(vals, v)
			return true
		})
		var obj map[string]json.RawMessage
		if json.Valid(b) && json.Unmarshal(b, &obj) == nil && obj != nil {
			if !ok {
				t.Fatalf("valid object %q refused", b)
			}
			for _, v := range vals {
				if !json.Valid(v) {
					t.Fatalf("value %q of %q is not valid JSON", v, b)
				}
			}
		}
	})
}
