package cli

import "testing"

func TestDefaultServerID(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"/usr/bin/mcp-server-filesystem", "/data"}, "mcp-server-filesystem"},
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data"}, "server-filesystem"},
		{[]string{"/usr/local/bin/npx", "@modelcontextprotocol/server-everything"}, "server-everything"},
		{[]string{"npx", "-y", "mcp-remote@latest", "https://x"}, "mcp-remote"},
		{[]string{"uvx", "mcp-server-git==0.6.2", "--repository", "."}, "mcp-server-git"},
		{[]string{"node", "--enable-source-maps", "build/index.js"}, "index"},
		{[]string{"python3", "-m", "mcp_server_time"}, "mcp_server_time"},
		{[]string{"python", "server.py"}, "server"},
		{[]string{"npx"}, "npx"},
		{[]string{"npx", "-y"}, "npx"},
		{[]string{"node", "/"}, "node"},
		{[]string{"npx", "@scope"}, "@scope"},
	} {
		if got := defaultServerID(tc.argv); got != tc.want {
			t.Errorf("defaultServerID(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}
