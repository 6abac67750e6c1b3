// Package e2e holds Gatehouse's end-to-end tests. They drive the built
// `gatehouse` binary as a real process, in front of real MCP servers
// (@modelcontextprotocol/server-filesystem and server-everything from npm)
// and of test/fakeserver, with real clients (the Go SDK's
// github.com/modelcontextprotocol/go-sdk/mcp client and mcp-inspector-cli
// through scripts/inspector) and with a scripted line-by-line client.
//
// TestMain builds bin/gatehouse's source (or uses $GATEHOUSE_BIN) and the
// fake server into a temporary directory once. The npm packages come from
// scripts/install-test-deps.sh (run by `make test`); when they are missing
// the tests that need them are skipped with a message saying so, except
// under CI=true, where a missing dependency fails the test.
//
// All traffic is local: stdio pipes between processes on this machine.
// See docs/testing.md.
package e2e
