package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/drift"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
)

// brokenStore is a tool-state store whose writes fail (a full disk, a
// PostgreSQL gone): reads answer from an empty in-memory store.
type brokenStore struct{ *toolstate.Mem }

var errBroken = errors.New("disk full")

func (brokenStore) FirstUse(context.Context, toolstate.Baseline) (toolstate.Baseline, bool, error) {
	return toolstate.Baseline{}, false, errBroken
}
func (brokenStore) Observe(context.Context, []toolstate.Observation) error { return errBroken }
func (brokenStore) Hold(context.Context, toolstate.Quarantine) error       { return errBroken }

func driftTool(externality string) mcp.Tool {
	return mcp.Tool{Name: "lookup", Description: "Look up a word.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`),
		Meta:        json.RawMessage(`{"dev.gatehouse/security":{"side_effect":"read_only","externality":"` + externality + `"}}`)}
}

// TestDriftStoreFailureHoldsInMemory: when the tool state cannot be
// written, drift is still found and held for the rest of the run (fail
// closed): the first listing's baseline and the hold are kept in the
// gateway.
func TestDriftStoreFailureHoldsInMemory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store toolstate.Store
	}{{"working store", toolstate.NewMem()}, {"store writes fail", brokenStore{toolstate.NewMem()}}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriftTracker(Config{Policy: policy.Default(), Tools: tc.store, ServerID: "srv"}, slog.New(slog.DiscardHandler), nil, nil, nil)
			facts := func(string) *toolFacts { return nil }
			base := []mcp.Tool{driftTool("internal")}
			cur0 := driftTool("external")
			d.observe(base, true, true, base, facts)
			baseHash, _ := drift.Hash(base[0])
			curHash, _ := drift.Hash(cur0)
			if cd := d.forCall("lookup", true, baseHash); cd.decided {
				t.Fatalf("the baseline itself: %+v", cd.verdict)
			}
			cur := []mcp.Tool{cur0}
			held := d.observe(cur, true, true, cur, facts)
			if !held["lookup"] {
				t.Fatalf("critical drift not held: %v", held)
			}
			cd := d.forCall("lookup", true, curHash)
			if !cd.decided || cd.verdict.Action != pipeline.Quarantine || cd.result == nil || cd.result.Severity != "critical" {
				t.Fatalf("call after the drift: %+v %+v", cd.verdict, cd.result)
			}
			// Another writer changes the store (its version moves): the
			// reload keeps the hold the store never recorded.
			m := tc.store.(interface{ Share() *toolstate.Mem })
			if b, ok := tc.store.(brokenStore); ok {
				m = b.Mem
			}
			if err := m.Share().Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "other", By: "alice", Reason: "r"}); err != nil {
				t.Fatal(err)
			}
			d.mu.Lock()
			d.polled = time.Time{}
			d.mu.Unlock()
			d.poll()
			if cd := d.forCall("lookup", true, curHash); cd.verdict.Action != pipeline.Quarantine {
				t.Fatalf("after a reload: %+v", cd.verdict)
			}
		})
	}
}

// TestPersonsHoldNotSkippedByAListing: a person quarantines a tool in the
// shared store between two polls of a gateway; the gateway's next listing
// writes its observations, and its next poll still loads the hold (a
// listing that moved the tracker's version to the store's skipped it).
func TestPersonsHoldNotSkippedByAListing(t *testing.T) {
	mem := toolstate.NewMem()
	d := newDriftTracker(Config{Policy: policy.Default(), Tools: mem, ServerID: "srv"}, slog.New(slog.DiscardHandler), nil, nil, nil)
	facts := func(string) *toolFacts { return nil }
	base := []mcp.Tool{driftTool("internal")}
	d.observe(base, true, true, base, facts)
	if err := mem.Share().Hold(context.Background(), toolstate.Quarantine{ServerID: "srv", Tool: "lookup", By: "alice", Reason: "incident", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.polled = time.Now() // the listing comes before the poll is due
	d.mu.Unlock()
	d.observe(base, true, true, base, facts)
	d.mu.Lock()
	d.polled = time.Time{}
	d.mu.Unlock()
	d.poll()
	h, _ := drift.Hash(base[0])
	if cd := d.forCall("lookup", true, h); cd.verdict.Action != pipeline.Quarantine || cd.verdict.Rule != RuleManualHold {
		t.Fatalf("the person's hold is not in force: %+v", cd.verdict)
	}
}

// TestPageObservedForReview: a page of a listing the client never
// completes still records its tools' definitions, so that a person can
// diff and approve them (before, only complete listings were observed:
// under --baseline require such a tool could never be approved).
func TestPageObservedForReview(t *testing.T) {
	mem := toolstate.NewMem()
	d := newDriftTracker(Config{Policy: policy.Default(), Tools: mem, ServerID: "srv", Baseline: policy.BaselineRequire}, slog.New(slog.DiscardHandler), nil, nil, nil)
	page := []mcp.Tool{driftTool("internal")}
	d.observe(page, true, false, nil, func(string) *toolFacts { return nil })
	st, err := mem.Tool(context.Background(), "srv", "lookup")
	if err != nil || st.Observed == nil || st.Observed.Definition == nil {
		t.Fatalf("page not observed: %+v %v", st, err)
	}
	if _, err := mem.Approve(context.Background(), toolstate.Approval{ServerID: "srv", Tool: "lookup", ExpectHash: st.Observed.Hash, By: "alice", Reason: "ok", At: time.Now()}); err != nil {
		t.Fatalf("approve: %v", err)
	}
}
