package toolstate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Mem is a Store in memory: for tests, and for a gateway run without
// --state (its baselines last as long as the process). Several Mem values
// may share one in-memory database ([Mem.Share]), as several gateways share
// one PostgreSQL database. It passes internal/toolstate/storetest.
type Mem struct {
	db     *memDB
	mu     sync.Mutex // guards closed
	closed bool
}

// memDB is the database Mem values share.
type memDB struct {
	mu      sync.Mutex
	tools   map[memKey]*ToolState // values owned by the database: copied in and out
	version int64
}

type memKey struct{ server, tool string }

// NewMem returns an empty in-memory Store.
func NewMem() *Mem {
	return &Mem{db: &memDB{tools: map[memKey]*ToolState{}}}
}

// Share returns another Store on m's in-memory database: what one of them
// writes the other reads, and closing one leaves the other open. It is what
// a second gateway on the same PostgreSQL database would have.
func (m *Mem) Share() *Mem { return &Mem{db: m.db} }

// lock locks the database, or returns ErrClosed.
func (m *Mem) lock() (*memDB, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	m.db.mu.Lock()
	return m.db, nil
}

// Tools implements [Store.Tools].
func (m *Mem) Tools(ctx context.Context, serverID string) ([]ToolState, error) {
	db, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer db.mu.Unlock()
	var out []ToolState
	for k, s := range db.tools {
		if serverID == "" || k.server == serverID {
			out = append(out, s.clone())
		}
	}
	SortStates(out)
	return out, nil
}

// Tool implements [Store.Tool].
func (m *Mem) Tool(ctx context.Context, serverID, tool string) (ToolState, error) {
	db, err := m.lock()
	if err != nil {
		return ToolState{}, err
	}
	defer db.mu.Unlock()
	s, ok := db.tools[memKey{serverID, tool}]
	if !ok {
		return ToolState{}, fmt.Errorf("tool %q of server %q: %w", tool, serverID, ErrNotFound)
	}
	return s.clone(), nil
}

// entry returns the state of k, created empty when missing.
func (db *memDB) entry(server, tool string) *ToolState {
	k := memKey{server, tool}
	s, ok := db.tools[k]
	if !ok {
		s = &ToolState{ServerID: server, Tool: tool}
		db.tools[k] = s
	}
	return s
}

// drop removes k's state when nothing is left in it.
func (db *memDB) drop(server, tool string) {
	k := memKey{server, tool}
	if s, ok := db.tools[k]; ok && s.Baseline == nil && s.Observed == nil && s.Quarantine == nil {
		delete(db.tools, k)
	}
}

// FirstUse implements [Store.FirstUse].
func (m *Mem) FirstUse(ctx context.Context, b Baseline) (Baseline, bool, error) {
	b, err := PrepareFirstUse(b, time.Now())
	if err != nil {
		return Baseline{}, false, err
	}
	db, err := m.lock()
	if err != nil {
		return Baseline{}, false, err
	}
	defer db.mu.Unlock()
	s := db.entry(b.ServerID, b.Tool)
	if s.Baseline != nil {
		return s.Baseline.clone(), false, nil
	}
	c := b.clone()
	s.Baseline = &c
	db.version++
	return b.clone(), true, nil
}

// Observe implements [Store.Observe].
func (m *Mem) Observe(ctx context.Context, obs []Observation) error {
	obs, err := PrepareObservations(obs, time.Now())
	if err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil
	}
	db, err := m.lock()
	if err != nil {
		return err
	}
	defer db.mu.Unlock()
	for _, o := range obs {
		c := o.clone()
		db.entry(o.ServerID, o.Tool).Observed = &c
	}
	db.version++
	return nil
}

// Approve implements [Store.Approve].
func (m *Mem) Approve(ctx context.Context, a Approval) (Approved, error) {
	a, err := PrepareApproval(a, time.Now())
	if err != nil {
		return Approved{}, err
	}
	db, err := m.lock()
	if err != nil {
		return Approved{}, err
	}
	defer db.mu.Unlock()
	s, ok := db.tools[memKey{a.ServerID, a.Tool}]
	var o *Observation
	if ok {
		o = s.Observed
	}
	b, err := ApprovedBaseline(a, o)
	if err != nil {
		return Approved{}, err
	}
	out := Approved{Baseline: b}
	if s.Baseline != nil {
		p := s.Baseline.clone()
		out.Previous = &p
	}
	c := b.clone()
	s.Baseline = &c
	s.Observed.Severity, s.Observed.Changes = SeverityNone, nil
	if s.Quarantine != nil && s.Quarantine.Automatic {
		q := s.Quarantine.clone()
		out.Released = &q
		s.Quarantine = nil
	}
	db.version++
	return out, nil
}

// Hold implements [Store.Hold].
func (m *Mem) Hold(ctx context.Context, q Quarantine) error {
	q, err := PrepareHold(q, time.Now())
	if err != nil {
		return err
	}
	db, err := m.lock()
	if err != nil {
		return err
	}
	defer db.mu.Unlock()
	e := db.entry(q.ServerID, q.Tool)
	if q.Automatic && e.Quarantine != nil && !e.Quarantine.Automatic {
		return nil // a person's hold stays (Store.Hold)
	}
	c := q.clone()
	e.Quarantine = &c
	db.version++
	return nil
}

// Release implements [Store.Release].
func (m *Mem) Release(ctx context.Context, serverID, tool string) (Quarantine, error) {
	db, err := m.lock()
	if err != nil {
		return Quarantine{}, err
	}
	defer db.mu.Unlock()
	s, ok := db.tools[memKey{serverID, tool}]
	if !ok || s.Quarantine == nil {
		return Quarantine{}, fmt.Errorf("tool %q of server %q: %w", tool, serverID, ErrNotQuarantined)
	}
	q := *s.Quarantine
	s.Quarantine = nil
	db.drop(serverID, tool)
	db.version++
	return q, nil
}

// Version implements [Store.Version].
func (m *Mem) Version(ctx context.Context) (int64, error) {
	db, err := m.lock()
	if err != nil {
		return 0, err
	}
	defer db.mu.Unlock()
	return db.version, nil
}

// Close implements [Store.Close]: calls after it return ErrClosed; the
// database stays for the other Mem values sharing it.
func (m *Mem) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

var _ Store = (*Mem)(nil)

// SortStates sorts states by server id, then tool name (byte order), as
// [Store.Tools] returns them.
func SortStates(states []ToolState) {
	slices.SortFunc(states, func(a, b ToolState) int {
		return cmp.Or(cmp.Compare(a.ServerID, b.ServerID), cmp.Compare(a.Tool, b.Tool))
	})
}

func (s *ToolState) clone() ToolState {
	c := ToolState{ServerID: s.ServerID, Tool: s.Tool}
	if s.Baseline != nil {
		b := s.Baseline.clone()
		c.Baseline = &b
	}
	if s.Observed != nil {
		o := s.Observed.clone()
		c.Observed = &o
	}
	if s.Quarantine != nil {
		q := s.Quarantine.clone()
		c.Quarantine = &q
	}
	return c
}

func (b Baseline) clone() Baseline {
	b.Definition = slices.Clone(b.Definition)
	return b
}

func (o Observation) clone() Observation {
	o.Definition = slices.Clone(o.Definition)
	o.Changes = slices.Clone(o.Changes)
	return o
}

func (q Quarantine) clone() Quarantine {
	q.Changes = slices.Clone(q.Changes)
	return q
}
