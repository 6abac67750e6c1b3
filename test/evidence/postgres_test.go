package evidencee2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/test/harness"
)

// postgresLedger returns a DSN for a fresh schema of GATEHOUSE_TEST_POSTGRES
// (harness.PostgresSchema).
func postgresLedger(t *testing.T) string { return harness.PostgresSchema(t, "evidence_e2e") }

// TestPostgresReplicas: two gatehouse processes (replicas) append to one
// PostgreSQL ledger at the same time. The ledger verifies as one linear
// chain holding every entry of both.
func TestPostgresReplicas(t *testing.T) {
	dsn := postgresLedger(t)
	t.Parallel()
	runReplicas(t, []string{"--state", dsn}, dsn)
}

// TestSQLiteReplicasDefaultLedger: two gatehouse processes without --state
// share the default SQLite ledger ($XDG_STATE_HOME/gatehouse/ledger.db), as
// every server of one MCP client does; they take turns along one linear
// chain. (No other test uses the default ledger.)
func TestSQLiteReplicasDefaultLedger(t *testing.T) {
	t.Parallel()
	state := filepath.Join(stateHome, "gatehouse", "ledger.db")
	for _, suffix := range []string{"", "-wal", "-shm", "-lock"} {
		os.Remove(state + suffix) // left by an earlier -count iteration
	}
	runReplicas(t, nil, state)
}

// runReplicas runs two gatehouse processes with the given ledger flags at
// the same time, each with a pipeline of calls, and checks the ledger at
// state: it verifies as one linear chain holding every entry of both.
func runReplicas(t *testing.T, stateFlags []string, state string) {
	t.Helper()
	keys := writeKeysFile(t, t.TempDir())
	const perReplica = 40
	replicas := []string{"replica-a", "replica-b"}
	gws := map[string]*gw{}
	for _, name := range replicas {
		flags := append(append([]string(nil), stateFlags...), "--gateway-id", name, "--receipt-keys", keys, "--server-id", keyedID)
		g := startGW(t, nil, flags, receiptServer(keyedID))
		g.handshake()
		gws[name] = g
	}
	// Both pipelines are full before either is read: the replicas append
	// concurrently.
	for i := 0; i < perReplica; i++ {
		for _, name := range replicas {
			tool := []string{"signed_ok", "none", "unsigned", "legacy_interlock"}[i%4]
			gws[name].send(callLine(fmt.Sprintf("%s-%d", name, i), tool, fmt.Sprintf(`{"i":%d}`, i)))
		}
	}
	for _, name := range replicas {
		for i := 0; i < perReplica; i++ {
			expectResult(t, gws[name].response(fmt.Sprintf("%q", fmt.Sprintf("%s-%d", name, i))), name)
		}
	}
	for _, name := range replicas {
		if code := gws[name].finish(); code != 0 {
			t.Fatalf("%s exited %d; stderr:\n%s", name, code, gws[name].Tail())
		}
	}

	want := int64(len(replicas) * perReplica * 2)
	all := showJSON(t, state)
	rep, r := verifyReport(t, state)
	if r.Code != 0 || !rep.OK || rep.Size != int64(len(all)) || !rep.SignaturesChecked || rep.Latest == nil || rep.Latest.Size != rep.Size {
		t.Fatalf("ledger verify: exit %d, %+v (want %d entries, all covered by a signed checkpoint)\n%s", r.Code, rep, len(all), r.Stderr)
	}
	checkLinearChain(t, all)
	es := perCall(all)
	if int64(len(es)) != want {
		t.Fatalf("ledger show: %d per-call entries, want %d", len(es), want)
	}
	// Every call of each replica: a decision, an outcome, linked.
	perGW := map[string]int{}
	switches, last := 0, ""
	outcomes := map[string]int{}
	for _, e := range es {
		if e.Kind != "gateway_decision" && e.Kind != "gateway_outcome" {
			continue
		}
		d := e.decision(t)
		perGW[d.GatewayID]++
		if d.ServerReceiptID != "" {
			outcomes[d.GatewayID]++
		}
		if last != "" && d.GatewayID != last {
			switches++
		}
		last = d.GatewayID
	}
	for _, name := range replicas {
		if perGW[name] != 2*perReplica || outcomes[name] != perReplica {
			t.Errorf("%s: %d gateway decisions (%d outcomes), want %d (%d)", name, perGW[name], outcomes[name], 2*perReplica, perReplica)
		}
	}
	t.Logf("the writers switched %d times along the chain of %d entries", switches, len(es))
	if switches < 2 {
		t.Errorf("the replicas did not interleave (%d switches): they did not append concurrently", switches)
	}
}
