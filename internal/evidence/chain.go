package evidence

import (
	"fmt"
	"strconv"
	"sync"
)

// A server's receipts form a hash chain (the draft's verification fields
// ledger_id, ledger_seq, previous_hash; evidence.md §2, "a broken ledger
// chain" is tampered). [ChainTracker] follows it across the calls of one
// session:
//
//   - chains are keyed by the gateway's server id (the server it relays
//     to, as for [VerifyAs]) and the receipt's ledger_id; a new ledger_id
//     starts a new chain, and "" (ledger_seq without ledger_id) is a
//     chain of its own;
//   - a receipt belongs to a chain when it has ledger_seq; its link is
//     previous_hash, which must be [Hash] of the previous receipt of the
//     chain exactly as received (the RFC 8785 form of the receipt object,
//     so the server_receipt_hash of the outcome record that carried it;
//     for the legacy dotted shape, of the reassembled object [Find]
//     returns);
//   - the next receipt must have ledger_seq one more than the last and
//     previous_hash its hash. A repeat (a ledger_seq already seen, or one
//     lower than a receipt that arrived before this call was even sent),
//     a gap (a ledger_seq that no call still in flight can fill) or a
//     broken link (previous_hash absent or not the predecessor's hash) is
//     tampered.
//
// Concurrent calls answered out of order are not tampering: a server that
// gave ledger_seq 5 and 6 to two concurrent calls may answer 6 first.
// A receipt whose predecessor has not arrived is accepted while enough
// calls are still in flight to carry the missing ledger_seq values, and
// its link is checked when the predecessor arrives (the predecessor's
// record then names the broken link, if any). A receipt lower than one
// already seen is accepted only when its call was sent before that one
// arrived. The first receipt of a chain is accepted as its start: what
// came before it in the server's ledger is not seen (a trust limit), and
// when other calls are in flight at that moment, up to that many lower
// ledger_seq values may still arrive as the chain's start.
const chainWarning = "server receipt chain: "

// Chain warnings that do not make a receipt tampered.
const (
	// ChainPending: the receipt arrived before its predecessor; that link
	// is checked when the predecessor arrives.
	ChainPending = chainWarning + "arrived before its predecessor (concurrent calls); the link is checked when it arrives"
	// ChainUnhashed: a link could not be checked because one receipt has
	// no RFC 8785 form (a number JSON cannot carry exactly).
	ChainUnhashed = chainWarning + "a link is not checked: a receipt has no canonical form to hash"
	// ChainNewLedger: a server that already had a chain in this session
	// started another (a new ledger_id starts a new chain).
	ChainNewLedger = chainWarning + "a new ledger_id starts a new chain"
	// ChainWindow: more receipts than the tracker keeps arrived out of
	// order; the chain restarts at the highest ledger_seq seen.
	ChainWindow = chainWarning + "too many receipts out of order; the chain restarts here"
)

// Limits of a ChainTracker's memory.
const (
	// maxChainLinks is the most receipts one chain keeps above its
	// contiguous part (receipts out of order).
	maxChainLinks = 1024
	// maxChains is the most chains one tracker follows; past it an
	// arbitrary other chain is forgotten (its receipts then start a chain
	// anew).
	maxChains = 256
)

// ChainTracker follows the receipt chains of one gateway session (see the
// rules above). It is safe for concurrent use. The zero value is not
// usable; call [NewChainTracker].
type ChainTracker struct {
	mu       sync.Mutex
	tick     uint64 // orders Sent and Arrived
	inFlight int    // tickets sent and not yet arrived
	chains   map[chainKey]*chain
	servers  map[string]bool // server ids with a chain started
}

// ChainTicket identifies one forwarded call to a [ChainTracker]: when it
// was sent. The zero ticket is a call the tracker was not told about; it
// counts as sent just now (no out-of-order allowance).
type ChainTicket struct{ sent uint64 }

// ChainResult is a [ChainTracker.Arrived] verdict on one receipt.
type ChainResult struct {
	// Tampered: the receipt breaks its chain (a repeat, a gap or a broken
	// link); its verification_status is then tampered.
	Tampered bool
	// Warnings name what was found, in the order checked; they carry
	// ledger_seq numbers, never the server's ids or hashes.
	Warnings []string
}

type chainKey struct{ server, ledger string }

// chain is one ledger's state. Every ledger_seq <= floor is accounted for
// (seen, or given up as missing); links holds the receipts seen above it.
// Missing values in (floor, optTop] may arrive as the chain's start and
// are not gaps.
type chain struct {
	floor      int64
	floorHash  string // hash of the receipt at floor; "" unknown
	floorStart bool   // floor is not a seen receipt: floor+1 has no link to check
	optTop     int64
	hi         int64 // highest ledger_seq seen
	links      map[int64]*chainLink
}

type chainLink struct {
	hash, prev string // hash "" when it has no canonical form
	arrived    uint64
}

// NewChainTracker returns an empty tracker.
func NewChainTracker() *ChainTracker {
	return &ChainTracker{chains: map[chainKey]*chain{}, servers: map[string]bool{}}
}

// Sent records that a call is forwarded now (before the server can
// answer it) and returns its ticket, to be passed to Arrived with its
// response. A call sent and never answered keeps counting as in flight,
// which only widens the out-of-order allowance.
func (t *ChainTracker) Sent() ChainTicket {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tick++
	t.inFlight++
	return ChainTicket{sent: t.tick}
}

// Arrived records the response of the call with ticket tk and checks its
// receipt r (nil when the response has none, or it does not parse) on the
// chain of serverID (the gateway's id of the server) and r.LedgerID. hash
// is [Hash] of the receipt exactly as [Find] returned it ("" when it has no
// canonical form): what the next receipt's previous_hash must be. A
// receipt without ledger_seq is not chained (zero result). Every ticket
// should arrive once; a zero ticket does not count as in flight.
func (t *ChainTracker) Arrived(tk ChainTicket, serverID string, r *ServerReceipt, hash string) ChainResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tick++
	now := t.tick
	if tk.sent != 0 && t.inFlight > 0 {
		t.inFlight--
	}
	sent := tk.sent
	if sent == 0 {
		sent = now
	}
	if r == nil || r.LedgerSeq == nil {
		return ChainResult{}
	}
	return t.observe(chainKey{serverID, r.LedgerID}, *r.LedgerSeq, r.PreviousHash, hash, sent, now)
}

// observe is Arrived's check of one chained receipt; t.mu is held.
func (t *ChainTracker) observe(key chainKey, n int64, prev, hash string, sent, now uint64) ChainResult {
	var res ChainResult
	others := t.inFlight
	c := t.chains[key]
	if c == nil {
		if len(t.chains) >= maxChains {
			for k := range t.chains {
				delete(t.chains, k)
				break
			}
		}
		if t.servers[key.server] {
			res.Warnings = append(res.Warnings, ChainNewLedger)
		}
		t.servers[key.server] = true
		// The start: up to `others` lower values may still arrive from
		// calls in flight.
		c = &chain{floor: n - 1 - int64(others), optTop: n - 1, floorStart: true, hi: n,
			links: map[int64]*chainLink{n: {hash: hash, prev: prev, arrived: now}}}
		if n-1-int64(others) > n { // overflow guard
			c.floor = n - 1
		}
		t.chains[key] = c
		c.settle(others)
		return res
	}
	tampered := func(w string) {
		res.Tampered = true
		res.Warnings = append(res.Warnings, chainWarning+w)
	}
	if _, seen := c.links[n]; seen || n <= c.floor {
		tampered("ledger_seq " + itoa(n) + " repeats (a receipt with that ledger_seq, or a later one, was already accounted for)")
		return res
	}
	// Lower than a receipt that arrived before this call was sent: the
	// server numbered this call after that one, so it cannot be lower.
	for s, l := range c.links {
		if s > n && l.arrived < sent {
			tampered("ledger_seq " + itoa(n) + " is lower than ledger_seq " + itoa(s) + ", which arrived before this call was sent")
			return res
		}
	}
	// The link to the predecessor.
	pending := false
	predHash, predKnown := "", false
	if l, ok := c.links[n-1]; ok {
		predHash, predKnown = l.hash, true
	} else if n-1 == c.floor && !c.floorStart {
		predHash, predKnown = c.floorHash, true
	}
	switch {
	case !predKnown && n-1 <= c.optTop:
		// The predecessor is before the chain's start: not seen.
	case !predKnown:
		pending = true // said below unless the receipt makes a gap
	case prev == "":
		tampered("previous_hash missing after ledger_seq " + itoa(n-1))
	case predHash == "":
		res.Warnings = append(res.Warnings, ChainUnhashed)
	case prev != predHash:
		tampered("previous_hash of ledger_seq " + itoa(n) + " is not the hash of ledger_seq " + itoa(n-1))
	}
	// The link from a successor that arrived first.
	if l, ok := c.links[n+1]; ok && n+1 > n {
		switch {
		case l.prev == "":
			tampered("previous_hash missing in ledger_seq " + itoa(n+1) + " (received earlier)")
		case hash == "":
			res.Warnings = append(res.Warnings, ChainUnhashed)
		case l.prev != hash:
			tampered("previous_hash of ledger_seq " + itoa(n+1) + " (received earlier) is not the hash of ledger_seq " + itoa(n))
		}
	}
	c.links[n] = &chainLink{hash: hash, prev: prev, arrived: now}
	if n > c.hi {
		c.hi = n
	}
	// A gap: more values missing above the start than calls in flight
	// could still carry.
	base := max(c.floor, c.optTop)
	holes := c.hi - base
	for s := range c.links {
		if s > base {
			holes--
		}
	}
	if pending && holes <= int64(others) {
		res.Warnings = append(res.Warnings, ChainPending)
	}
	if holes > int64(others) {
		tampered("gap: " + c.missing(base) + " missing before ledger_seq " + itoa(c.hi))
		c.restart()
		return res
	}
	if len(c.links) > maxChainLinks {
		res.Warnings = append(res.Warnings, ChainWindow)
		c.restart()
		return res
	}
	c.settle(others)
	return res
}

// settle moves the floor over the contiguous receipts seen, and, when no
// other call is in flight, closes the start: values below the lowest seen
// can no longer arrive.
func (c *chain) settle(others int) {
	if others == 0 && c.optTop > c.floor {
		low := c.hi
		for s := range c.links {
			low = min(low, s)
		}
		if low-1 > c.floor {
			c.floor, c.floorHash, c.floorStart = low-1, "", true
		}
		c.optTop = c.floor
	}
	for {
		l, ok := c.links[c.floor+1]
		if !ok || c.floor+1 < c.floor {
			break
		}
		delete(c.links, c.floor)
		c.floor++
		c.floorHash, c.floorStart = l.hash, false
	}
	delete(c.links, c.floor)
	c.optTop = max(c.optTop, c.floor)
}

// restart gives up every value up to hi: they are accounted for, and the
// chain goes on from the receipt at hi.
func (c *chain) restart() {
	l := c.links[c.hi]
	c.floor, c.optTop = c.hi, c.hi
	c.floorHash, c.floorStart = "", true
	if l != nil {
		c.floorHash, c.floorStart = l.hash, false
	}
	clear(c.links)
}

// missing names the first ledger_seq values missing above base (at most
// three, then a count).
func (c *chain) missing(base int64) string {
	var names []string
	more := int64(0)
	for s := base + 1; s < c.hi && s > base; s++ {
		if _, ok := c.links[s]; ok {
			continue
		}
		if len(names) == 3 {
			// Count the rest without walking a huge range.
			seen := int64(0)
			for x := range c.links {
				if x > s && x < c.hi {
					seen++
				}
			}
			more = c.hi - s - seen
			break
		}
		names = append(names, itoa(s))
	}
	out := "ledger_seq "
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	if more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
