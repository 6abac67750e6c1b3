package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Defaults of [Options].
const (
	DefaultCheckpointEvery  = 30 * time.Second
	DefaultCheckpointEveryN = 1000
	DefaultMaxBatch         = 256
)

// writeTimeout bounds one group-commit transaction (lock wait included).
const writeTimeout = 30 * time.Second

// Options configure a [Ledger]. The zero value is usable: a random ledger
// id for a new store, no checkpoints, batches of up to 256 entries.
type Options struct {
	// LedgerID is the ledger's id. Empty: the id recorded in the store, or
	// for a new store a random one ("ledger-" and 16 hex digits). Non-empty
	// and different from the id recorded in the store: New fails with
	// ErrLedgerID. 1 to 128 bytes of letters, digits and . _ - : /.
	LedgerID string
	// Signer signs checkpoints (a note.Signer, Ed25519; see LoadSigner).
	// nil: no checkpoints are written, and Checkpoint returns unsigned tree
	// heads.
	Signer note.Signer
	// CheckpointEvery is the longest time a committed entry stays without
	// a signed checkpoint covering it (checked after every batch and by a
	// timer). 0 means DefaultCheckpointEvery (30 s); negative disables the
	// time trigger.
	CheckpointEvery time.Duration
	// CheckpointEveryN is the number of entries after which a batch also
	// writes a checkpoint, in the same transaction. 0 means
	// DefaultCheckpointEveryN (1000); negative disables the count trigger.
	CheckpointEveryN int64
	// MaxBatch is the most appends one transaction commits (group
	// commit). 0 means DefaultMaxBatch (256).
	MaxBatch int
}

// A Ledger appends entries to a Store. It is safe for concurrent use; each
// process (replica) has its own Ledger, and several may share one store.
//
// One goroutine owns the writes: Append queues its request, the writer takes
// every request queued at that moment (up to MaxBatch) into one transaction,
// and each Append returns when that transaction is durable.
type Ledger struct {
	store    Store
	id       string
	origin   string
	signer   note.Signer
	every    time.Duration
	everyN   int64
	maxBatch int

	reqs       chan []*appendReq // a group: committed in one transaction
	ckreqs     chan ckReq
	quit       chan struct{}
	writerDone chan struct{}

	mu     sync.RWMutex // guards closed against sends on reqs and ckreqs
	closed bool

	closeErr error // set by the writer before writerDone closes

	now func() time.Time // the clock; tests replace it before the first Append

	head head // owned by the writer goroutine
}

// head caches the end of the ledger as of the last batch this Ledger
// committed. It is trusted only while the store's size still equals size;
// otherwise (another replica appended, or a write failed) it is reloaded
// inside the next transaction.
type head struct {
	valid  bool
	size   int64
	prev   string              // chain hash of entry size-1, ZeroHash when size is 0
	last   time.Time           // time of entry size-1
	hashes map[int64]tlog.Hash // at least the stored hashes of frontier(size)
	// ck is the latest stored checkpoint as of the last batch, so that a
	// batch decides whether one is due without reading it again; it is
	// reloaded with the head. Another writer's checkpoint without new
	// entries can make it stale, which at worst signs one checkpoint more.
	ck latestCheckpoint
}

// latestCheckpoint caches Tx.LatestCheckpoint.
type latestCheckpoint struct {
	known bool // c and ok hold what the store has
	c     StoredCheckpoint
	ok    bool
}

type appendReq struct {
	// first marks the first request of a group (EnqueueAll): the
	// members follow it in the batch and share its context.
	first bool
	// deferUntil, on the first request of a deferred group
	// (EnqueueAllDeferred), is the latest time the group may wait for
	// another group to commit with; zero commits it at once.
	deferUntil time.Time
	ctx        context.Context
	kind       string
	recordID   string
	payload    []byte
	// done answers the request; the members of a group share one,
	// answered in order.
	done chan appendResult
}

type appendResult struct {
	e   Entry
	err error
}

type ckReq struct {
	ctx  context.Context
	done chan ckResult
}

type ckResult struct {
	c   *Checkpoint
	err error
}

// ErrNotALedgerLocation is returned (wrapped) by CheckPath, and by
// backends.Open and backends.OpenStore, for a location that is meant as a
// URL or connection string but is not a PostgreSQL URL ("mysql://...", "sqlite:...", "file:...",
// "postgres:/x", "host=h dbname=d"): taken as a file path it would quietly
// create a local SQLite file, named after the URL (and any password in
// it), where a shared ledger was meant.
var ErrNotALedgerLocation = errors.New("not a ledger location")

// uriScheme matches the scheme of a URI (RFC 3986 §3.1) of at least two
// characters, so that a drive letter is not one.
var uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]+:`)

// urlSchemes are schemes that make a location a URL even without "//"
// after them ("file:ledger.db", "sqlite:x.db").
var urlSchemes = map[string]bool{
	"file": true, "sqlite": true, "sqlite3": true, "postgres": true, "postgresql": true, "pg": true,
	"mysql": true, "mariadb": true, "http": true, "https": true, "redis": true, "mongodb": true,
}

// keywordDSN matches a libpq keyword/value connection string
// ("host=h user=u password=p dbname=d").
var keywordDSN = regexp.MustCompile(`(^|\s)(host|hostaddr|port|dbname|user|password|sslmode|service)\s*=`)

// CheckPath returns an error wrapping ErrNotALedgerLocation when dsn, which
// is not a PostgreSQL URL (IsPostgresDSN), is meant as a URL (URLScheme)
// or is a keyword/value connection string; a file whose name starts like
// a URL is named with a directory ("./name"). The error names only the
// scheme: the rest may hold a password.
func CheckPath(dsn string) error {
	if scheme := URLScheme(dsn); scheme != "" {
		return fmt.Errorf("%w: it starts with the URL scheme %q; the ledger is a PostgreSQL URL (postgres:// or postgresql://) or a SQLite file path (prefix a file whose name starts so with ./)",
			ErrNotALedgerLocation, scheme+":")
	}
	if IsKeywordDSN(dsn) {
		return fmt.Errorf("%w: it is a keyword/value connection string; the ledger is a PostgreSQL URL (postgres://user@host/dbname) or a SQLite file path", ErrNotALedgerLocation)
	}
	return nil
}

// URLScheme returns the URI scheme (RFC 3986 §3.1, without the colon) of
// dsn when dsn is meant as a URL: the scheme is followed by "/", or is one
// of the schemes of databases and files ("file:", "sqlite:", "mysql:", ...).
// Otherwise, a colon in a file name included ("ledger-2026-11-30T18:38.db")
// or a one-letter scheme (a drive letter), it returns "".
func URLScheme(dsn string) string {
	m := uriScheme.FindString(dsn)
	if m == "" {
		return ""
	}
	scheme := strings.TrimSuffix(m, ":")
	if strings.HasPrefix(dsn[len(m):], "/") || urlSchemes[strings.ToLower(scheme)] {
		return scheme
	}
	return ""
}

// IsKeywordDSN reports whether dsn is a libpq keyword/value connection
// string ("host=h user=u dbname=d"), which the ledger does not take.
func IsKeywordDSN(dsn string) bool { return keywordDSN.MatchString(dsn) }

// IsPostgresDSN reports whether dsn names a PostgreSQL database rather than
// a SQLite file.
func IsPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// New returns a Ledger appending to s and starts its writer goroutine. It
// records or checks the ledger id (ErrLedgerID) and validates opts. The
// Ledger owns s from then on: Close closes it.
func New(ctx context.Context, s Store, opts Options) (*Ledger, error) {
	proposed := opts.LedgerID
	if proposed == "" {
		var b [8]byte
		rand.Read(b[:])
		proposed = "ledger-" + hex.EncodeToString(b[:])
	}
	if err := checkLedgerID(proposed); err != nil {
		return nil, err
	}
	id, err := s.Init(ctx, proposed)
	if err != nil {
		return nil, fmt.Errorf("ledger: opening store: %w", err)
	}
	if opts.LedgerID != "" && id != opts.LedgerID {
		return nil, fmt.Errorf("%w: the store holds ledger %q, not %q", ErrLedgerID, id, opts.LedgerID)
	}
	l := &Ledger{
		store:      s,
		id:         id,
		origin:     Origin(id),
		signer:     opts.Signer,
		every:      opts.CheckpointEvery,
		everyN:     opts.CheckpointEveryN,
		maxBatch:   opts.MaxBatch,
		reqs:       make(chan []*appendReq, 1024),
		ckreqs:     make(chan ckReq),
		quit:       make(chan struct{}),
		writerDone: make(chan struct{}),
		now:        time.Now,
	}
	if l.every == 0 {
		l.every = DefaultCheckpointEvery
	}
	if l.everyN == 0 {
		l.everyN = DefaultCheckpointEveryN
	}
	if l.maxBatch <= 0 {
		l.maxBatch = DefaultMaxBatch
	}
	go l.writer()
	return l, nil
}

// ID returns the ledger id.
func (l *Ledger) ID() string { return l.id }

// Store returns the ledger's store (for reads: Verify, proofs).
func (l *Ledger) Store() Store { return l.store }

// Append records one entry and returns it once it is durable; see the
// package documentation for what durable means per backend. kind and
// recordID are validated as documented on [Entry]; payload must be RFC 8785
// canonical JSON of at most MaxPayload bytes (see Canonicalize) and is
// copied.
//
// Errors: ErrInvalid for bad arguments (nothing queued); ErrClosed after
// Close; ErrWrite wrapping the store's error when the batch failed; ctx.Err()
// when ctx ends first (if it ends after the request was queued, the entry
// may still be written). Append is safe for concurrent use; concurrent
// appends share transactions.
func (l *Ledger) Append(ctx context.Context, kind, recordID string, payload []byte) (Entry, error) {
	wait, err := l.Enqueue(ctx, kind, recordID, payload)
	if err != nil {
		return Entry{}, err
	}
	return wait()
}

// Enqueue queues one entry exactly as Append does but returns as soon as it
// is queued, with wait, which blocks until the entry is durable and returns
// what Append would have. Entries enqueued one after the other (by one
// goroutine) are committed in that order; entries enqueued before a wait
// returns share transactions with other appends (group commit), so a
// caller with several entries enqueues them all and then waits (or, to
// have them in one transaction, uses EnqueueAll). Each wait must be called
// at most once. Errors of Enqueue itself are Append's that come before
// queueing (ErrInvalid, ErrClosed, ctx.Err()).
func (l *Ledger) Enqueue(ctx context.Context, kind, recordID string, payload []byte) (wait func() (Entry, error), err error) {
	w, err := l.EnqueueAll(ctx, []Record{{Kind: kind, RecordID: recordID, Payload: payload}})
	if err != nil {
		return nil, err
	}
	return func() (Entry, error) {
		es, err := w()
		if err != nil {
			return Entry{}, err
		}
		return es[0], nil
	}, nil
}

// Record is one entry to append: kind, record id and payload as Append
// takes them.
type Record struct {
	Kind     string
	RecordID string
	Payload  []byte
}

// EnqueueAll queues recs (at least one) as one group: they are committed
// in one transaction, consecutively and in order, so that after a crash
// either all of them are in the ledger or none is (a decision receipt is
// never there without its audit event). A group is never split between
// batches; it may make a batch exceed Options.MaxBatch. It returns as soon
// as the group is queued, with wait, which blocks until the group is
// durable and returns its entries in order. Every record is validated as
// Append does before anything is queued (ErrInvalid names the record's
// index); other errors are Enqueue's.
func (l *Ledger) EnqueueAll(ctx context.Context, recs []Record) (wait func() ([]Entry, error), err error) {
	return l.enqueue(ctx, recs, 0)
}

// EnqueueAllDeferred queues recs as one group exactly as EnqueueAll does,
// except that the group does not start a transaction of its own: it rides
// the next group commit that another (not deferred) append starts, or, if
// none comes within the given time (> 0), is committed on its own then.
// Until it is committed a crash loses it. It is for records whose
// durability the caller does not wait for (the audit Recorder's deferred
// outcomes, docs/ledger.md "Per-call records"): fewer fsyncs when appends
// are sparse. within <= 0 is EnqueueAll.
func (l *Ledger) EnqueueAllDeferred(ctx context.Context, recs []Record, within time.Duration) (wait func() ([]Entry, error), err error) {
	return l.enqueue(ctx, recs, within)
}

func (l *Ledger) enqueue(ctx context.Context, recs []Record, within time.Duration) (wait func() ([]Entry, error), err error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrInvalid)
	}
	size := 0
	for i, rc := range recs {
		if err := checkKind(rc.Kind); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, rc.Kind, err)
		}
		if err := checkRecordID(rc.RecordID); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, rc.Kind, err)
		}
		if err := checkPayload(rc.Payload); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, rc.Kind, err)
		}
		size += len(rc.Payload)
	}
	// One allocation each for the requests, the payload copies and the
	// channel that answers them: the writer answers a group's members in
	// order, all on this channel.
	done := make(chan appendResult, len(recs))
	reqs := make([]appendReq, len(recs))
	group := make([]*appendReq, len(recs))
	payloads := make([]byte, 0, size)
	for i, rc := range recs {
		n := len(payloads)
		payloads = append(payloads, rc.Payload...)
		reqs[i] = appendReq{
			first:    i == 0,
			ctx:      ctx,
			kind:     rc.Kind,
			recordID: rc.RecordID,
			payload:  payloads[n:len(payloads):len(payloads)],
			done:     done,
		}
		group[i] = &reqs[i]
	}
	if within > 0 {
		reqs[0].deferUntil = time.Now().Add(within)
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case l.reqs <- group:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return nil, ctx.Err()
	}
	return func() ([]Entry, error) {
		out := make([]Entry, len(group))
		for i := range group {
			select {
			case r := <-done:
				if r.err != nil {
					return nil, r.err
				}
				out[i] = r.e
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return out, nil
	}, nil
}

// Checkpoint returns a checkpoint of the ledger as it is now. With a Signer
// it signs and stores a new checkpoint unless the latest stored one already
// covers every entry and is signed by this Signer's key, in which case that
// one is returned (after a key rotation, the new key signs a new one; Close
// never re-signs a covering checkpoint). Without a Signer
// it returns an unsigned tree head (Note nil) and stores nothing.
//
// Errors: ErrClosed after Close; ErrWrite when storing fails; ctx.Err().
func (l *Ledger) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	req := ckReq{ctx: ctx, done: make(chan ckResult, 1)}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case l.ckreqs <- req:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return nil, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.c, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops accepting appends (they fail with ErrClosed), commits every
// append already queued, writes a final signed checkpoint when there is a
// Signer and entries not yet covered, and closes the store. It returns the
// first error of those steps (ErrWrite for the checkpoint). If ctx ends
// first, Close closes the store anyway (failing the pending work) and
// returns ctx.Err(). Calling Close again returns nil.
func (l *Ledger) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.quit)
	select {
	case <-l.writerDone:
	case <-ctx.Done():
		l.store.Close()
		<-l.writerDone
		return ctx.Err()
	}
	err := l.closeErr
	if cerr := l.store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ledger: closing store: %w", cerr)
	}
	return err
}

// writer is the single goroutine that writes.
func (l *Ledger) writer() {
	defer close(l.writerDone)
	var tick <-chan time.Time
	if l.signer != nil && l.every > 0 {
		// Poll at a quarter of the period, so that no entry waits much
		// longer than CheckpointEvery for a checkpoint.
		t := time.NewTicker(max(l.every/4, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	batch := make([]*appendReq, 0, l.maxBatch)
	// held are deferred groups (EnqueueAllDeferred) waiting for a commit
	// to ride, until the timer (armed for the earliest deadline) fires.
	var held []*appendReq
	hold := time.NewTimer(time.Hour)
	hold.Stop()
	armed := false
	var armedAt time.Time
	flush := func() {
		if armed {
			hold.Stop()
			armed = false
		}
		if len(held) > 0 {
			l.commit(held)
			clear(held)
			held = held[:0]
		}
	}
	for {
		select {
		case g := <-l.reqs:
			batch = l.fill(append(append(batch[:0], held...), g...))
			clear(held)
			held = held[:0]
			if len(batch) < l.maxBatch && allDeferred(batch) {
				held = append(held, batch...)
				clear(batch)
				if first := earliestDeferral(held); !armed || first.Before(armedAt) {
					hold.Reset(time.Until(first))
					armed, armedAt = true, first
				}
				continue
			}
			if armed {
				hold.Stop()
				armed = false
			}
			l.commit(batch)
			clear(batch) // the requests' payloads are not kept until the next batch
		case <-hold.C:
			armed = false
			flush()
		case r := <-l.ckreqs:
			flush() // a checkpoint asked for covers everything queued
			c, err := l.checkpoint(r.ctx, ckResign)
			r.done <- ckResult{c, err}
		case <-tick:
			l.checkpoint(context.Background(), ckIfDue)
		case <-l.quit:
			// No more sends can happen (closed is set under mu), so what
			// is queued now is everything.
			flush()
			for {
				select {
				case g := <-l.reqs:
					batch = l.fill(append(batch[:0], g...))
					l.commit(batch)
					clear(batch)
					continue
				default:
				}
				break
			}
			if l.signer != nil {
				if _, err := l.checkpoint(context.Background(), ckCover); err != nil {
					l.closeErr = fmt.Errorf("final checkpoint: %w", err)
				}
			}
			return
		}
	}
}

// allDeferred reports whether every group in batch is deferred.
func allDeferred(batch []*appendReq) bool {
	for _, r := range batch {
		if r.first && r.deferUntil.IsZero() {
			return false
		}
	}
	return true
}

// earliestDeferral is the earliest deadline of the deferred groups in held.
func earliestDeferral(held []*appendReq) time.Time {
	var t time.Time
	for _, r := range held {
		if r.first && (t.IsZero() || r.deferUntil.Before(t)) {
			t = r.deferUntil
		}
	}
	return t
}

// fill adds groups already queued to batch while it holds fewer than
// maxBatch entries, without waiting. A group is taken whole.
func (l *Ledger) fill(batch []*appendReq) []*appendReq {
	for len(batch) < l.maxBatch {
		select {
		case g := <-l.reqs:
			batch = append(batch, g...)
		default:
			return batch
		}
	}
	return batch
}

// commit writes one batch in one transaction and answers every request.
func (l *Ledger) commit(batch []*appendReq) {
	live := batch[:0:0]
	// The members of a group share one context and sit side by side: it is
	// looked at once, at the group's first request, so that a deadline
	// passing between two members cannot split the group.
	var groupErr error
	for _, r := range batch {
		if r.first {
			groupErr = r.ctx.Err()
		}
		if groupErr != nil {
			r.done <- appendResult{err: groupErr} // not written
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	now := entryTime(l.now())
	entries := make([]Entry, len(live))
	var next head
	err := l.store.Update(ctx, func(ctx context.Context, tx Tx) error {
		size, err := tx.Size(ctx)
		if err != nil {
			return err
		}
		h := l.head
		if !h.valid || h.size != size {
			if h, err = l.loadHead(ctx, tx, size); err != nil {
				return err
			}
		}
		// The head's map is extended in place: if the transaction fails,
		// the head is invalidated and reloaded anyway.
		hashes := h.hashes
		r := &mapHashReader{ctx: ctx, m: hashes, tx: tx}
		t := now
		if t.Before(h.last) {
			t = h.last // never earlier than the previous entry
		}
		// Everything that is the same for the whole batch is encoded once;
		// the leaves share one buffer.
		enc := leafEncoder{ledgerID: l.id, time: t}
		total := 0
		for _, req := range live {
			total += enc.size(req.kind, req.recordID, len(req.payload))
		}
		buf := make([]byte, 0, total)
		prev := h.prev
		leaves := make([][]byte, len(live))
		// Entry n adds 1 + trailing ones of n stored hashes: 2n in all,
		// give or take the levels.
		stored := make([]tlog.Hash, 0, 2*len(live)+64)
		for i, req := range live {
			e := Entry{
				LedgerID:     l.id,
				Seq:          size + int64(i),
				Kind:         req.kind,
				RecordID:     req.recordID,
				Time:         t,
				PreviousHash: prev,
				Payload:      req.payload,
			}
			n := len(buf)
			buf = enc.append(buf, &e)
			leaf := buf[n:len(buf):len(buf)]
			hs, err := tlog.StoredHashes(e.Seq, leaf, r)
			if err != nil {
				return fmt.Errorf("%w: computing tree hashes for entry %d: %v", ErrCorrupt, e.Seq, err)
			}
			base := tlog.StoredHashIndex(0, e.Seq)
			for j, x := range hs {
				hashes[base+int64(j)] = x
			}
			stored = append(stored, hs...)
			leaves[i] = leaf
			entries[i] = e
			prev = chainHash(leaf)
		}
		if err := tx.Append(ctx, size, leaves, tlog.StoredHashIndex(0, size), stored); err != nil {
			return err
		}
		newSize := size + int64(len(live))
		if l.signer != nil {
			if _, err := l.checkpointTx(ctx, tx, newSize, now, r, ckIfDue, &h.ck); err != nil {
				return err
			}
		}
		next = head{valid: true, size: newSize, prev: prev, last: t, hashes: pruneToFrontier(hashes, newSize), ck: h.ck}
		return nil
	})
	if err != nil {
		l.head.valid = false
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: appending %d entries: %w", ErrWrite, len(live), err)
		} else {
			err = fmt.Errorf("%w: %w", ErrWrite, err)
		}
		for _, req := range live {
			req.done <- appendResult{err: err}
		}
		return
	}
	l.head = next
	for i, req := range live {
		req.done <- appendResult{e: entries[i]}
	}
}

// loadHead reads the end of the ledger inside tx.
func (l *Ledger) loadHead(ctx context.Context, tx Tx, size int64) (head, error) {
	h := head{valid: true, size: size, prev: ZeroHash, hashes: map[int64]tlog.Hash{}}
	if size == 0 {
		return h, nil
	}
	leaf, err := tx.Leaf(ctx, size-1)
	if err != nil {
		return head{}, err
	}
	e, err := ParseLeaf(leaf)
	if err != nil {
		return head{}, fmt.Errorf("%w: entry %d: %v", ErrCorrupt, size-1, err)
	}
	if e.Seq != size-1 || e.LedgerID != l.id {
		return head{}, fmt.Errorf("%w: entry %d claims seq %d of ledger %q", ErrCorrupt, size-1, e.Seq, e.LedgerID)
	}
	h.prev = chainHash(leaf)
	h.last = e.Time
	idx := frontier(size)
	hs, err := tx.ReadHashes(ctx, idx)
	if err != nil {
		return head{}, err
	}
	for i, x := range idx {
		h.hashes[x] = hs[i]
	}
	return h, nil
}

// ckMode says when checkpointTx signs a new checkpoint.
type ckMode int

const (
	// ckIfDue: only when one is due (count or time trigger).
	ckIfDue ckMode = iota
	// ckCover: when the latest stored one does not cover every entry
	// (Close).
	ckCover
	// ckResign: as ckCover, and also when the latest covers every entry
	// but is not signed by this Ledger's key (Checkpoint, asked for
	// explicitly: after a key rotation the new key signs a checkpoint).
	// A Ledger closing with an old key never re-signs over a newer one.
	ckResign
)

// checkpointTx signs and stores a checkpoint of the tree of size inside tx
// as mode says. It returns the checkpoint covering size (ckCover,
// ckResign) or the new one, or nil when none was due. cache, when known,
// stands for tx.LatestCheckpoint; it is filled when not, and updated when
// a checkpoint is stored.
func (l *Ledger) checkpointTx(ctx context.Context, tx Tx, size int64, now time.Time, r tlog.HashReader, mode ckMode, cache *latestCheckpoint) (*Checkpoint, error) {
	if !cache.known {
		c, ok, err := tx.LatestCheckpoint(ctx)
		if err != nil {
			return nil, err
		}
		*cache = latestCheckpoint{known: true, c: c, ok: ok}
	}
	latest, ok := cache.c, cache.ok
	force := mode != ckIfDue
	if ok && latest.Size >= size && (mode != ckResign || signedBy(latest.Note, l.signer)) {
		if !force {
			return nil, nil
		}
		c, err := openCheckpointUnverified(latest.Note)
		if err != nil {
			return nil, fmt.Errorf("%w: stored checkpoint %d: %v", ErrCorrupt, latest.ID, err)
		}
		return &c, nil
	}
	if size == 0 && !force {
		return nil, nil
	}
	due := force
	if !due && l.everyN > 0 && size-latest.Size >= l.everyN {
		due = true
	}
	if !due && l.every > 0 && (!ok || now.Sub(latest.Created) >= l.every) {
		due = true
	}
	if !due {
		return nil, nil
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return nil, fmt.Errorf("computing tree hash at size %d: %w", size, err)
	}
	c := Checkpoint{Origin: l.origin, Size: size, Hash: root}
	msg, err := SignCheckpoint(&c, l.signer)
	if err != nil {
		return nil, err
	}
	stored := StoredCheckpoint{Size: size, Note: msg, Created: now}
	if err := tx.AddCheckpoint(ctx, stored); err != nil {
		return nil, err
	}
	*cache = latestCheckpoint{known: true, c: stored, ok: true}
	return &c, nil
}

// checkpoint runs a checkpoint transaction (writer goroutine only), as
// mode says (ckResign for Checkpoint, ckCover for Close, ckIfDue for the
// ticker).
func (l *Ledger) checkpoint(ctx context.Context, mode ckMode) (*Checkpoint, error) {
	if l.signer == nil {
		if mode == ckIfDue {
			return nil, nil
		}
		return l.unsignedHead(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	now := entryTime(l.now())
	var out *Checkpoint
	var ck latestCheckpoint
	var ckSize int64
	err := l.store.Update(ctx, func(ctx context.Context, tx Tx) error {
		size, err := tx.Size(ctx)
		if err != nil {
			return err
		}
		var r tlog.HashReader = &mapHashReader{ctx: ctx, tx: tx}
		if l.head.valid && l.head.size == size {
			r = &mapHashReader{ctx: ctx, m: l.head.hashes, tx: tx}
		}
		// Asked for (or the timer): the store's latest, read afresh.
		out, err = l.checkpointTx(ctx, tx, size, now, r, mode, &ck)
		ckSize = size
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %w", ErrWrite, err)
	}
	if l.head.valid && l.head.size == ckSize {
		l.head.ck = ck // committed: the batches' cache follows
	}
	return out, nil
}

// unsignedHead computes the current tree head without storing it.
func (l *Ledger) unsignedHead(ctx context.Context) (*Checkpoint, error) {
	size, err := l.store.Size(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading size: %w", err)
	}
	root, err := tlog.TreeHash(size, storeHashReader(ctx, l.store))
	if err != nil {
		return nil, fmt.Errorf("ledger: computing tree hash: %w", err)
	}
	return &Checkpoint{Origin: l.origin, Size: size, Hash: root}, nil
}
