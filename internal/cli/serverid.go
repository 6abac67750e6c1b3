package cli

import (
	"path/filepath"
	"strings"
)

// packageRunners run the package named by their first argument that is
// not an option (npx -y @scope/pkg@1.2, uvx mcp-server-x).
var packageRunners = map[string]bool{"npx": true, "pnpx": true, "bunx": true, "uvx": true}

// interpreters run the script named by their first argument that is not
// an option (node server.js, python3 server.py); python's -m MODULE names
// a module.
var interpreters = map[string]bool{"node": true, "nodejs": true, "deno": true, "bun": true, "python": true, "python3": true, "ruby": true, "php": true}

// defaultServerID is the server id when --server-id is not given: the
// base name of the command, except that for a package runner (npx, pnpx,
// bunx, uvx) it is the name of the package it runs, without scope or
// version (npx -y @modelcontextprotocol/server-filesystem@2026.8.31 DIR ->
// "server-filesystem"), and for an interpreter (node, deno, bun, python,
// python3, ruby, php) the base name of the script without its extension
// (node build/index.js -> "index"), or python's -m module. Every server
// started through npx would otherwise be "npx", and the per-server
// settings keyed by server id (receipts.servers, --receipt-keys, server.id
// in conditions) could not tell them apart. When no such argument is
// found, the command's base name is kept. argv is non-empty.
func defaultServerID(argv []string) string {
	base := filepath.Base(argv[0])
	runner, interp := packageRunners[base], interpreters[base]
	if !runner && !interp {
		return base
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if interp && a == "-m" && i+1 < len(argv) && (base == "python" || base == "python3") {
			return argv[i+1]
		}
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if runner {
			return packageName(a)
		}
		name := filepath.Base(a)
		if ext := filepath.Ext(name); ext != "" && ext != name {
			name = strings.TrimSuffix(name, ext)
		}
		if name != "" && name != "." && name != "/" {
			return name
		}
		return base
	}
	return base
}

// packageName is a package spec without its scope and version:
// "@scope/name@1.2" -> "name", "name@latest" -> "name", "name==1.0" ->
// "name" (uvx).
func packageName(spec string) string {
	s := spec
	if strings.HasPrefix(s, "@") {
		if i := strings.IndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
		}
	}
	if i := strings.IndexAny(s, "@=<>~!"); i > 0 {
		s = s[:i]
	}
	if s == "" {
		return spec
	}
	return s
}
