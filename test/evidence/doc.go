// Package evidencee2e holds end-to-end tests of Gatehouse's security
// evidence (docs/evidence.md, docs/ledger.md): the built gatehouse binary
// wrapping test/receiptserver (or test/fakeserver), driven by a scripted
// client over real pipes, with the audit ledger read back only through the
// gatehouse ledger command line (and, to tamper with it, the SQLite file).
//
// The tests cover every server receipt verification status and
// receipts.require, the lineage server receipt -> gateway decision -> audit
// event in both directions, denied calls, RFC 8785 hashes and the
// no-rounding rule, whole-ledger verification with tampering, offline
// inclusion and consistency proofs, ledger write failures under both fail
// modes, refused configurations, two replicas on one PostgreSQL ledger
// (GATEHOUSE_TEST_POSTGRES) and a SIGKILL mid-run.
//
// TestMain builds ./cmd/gatehouse, ./test/receiptserver and
// ./test/fakeserver into a temporary directory with `go build` and points
// XDG_STATE_HOME at a temporary directory (the default checkpoint signing
// key is created there). Every read has a deadline. Run with:
//
//	go test ./test/evidence/
//	GATEHOUSE_TEST_POSTGRES=$(scripts/postgres.sh start) go test ./test/evidence/
//
// Without GATEHOUSE_TEST_POSTGRES the PostgreSQL test is skipped, except
// under CI=true, where it fails.
package evidencee2e
