package gateway

import (
	"errors"
	"sync"
)

// outbox serves the client relay loop while it reads a burst of frames (more
// whole frames already buffered; wire.Writer.Hold is on for the server): the
// decision events of the burst's tools/calls are gathered and written to the
// decision log with one write(2), and the frames to the server behind them
// wait here, in arrival order, until that write returned. Each call is then
// finished as its own event's fate says: an event that did not reach the log
// refuses its call (fail closed) exactly as a failed single write would,
// while the calls whose events were written go on.
//
// It is used only with a decision log and neither Evidence (whose ordered
// queue already orders frames behind durable writes) nor request receipts
// (which bind each event as it is written). Only the client relay loop
// stages calls; calls and batches held for a catalog fetch write their
// events themselves, and their frames join the outbox behind what waits
// there (deliverHeld), so that nothing overtakes a frame the client sent
// earlier.
type outbox struct {
	// mu orders the loop's staging and flushing against held deliveries.
	mu sync.Mutex
	// events are the encoded decision events waiting for their write.
	events []byte
	// frames are copies of the waiting frames, items' bytes in order.
	frames []byte
	items  []outboxItem
	// active is set by the relay loop while it holds the server writer:
	// only then are calls staged.
	active bool
}

type outboxItem struct {
	start, end int // the frame in frames
	// eventEnd is the offset in events just past the item's event; 0 when
	// the item has none (a frame that only keeps its place).
	eventEnd int
	// ready finishes the call once the write is done: logErr is non-nil
	// when its event was not written. nil means forward the frame.
	ready func(logErr error) (forward bool, reply []byte)
}

// Limits of one burst: a frame larger than maxStagedFrame is never copied
// here (the frames before it are flushed and it goes on at once), and the
// outbox is flushed when it holds more than maxStagedBytes of frames.
const (
	maxStagedFrame = 64 << 10
	maxStagedBytes = 1 << 20
)

// stageable reports whether a frame of n bytes may wait in the outbox (mu
// held).
func (o *outbox) stageable(n int) bool {
	return o.active && n <= maxStagedFrame && len(o.frames)+n <= maxStagedBytes
}

// pending reports whether anything waits (mu held).
func (o *outbox) pending() bool { return len(o.items) > 0 }

// stage adds a frame (copied), its encoded event (nil for none) and how to
// finish it (mu held).
func (o *outbox) stage(frame, event []byte, ready func(error) (bool, []byte)) {
	it := outboxItem{start: len(o.frames), ready: ready}
	o.frames = append(o.frames, frame...)
	it.end = len(o.frames)
	if event != nil {
		o.events = append(o.events, event...)
		it.eventEnd = len(o.events)
	}
	o.items = append(o.items, it)
}

// stageCall stages a tools/call of the client loop with its encoded event;
// false when the outbox is not active or the frame too big (the caller
// then writes the event and finishes the call itself).
func (s *Session) stageCall(frame, event []byte, ready func(error) (bool, []byte)) bool {
	o := s.ob
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.stageable(len(frame)) {
		return false
	}
	o.stage(frame, event, ready)
	return true
}

// stagingCalls reports whether a tools/call of n bytes read now by the
// client loop would be staged.
func (s *Session) stagingCalls(n int) bool {
	o := s.ob
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stageable(n)
}

// setActive marks the start (true) or the end (false) of a burst of the
// client loop; the end flushes the outbox.
func (s *Session) setActive(active bool) error {
	o := s.ob
	o.mu.Lock()
	defer o.mu.Unlock()
	o.active = active
	if active {
		return nil
	}
	return errors.Join(s.flushLocked())
}

// forwardClient sends a frame from the client loop to the server, behind
// the frames waiting in the outbox when there are any. ready, when not
// nil, decides at that time whether it still goes (a request the client
// cancelled meanwhile does not).
func (s *Session) forwardClient(frame []byte, ready func(error) (bool, []byte)) error {
	o := s.ob
	if o == nil {
		return s.sendServer(frame)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.pending() {
		return s.sendServer(frame)
	}
	if o.stageable(len(frame)) {
		o.stage(frame, nil, ready)
		return nil
	}
	// Too big to wait here: what waits goes first, then the frame (unless
	// the server can no longer be written to; an answer the client could
	// not take does not keep it from the server).
	serverErr, clientErr := s.flushLocked()
	if serverErr != nil {
		return serverErr
	}
	return errors.Join(s.sendServer(frame), clientErr)
}

// deliverHeld sends what a held call or batch decided (from its own
// goroutine): behind the frames waiting in the outbox, if any. The frame
// is the goroutine's own copy. wanted, when not nil, is asked again when
// the frame leaves the outbox: a request the client cancelled meanwhile
// (its notifications/cancelled goes to the server at once) is not sent.
func (s *Session) deliverHeld(frame []byte, forward bool, reply []byte, wanted func() bool) error {
	var errs []error
	o := s.ob
	if o != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.active || o.pending() {
			if len(frame) <= maxStagedFrame && len(o.frames)+len(frame) <= maxStagedBytes {
				o.stage(frame, nil, func(error) (bool, []byte) {
					return forward && (wanted == nil || wanted()), reply
				})
				return nil
			}
			serverErr, clientErr := s.flushLocked()
			if serverErr != nil {
				return serverErr
			}
			errs = append(errs, clientErr)
		}
	}
	if reply != nil {
		errs = append(errs, s.sendClient(reply))
	}
	if forward {
		errs = append(errs, s.sendServer(frame))
	}
	return errors.Join(errs...)
}

// flushLocked writes the waiting events with one write, then finishes the
// waiting items in order: answers to the client, frames to the server (mu
// held). It returns the first error of the sends to the server and of
// those to the client (both wrap ErrFatal). An answer the client cannot
// take does not stop the frames to the server (their events say they were
// forwarded); after a failed send to the server nothing more is sent
// there, and the session ends.
func (s *Session) flushLocked() (serverErr, clientErr error) {
	o := s.ob
	if !o.pending() {
		return nil, nil
	}
	written, err := len(o.events), error(nil)
	if len(o.events) > 0 {
		written, err = s.cfg.Log.WriteEvents(o.events)
		if err != nil {
			s.log.Error("decision log write failed", "err", err)
		}
	}
	for _, it := range o.items {
		fwd, reply := true, []byte(nil)
		if it.ready != nil {
			var logErr error
			if it.eventEnd > written {
				logErr = err
			}
			fwd, reply = it.ready(logErr)
		}
		if reply != nil {
			if err := s.sendClient(reply); err != nil && clientErr == nil {
				clientErr = err
			}
		}
		if fwd && serverErr == nil {
			serverErr = s.sendServer(o.frames[it.start:it.end])
		}
	}
	clear(o.items) // drop the closures
	o.items, o.frames, o.events = o.items[:0], o.frames[:0], o.events[:0]
	if cap(o.frames) > maxStagedBytes*2 {
		o.frames = nil
	}
	return serverErr, clientErr
}
