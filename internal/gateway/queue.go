package gateway

import (
	"sync"
)

// queue keeps frames in arrival order while some of them wait for their
// evidence to be recorded (Evidence on). One goroutine takes items in order:
// an item's ready (nil: forward at once) blocks until its evidence is
// durable and says whether to send the frame to the queue's destination
// and what answer, if any, goes to the client. Because the relay loop only
// enqueues, it goes on reading, and the evidence of many calls shares one
// durable ledger write (group commit); because one goroutine sends, nothing
// overtakes anything.
type queue struct {
	items chan queueItem
	wg    sync.WaitGroup
}

type queueItem struct {
	frame []byte // owned by the queue, or the caller's until done is closed
	ready func() (forward bool, reply []byte)
	// done, when set, is closed once the item is finished (pushWait).
	done chan struct{}
}

// queueDepth bounds the items waiting; a full queue makes the relay loop
// wait (backpressure).
const queueDepth = 1024

// newQueue starts a queue that sends forwarded frames with send and answers
// with reply. dst is the writer send writes to: while more items are
// queued and ready to go, the queue holds it (wire.Writer.Hold), so that
// consecutive frames leave in one write. It never holds dst while it waits
// for an item's evidence: a frame already ready (or one written to dst
// directly, such as notifications/cancelled or a private tools/list) must
// not wait for a later call's ledger commit.
func newQueue(dst *peer, send func([]byte) error, reply func([]byte) error, onErr func(error)) *queue {
	q := &queue{items: make(chan queueItem, queueDepth)}
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		failed := false
		holding := false
		release := func() {
			if !holding {
				return
			}
			holding = false
			if err := dst.Release(); err != nil && !failed {
				failed = true
				onErr(err)
			}
		}
		defer release()
		fail := func(err error) {
			failed = true
			onErr(err)
			release() // nothing more goes out through this queue
		}
		finish := func(it queueItem) {
			fwd, answer := true, []byte(nil)
			if it.ready != nil {
				release() // flush what is ready before waiting
				fwd, answer = it.ready()
			}
			if failed {
				return // drain: the destination is gone
			}
			if !holding && len(q.items) > 0 {
				dst.Hold()
				holding = true
			}
			if answer != nil {
				if err := reply(answer); err != nil {
					fail(err)
					return
				}
			}
			if fwd {
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
	}()
	return q
}

// push enqueues a frame and its readiness. A frame smaller than bigFrame
// is copied and push returns at once; a bigger one is not copied (it may be
// 16 MiB), and push returns only when the frame has been sent or dropped,
// so that the caller's buffer stays valid until then.
func (q *queue) push(frame []byte, ready func() (bool, []byte)) {
	if len(frame) < bigFrame {
		q.items <- queueItem{frame: append([]byte(nil), frame...), ready: ready}
		return
	}
	done := make(chan struct{})
	q.items <- queueItem{frame: frame, ready: ready, done: done}
	<-done
}

// close sends what is queued and stops the queue; it returns when done.
func (q *queue) close() {
	close(q.items)
	q.wg.Wait()
}
