package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/ledger"
	"github.com/gatehouse-mcp/gatehouse/internal/ledger/sqlite"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// benchPayload is a gateway decision receipt of realistic size (~600 bytes),
// in canonical form.
var benchPayload = []byte(`{"action":"deny","actor_ref_id":"user_123","argument_scan_result":{"argument_keys":["path","destination","visibility"],"status":"pass"},"audit_event_id":"audit_01HV6Z3Q8M6B1K2V3X4Y5Z6A7B","gateway_decision_id":"gw_dec_01HV6Z3Q8M6B1K2V3X4Y5Z6A7B","gateway_id":"gatehouse-prod","issued_at":"2026-05-19T08:15:31Z","matched_rule":"readonly_agent_no_mutating_tools","metadata_confidence":0.91,"policy_version":"gatehouse-policy-0.1","reason":"readonly_agent cannot call tools with declared write side effects","response_scan_result":{"reason":"held before forwarding","status":"not_run"},"role":"readonly_agent","schema_version":"0.1","server_id":"roam-code-local","server_receipt_id":"mcp_rcpt_01HV6Z3Q8M6B1K2V3X4Y5Z6A7B","shadow_mode":false,"tool_name":"apply_patch"}`)

// discardStore keeps nothing but the size: the Ledger's own cost (leaf
// encoding, hashing, tree hashes, channel hand-off) without storage.
type discardStore struct {
	mu   sync.Mutex
	n    int64
	last ledger.StoredCheckpoint // size and time only
	has  bool
}

var errDiscard = errors.New("discard store keeps nothing")

func (s *discardStore) Init(context.Context, string) (string, error) { return "bench", nil }
func (s *discardStore) Update(ctx context.Context, f func(context.Context, ledger.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := &discardTx{s: s, n: s.n}
	if err := f(ctx, tx); err != nil {
		return err
	}
	s.n = tx.n
	return nil
}
func (s *discardStore) Size(context.Context) (int64, error) { return s.n, nil }
func (s *discardStore) Leaves(context.Context, int64, int64, func(int64, []byte) error) error {
	return errDiscard
}
func (s *discardStore) ReadHashes(context.Context, []int64) ([]tlog.Hash, error) {
	return nil, errDiscard
}
func (s *discardStore) Checkpoints(context.Context) ([]ledger.StoredCheckpoint, error) {
	return nil, nil
}
func (s *discardStore) Close() error { return nil }

type discardTx struct {
	s *discardStore
	n int64
}

func (t *discardTx) Size(context.Context) (int64, error)         { return t.n, nil }
func (t *discardTx) Leaf(context.Context, int64) ([]byte, error) { return nil, errDiscard }
func (t *discardTx) ReadHashes(context.Context, []int64) ([]tlog.Hash, error) {
	return nil, errDiscard
}
func (t *discardTx) Append(_ context.Context, _ int64, leaves [][]byte, _ int64, _ []tlog.Hash) error {
	t.n += int64(len(leaves))
	return nil
}
func (t *discardTx) LatestCheckpoint(context.Context) (ledger.StoredCheckpoint, bool, error) {
	return t.s.last, t.s.has, nil
}
func (t *discardTx) AddCheckpoint(_ context.Context, c ledger.StoredCheckpoint) error {
	t.s.last, t.s.has = ledger.StoredCheckpoint{Size: c.Size, Created: c.Created}, true
	return nil
}

// benchStores are the backends compared side by side. Each returns an
// opener of handles on one fresh database.
func benchStores(b *testing.B) []struct {
	name    string
	backend func(b *testing.B) func() ledger.Store
} {
	return []struct {
		name    string
		backend func(b *testing.B) func() ledger.Store
	}{
		{"discard", func(*testing.B) func() ledger.Store {
			s := &discardStore{}
			return func() ledger.Store { return s }
		}},
		{"memory", func(*testing.B) func() ledger.Store {
			s := ledger.NewMemStore()
			return func() ledger.Store { return &memHandle{s: s} }
		}},
		{"sqlite", func(b *testing.B) func() ledger.Store {
			path := filepath.Join(b.TempDir(), "ledger.db")
			return func() ledger.Store {
				s, err := sqlite.Open(context.Background(), path, false)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
		}},
		{"postgres", func(b *testing.B) func() ledger.Store {
			if os.Getenv("GATEHOUSE_TEST_POSTGRES") == "" {
				b.Skip("GATEHOUSE_TEST_POSTGRES is unset")
			}
			return postgresBackendTB(b)
		}},
	}
}

func benchSigner(b *testing.B) note.Signer {
	s, err := note.NewSigner(testSignerKey)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAppend: one writer, each Append waiting until durable (so one
// transaction per entry), with default checkpointing (every 1000 entries).
func BenchmarkAppend(b *testing.B) {
	for _, st := range benchStores(b) {
		b.Run("store="+st.name, func(b *testing.B) {
			l, err := ledger.New(context.Background(), st.backend(b)(), ledger.Options{LedgerID: "bench", Signer: benchSigner(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			ctx := context.Background()
			b.SetBytes(int64(len(benchPayload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(ctx, ledger.KindGatewayDecision, "gw_dec_bench", benchPayload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkAppendParallel: 64 concurrent writers per CPU; group commit
// puts many appends in one transaction.
func BenchmarkAppendParallel(b *testing.B) {
	for _, st := range benchStores(b) {
		b.Run("store="+st.name, func(b *testing.B) {
			l, err := ledger.New(context.Background(), st.backend(b)(), ledger.Options{LedgerID: "bench", Signer: benchSigner(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			b.SetBytes(int64(len(benchPayload)))
			b.SetParallelism(64)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Append(context.Background(), ledger.KindGatewayDecision, "gw_dec_bench", benchPayload); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// verifyEntries is the ledger size BenchmarkVerify builds once per backend.
const verifyEntries = 100_000

// BenchmarkVerify verifies a ledger of 100k entries (checkpoints every 1000)
// and reports the time per million entries, extrapolated linearly (the
// verification is one streaming pass).
func BenchmarkVerify(b *testing.B) {
	v, err := note.NewVerifier(testVerifierKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range benchStores(b)[2:] {
		b.Run(fmt.Sprintf("store=%s/entries=%d", st.name, verifyEntries), func(b *testing.B) {
			open := st.backend(b)
			l, err := ledger.New(context.Background(), open(), ledger.Options{LedgerID: "bench", Signer: benchSigner(b), MaxBatch: 1024})
			if err != nil {
				b.Fatal(err)
			}
			fill(b, l, verifyEntries)
			if err := l.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			s := open()
			defer s.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := ledger.Verify(context.Background(), s, ledger.VerifyOptions{Verifiers: note.VerifierList(v)})
				if err != nil || rep.Problem != nil || rep.Size != verifyEntries {
					b.Fatalf("Verify: %+v, %v", rep, err)
				}
			}
			perEntry := b.Elapsed().Seconds() / float64(b.N) / verifyEntries
			b.ReportMetric(perEntry*1e6, "s/1M-entries")
			b.ReportMetric(perEntry*1e9, "ns/entry")
		})
	}
}

// fill appends n entries from 128 goroutines (group commit).
func fill(b *testing.B, l *ledger.Ledger, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 128 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if _, err := l.Append(context.Background(), ledger.KindGatewayDecision, "gw_dec_bench", benchPayload); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
