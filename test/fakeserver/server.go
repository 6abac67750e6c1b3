package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// JSON-RPC error codes used by the server.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

const serverInfo = `{"name":"gatehouse-fakeserver","version":"0.1.0"}`

// server is one run of the fake server. Output is serialized by mu; every
// message is written with a single Write call so that concurrent handlers
// never interleave bytes.
type server struct {
	cfg    config
	stdout io.Writer
	record *os.File

	mu      sync.Mutex // guards stdout writes, tools, pending
	tools   []json.RawMessage
	tools2  []json.RawMessage
	lists   int                      // tools/list requests without a cursor answered
	pending map[string]chan struct{} // running sleep calls by id key

	exit chan int // the exit tool's code

	fastBuf []byte // echo-fast response buffer, used only by the read loop
	// fastText is the echo-fast result's text content as a JSON string
	// (--result-text), `"ok"` without it.
	fastText []byte
}

// run starts the server on the given streams and returns its exit code. It
// returns when stdin reaches EOF (unless cfg.ignoreEOF), when the exit tool
// is called, or after cfg.exitAfterMS.
func run(cfg config, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &server{cfg: cfg, stdout: stdout, pending: map[string]chan struct{}{}, exit: make(chan int, 1)}
	if err := s.start(stderr); err != nil {
		fmt.Fprintln(stderr, "fakeserver:", err)
		return 70
	}
	if s.record != nil {
		defer s.record.Close()
	}

	eof := make(chan error, 1)
	go func() { eof <- s.readLoop(stdin) }()

	var after <-chan time.Time
	if cfg.exitAfterMS > 0 {
		after = time.After(time.Duration(cfg.exitAfterMS) * time.Millisecond)
	}
	for {
		select {
		case code := <-s.exit:
			return code
		case <-after:
			return cfg.exitCode
		case err := <-eof:
			if err != nil {
				fmt.Fprintln(stderr, "fakeserver: reading stdin:", err)
			}
			if !cfg.ignoreEOF {
				return cfg.exitCode
			}
			eof = nil // keep waiting for exit or the timer, forever if neither
		}
	}
}

// start performs the start-up actions in their documented order.
func (s *server) start(stderr io.Writer) error {
	cfg := s.cfg
	if cfg.marker != "" {
		if err := os.WriteFile(cfg.marker, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
	}
	var err error
	if s.tools, err = loadTools(cfg.tools, defaultTools); err != nil {
		return err
	}
	if s.tools2, err = loadTools(cfg.tools2, defaultTools2); err != nil {
		return err
	}
	s.fastText = []byte(`"ok"`)
	if cfg.resultText != "" {
		b, err := os.ReadFile(cfg.resultText)
		if err != nil {
			return err
		}
		if s.fastText, err = json.Marshal(string(b)); err != nil {
			return err
		}
	}
	if cfg.record != "" {
		s.record, err = os.OpenFile(cfg.record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
	}
	if cfg.bannerSet {
		if _, err := io.WriteString(s.stdout, cfg.banner+"\n"); err != nil {
			return err
		}
	}
	if cfg.stderrLines > 0 {
		w := bufio.NewWriter(stderr)
		for i := range cfg.stderrLines {
			fmt.Fprintf(w, "fakeserver: stderr line %d of %d\n", i+1, cfg.stderrLines)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if cfg.grandchild != "" {
		if err := startGrandchild(cfg.grandchild); err != nil {
			return err
		}
	}
	return nil
}

// startGrandchild starts "sleep 300" in this process's group and writes its
// pid to pidfile atomically (temp file and rename).
func startGrandchild(pidfile string) error {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() //nolint:errcheck // reaped only; its fate is the test's concern
	tmp := filepath.Join(filepath.Dir(pidfile), "."+filepath.Base(pidfile)+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, pidfile)
}

func loadTools(file, def string) ([]json.RawMessage, error) {
	data := []byte(def)
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(data, &tools); err != nil {
		return nil, fmt.Errorf("tools %s: %v", file, err)
	}
	for i, t := range tools {
		var buf bytes.Buffer
		if err := json.Compact(&buf, t); err != nil {
			return nil, err
		}
		tools[i] = buf.Bytes()
	}
	return tools, nil
}

// readLoop reads lines of any length until EOF, records them, and handles
// each one. It returns nil at EOF.
func (s *server) readLoop(stdin io.Reader) error {
	r := bufio.NewReaderSize(stdin, 64<<10)
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line := chunk
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			if s.record != nil {
				if _, werr := s.record.Write(line); werr != nil {
					return werr
				}
			}
			s.handleLine(line)
		}
		long = long[:0]
		if cap(long) > 1<<20 {
			long = nil // do not keep a huge buffer around
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// message is the part of a JSON-RPC message the server looks at. ID is nil
// when the member is absent and "null" when it is explicitly null.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// meta is the part of params._meta the server looks at.
type meta struct {
	ProgressToken   json.RawMessage `json:"progressToken"`
	ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
}

type paramsWithMeta struct {
	Meta meta `json:"_meta"`
}

// handleLine handles one line read from stdin (terminator included).
func (s *server) handleLine(line []byte) {
	body := bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(body)) == 0 {
		return
	}
	if s.cfg.echoFast && s.fastEcho(body) {
		return
	}
	trimmed := bytes.TrimSpace(body)
	if trimmed[0] == '[' {
		s.writeError(json.RawMessage("null"), codeInvalidRequest, "batches are not supported")
		return
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		s.writeError(json.RawMessage("null"), codeParseError, "parse error: "+err.Error())
		return
	}
	if m.Method == "" {
		return // a response, or something without a method: ignore
	}
	if m.ID == nil {
		s.notification(m)
		return
	}
	s.request(m)
}

func (s *server) notification(m message) {
	if m.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.RequestID == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.pending[idKey(p.RequestID)]; ok {
		close(ch)
		delete(s.pending, idKey(p.RequestID))
	}
}

// idKey maps a JSON-RPC id to a comparison key: strings by their decoded
// value, anything else by its compact text.
func idKey(id json.RawMessage) string {
	var str string
	if json.Unmarshal(id, &str) == nil {
		return "s:" + str
	}
	return "n:" + strings.TrimSpace(string(id))
}

func (s *server) request(m message) {
	var pm paramsWithMeta
	_ = json.Unmarshal(m.Params, &pm) // absent or odd params: no _meta
	stateless := pm.Meta.ProtocolVersion >= "2026-07-28"
	reply := func(result string) { s.writeResult(m.ID, result, stateless) }

	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		v := s.cfg.protocolVersion
		if v == "" {
			v = p.ProtocolVersion
		}
		if v == "" {
			v = "2025-06-18"
		}
		reply(`{"protocolVersion":` + quote(v) + `,"capabilities":{"tools":{"listChanged":true}},"serverInfo":` + serverInfo + `}`)
	case "ping":
		reply(`{}`)
	case "server/discover":
		s.writeResult(m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":`+serverInfo+`},"ttlMs":0,"cacheScope":"private"}`, false)
	case "tools/list":
		if d := s.cfg.listDelayMS; d > 0 {
			go func() {
				time.Sleep(time.Duration(d) * time.Millisecond)
				s.toolsList(m, reply)
			}()
			return
		}
		s.toolsList(m, reply)
	case "tools/call":
		s.toolsCall(m, pm.Meta, reply)
	default:
		s.writeError(m.ID, codeMethodNotFound, "method not found: "+m.Method)
	}
}

func (s *server) toolsList(m message, reply func(string)) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	_ = json.Unmarshal(m.Params, &p)
	s.mu.Lock()
	tools := s.tools
	if p.Cursor == nil {
		// A listing from its first page: --switch-after-lists counts
		// these, and switches to the second set without a word.
		s.lists++
		if n := s.cfg.switchAfterLists; n > 0 && s.lists == n {
			s.tools = s.tools2
		}
	}
	s.mu.Unlock()

	start := 0
	if p.Cursor != nil {
		var ok bool
		if start, ok = decodeCursor(*p.Cursor, len(tools)); !ok {
			s.writeError(m.ID, codeInvalidParams, "invalid cursor")
			return
		}
	}
	end := len(tools)
	if s.cfg.pageSize > 0 && start+s.cfg.pageSize < end {
		end = start + s.cfg.pageSize
	}
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i, t := range tools[start:end] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(t)
	}
	b.WriteByte(']')
	if end < len(tools) {
		b.WriteString(`,"nextCursor":` + quote(encodeCursor(end)))
	}
	b.WriteByte('}')
	reply(b.String())
}

// encodeCursor makes an opaque cursor for the page starting at offset.
func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("fakeserver/offset/" + strconv.Itoa(offset)))
}

func decodeCursor(c string, n int) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(raw), "fakeserver/offset/")
	if !ok {
		return 0, false
	}
	off, err := strconv.Atoi(rest)
	if err != nil || off < 0 || off > n {
		return 0, false
	}
	return off, true
}

// callParams are tools/call params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *server) toolsCall(m message, mt meta, reply func(string)) {
	var p callParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.writeError(m.ID, codeInvalidParams, "invalid tools/call params: "+err.Error())
		return
	}
	switch p.Name {
	case "echo":
		reply(textResult(string(p.Arguments)))
	case "write", "delete":
		reply(textResult(p.Name + " done"))
	case "emit":
		var a struct {
			Lines []string `json:"lines"`
			// LinesBase64 are more lines, base64-encoded (written after
			// Lines): what a scanner would find in them is then not in
			// the call's own arguments.
			LinesBase64 []string `json:"lines_base64"`
			DelayMS     int      `json:"delay_ms"`
			Reply       *bool    `json:"reply"`
		}
		if err := json.Unmarshal(p.Arguments, &a); err != nil {
			s.writeError(m.ID, codeInvalidParams, "emit: "+err.Error())
			return
		}
		for _, l := range a.LinesBase64 {
			b, err := base64.StdEncoding.DecodeString(l)
			if err != nil {
				s.writeError(m.ID, codeInvalidParams, "emit: lines_base64: "+err.Error())
				return
			}
			a.Lines = append(a.Lines, string(b))
		}
		for i, l := range a.Lines {
			if i > 0 && a.DelayMS > 0 {
				time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
			}
			s.write([]byte(l))
		}
		if a.Reply == nil || *a.Reply {
			reply(textResult(fmt.Sprintf("emitted %d lines", len(a.Lines))))
		}
	case "sleep":
		var a struct {
			MS    int `json:"ms"`
			Steps int `json:"steps"`
		}
		if len(p.Arguments) > 0 {
			if err := json.Unmarshal(p.Arguments, &a); err != nil {
				s.writeError(m.ID, codeInvalidParams, "sleep: "+err.Error())
				return
			}
		}
		if a.Steps <= 0 {
			a.Steps = 4
		}
		cancel := make(chan struct{})
		key := idKey(m.ID)
		s.mu.Lock()
		s.pending[key] = cancel
		s.mu.Unlock()
		go s.sleep(m.ID, key, a.MS, a.Steps, mt.ProgressToken, cancel, reply)
	case "exit":
		var a struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(p.Arguments, &a)
		s.exit <- a.Code
	case "sendlistchanged":
		s.mu.Lock()
		s.tools = s.tools2
		s.mu.Unlock()
		s.write([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"))
		reply(textResult("list changed"))
	default:
		if s.listed(p.Name) {
			reply(textResult(p.Name + " done"))
			return
		}
		s.writeError(m.ID, codeInvalidParams, "unknown tool: "+p.Name)
	}
}

// listed reports whether the current tool set has a tool with this name.
func (s *server) listed(name string) bool {
	s.mu.Lock()
	tools := s.tools
	s.mu.Unlock()
	for _, t := range tools {
		var d struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &d) == nil && d.Name == name {
			return true
		}
	}
	return false
}

// sleep runs one sleep call; it answers unless cancelled first.
func (s *server) sleep(id json.RawMessage, key string, ms, steps int, token json.RawMessage, cancel chan struct{}, reply func(string)) {
	total := time.Duration(ms) * time.Millisecond
	step := total / time.Duration(steps+1)
	if token != nil {
		for i := 1; i <= steps; i++ {
			select {
			case <-cancel:
				return
			case <-time.After(step):
			}
			s.write([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` +
				string(token) + `,"progress":` + strconv.Itoa(i) + `,"total":` + strconv.Itoa(steps) + `}}` + "\n"))
		}
		total -= step * time.Duration(steps)
	}
	select {
	case <-cancel:
		return
	case <-time.After(total):
	}
	s.mu.Lock()
	_, live := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if live {
		reply(textResult(fmt.Sprintf("slept %d ms", ms)))
	}
}

// textResult is a CallToolResult with one text content item.
func textResult(text string) string {
	return `{"content":[{"type":"text","text":` + quote(text) + `}]}`
}

// quote encodes s as a JSON string without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func (s *server) writeResult(id json.RawMessage, result string, stateless bool) {
	if stateless && strings.HasPrefix(result, "{") {
		if result == "{}" {
			result = `{"resultType":"complete"}`
		} else {
			result = `{"resultType":"complete",` + result[1:]
		}
	}
	s.write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n"))
}

func (s *server) writeError(id json.RawMessage, code int, msg string) {
	s.write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + quote(msg) + "}}\n"))
}

// write writes b to stdout in one call, serialized with other writes.
// Errors are ignored: a closed stdout means the client is gone, and the
// server then ends at stdin EOF.
func (s *server) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.stdout.Write(b)
}
