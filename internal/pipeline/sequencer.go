package pipeline

import (
	"errors"
	"sync"

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
// A failed send fails the Sequencer: onErr is called once with the error,
// and the items still queued are drained (their Ready is still called,
// exactly once each) without sending.
type Sequencer struct {
	items chan seqItem
	wg    sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

type seqItem struct {
	frame []byte // owned by the Sequencer, or the caller's until done is closed
	ready Ready
	done  chan struct{} // closed once the item is finished (frames not copied)
}

// NewSequencer starts a Sequencer of depth items (<= 0 means 1024) that
// sends forwarded frames with send and answers with answer. hold, when
// non-nil, is the destination's Holder (the Conn send writes to).
func NewSequencer(send, answer func([]byte) error, hold transport.Holder, depth int, onErr func(error)) *Sequencer {
	if depth <= 0 {
		depth = 1024
	}
	q := &Sequencer{items: make(chan seqItem, depth)}
	q.wg.Add(1)
	go q.run(send, answer, hold, onErr)
	return q
}

func (q *Sequencer) run(send, answer func([]byte) error, hold transport.Holder, onErr func(error)) {
	defer q.wg.Done()
	failed := false
	holding := false
	fail := func(err error) {
		if !failed {
			failed = true
			if onErr != nil {
				onErr(err)
			}
		}
	}
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
	finish := func(it seqItem) {
		fwd, ans := true, []byte(nil)
		if it.ready != nil {
			release() // what is ready leaves before the wait
			fwd, ans = it.ready()
		}
		if failed {
			return // drain: the destination is gone
		}
		if hold != nil && !holding && len(q.items) > 0 {
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
		if len(q.items) == 0 || it.done != nil {
			release() // a waiting caller's frame has left
		}
	}
	for it := range q.items {
		finish(it)
		if it.done != nil {
			close(it.done)
		}
	}
}

// Push enqueues frame (one or more whole messages; nil for an item that
// only answers) and its readiness (nil: ready at once). A frame smaller
// than transport.BigFrame is copied and Push returns once it is queued; a
// bigger one is not copied (it may be 16 MiB), and Push returns only when
// it has been sent or dropped, so the caller's buffer stays valid until
// then. Push blocks while the Sequencer is full. It returns
// ErrSequencerClosed after Close (the item is then not sent and ready is
// not called).
func (q *Sequencer) Push(frame []byte, ready Ready) error {
	return q.push(frame, ready, true)
}

// TryPush is Push that does not wait for room: it returns ErrFull when
// the Sequencer holds its depth of items (nothing is queued, ready is not
// called).
func (q *Sequencer) TryPush(frame []byte, ready Ready) error {
	return q.push(frame, ready, false)
}

func (q *Sequencer) push(frame []byte, ready Ready, wait bool) error {
	it := seqItem{ready: ready}
	big := len(frame) >= transport.BigFrame
	if big {
		it.frame = frame
		it.done = make(chan struct{})
	} else if frame != nil {
		it.frame = append([]byte(nil), frame...)
	}
	// The lock is held across a blocking send only to keep Close from
	// closing the channel under it; Close waits for it.
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrSequencerClosed
	}
	if wait {
		q.items <- it
	} else {
		select {
		case q.items <- it:
		default:
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

// Close sends what is queued, stops the Sequencer and returns when it is
// done. Push after Close returns ErrSequencerClosed. Close is idempotent.
func (q *Sequencer) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.items)
	}
	q.mu.Unlock()
	q.wg.Wait()
}
