package evidence

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// chainHash is the hash of the honest receipt at seq in these tests.
func chainHash(seq int64) string { return fmt.Sprintf("%s%064x", HashPrefix, seq+1) }

// chainReceipt is a receipt of ledger "L" at seq linking to the honest
// receipt before it.
func chainReceipt(seq int64) *ServerReceipt {
	return &ServerReceipt{LedgerID: "L", LedgerSeq: &seq, PreviousHash: chainHash(seq - 1)}
}

// chainStep is one event of a scripted session: a call sent (send names
// it), or the response of a call named arrive, with its receipt.
type chainStep struct {
	send   string
	arrive string
	r      *ServerReceipt
	hash   string // the receipt's hash; chainHash(seq) when ""
	// want: "" clean, "pending", "tampered:<substring>", or a warning's
	// substring that does not make it tampered ("warn:<substring>").
	want string
}

// arr is the response of call name with the honest receipt at seq.
func arr(name string, seq int64, want string) chainStep {
	return chainStep{arrive: name, r: chainReceipt(seq), want: want}
}

// seqCalls is a sequential session: one call at a time, receipts at seqs.
func seqCalls(seqs ...int64) []chainStep {
	var out []chainStep
	for i, s := range seqs {
		n := fmt.Sprintf("s%d", i)
		out = append(out, chainStep{send: n}, arr(n, s, ""))
	}
	return out
}

// seqCallsFrom is a sequential session of n receipts from seq from.
func seqCallsFrom(from int64, n int) []chainStep {
	seqs := make([]int64, n)
	for i := range seqs {
		seqs[i] = from + int64(i)
	}
	return seqCalls(seqs...)
}

func withPrev(seq int64, prev string) *ServerReceipt {
	r := chainReceipt(seq)
	r.PreviousHash = prev
	return r
}

func TestChainTracker(t *testing.T) {
	wrong := HashPrefix + strings.Repeat("f", 64)
	tests := []struct {
		name  string
		steps []chainStep
	}{
		{"sequential honest chain", seqCalls(1, 2, 3, 4, 5)},
		{"the first receipt starts the chain anywhere", seqCalls(42, 43)},
		{"gap", append(seqCalls(1, 2), chainStep{send: "c"}, arr("c", 4, "tampered:gap: ledger_seq 3 missing before ledger_seq 4"),
			// The chain goes on from the receipt that revealed the gap.
			chainStep{send: "d"}, arr("d", 5, ""))},
		{"gap of many", append(seqCalls(1), chainStep{send: "c"}, arr("c", 100, "tampered:gap: ledger_seq 2, 3, 4 and 95 more missing"))},
		{"repeat of the same seq", append(seqCalls(1, 2), chainStep{send: "c"}, arr("c", 2, "tampered:ledger_seq 2 repeats"))},
		{"repeat of a lower seq", append(seqCalls(1, 2, 3), chainStep{send: "c"}, arr("c", 1, "tampered:ledger_seq 1 repeats"))},
		{"repeat after a gap was reported", append(seqCalls(1, 2), chainStep{send: "c"}, arr("c", 4, "tampered:gap"),
			chainStep{send: "d"}, arr("d", 3, "tampered:ledger_seq 3 repeats"))},
		{"broken link", append(seqCalls(1, 2), chainStep{send: "c"},
			chainStep{arrive: "c", r: withPrev(3, wrong), want: "tampered:previous_hash of ledger_seq 3 is not the hash of ledger_seq 2"},
			// The next links to the broken one as received.
			chainStep{send: "d"}, arr("d", 4, ""))},
		{"previous_hash missing", append(seqCalls(1), chainStep{send: "c"},
			chainStep{arrive: "c", r: withPrev(2, ""), want: "tampered:previous_hash missing after ledger_seq 1"})},
		{"the link is to the receipt as received", append(seqCalls(1), chainStep{send: "c"},
			chainStep{arrive: "c", r: chainReceipt(2), hash: wrong, want: ""},
			chainStep{send: "d"}, arr("d", 3, "tampered:previous_hash of ledger_seq 3 is not the hash of ledger_seq 2"))},
		{"a receipt without canonical form leaves its link unchecked", append(seqCalls(1), chainStep{send: "c"},
			chainStep{arrive: "c", r: chainReceipt(2), hash: "-"},
			chainStep{send: "d"}, arr("d", 3, "warn:"+ChainUnhashed))},
		{"concurrent calls answered out of order", append(seqCalls(1, 2, 3, 4),
			chainStep{send: "a"}, chainStep{send: "b"}, arr("b", 6, "pending"), arr("a", 5, ""),
			chainStep{send: "c"}, arr("c", 7, ""))},
		{"three concurrent calls answered in reverse", append(seqCalls(1),
			chainStep{send: "a"}, chainStep{send: "b"}, chainStep{send: "c"},
			arr("c", 4, "pending"), arr("b", 3, "pending"), arr("a", 2, ""), chainStep{send: "d"}, arr("d", 5, ""))},
		{"out of order at the chain's start", []chainStep{
			{send: "a"}, {send: "b"}, arr("b", 6, ""), arr("a", 5, ""), {send: "c"}, arr("c", 7, "")}},
		{"out of order, the late predecessor reveals a broken link", append(seqCalls(1, 2, 3, 4),
			chainStep{send: "a"}, chainStep{send: "b"},
			chainStep{arrive: "b", r: withPrev(6, wrong), want: "pending"},
			arr("a", 5, "tampered:previous_hash of ledger_seq 6 (received earlier) is not the hash of ledger_seq 5"))},
		{"lower than a receipt that arrived before the call was sent", append(seqCalls(1, 2),
			chainStep{send: "a"}, chainStep{send: "b"}, arr("b", 4, "pending"),
			chainStep{send: "c"}, arr("c", 3, "tampered:ledger_seq 3 is lower than ledger_seq 4, which arrived before this call was sent"))},
		{"lower than the start, from a call sent after it arrived", []chainStep{
			{send: "a"}, {send: "b"}, arr("b", 6, ""), {send: "c"},
			arr("c", 5, "tampered:ledger_seq 5 is lower than ledger_seq 6")}},
		{"a gap excused by a call in flight is reported when it cannot be filled", append(seqCalls(1),
			chainStep{send: "a"}, chainStep{send: "b"}, arr("b", 3, "pending"),
			chainStep{arrive: "a"}, // answered without a receipt
			chainStep{send: "c"}, arr("c", 4, "tampered:gap: ledger_seq 2 missing before ledger_seq 4"))},
		{"a start whose lower values never come is closed", append([]chainStep{
			{send: "a"}, {send: "b"}, arr("b", 6, ""), {arrive: "a"}}, // a answered without a receipt
			// Without closing, 5 would hold the floor and the window would fill.
			seqCallsFrom(7, maxChainLinks+10)...)},
		{"a new ledger_id starts a new chain", append(seqCalls(1, 2), chainStep{send: "m"},
			chainStep{arrive: "m", r: &ServerReceipt{LedgerID: "M", LedgerSeq: ptr(int64(10))}, want: "warn:" + ChainNewLedger},
			chainStep{send: "c"}, arr("c", 3, ""))},
		{"no ledger_seq: not chained", append(seqCalls(1), chainStep{send: "c"},
			chainStep{arrive: "c", r: &ServerReceipt{LedgerID: "L"}}, chainStep{send: "d"}, arr("d", 2, ""))},
		{"a gap with nothing else in flight", append(seqCalls(1, 2),
			chainStep{send: "a"}, arr("a", 4, "tampered:gap"))},
		{"an untracked call gets no out-of-order allowance", append(seqCalls(1, 2),
			chainStep{send: "a"}, chainStep{send: "b"}, arr("b", 4, "pending"),
			arr("z", 3, "tampered:ledger_seq 3 is lower than ledger_seq 4"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewChainTracker()
			tickets := map[string]ChainTicket{}
			for i, s := range tt.steps {
				if s.send != "" {
					tickets[s.send] = tr.Sent()
					continue
				}
				h := s.hash
				switch {
				case h == "-":
					h = ""
				case h == "" && s.r != nil && s.r.LedgerSeq != nil:
					h = chainHash(*s.r.LedgerSeq)
				}
				res := tr.Arrived(tickets[s.arrive], "srv", s.r, h)
				checkChainResult(t, i, res, s.want)
			}
		})
	}
}

func checkChainResult(t *testing.T, i int, res ChainResult, want string) {
	t.Helper()
	for _, w := range res.Warnings {
		if !strings.HasPrefix(w, chainWarning) {
			t.Errorf("step %d: warning %q without the chain prefix", i, w)
		}
	}
	switch kind, sub, _ := strings.Cut(want, ":"); {
	case want == "":
		if res.Tampered || len(res.Warnings) > 0 {
			t.Errorf("step %d: got %+v, want clean", i, res)
		}
	case want == "pending":
		if res.Tampered || !slices.Equal(res.Warnings, []string{ChainPending}) {
			t.Errorf("step %d: got %+v, want only pending", i, res)
		}
	case kind == "tampered":
		if slices.Contains(res.Warnings, ChainPending) {
			t.Errorf("step %d: tampered and pending: %+v", i, res)
		}
		if !res.Tampered || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, sub) }) {
			t.Errorf("step %d: got %+v, want tampered with %q", i, res, sub)
		}
	case kind == "warn":
		if res.Tampered || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, sub) }) {
			t.Errorf("step %d: got %+v, want not tampered with %q", i, res, sub)
		}
	default:
		t.Fatalf("bad want %q", want)
	}
}

// honestSession drives a tracker with an honest server: ops decide when
// calls are sent, when the server numbers a call it has received (in any
// order: a concurrent server), and when a numbered call's response
// arrives (in any order). It returns the first result that is tampered,
// if any.
func honestSession(tr *ChainTracker, ops []byte) (ChainResult, bool) {
	type call struct {
		tk  ChainTicket
		seq int64
	}
	var received, numbered []call
	next := int64(7)
	pick := func(i int, n int) int { return int(ops[i]) % n }
	for i := 0; i < len(ops); i++ {
		switch ops[i] % 4 {
		case 0:
			received = append(received, call{tk: tr.Sent()})
		case 1:
			if len(received) > 0 && i+1 < len(ops) {
				i++
				j := pick(i, len(received))
				c := received[j]
				received = slices.Delete(received, j, j+1)
				c.seq = next
				next++
				numbered = append(numbered, c)
			}
		case 2:
			if len(numbered) > 0 && i+1 < len(ops) {
				i++
				j := pick(i, len(numbered))
				c := numbered[j]
				numbered = slices.Delete(numbered, j, j+1)
				if res := tr.Arrived(c.tk, "srv", chainReceipt(c.seq), chainHash(c.seq)); res.Tampered {
					return res, true
				}
			}
		case 3:
			// A call answered without a receipt.
			if len(received) > 0 {
				tr.Arrived(received[0].tk, "srv", nil, "")
				received = received[1:]
			}
		}
	}
	return ChainResult{}, false
}

// FuzzChainHonest checks that no interleaving of an honest server's
// concurrent calls is called tampered.
func FuzzChainHonest(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0})
	f.Add([]byte{0, 0, 1, 1, 1, 0, 2, 1, 2, 0})
	f.Add([]byte{0, 0, 0, 1, 2, 1, 1, 1, 0, 2, 2, 2, 1, 2, 0, 3, 0, 1, 0, 2, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if res, bad := honestSession(NewChainTracker(), ops); bad {
			t.Fatalf("honest session called tampered: %+v", res)
		}
	})
}

func TestChainHonestRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ops := make([]byte, 1+rng.IntN(200))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		if res, bad := honestSession(NewChainTracker(), ops); bad {
			t.Fatalf("honest session %v called tampered: %+v", ops, res)
		}
	}
}

// TestChainConcurrent runs an honest concurrent server against one
// tracker from many goroutines (run with -race): nothing is tampered.
func TestChainConcurrent(t *testing.T) {
	tr := NewChainTracker()
	var mu sync.Mutex
	next := int64(1)
	var wg sync.WaitGroup
	errs := make(chan ChainResult, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				tk := tr.Sent()
				mu.Lock()
				seq := next
				next++
				mu.Unlock()
				for range rng.IntN(3) {
					runtime.Gosched()
				}
				if res := tr.Arrived(tk, "srv", chainReceipt(seq), chainHash(seq)); res.Tampered {
					errs <- res
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for res := range errs {
		t.Errorf("honest concurrent server called tampered: %+v", res)
	}
}
