#!/usr/bin/env bash
# demo.sh (make demo) shows Gatehouse in front of a real MCP server driven by
# a real MCP client:
#
#   mcp-inspector-cli  ->  gatehouse wrap (readonly_agent policy)  ->  mcp-server-filesystem
#
# It lists the tools, reads a file (allowed), reads one holding a token
# (redacted by the built-in scanning), tries to write one (denied by
# examples/policies/readonly-agent.yaml), shows that the file was not
# created, prints the decision log as a table, then shows the evidence in the
# audit ledger (an embedded SQLite file in a temporary state directory):
# the entries, a whole-ledger verification, and one entry's inclusion proof
# checked offline with only the public key. Then the source document's
# Example Flow: a tool re-listed with external sharing is found to drift
# from its baseline, quarantined and marked, its call held; gatehouse tools
# list, diff and approve review it, and the next call goes through. It exits
# non-zero when anything unexpected happens, for example when the write
# goes through.
#
# Environment: DEMO_KEEP=1 keeps the temporary directory; DEMO_POLICY picks
# another policy file (the demo then still insists that the write is denied).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ -t 1 ]]; then
	step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	step() { printf '\n== %s\n' "$*"; }
fi
fail() { printf '\ndemo: FAILED: %s\n' "$*" >&2; exit 1; }

step "Build gatehouse and install the demo's MCP server and client"
go build -o bin/gatehouse ./cmd/gatehouse
scripts/install-test-deps.sh

tmp="$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-demo.XXXXXX")"
if [[ "${DEMO_KEEP:-0}" == 1 ]]; then
	echo "keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
go build -o "$tmp/logview" ./test/logview
mkdir "$tmp/data"
# The audit ledger and its checkpoint key live here for the demo, not in
# your own state directory.
export XDG_STATE_HOME="$tmp/state"
printf 'Hello from behind the gatehouse.\n' >"$tmp/data/hello.txt"
# A synthetic GitHub token (format-valid, checksummed, not a real one) in a
# file the server will read: the gateway's scanner redacts it on the way
# back.
planted=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
printf 'DEPLOY_USER=ci\nGITHUB_TOKEN=%s\n' "$planted" >"$tmp/data/deploy.env"

server="${GATEHOUSE_NPM_DIR:-$root/.cache/npm}/node_modules/.bin/mcp-server-filesystem"
policy="${DEMO_POLICY:-$root/examples/policies/readonly-agent.yaml}"
wrap=(
	"$root/bin/gatehouse" wrap
	--policy "$policy" --role readonly_agent
	--decision-log "$tmp/decisions.jsonl" --event-source gatehouse://demo/local
	-- "$server" "$tmp/data"
)
echo "server command: ${wrap[*]}"

# client runs mcp-inspector-cli against the wrapped server; stdout and
# stderr go to $tmp/out and $tmp/err, the exit code is returned.
client() {
	local rc=0
	scripts/inspector "$@" -- "${wrap[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	return $rc
}

step "tools/list through gatehouse"
client --method tools/list || { cat "$tmp/err"; fail "tools/list failed"; }
names="$(grep -o '"name": *"[^"]*"' "$tmp/out" | sed 's/.*"\([^"]*\)"$/\1/' | tr '\n' ' ')"
echo "tools: $names"
[[ " $names " == *" read_text_file "* && " $names " == *" write_file "* ]] ||
	fail "tools/list lacks read_text_file or write_file"

step "read_text_file hello.txt (read-only tool: allowed)"
client --method tools/call --tool-name read_text_file --tool-arg "path=$tmp/data/hello.txt" ||
	{ cat "$tmp/err"; fail "the read was refused"; }
cat "$tmp/out"; echo
grep -q 'Hello from behind the gatehouse.' "$tmp/out" || fail "the read did not return the file content"

step "read_text_file deploy.env (holds a GitHub token: the result is redacted)"
client --method tools/call --tool-name read_text_file --tool-arg "path=$tmp/data/deploy.env" ||
	{ cat "$tmp/err"; fail "the read was refused"; }
cat "$tmp/out"; echo
grep -q "$planted" "$tmp/out" && fail "the token reached the client"
grep -q 'REDACTED_SECRET' "$tmp/out" || fail "the result was not redacted"
grep -q 'DEPLOY_USER=ci' "$tmp/out" || fail "the rest of the file did not come through"
echo "-> the token was replaced by [REDACTED_SECRET]; every other byte came through"

step "write_file pwned.txt (writing tool, role readonly_agent: denied)"
rc=0
client --method tools/call --tool-name write_file --tool-arg "path=$tmp/data/pwned.txt" --tool-arg "content=pwned" || rc=$?
cat "$tmp/out"
grep -v -e 'deprecated' -e 'Upgrade:' -e 'security fixes only' -e '^\s*$' "$tmp/err" || true
if [[ $rc != 0 ]]; then
	grep -q -- '-32080' "$tmp/err" || fail "write_file failed, but not with Gatehouse's deny error -32080"
	echo "-> denied with JSON-RPC error -32080"
elif grep -q '"isError": *true' "$tmp/out"; then
	echo "-> denied with a tool result marked isError"
else
	fail "write_file was not denied"
fi

step "The file was not created"
if [[ -e "$tmp/data/pwned.txt" ]]; then
	fail "$tmp/data/pwned.txt exists: the write went through"
fi
ls -l "$tmp/data"

step "Decision log ($tmp/decisions.jsonl)"
"$tmp/logview" -expect read_text_file=allow -expect write_file=deny "$tmp/decisions.jsonl" ||
	fail "the decision log does not hold the expected decisions"
grep -q "$planted" "$tmp/decisions.jsonl" && fail "the decision log holds the token"
grep -q '"type":"gatehouse.scan.v1"' "$tmp/decisions.jsonl" || fail "the redaction is not in the decision log"

step "Audit ledger ($XDG_STATE_HOME/gatehouse/ledger.db)"
gh="$root/bin/gatehouse"
"$gh" ledger show || fail "ledger show failed"

step "Verify the whole ledger: hash chain, Merkle tree, signed checkpoints"
"$gh" ledger verify --key "$XDG_STATE_HOME/gatehouse/ledger.vkey" || fail "the ledger does not verify"

step "Prove that the denied write's decision is in the ledger, and check the proof offline"
seq="$("$gh" ledger show --tool write_file --kind gateway_decision --json | head -n 1 | grep -o '"ledger_seq":[0-9]*' | cut -d: -f2)"
[[ -n "$seq" ]] || fail "no gateway decision for write_file in the ledger"
"$gh" ledger prove --entry "$seq" >"$tmp/proof.json" || fail "ledger prove failed"
echo "inclusion proof for entry $seq: $tmp/proof.json"
"$gh" ledger verify-proof --key "$XDG_STATE_HOME/gatehouse/ledger.vkey" --proof "$tmp/proof.json" ||
	fail "the inclusion proof does not verify"

step "Drift: a server upgrade re-lists a read-only, internal tool with external sharing"
# The same real client, now in front of the project's scriptable test
# server, whose tool list this demo edits between runs, as a server upgrade
# would.
go build -o "$tmp/fakeserver" ./test/fakeserver
fixtures="$root/test/e2e/testdata/drift"
printf '[%s]\n' "$(cat "$fixtures/publish_artifact.baseline.json")" >"$tmp/tools.json"
drift_wrap=(
	"$root/bin/gatehouse" wrap
	--policy "$root/examples/policies/drift-review.yaml" --server-id roam-code-local
	--principal user_maaz --role developer_agent --gateway-id interlock-local
	--decision-log "$tmp/decisions.jsonl" --event-source gatehouse://demo/local
	-- "$tmp/fakeserver" --tools "$tmp/tools.json"
)
drift_client() {
	local rc=0
	scripts/inspector "$@" -- "${drift_wrap[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	return $rc
}
echo "$ inspector --method tools/list -- gatehouse wrap --policy examples/policies/drift-review.yaml ... -- fakeserver --tools tools.json"
drift_client --method tools/list || { cat "$tmp/err"; fail "tools/list failed"; }
echo "first listing: publish_artifact's definition is its baseline (first use)"
echo "(the server is upgraded: tools.json now declares export/share, external reach, new arguments)"
printf '[%s]\n' "$(cat "$fixtures/publish_artifact.current.json")" >"$tmp/tools.json"
drift_client --method tools/list || { cat "$tmp/err"; fail "tools/list failed"; }
grep -o '"description": *"\[QUARANTINED[^"]*' "$tmp/out" || fail "the drifted tool is not marked quarantined"
rc=0
drift_client --method tools/call --tool-name publish_artifact --tool-arg path=dist/app.tgz \
	--tool-arg destination=https://share.example --tool-arg visibility=public || rc=$?
grep -q -- '-32084' "$tmp/out" "$tmp/err" || { cat "$tmp/out" "$tmp/err"; fail "the call to the quarantined tool was not held (-32084)"; }
echo "-> held by the gateway with JSON-RPC error -32084; the server never saw the call"

step "Review: gatehouse tools list and diff"
"$gh" tools list || fail "tools list failed"
"$gh" tools diff roam-code-local publish_artifact --color never | tee "$tmp/diff" || fail "tools diff failed"
hash="$(sed -n 's/^definition_hash: //p' "$tmp/diff")"
[[ -n "$hash" ]] || fail "tools diff printed no definition hash"

step "The audit ledger's record of the held call (its gateway decision receipt)"
"$gh" ledger show --tool publish_artifact --kind gateway_decision --json | head -n 1 |
	grep -o '"payload":.*' | cut -c1-1200
"$gh" ledger show --tool publish_artifact --kind gateway_decision --json | head -n 1 |
	grep -q '"server_receipt_id":"mcp_rcpt_roam_0001"' || fail "the decision does not reference the server's receipt"

step "Approve the new definition (bound to the hash diff showed); the next call goes through"
"$gh" tools approve roam-code-local publish_artifact --hash "$hash" --by demo --reason "sharing artifacts is intended" ||
	fail "tools approve failed"
drift_client --method tools/call --tool-name publish_artifact --tool-arg path=dist/app.tgz \
	--tool-arg destination=https://share.example --tool-arg visibility=public ||
	{ cat "$tmp/err"; fail "the approved tool's call was refused"; }
cat "$tmp/out"; echo
"$gh" ledger verify --key "$XDG_STATE_HOME/gatehouse/ledger.vkey" || fail "the ledger does not verify after the review"

printf '\ndemo: OK\n'
if [[ "${DEMO_KEEP:-0}" != 1 ]]; then
	echo "(the files shown above are removed now; DEMO_KEEP=1 make demo keeps them)"
fi
