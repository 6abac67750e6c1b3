package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// Ready says when a sequenced item may leave and what happens to it. It is
// called on the Sequencer's goroutine, in push order, and may block (until
// the item's records are durable, say). forward reports whether the item's
// frame goes to the destination; answer, when non-nil, is sent to the
// answer destination first (the client, for a call refused after all).
type Ready func() (forward bool, answer []byte)

// ErrFull is returned by TryPush when the Sequencer holds its depth of
// items: the caller answers the client with an error instead of waiting.
var ErrFull = errors.New("pipeline: too many items waiting")

// ErrSequencerClosed is returned by Push and TryPush after Close.
var ErrSequencerClosed = errors.New("pipeline: sequencer closed")

// Sequencer writes frames to one destination in push order while some of
// them wait for their evidence: one goroutine takes items in order, waits
// for each item's Ready, and sends it. Because pushing only enqueues, the
// relay loop goes on reading, and the records of many calls can share one
// durable write (group commit); because one goroutine sends, nothing
// overtakes anything. Push blocks while depth items wait (backpressure);
// TryPush refuses instead.
//
// While more items are queued and ready, the Sequencer holds the
// destination (transport.Holder), so that consecutive frames leave in one
// write; it never holds it across a wait, so a frame already ready (or one
// written to the destination directly, such as notifications/cancelled)
// never waits for a later item's durability.
//
// An item pushed with PushAfter waits for its after channel instead of a
// blocking Ready: when it is already closed the item leaves with the items
// around it (a burst whose one durable write is done leaves in one write),
// and when nothing waits in the Sequencer the item is finished on the
// pusher's goroutine at once (a frame that arrives alone is not delayed by
// a goroutine hand-off).
//
// An item pushed with PushAfter while the Sequencer is idle and its after
// is still open opens a group: it and every item pushed after it are
// gathered, not queued, until Flush (called once after is closed, by the
// one who closes it) lets them go, on Flush's goroutine when nothing else
// waits, else as one queued item. A burst then costs its pusher no
// hand-off to the Sequencer's goroutine.
//
// A failed send fails the Sequencer: onErr is called once with the error,
// the items still queued are drained (their Ready is still called, exactly
// once each) without sending, and later pushes return the error.
type Sequencer struct {
	items  chan seqItem
	depth  int
	wg     sync.WaitGroup
	send   func([]byte) error
	answer func([]byte) error
	onErr  func(error)

	// queued counts the items pushed and not yet finished; 0 means the
	// Sequencer is idle and an item may be finished inline.
	queued   atomic.Int64
	failOnce sync.Once
	failErr  atomic.Pointer[error]

	// mu serialises pushes (and inline sends) against Close.
	mu     sync.Mutex
	closed bool
	// group holds the items gathered since an item waiting for its after
	// opened it (mu held), until Flush; at most depth of them: a Push
	// then waits on flushed (with mu) for the next Flush or Close.
	group   []seqItem
	flushed *sync.Cond
	// gbuf holds the copies of the group's frames (mu held); reused
	// after a Flush that finished them inline.
	gbuf []byte
}

type seqItem struct {
	frame []byte // owned by the Sequencer, or the caller's until done is closed
	after <-chan struct{}
	ready Ready
	quick bool          // ready does not block (PushAfter)
	done  chan struct{} // closed once the item is finished (frames not copied)
	// group, when not nil, is a flushed group: its items are finished in
	// order, in place of this one.
	group []seqItem
}

// NewSequencer starts a Sequencer of depth items (<= 0 means 1024) that
// sends forwarded frames with send and answers with answer. hold, when
// non-nil, is the destination's Holder (the Conn send writes to).
func NewSequencer(send, answer func([]byte) error, hold transport.Holder, depth int, onErr func(error)) *Sequencer {
	if depth <= 0 {
		depth = 1024
	}
	q := &Sequencer{items: make(chan seqItem, depth), depth: depth, send: send, answer: answer, onErr: onErr}
	q.flushed = sync.NewCond(&q.mu)
	q.wg.Add(1)
	go q.run(hold)
	return q
}

// fail records the Sequencer's first failure and reports it to onErr.
func (q *Sequencer) fail(err error) {
	q.failOnce.Do(func() {
		q.failErr.Store(&err)
		if q.onErr != nil {
			q.onErr(err)
		}
	})
}

// failed returns the failure recorded by fail, nil when there is none.
func (q *Sequencer) failed() error {
	if p := q.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (q *Sequencer) run(hold transport.Holder) {
	defer q.wg.Done()
	send, answer, fail := q.send, q.answer, q.fail
	holding := false
	release := func() {
		if !holding {
			return
		}
		holding = false
		if err := hold.Release(); err != nil {
			fail(err)
		}
	}
	defer release()
	// more reports whether items follow the one being finished (so that
	// they leave in one write with it).
	finish := func(it seqItem, more bool) {
		more = more || len(q.items) > 0
		fwd, ans := true, []byte(nil)
		if it.after != nil {
			select {
			case <-it.after: // done: the item leaves with those around it
			default:
				release() // what is ready leaves before the wait
				<-it.after
			}
		} else if it.ready != nil {
			release() // what is ready leaves before the wait
		}
		if it.ready != nil {
			fwd, ans = it.ready()
		}
		if q.failed() != nil {
			return // drain: the destination is gone
		}
		if hold != nil && !holding && more {
			hold.Hold()
			holding = true
		}
		if ans != nil {
			if err := answer(ans); err != nil {
				fail(err)
				return
			}
		}
		if fwd && it.frame != nil {
			if err := send(it.frame); err != nil {
				fail(err)
				return
			}
		}
		if !more || it.done != nil {
			release() // a waiting caller's frame has left
		}
	}
	for it := range q.items {
		if it.group != nil {
			for i, g := range it.group {
				finish(g, i < len(it.group)-1)
				if g.done != nil {
					close(g.done)
				}
			}
		} else {
			finish(it, false)
			if it.done != nil {
				close(it.done)
			}
		}
		q.queued.Add(-1)
	}
}

// Push enqueues frame (one or more whole messages; nil for an item that
// only answers) and its readiness (nil: ready at once; ready may block). A
// frame smaller than transport.BigFrame is copied and Push returns once it
// is queued; a bigger one is not copied (it may be 16 MiB), and Push
// returns only when it has been sent or dropped, so the caller's buffer
// stays valid until then. Push blocks while the Sequencer is full (depth
// items queued, or depth gathered in a group until Flush). It
// returns ErrSequencerClosed after Close (the item is then not sent and
// ready is not called), and the send's error (wrapped) once a send failed.
func (q *Sequencer) Push(frame []byte, ready Ready) error {
	return q.push(frame, nil, ready, false, true)
}

// TryPush is Push that does not wait for room: it returns ErrFull when
// the Sequencer holds its depth of items (nothing is queued, ready is not
// called).
func (q *Sequencer) TryPush(frame []byte, ready Ready) error {
	return q.push(frame, nil, ready, false, false)
}

// PushAfter is Push for an item that waits for after (nil: for nothing)
// to be closed, and whose ready (nil: forward) does not block: it is
// called once after is closed. While after waits, the frames ready before
// it leave; once it is closed, the item leaves with the items queued
// behind it, in one write. When nothing waits in the Sequencer and after
// is nil or closed, the item is finished on the caller's goroutine before
// PushAfter returns; the send's error is then returned (wrapped) and fails
// the Sequencer.
func (q *Sequencer) PushAfter(frame []byte, after <-chan struct{}, ready Ready) error {
	return q.push(frame, after, ready, true, true)
}

// TryPushAfter is PushAfter that returns ErrFull instead of waiting for
// room (nothing is queued, ready is not called).
func (q *Sequencer) TryPushAfter(frame []byte, after <-chan struct{}, ready Ready) error {
	return q.push(frame, after, ready, true, false)
}

// closedOrNil reports whether after is nil or closed.
func closedOrNil(after <-chan struct{}) bool {
	if after == nil {
		return true
	}
	select {
	case <-after:
		return true
	default:
		return false
	}
}

func (q *Sequencer) push(frame []byte, after <-chan struct{}, ready Ready, quick, wait bool) error {
	// The lock is held across a blocking send (and an inline one) only to
	// keep Close from closing the channel under it, and to order pushes;
	// Close waits for it.
	q.mu.Lock()
	for wait && len(q.group) >= q.depth && !q.closed {
		q.flushed.Wait() // backpressure: the group is full
	}
	if q.closed {
		q.mu.Unlock()
		return ErrSequencerClosed
	}
	if err := q.failed(); err != nil {
		q.mu.Unlock()
		return fmt.Errorf("pipeline: sequencer failed: %w", err)
	}
	idle := q.queued.Load() == 0 && len(q.group) == 0
	if quick && idle && closedOrNil(after) {
		// Idle: nothing to overtake, nothing to wait for.
		err := q.finishInline(frame, ready)
		q.mu.Unlock()
		return err
	}
	it := seqItem{after: after, ready: ready, quick: quick}
	big := len(frame) >= transport.BigFrame
	gather := len(q.group) > 0 || (quick && idle && !closedOrNil(after))
	switch {
	case big:
		it.frame = frame
		it.done = make(chan struct{})
	case frame != nil && gather:
		// Copied into the group's buffer: appends only, so the frames
		// gathered before keep their bytes even when it grows.
		start := len(q.gbuf)
		q.gbuf = append(q.gbuf, frame...)
		it.frame = q.gbuf[start:len(q.gbuf):len(q.gbuf)]
	case frame != nil:
		it.frame = append([]byte(nil), frame...)
	}
	if gather {
		// Gathered until Flush.
		if len(q.group) >= q.depth { // !wait: wait waited for room above
			q.mu.Unlock()
			return ErrFull
		}
		q.group = append(q.group, it)
		q.mu.Unlock()
		if big {
			<-it.done
		}
		return nil
	}
	q.queued.Add(1)
	if wait {
		q.items <- it
	} else {
		select {
		case q.items <- it:
		default:
			q.queued.Add(-1)
			q.mu.Unlock()
			return ErrFull
		}
	}
	q.mu.Unlock()
	if big {
		<-it.done
	}
	return nil
}

// finishInline finishes an item on the pusher's goroutine (q.mu held, the
// Sequencer idle).
func (q *Sequencer) finishInline(frame []byte, ready Ready) error {
	fwd, ans := true, []byte(nil)
	if ready != nil {
		fwd, ans = ready()
	}
	if ans != nil {
		if err := q.answer(ans); err != nil {
			q.fail(err)
			return fmt.Errorf("pipeline: sequencer answer: %w", err)
		}
	}
	if fwd && frame != nil {
		if err := q.send(frame); err != nil {
			q.fail(err)
			return fmt.Errorf("pipeline: sequencer send: %w", err)
		}
	}
	return nil
}

// Flush lets the gathered group go (see Sequencer), once the after
// channels of its items are closed: when nothing else waits it finishes
// them in order on the caller's goroutine before it returns (the caller
// holding the destination gets them in one write) and returns the first
// send's error (wrapped; it fails the Sequencer); otherwise it queues them
// as one item, which the Sequencer's goroutine finishes in one write. A
// group with an item whose after is still open is queued likewise, where
// it waits. Flush without a group does nothing.
func (q *Sequencer) Flush() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.flushLocked()
}

func (q *Sequencer) flushLocked() error {
	g := q.group
	if len(g) == 0 {
		return nil
	}
	defer q.flushed.Broadcast()
	inline := q.queued.Load() == 0
	for i := 0; inline && i < len(g); i++ {
		inline = g[i].quick && closedOrNil(g[i].after)
	}
	if !inline {
		q.group, q.gbuf = nil, nil // handed over
		q.queued.Add(1)
		q.items <- seqItem{group: g}
		return nil
	}
	var first error
	for _, it := range g {
		if q.failed() != nil {
			if it.ready != nil {
				it.ready() // drain: called once, nothing sent
			}
		} else if err := q.finishInline(it.frame, it.ready); err != nil && first == nil {
			first = err
		}
		if it.done != nil {
			close(it.done)
		}
	}
	clear(g) // drop the closures
	q.group, q.gbuf = g[:0], q.gbuf[:0]
	if cap(q.group) > 2*q.depth {
		q.group = nil
	}
	if cap(q.gbuf) > 4<<20 {
		q.gbuf = nil
	}
	return first
}

// Close sends what is queued (a group not flushed included), stops the
// Sequencer and returns when it is done. Push after Close returns
// ErrSequencerClosed. Close is idempotent.
func (q *Sequencer) Close() {
	q.mu.Lock()
	if !q.closed {
		if len(q.group) > 0 {
			g := q.group
			q.group, q.gbuf = nil, nil
			q.queued.Add(1)
			q.items <- seqItem{group: g}
		}
		q.closed = true
		close(q.items)
		q.flushed.Broadcast()
	}
	q.mu.Unlock()
	q.wg.Wait()
}
