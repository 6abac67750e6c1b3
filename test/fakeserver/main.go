// Command fakeserver is a small, scriptable MCP server on stdio for Gatehouse's
// end-to-end tests: exact-byte relaying, lifecycle, process handling and
// benchmarks. It is test code, not an example of a good MCP server: it does
// what a test tells it to, including misbehaving.
//
// # Protocol
//
// It reads newline-delimited JSON-RPC messages of any length on stdin and
// answers on stdout, one message per line. Every response copies the
// request's id as raw bytes (never decoded and re-encoded), so a test can
// check that ids such as 12345678901234567890 or 1.0e2 survive a relay
// unchanged. It answers:
//
//   - initialize: protocolVersion is --protocol-version, or the client's
//     requested version when that flag is empty;
//   - ping: an empty result;
//   - server/discover: supportedVersions ["2026-07-28"];
//   - tools/list: the current tool set (see --tools, --tools2), paginated
//     with --page-size and opaque nextCursor strings, after --list-delay-ms;
//   - tools/call: see Tools below;
//   - any other request: error -32601 (method not found).
//
// Notifications are ignored except notifications/cancelled, which cancels a
// running sleep call (no response is sent for it). Responses from the client
// (for example to a roots/list request injected with emit) are ignored. A
// line that is not a JSON object gets error -32700 with id null. A result to
// a request whose params._meta["io.modelcontextprotocol/protocolVersion"] is
// 2026-07-28 or later carries "resultType":"complete".
//
// # Tools
//
// Tool behavior is chosen by name, whether or not the tool is listed:
//
//   - echo: returns the exact raw JSON of params.arguments as its text
//     content ("" when absent).
//   - write, delete: return the text "<name> done" (they exist so that a
//     policy has a mutating and a destructive tool to deny).
//   - emit: writes each string of arguments.lines to stdout verbatim, with
//     nothing added (the strings carry their own terminators), waiting
//     arguments.delay_ms between writes; then answers "emitted N lines"
//     unless arguments.reply is false. Tests use it to inject any
//     server-to-client bytes: server requests, responses to unknown ids,
//     invalid or huge frames, frames split across writes.
//   - sleep: sleeps arguments.ms milliseconds. When the request has
//     params._meta.progressToken it first sends arguments.steps (default 4)
//     notifications/progress spread over the sleep. A notifications/cancelled
//     for the request's id ends it without a response.
//   - exit: exits the process with arguments.code, without answering.
//   - sendlistchanged: switches tools/list to the second tool set, sends
//     notifications/tools/list_changed, then answers "list changed".
//   - any other tool in the current tool set: returns "<name> done";
//   - any other name: error -32602.
//
// The default tool set is echo (readOnlyHint true), write (readOnlyHint
// false, destructiveHint false), delete (no annotations), emit, sleep, exit
// and sendlistchanged. The default second set is the same plus "added".
//
// # Flags
//
//	--record FILE            append every line read from stdin, terminator
//	                         included, to FILE as it arrives
//	--marker FILE            create FILE at start (proves the server ran)
//	--banner TEXT            print TEXT and "\n" on stdout before anything else
//	--stderr-lines N         print N lines on stderr at start, synchronously
//	--protocol-version V     the initialize protocolVersion (default: echo)
//	--tools FILE             JSON array of tool definitions (first set)
//	--tools2 FILE            JSON array of tool definitions (after sendlistchanged)
//	--switch-after-lists N   switch to the second set after answering N
//	                         tools/list requests from their first page,
//	                         without notifications/tools/list_changed
//	--page-size N            tools per tools/list page (0: one page)
//	--list-delay-ms N        answer tools/list only after N ms (other requests
//	                         are answered meanwhile)
//	--ignore-eof             keep running after stdin reaches EOF
//	--ignore-sigterm         ignore SIGTERM
//	--grandchild PIDFILE     start "sleep 300" in this process group, write its pid
//	--exit-after-ms N        exit by itself after N ms
//	--exit-code C            the code for exits by itself (EOF, --exit-after-ms)
//	--echo-fast              answer every tools/call on a low-allocation path
//	                         with the arguments as structuredContent
//
// Start-up order: marker, banner, stderr lines, grandchild, then the read
// loop. On stdin EOF the server exits with --exit-code unless --ignore-eof.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeserver:", err)
		os.Exit(64)
	}
	if cfg.ignoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	os.Exit(run(cfg, os.Stdin, os.Stdout, os.Stderr))
}

// config holds the parsed command line.
type config struct {
	record           string
	marker           string
	banner           string
	bannerSet        bool
	stderrLines      int
	protocolVersion  string
	tools            string
	tools2           string
	switchAfterLists int
	pageSize         int
	listDelayMS      int
	ignoreEOF        bool
	ignoreSIGTERM    bool
	grandchild       string
	exitAfterMS      int
	exitCode         int
	echoFast         bool
	resultText       string
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("fakeserver", flag.ContinueOnError)
	fs.StringVar(&c.record, "record", "", "append every stdin line to `FILE`")
	fs.StringVar(&c.marker, "marker", "", "create `FILE` at start")
	fs.StringVar(&c.banner, "banner", "", "print `TEXT` on stdout before anything else")
	fs.IntVar(&c.stderrLines, "stderr-lines", 0, "print `N` lines on stderr at start")
	fs.StringVar(&c.protocolVersion, "protocol-version", "", "initialize protocolVersion (default: the client's)")
	fs.StringVar(&c.tools, "tools", "", "JSON array of tool definitions in `FILE`")
	fs.StringVar(&c.tools2, "tools2", "", "JSON array of tool definitions in `FILE`, used after sendlistchanged")
	fs.IntVar(&c.switchAfterLists, "switch-after-lists", 0, "switch tools/list to the second tool set, silently (no list_changed), after answering `N` listings (0: never)")
	fs.IntVar(&c.pageSize, "page-size", 0, "tools per tools/list page, 0 for one page")
	fs.IntVar(&c.listDelayMS, "list-delay-ms", 0, "answer tools/list after `N` ms")
	fs.BoolVar(&c.ignoreEOF, "ignore-eof", false, "keep running after stdin EOF")
	fs.BoolVar(&c.ignoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM")
	fs.StringVar(&c.grandchild, "grandchild", "", "start `sleep 300` and write its pid to `PIDFILE`")
	fs.IntVar(&c.exitAfterMS, "exit-after-ms", 0, "exit by itself after `N` ms")
	fs.IntVar(&c.exitCode, "exit-code", 0, "exit code when exiting by itself")
	fs.BoolVar(&c.echoFast, "echo-fast", false, "low-allocation echo path for tools/call")
	fs.StringVar(&c.resultText, "result-text", "", "with --echo-fast: the result's text content is `FILE`'s content instead of \"ok\"")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "banner" {
			c.bannerSet = true
		}
	})
	if c.pageSize < 0 || c.stderrLines < 0 || c.exitAfterMS < 0 || c.listDelayMS < 0 {
		return c, fmt.Errorf("negative --page-size, --stderr-lines, --exit-after-ms or --list-delay-ms")
	}
	return c, nil
}
