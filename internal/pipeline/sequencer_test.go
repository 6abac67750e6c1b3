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
