package gateway

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
// (which bind each event as it is written), and only by the client relay
// loop's goroutine: calls held for a catalog fetch write their events
// themselves.
type outbox struct {
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

// stageable reports whether a frame of n bytes may wait in the outbox.
func (o *outbox) stageable(n int) bool {
	return o != nil && o.active && n <= maxStagedFrame && len(o.frames)+n <= maxStagedBytes
}

// pending reports whether anything waits.
func (o *outbox) pending() bool { return o != nil && len(o.items) > 0 }

// stage adds a frame (copied), its encoded event (nil for none) and how to
// finish it.
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

// forwardClient sends a frame from the client loop to the server, behind
// the frames waiting in the outbox when there are any.
func (s *Session) forwardClient(frame []byte) error {
	if s.ob.pending() {
		if s.ob.stageable(len(frame)) {
			s.ob.stage(frame, nil, nil)
			return nil
		}
		if err := s.flushOutbox(); err != nil {
			return err
		}
	}
	return s.sendServer(frame)
}

// flushOutbox writes the waiting events with one write, then finishes the
// waiting items in order: answers to the client, frames to the server. It
// returns the first error of those sends (wrapping ErrFatal); the items
// after it are finished all the same, so that none keeps its pending slot.
func (s *Session) flushOutbox() (ferr error) {
	o := s.ob
	if !o.pending() {
		return nil
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
			if err := s.sendClient(reply); err != nil && ferr == nil {
				ferr = err
			}
		}
		if fwd && ferr == nil {
			ferr = s.sendServer(o.frames[it.start:it.end])
		}
	}
	clear(o.items) // drop the closures
	o.items, o.frames, o.events = o.items[:0], o.frames[:0], o.events[:0]
	if cap(o.frames) > maxStagedBytes*2 {
		o.frames = nil
	}
	return ferr
}
