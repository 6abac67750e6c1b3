package pipeline

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// sink records what a Sequencer sends, answers and writes (held writes
// gathered as one write).
type sink struct {
	mu      sync.Mutex
	holds   int
	pending []byte
	writes  []string // each write to the destination
	answers []string
	failAt  int // fail the nth send (1-based); 0 never
	sends   int
}

func (s *sink) send(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends++
	if s.failAt > 0 && s.sends >= s.failAt {
		return errors.New("broken pipe")
	}
	if s.holds > 0 {
		s.pending = append(s.pending, b...)
		return nil
	}
	s.writes = append(s.writes, string(b))
	return nil
}

func (s *sink) answer(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, string(b))
	return nil
}

func (s *sink) Hold() {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
}

func (s *sink) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds--
	if s.holds == 0 && len(s.pending) > 0 {
		s.writes = append(s.writes, string(s.pending))
		s.pending = nil
	}
	return nil
}

func (s *sink) got() (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.writes, ""), append([]string(nil), s.answers...)
}

var _ transport.Holder = (*sink)(nil)

func gate() (Ready, func()) {
	ch := make(chan struct{})
	return func() (bool, []byte) { <-ch; return true, nil }, func() { close(ch) }
}

// TestSequencerKeepsOrder: a frame pushed after one that waits does not
// overtake it, and frames before the wait are not held behind it.
func TestSequencerKeepsOrder(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, s, 0, nil)
	wait, open := gate()
	if err := q.Push([]byte("a\n"), nil); err != nil {
		t.Fatal(err)
	}
	q.Push([]byte("b\n"), wait)
	q.Push([]byte("c\n"), nil)
	deadline := time.Now().Add(2 * time.Second)
	for {
		out, _ := s.got()
		if out == "a\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("before b's evidence: sent %q, want a alone (a ready frame must not wait behind b)", out)
		}
		time.Sleep(time.Millisecond)
	}
	open()
	q.Close()
	if out, _ := s.got(); out != "a\nb\nc\n" {
		t.Fatalf("sent %q, want a b c in push order", out)
	}
}

// TestSequencerAnswersAndDrops: a Ready that refuses sends its answer and
// not the frame.
func TestSequencerAnswersAndDrops(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, nil, 0, nil)
	q.Push([]byte("call\n"), func() (bool, []byte) { return false, []byte("refused\n") })
	q.Push(nil, func() (bool, []byte) { return false, []byte("answer only\n") })
	q.Push([]byte("next\n"), nil)
	q.Close()
	out, answers := s.got()
	if out != "next\n" || strings.Join(answers, "") != "refused\nanswer only\n" {
		t.Fatalf("sent %q answers %q", out, answers)
	}
}

// TestSequencerBound: TryPush refuses at depth; Push waits for room.
func TestSequencerBound(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, nil, 2, nil)
	wait, open := gate()
	q.Push([]byte("w\n"), wait) // taken by the goroutine, which waits
	time.Sleep(10 * time.Millisecond)
	if err := q.TryPush([]byte("1\n"), nil); err != nil {
		t.Fatal(err)
	}
	if err := q.TryPush([]byte("2\n"), nil); err != nil {
		t.Fatal(err)
	}
	if err := q.TryPush([]byte("3\n"), nil); !errors.Is(err, ErrFull) {
		t.Fatalf("TryPush beyond depth: %v, want ErrFull", err)
	}
	pushed := make(chan struct{})
	go func() { q.Push([]byte("4\n"), nil); close(pushed) }()
	select {
	case <-pushed:
		t.Fatal("Push did not wait for room")
	case <-time.After(20 * time.Millisecond):
	}
	open()
	<-pushed
	q.Close()
	if out, _ := s.got(); out != "w\n1\n2\n4\n" {
		t.Fatalf("sent %q", out)
	}
	if err := q.Push([]byte("late\n"), nil); !errors.Is(err, ErrSequencerClosed) {
		t.Fatalf("Push after Close: %v", err)
	}
	q.Close() // idempotent
}

// TestSequencerFailureDrains: after a failed send nothing more is sent,
// onErr is called once, and every later item's Ready still runs once.
func TestSequencerFailureDrains(t *testing.T) {
	s := &sink{failAt: 1}
	var errs []error
	q := NewSequencer(s.send, s.answer, nil, 0, func(err error) { errs = append(errs, err) })
	readies := 0
	r := func() (bool, []byte) { readies++; return true, nil }
	for i := 0; i < 3; i++ {
		q.Push([]byte("x\n"), r)
	}
	q.Close()
	if len(errs) != 1 || readies != 3 || s.sends != 1 {
		t.Fatalf("errs %v readies %d sends %d; want one error, three readies, one send", errs, readies, s.sends)
	}
}

// TestSequencerGathersReadyFrames: frames queued together leave in one
// write to a Holder.
func TestSequencerGathersReadyFrames(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, s, 0, nil)
	wait, open := gate()
	q.Push([]byte("first\n"), wait)
	for _, f := range []string{"a\n", "b\n", "c\n"} {
		q.Push([]byte(f), nil)
	}
	open()
	q.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Join(s.writes, "") != "first\na\nb\nc\n" || len(s.writes) > 2 {
		t.Fatalf("writes %q, want the frames in order in at most two writes", s.writes)
	}
}

// TestSequencerBigFrameNotCopied: a frame of transport.BigFrame bytes is
// sent from the caller's buffer, and Push returns only after it left.
func TestSequencerBigFrameNotCopied(t *testing.T) {
	var sent []byte
	q := NewSequencer(func(b []byte) error { sent = b; return nil }, func([]byte) error { return nil }, nil, 0, nil)
	big := bytes.Repeat([]byte("x"), transport.BigFrame)
	q.Push(big, nil)
	if sent == nil || &sent[0] != &big[0] {
		t.Fatal("big frame was copied, or Push returned before it was sent")
	}
	small := []byte("small\n")
	q.Push(small, nil)
	q.Close()
	if &sent[0] == &small[0] {
		t.Fatal("small frame was not copied")
	}
}

// TestSequencerPushAfterLeavesTogether: items that wait for one after
// channel (a burst's decision-log write) leave, once it is closed, in one
// write together with the frames queued behind them, and frames before
// them are not held behind the wait.
func TestSequencerPushAfterLeavesTogether(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, s, 0, nil)
	wait, open := gate()
	q.Push([]byte("w\n"), wait) // keeps the Sequencer busy: nothing inline
	done := make(chan struct{})
	refuse := func() (bool, []byte) { return false, []byte("refused\n") }
	q.PushAfter([]byte("a\n"), done, nil)
	q.PushAfter([]byte("b\n"), done, refuse)
	q.PushAfter([]byte("c\n"), done, nil)
	q.PushAfter([]byte("d\n"), nil, nil)
	open()
	time.Sleep(20 * time.Millisecond)
	if out, _ := s.got(); out != "w\n" {
		t.Fatalf("before after is closed: sent %q, want only w", out)
	}
	close(done)
	q.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Join(s.writes, "") != "w\na\nc\nd\n" || s.writes[len(s.writes)-1] != "a\nc\nd\n" {
		t.Fatalf("writes %q, want w, then a c d in one write", s.writes)
	}
	if strings.Join(s.answers, "") != "refused\n" {
		t.Fatalf("answers %q", s.answers)
	}
}

// TestSequencerPushAfterInlineWhenIdle: when nothing waits, an item with
// nothing to wait for is finished on the pusher's goroutine before
// PushAfter returns (a lone frame is not delayed), its send's error is
// returned, and the failure fails the Sequencer for later pushes.
func TestSequencerPushAfterInlineWhenIdle(t *testing.T) {
	s := &sink{failAt: 2}
	var errs []error
	q := NewSequencer(s.send, s.answer, nil, 0, func(err error) { errs = append(errs, err) })
	defer q.Close()
	if err := q.PushAfter([]byte("a\n"), nil, func() (bool, []byte) { return true, []byte("note\n") }); err != nil {
		t.Fatal(err)
	}
	if out, answers := s.got(); out != "a\n" || strings.Join(answers, "") != "note\n" {
		t.Fatalf("after PushAfter returned: sent %q answered %q, want both done", out, answers)
	}
	closed := make(chan struct{})
	close(closed)
	if err := q.PushAfter([]byte("b\n"), closed, nil); err == nil {
		t.Fatal("the inline send failed, PushAfter returned nil")
	}
	if err := q.Push([]byte("c\n"), nil); err == nil || len(errs) != 1 {
		t.Fatalf("Push after a failed send: %v (onErr called %d times), want the failure once", err, len(errs))
	}
}

// TestSequencerGroupFlushedInline: an item pushed with PushAfter while
// the Sequencer is idle opens a group: it and the items pushed after it
// (from any goroutine) are gathered in push order, bounded by depth
// (TryPushAfter: ErrFull), and Flush, once after is closed, finishes them
// on its caller's goroutine before it returns, each Ready once.
func TestSequencerGroupFlushedInline(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, s, 3, nil)
	defer q.Close()
	done := make(chan struct{})
	if err := q.PushAfter([]byte("a\n"), done, nil); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan error)
	go func() {
		pushed <- q.PushAfter([]byte("b\n"), nil, func() (bool, []byte) { return false, []byte("no b\n") })
	}()
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	if err := q.TryPushAfter([]byte("c\n"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := q.TryPushAfter([]byte("d\n"), nil, nil); !errors.Is(err, ErrFull) {
		t.Fatalf("TryPushAfter beyond depth: %v, want ErrFull", err)
	}
	time.Sleep(10 * time.Millisecond)
	if out, _ := s.got(); out != "" {
		t.Fatalf("before Flush: sent %q, want nothing", out)
	}
	close(done)
	s.Hold() // as the relay loop does during a burst
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.writes) != 1 || s.writes[0] != "a\nc\n" || strings.Join(s.answers, "") != "no b\n" {
		t.Fatalf("after Flush: writes %q answers %q, want a c in one write and b answered", s.writes, s.answers)
	}
}

// TestSequencerGroupQueuedWhenBusy: a group flushed while an earlier item
// still waits is queued as one item, behind it, and leaves in one write.
func TestSequencerGroupQueuedWhenBusy(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, s, 0, nil)
	done := make(chan struct{})
	q.PushAfter([]byte("a\n"), done, nil) // opens a group
	q.PushAfter([]byte("b\n"), nil, nil)
	close(done)
	wait, open := gate()
	// The group is flushed while something else is queued: a Push made
	// before the Flush goes first (it is queued, the group gathered).
	q.mu.Lock()
	q.queued.Add(1)
	q.items <- seqItem{frame: []byte("w\n"), ready: wait}
	q.mu.Unlock()
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	open()
	q.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Join(s.writes, "") != "w\na\nb\n" || !strings.HasSuffix(s.writes[len(s.writes)-1], "a\nb\n") {
		t.Fatalf("writes %q, want w, then a b in one write", s.writes)
	}
}

// TestSequencerGroupBackpressure: a Push while the group holds depth
// items waits for the Flush (then it is sent after the group).
func TestSequencerGroupBackpressure(t *testing.T) {
	s := &sink{}
	q := NewSequencer(s.send, s.answer, nil, 1, nil)
	defer q.Close()
	done := make(chan struct{})
	q.PushAfter([]byte("a\n"), done, nil) // opens a group, now full
	pushed := make(chan error, 1)
	go func() { pushed <- q.PushAfter([]byte("b\n"), nil, nil) }()
	select {
	case err := <-pushed:
		t.Fatalf("Push into a full group returned %v, want it to wait for Flush", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(done)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	if out, _ := s.got(); out != "a\nb\n" {
		t.Fatalf("sent %q, want a then b", out)
	}
}
