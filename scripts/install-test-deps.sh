#!/usr/bin/env bash
# install-test-deps.sh installs the real MCP peers that Gatehouse's
# end-to-end tests and demo run against, into a project-local cache:
#
#   .cache/npm/node_modules/.bin/mcp-server-filesystem   (@modelcontextprotocol/server-filesystem)
#   .cache/npm/node_modules/.bin/mcp-server-everything   (@modelcontextprotocol/server-everything)
#   .cache/npm/node_modules/.bin/mcp-inspector-cli       (@modelcontextprotocol/inspector-cli; run it
#                                                          through scripts/inspector, see there)
#
# Versions are pinned here and nowhere else. The script is idempotent: a stamp
# file keyed by the pinned versions makes a second run a no-op, and changing a
# version below re-installs. It needs node and npm on PATH and network access
# to the npm registry (only on the first run).
#
# Environment:
#   GATEHOUSE_NPM_DIR   install prefix (default: <repo>/.cache/npm)
#   FORCE=1             re-install even when the stamp matches
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${GATEHOUSE_NPM_DIR:-$root/.cache/npm}"

packages=(
	"@modelcontextprotocol/server-filesystem@2026.8.31"
	"@modelcontextprotocol/server-everything@2026.8.31"
	"@modelcontextprotocol/inspector-cli@1.0.3"
)
bins=(mcp-server-filesystem mcp-server-everything mcp-inspector-cli)

# TODO(testing): also build the Go SDK's conformance everything-server
# (github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0)
# into .cache/bin once the HTTP gateway tests need it.

stamp="$prefix/.gatehouse-test-deps.stamp"
want="$(printf '%s\n' "${packages[@]}")"

installed() {
	[[ -f "$stamp" ]] || return 1
	[[ "$(cat "$stamp")" == "$want" ]] || return 1
	local b
	for b in "${bins[@]}"; do
		[[ -x "$prefix/node_modules/.bin/$b" ]] || return 1
	done
	[[ -f "$prefix/package.json" ]] || return 1
}

if [[ "${FORCE:-0}" != 1 ]] && installed; then
	echo "install-test-deps: up to date in $prefix"
	exit 0
fi

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-test-deps: $tool not found on PATH; install Node.js 20 or later" >&2
		exit 1
	fi
done

echo "install-test-deps: installing into $prefix:"
printf '  %s\n' "${packages[@]}"
mkdir -p "$prefix"
rm -f "$stamp"
# --save-exact keeps package.json pinned; the package.json in $prefix is also
# what scripts/inspector relies on (see the path quirk described there).
npm install --no-audit --no-fund --save-exact --loglevel=error \
	--prefix "$prefix" "${packages[@]}"

for b in "${bins[@]}"; do
	if [[ ! -x "$prefix/node_modules/.bin/$b" ]]; then
		echo "install-test-deps: $b missing after npm install" >&2
		exit 1
	fi
done
printf '%s\n' "$want" >"$stamp"
echo "install-test-deps: done"
