package gateway

import (
	"errors"

	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// logBurst gathers the decision events of the tools/calls of one burst of
// the client relay loop (frames that arrived together; the loop holds the
// server writer meanwhile), so that they reach the decision log with one
// write(2) when the burst ends (flushBurst). The calls' frames wait in the
// Sequencer to the server (pipeline.Sequencer.PushAfter) until done is
// closed; each call is then finished as its own event's fate says: an
// event that did not reach the log refuses its call (fail closed, -32081)
// exactly as a failed single write would, while the calls whose events
// were written go on, and the frames behind them leave together.
//
// Bursts are gathered only with a decision log and neither Evidence (whose
// futures order frames behind durable ledger writes) nor request receipts
// (which bind each event as it is written). Only the client relay loop
// uses its burst; calls and batches held for a catalog fetch write their
// events themselves and join the Sequencer behind what waits there
// (deliverHeld).
type logBurst struct {
	// events are the encoded decision events waiting for their write.
	events []byte
	// done is closed once the write returned; written (bytes of events
	// written) and err (the write's error) are set before. It is made
	// for the first staged call (stageEvent): a burst without one is
	// reused as it is.
	done    chan struct{}
	written int
	err     error
}

// Limits of one burst: a tools/call larger than maxStagedFrame has its
// event written at once, and the burst is written early once its events
// exceed maxStagedBytes.
const (
	maxStagedFrame = 64 << 10
	maxStagedBytes = 1 << 20
)

// errFor is the write's error for the event that ended at offset end of
// events, nil when that event was written (after done is closed).
func (b *logBurst) errFor(end int) error {
	if end > b.written {
		return b.err
	}
	return nil
}

// stagingCalls reports whether a tools/call of n bytes read now by the
// client loop has its event gathered into the burst.
func (s *Session) stagingCalls(n int) bool {
	return s.burst != nil && n <= maxStagedFrame
}

// beginBurst starts a burst of the client loop, when bursts are gathered.
func (s *Session) beginBurst() {
	if s.bursts && s.burst == nil {
		s.burst = &logBurst{events: s.spareEvents}
		s.spareEvents = nil
	}
}

// endBurst writes the burst's events and lets its calls go (flushBurst);
// no burst is gathered until the next beginBurst. It returns flushBurst's
// error.
func (s *Session) endBurst() error {
	err := s.flush(false)
	if b := s.burst; b != nil {
		s.burst = nil
		s.spareEvents = b.events[:0]
	}
	return err
}

// flushBurst writes the events of the burst with one write, closes its
// done and flushes the Sequencer (pipeline.Sequencer.Flush): the calls
// waiting for the write, and the frames gathered behind them, go on, on
// the loop itself when nothing else waits there, into the server writer
// the loop holds. The loop goes on with a fresh burst. The relay loop
// calls it at the burst's end and before any push that may block: the
// Sequencer may be waiting for this very write, which only the loop
// makes. It returns the error of a send to the server (wrapping
// ErrFatal).
func (s *Session) flushBurst() error { return s.flush(true) }

// flush is flushBurst; again says whether a burst goes on after it.
func (s *Session) flush(again bool) error {
	b := s.burst
	if b == nil {
		return nil
	}
	if b.done == nil {
		// No staged call: nothing waits for a write (and no events).
		return s.toServerQ.Flush()
	}
	if len(b.events) > 0 {
		b.written, b.err = s.cfg.Log.WriteEvents(b.events)
		if b.err != nil {
			s.log.Error("decision log write failed", "err", b.err)
		}
	}
	close(b.done)
	events := b.events[:0]
	if cap(events) > maxStagedBytes*2 {
		events = nil
	}
	if again {
		s.burst = &logBurst{events: events}
	} else {
		b.events = events // kept by endBurst for the next burst
	}
	return s.toServerQ.Flush()
}

// stageEvent adds a staged call's encoded event to the burst and returns
// the burst and the event's end offset in it.
func (s *Session) stageEvent(event []byte) (*logBurst, int) {
	b := s.burst
	if b.done == nil {
		b.done = make(chan struct{})
	}
	b.events = append(b.events, event...)
	end := len(b.events)
	if end >= maxStagedBytes {
		// Written now; the call's frame follows at once. A failed send
		// fails the Sequencer: the next push reports it.
		_ = s.flushBurst()
	}
	return b, end
}

// loopPush sends a frame of the client relay loop to the server through
// the Sequencer, behind what waits there: after (nil for none) and ready
// as pipeline.Sequencer.PushAfter. While a burst is gathered, a push that
// would block (the Sequencer full, or a frame too big to be copied) first
// writes the burst: the loop never waits on a Sequencer that waits for it.
func (s *Session) loopPush(frame []byte, after <-chan struct{}, ready pipeline.Ready) error {
	if s.burst != nil {
		if len(frame) < transport.BigFrame {
			err := s.toServerQ.TryPushAfter(frame, after, ready)
			if !errors.Is(err, pipeline.ErrFull) {
				return err
			}
		}
		if err := s.flushBurst(); err != nil {
			return err
		}
	}
	return s.toServerQ.PushAfter(frame, after, ready)
}

// deliverHeld sends what a held call or batch decided (from its own
// goroutine) through the Sequencer to the server, behind what waits there.
// The frame is the goroutine's own copy. wanted, when not nil, is asked
// again when the frame leaves: a request the client cancelled meanwhile
// (its notifications/cancelled goes to the server at once) is not sent.
func (s *Session) deliverHeld(frame []byte, forward bool, reply []byte, wanted func() bool) error {
	if !forward {
		if reply == nil {
			return nil
		}
		frame = nil
	}
	return s.toServerQ.PushAfter(frame, nil, func() (bool, []byte) {
		return forward && (wanted == nil || wanted()), reply
	})
}
