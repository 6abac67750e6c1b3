// Package gateway is the per-connection pipeline between one MCP client and
// one MCP server: it classifies every frame, tracks pending requests in both
// directions, learns the negotiated protocol revision and the server's tool
// catalog, decides every tools/call by policy, records the decision, and then
// forwards the original bytes or answers the client itself.
//
// A Session knows nothing of processes or byte streams: it is given two
// message-level connections (transport.Conn), one to the client and one to
// the server, by the stdio front end (or a test, or another front end).
// Requests flow client -> server through RunClient; responses, server
// requests and notifications flow server -> client through RunServer. The
// two run concurrently; all shared state is guarded. The principal and the
// server are data in Config, so many sessions can share one process.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse-mcp/gatehouse/internal/decisionlog"
	"github.com/gatehouse-mcp/gatehouse/internal/jsonrpc"
	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
	"github.com/gatehouse-mcp/gatehouse/internal/pipeline"
	"github.com/gatehouse-mcp/gatehouse/internal/policy"
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
	"github.com/gatehouse-mcp/gatehouse/internal/toolstate"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
	"github.com/gatehouse-mcp/gatehouse/internal/wire"
)

// Gateway error codes sent to the client, in the JSON-RPC
// implementation-defined server error range -32000..-32099 (JSON-RPC 2.0
// §5.1), chosen clear of codes MCP itself assigns.
const (
	// CodeDenied answers a tools/call that policy denied.
	CodeDenied = -32080
	// CodeNotRecorded answers a tools/call refused because its decision
	// could not be written to the decision log (fail closed).
	CodeNotRecorded = -32081
	// CodeBusy answers a tools/call (or a batch) that would have to wait
	// for a tools/list fetch while Config.MaxHeld calls already wait.
	CodeBusy = -32083
)

// Recorder is the request-receipt sidecar hook (see package receipts). The
// gateway calls Open at the first client frame that is not server/discover
// and Record after each tools/call decision event was emitted.
type Recorder interface {
	// Open creates the sidecar file. An error ends the session before the
	// frame that triggered it is forwarded.
	Open() error
	// Record binds the exact received line to the emitted decision event.
	Record(line []byte, decision decisionlog.Event, rpcIDPresent bool, rpcIDRaw []byte)
}

// Config is what a Session needs. Policy must be non-nil; every other field
// may be zero.
type Config struct {
	// Policy decides tools/call requests.
	Policy *policy.Policy
	// Principal is who is calling (--principal, --role).
	Principal policy.Principal
	// ServerID names the server for policy and evidence (--server-id).
	ServerID string
	// Log is the decision log; nil records decisions to Logger only.
	Log *decisionlog.Log
	// Receipts is the request-receipt sidecar; nil when off.
	Receipts Recorder
	// Evidence records receipts and audit-ledger entries; nil when off.
	Evidence Evidence
	// StrongKeys are the params._meta keys whose string value is a strong
	// tool_call_id; nil means decisionlog.DefaultStrongKeys.
	StrongKeys []string
	// FetchTimeout bounds the private tools/list a call to an unknown tool
	// waits for; <= 0 means 5 seconds.
	FetchTimeout time.Duration
	// MaxHeld bounds the tools/call requests (and batches) that wait at
	// once for a private tools/list fetch, each on a goroutine of its own;
	// past it the client gets CodeBusy at once. <= 0 means 256.
	MaxHeld int
	// Scanner inspects tools/call arguments, responses, server
	// notifications and requests, the client's answers to them and
	// tools/list definitions (docs/scanning.md), as the policy's scanning
	// block says; nil turns scanning off (every scan result not_run).
	Scanner *scan.Scanner
	// Tools keeps the server's tool baselines, observations and holds
	// (docs/drift.md); nil keeps them in memory for the session (drift
	// is then found between listings of one run only).
	Tools toolstate.Store
	// Baseline overrides the policy's drift.baseline when not empty
	// (policy.BaselineFirstUse or policy.BaselineRequire; wrap
	// --baseline).
	Baseline string
	// ToolsPoll is how often the session asks Tools whether another
	// gateway or a review command changed it; <= 0 means one second.
	ToolsPoll time.Duration
	// GatewayID names this gateway in the baselines and holds it records
	// (the evidence's gateway_id); "" means "gatehouse".
	GatewayID string
	// Logger receives diagnostics (stderr in the CLI); nil discards them.
	Logger *slog.Logger
	// Stages are more stages of the tools/call chain, after the
	// session's own (pipeline.Compile finds what each is by type
	// assertion): Deciders run after policy, Filters on every response to
	// a forwarded tools/call (in reverse order, before the outcome is
	// recorded: a verdict that does not forward withholds the response
	// with CodeWithheld; a rewrite is what the client gets), Recorders
	// after the evidence. Nil for none. The outcome record does not yet
	// carry a filter's verdict.
	Stages []pipeline.Stage
	// Shadow runs the session in shadow mode (gatehouse wrap --shadow; also
	// on when the policy says defaults.mode: shadow): every stage of the
	// chain, Config.Stages included, runs in shadow (pipeline.InShadow),
	// and the scan of other messages and the Evidence's receipt checks
	// likewise. Every verdict is evaluated and recorded
	// (shadow_mode: true, shadow_decisions), none is enforced: the
	// gateway relays exactly what it would with a policy that allows
	// everything, unknown tools included (docs/policy.md, "Shadow mode"):
	// no tool is held and every tools/list is relayed as received
	// (docs/drift.md). What shadow mode does not change: a decision or evidence record
	// that cannot be written still refuses the call (on_log_failure), and
	// the relay's own limits (frame size, JSON-RPC validity) still apply.
	Shadow bool
}

// shadowMode reports whether cfg runs in shadow mode: Config.Shadow, or
// the policy's defaults.mode: shadow.
func (cfg Config) shadowMode() bool {
	return cfg.Shadow || (cfg.Policy != nil && cfg.Policy.Settings().Mode == policy.ModeShadow)
}

// ErrFatal wraps errors that end the session: the peer's writer failed, or
// the receipt sidecar could not be created.
var ErrFatal = errors.New("session cannot continue")

// Session is one client connection relayed to one server.
type Session struct {
	cfg      Config
	settings policy.Settings
	shadow   bool // Config.shadowMode
	log      *slog.Logger
	client   transport.Conn
	server   transport.Conn
	toServer *peer
	toClient *peer

	mu          sync.Mutex
	pendingC2S  map[string]*pending // client requests awaiting the server
	pendingS2C  map[string]string   // server requests awaiting the client: their method
	private     map[string]chan []byte
	revision    mcp.Revision // negotiated (initialize) or last declared (stateless)
	lastMeta    []byte       // params._meta of the last stateless request, for private requests
	receiptsErr error
	// goneMessage is ServerGone's message once the server has exited: a
	// request arriving later is answered with it (goneReply).
	goneMessage string

	// refreshing holds one token while a private tools/list fetch runs:
	// one fetch at a time. A channel, not a mutex, so that a call waiting
	// for its turn is durably blocked (testing/synctest transcripts).
	refreshing chan struct{}
	// listChangedPending is set while a refresh that a
	// notifications/tools/list_changed started waits or runs
	// (refreshOnListChanged): one covers every notification before it.
	listChangedPending atomic.Bool
	held               sync.WaitGroup // tools/call waiting for a catalog fetch or evidence
	holding            atomic.Int64   // calls and batches held for a catalog fetch now (<= cfg.MaxHeld)

	// toServerQ delivers every client frame to the server in order
	// (pipeline.Sequencer: a frame waits for its evidence, or for its
	// burst's decision-log write, and nothing overtakes anything); with
	// Evidence on, toClientQ does the same for server frames (nil
	// otherwise).
	toServerQ, toClientQ *pipeline.Sequencer
	// bursts is set when the client loop gathers a burst's decision
	// events into one write (burst.go): a decision log and neither
	// Evidence nor receipts. burst is the one being gathered (nil
	// outside a burst), spareEvents a buffer kept for the next; only the
	// client relay loop uses them.
	bursts      bool
	burst       *logBurst
	spareEvents []byte
	opened      atomic.Bool
	// initialized is set when the client's notifications/initialized is
	// forwarded: private tools/list fetches wait for it (fetchAllowed).
	initialized atomic.Bool
	privSeq     atomic.Uint64
	privNonce   string
	catalog     *catalog
	stats       Stats
	// chain holds the session's stages, compiled once at New
	// (compileChain); info is the session as the stages see it.
	chain *pipeline.Chain
	info  pipeline.SessionInfo
	// scan is the chain's scan stage, nil without a Config.Scanner; it
	// also scans the messages that are not tools/call (scanMessage).
	scan *scanStage
	// drift compares listings with the baselines and holds tools
	// (drift.go); the chain's drift stage asks it per call.
	drift *driftTracker

	// clientGone is closed at the first failed write to the client;
	// clientErr is that failure (ClientGone, ClientErr).
	clientGone     chan struct{}
	clientGoneOnce sync.Once
	clientErr      error
}

type pending struct {
	method string
	cursor bool // tools/list with a cursor param
	// call is a forwarded tools/call with Evidence on, for its outcome
	// (the chain's PhaseOutcome); nil otherwise.
	call *pipeline.Call
	// id is the request's id token as received (a copy), to answer it
	// by when the server is gone (ServerGone).
	id []byte
	// abandoned is set (s.mu held) when ServerGone answered the request:
	// a call still being decided must then neither be forwarded nor
	// answered again.
	abandoned bool
}

// Stats counts what a session saw; read it after the session ends.
type Stats struct {
	ToolCalls, Denied, Rejected, Dropped atomic.Int64
}

// New returns a Session between client and server. The Session reads from
// and writes to both; it never closes them (the front end that made them
// does, when the session's relay loops have returned).
func New(cfg Config, client, server transport.Conn) *Session {
	if cfg.Policy == nil {
		cfg.Policy = policy.Default()
	}
	if cfg.StrongKeys == nil {
		cfg.StrongKeys = decisionlog.DefaultStrongKeys
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 5 * time.Second
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 256
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	sess := &Session{
		cfg:        cfg,
		settings:   cfg.Policy.Settings(),
		shadow:     cfg.shadowMode(),
		log:        lg,
		client:     client,
		server:     server,
		toServer:   newPeer(server),
		toClient:   newPeer(client),
		pendingC2S: map[string]*pending{},
		pendingS2C: map[string]string{},
		private:    map[string]chan []byte{},
		privNonce:  strconv.FormatInt(time.Now().UnixNano(), 36),
		catalog:    newCatalog(),
		clientGone: make(chan struct{}),
		refreshing: make(chan struct{}, 1),
	}
	sess.info = pipeline.SessionInfo{PrincipalID: cfg.Principal.ID, Role: cfg.Principal.Role, ServerID: cfg.ServerID}
	sess.drift = newDriftTracker(cfg, lg, sess.emitDrift, sess.catalog.invalidate, sess.directives)
	chain, err := compileChain(cfg, sess.catalog, lg, sess)
	if err != nil {
		panic(err) // the stages are fixed: two with one name is a defect
	}
	sess.chain = chain
	sess.bursts = cfg.Log != nil && cfg.Evidence == nil && cfg.Receipts == nil
	// An answer the client cannot take (a refused call's) does not stop
	// the frames to the server: their events say they were forwarded.
	answerClient := func(b []byte) error { _ = sess.sendClient(b); return nil }
	sess.toServerQ = pipeline.NewSequencer(sess.sendServer, answerClient, sess.toServer.hold, sequencerDepth, func(err error) { sess.log.Error("relay to server failed", "err", err) })
	if cfg.Evidence != nil {
		sess.toClientQ = pipeline.NewSequencer(sess.sendClient, sess.sendClient, sess.toClient.hold, sequencerDepth, func(err error) {
			sess.log.Error("relay to client failed", "err", err)
			sess.markClientGone(err)
		})
	}
	return sess
}

// Stats returns the session's counters.
func (s *Session) Stats() *Stats { return &s.stats }

// Revision returns the negotiated protocol revision, or "" before one is
// known.
func (s *Session) Revision() mcp.Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision
}

// RunClient relays frames from the client until its Conn reports end of
// input. It returns nil at end of input or when ctx ends, or an error
// wrapping ErrFatal when the session cannot continue (the write to the
// server failed, the receipt file was taken), or the client Conn's read
// error.
func (s *Session) RunClient(ctx context.Context) error {
	defer s.toServerQ.Close()
	// Calls still held (catalog fetch) are decided before the client side
	// is reported done and the queue closes (deferred calls run last-in
	// first-out).
	defer s.held.Wait()
	return s.relay(ctx, s.client, "client", s.toServer, s.handleClient, s.clientOversized, true)
}

// RunServer relays frames from the server until its Conn reports end of
// input. It returns nil at end of input or when ctx ends, or an error
// wrapping ErrFatal when writing to the client failed, or the server
// Conn's read error.
func (s *Session) RunServer(ctx context.Context) error {
	defer s.closePrivate()
	if s.toClientQ != nil {
		// Responses still waiting for their evidence are relayed before
		// the server side is reported done.
		defer s.toClientQ.Close()
	}
	return s.relay(ctx, s.server, "server", s.toClient, s.handleServer, s.serverOversized, false)
}

// relay is the loop of one direction: read a frame from src, hand it to
// handle (or an oversized one to oversized), until src ends (nil), ctx
// ends (nil) or a handler fails (its error).
//
// While further whole frames are already buffered (transport.Buffered),
// the loop holds dst, the peer its frames mostly go to
// (transport.Holder): frames that arrived
// together are then written together, in one write, and a frame that
// arrives alone is written at once. The hold is released before the loop
// can block on reading, so nothing handled waits for more input. Without
// Evidence no handler blocks (catalog fetches run on their own
// goroutines); with Evidence the loop does not hold at all.
//
// client is set for the client loop: while it holds dst it gathers a
// burst of decision events (burst.go, when the session does), written
// before every release.
func (s *Session) relay(ctx context.Context, src transport.Conn, from string, dst *peer, handle func(*transport.Frame) error, oversized func(*wire.FrameTooLargeError) error, client bool) (err error) {
	buffered := func() bool { return false }
	if b, ok := src.(transport.Buffered); ok {
		buffered = b.Buffered
	}
	holding := false
	defer func() {
		if holding {
			var ferr error
			if client {
				ferr = s.endBurst()
			}
			if ferr != nil && err == nil {
				err = ferr
			}
			if rerr := dst.Release(); rerr != nil && err == nil {
				err = fmt.Errorf("%w: %w", ErrFatal, rerr)
			}
		}
	}()
	for {
		if ctx.Err() != nil {
			return nil
		}
		if holding && !buffered() {
			holding = false
			var ferr error
			if client {
				ferr = s.endBurst()
			}
			// Released even when the flush failed: what it wrote to dst
			// before the failure has its events in the log.
			if err := dst.Release(); err != nil {
				return fmt.Errorf("%w: %w", ErrFatal, err)
			}
			if ferr != nil {
				return ferr
			}
		}
		frame, err := src.Read(ctx)
		if err != nil {
			var tooLarge *wire.FrameTooLargeError
			if errors.As(err, &tooLarge) {
				if err := oversized(tooLarge); err != nil {
					return err
				}
				continue
			}
			if err == io.EOF || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read from %s: %w", from, err)
		}
		// With Evidence on, a handler may wait for the ledger (a batch's
		// members are decided in place), and nothing may wait behind that
		// wait: the loop then never holds, and the ordered queues do
		// what coalescing is possible.
		if !holding && s.cfg.Evidence == nil && buffered() {
			dst.Hold()
			holding = true
			if client {
				s.beginBurst()
			}
		}
		big := len(frame.Raw) >= bigFrame
		if err := handle(frame); err != nil {
			return err
		}
		if big {
			// The frame's buffer is garbage now, even while the loop
			// waits for the next frame: the other direction's big frame
			// (the response to this one) must not find it still held.
			frame.Done()
			releaseMemory()
		}
	}
}

// sequencerDepth bounds the frames waiting in each direction's sequencer
// for their evidence or their burst's decision-log write; a full
// sequencer makes the relay loop wait (backpressure). A variable only so
// that tests can make it small.
var sequencerDepth = 1024

// bigFrame is the frame size from which the memory a frame used is given
// back to the operating system once it is handled: a 16 MiB frame must not
// leave the process 16 MiB (and its garbage) larger for the rest of the
// session.
const bigFrame = transport.BigFrame

// releaseMemory asks for a garbage collection that returns freed memory to
// the operating system (runtime/debug.FreeOSMemory), on a goroutine of its
// own: it costs a few milliseconds (2-3 ms after a 1 MiB frame, most of a
// 1 MiB tools/call's time through the session when it ran on the relay
// loop), so it runs only after big frames and never on the path of one.
// Requests made while one runs are served by one more run after it; the
// goroutine is shared by every session of the process (the heap is).
func releaseMemory() {
	releaserOnce.Do(func() { go releaser() })
	select {
	case releaseRequests <- struct{}{}:
	default: // one is already pending
	}
}

var (
	releaseRequests = make(chan struct{}, 1)
	releaserOnce    sync.Once
)

func releaser() {
	for range releaseRequests {
		debug.FreeOSMemory()
	}
}

// hold reserves one of the MaxHeld places of a call or batch that waits
// for a catalog fetch on a goroutine of its own; false when all are taken.
// Every true is followed by one unhold.
func (s *Session) hold() bool {
	if s.holding.Add(1) > int64(s.cfg.MaxHeld) {
		s.holding.Add(-1)
		return false
	}
	s.held.Add(1)
	return true
}

// WaitHeld waits at most d for the calls and batches held for a catalog
// fetch to be decided and recorded, and reports whether none is left. The
// front end calls it after ServerGone (which ends their fetches), before it
// closes the evidence the held calls still write to: the relay from the
// client, which waits for them too, may still be blocked reading.
func (s *Session) WaitHeld(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.holding.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// unhold gives back a place taken by hold.
func (s *Session) unhold() {
	s.holding.Add(-1)
	s.held.Done()
}

// busyReason is the reason recorded and sent with CodeBusy.
func (s *Session) busyReason() string {
	return "too many calls are waiting for the server's tools/list (" + strconv.Itoa(s.cfg.MaxHeld) + "); try again"
}

func (s *Session) closePrivate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ch := range s.private {
		close(ch)
		delete(s.private, k)
	}
}

// relayToServer forwards a frame of the client relay loop through the
// Sequencer to the server (loopPush): at once when nothing waits there.
// ready, when not nil, decides when the frame leaves whether it still
// goes (a request the client cancelled meanwhile does not); it must not
// block.
func (s *Session) relayToServer(frame []byte, ready func() (bool, []byte)) error {
	return s.loopPush(frame, nil, ready)
}

// relayToClient forwards a server frame: through the sequencer when there
// is one, else at once; ready (nil: forward) says whether it goes or what
// answer replaces it.
func (s *Session) relayToClient(frame []byte, ready func() (bool, []byte)) error {
	if s.toClientQ != nil {
		_ = s.toClientQ.Push(frame, ready) // ErrSequencerClosed only after RunServer returned
		return nil
	}
	if ready != nil {
		// No sequencer (no evidence to wait for): ready does not block,
		// and says at once whether the frame goes or what replaces it.
		fwd, reply := ready()
		if reply != nil {
			if err := s.sendClient(reply); err != nil {
				return err
			}
		}
		if !fwd {
			return nil
		}
	}
	return s.sendClient(frame)
}

// peer is the writing side of one Conn as the session uses it: whole
// frames, and holds that gather them when the Conn supports it.
type peer struct {
	conn transport.Conn
	hold transport.Holder // nil when the Conn cannot gather writes
}

func newPeer(c transport.Conn) *peer {
	p := &peer{conn: c}
	if h, ok := c.(transport.Holder); ok {
		p.hold = h
	}
	return p
}

// WriteFrame writes frame, one or more whole messages with terminators.
func (p *peer) WriteFrame(frame []byte) error { return p.conn.Write(context.Background(), frame) }

// Hold starts a period of gathered writes, when the Conn supports it.
func (p *peer) Hold() {
	if p.hold != nil {
		p.hold.Hold()
	}
}

// Release ends a Hold; it returns the gathered write's error.
func (p *peer) Release() error {
	if p.hold != nil {
		return p.hold.Release()
	}
	return nil
}

// sendClient writes one frame to the client. A failure marks the client
// gone (ClientGone).
func (s *Session) sendClient(frame []byte) error {
	if err := s.toClient.WriteFrame(frame); err != nil {
		err = fmt.Errorf("%w: to client: %w", ErrFatal, err)
		s.markClientGone(err)
		return err
	}
	return nil
}

// markClientGone records the first failed write to the client.
func (s *Session) markClientGone(err error) {
	s.clientGoneOnce.Do(func() {
		s.mu.Lock()
		s.clientErr = err
		s.mu.Unlock()
		close(s.clientGone)
	})
}

// ClientGone is closed once a write to the client has failed (its end of
// the stream is closed: EPIPE, say). Nothing more can reach the client; the
// front end should end the session. A failure found by a relay loop is also
// returned by it, but one found by the ordered queue to the client (Evidence
// on) is reported only here.
func (s *Session) ClientGone() <-chan struct{} { return s.clientGone }

// ClientErr returns the failed write that closed ClientGone (wrapping
// ErrFatal), or nil while the client is still there.
func (s *Session) ClientErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientErr
}

// ServerGone answers every client request still pending (sent to the
// server, or being decided) with a JSON-RPC -32603 internal error carrying
// message, and ends the gateway's own tools/list fetches: the server has
// exited and nothing will answer them; a request that arrives later (a
// batch held for the catalog fetch, say) gets the same answer at once. A
// tools/call still waiting for its
// catalog fetch or its evidence is then neither forwarded nor answered
// again. Call it once the server has exited and its output was read to the
// end (or given up on). It returns the first failed write to the client,
// wrapping ErrFatal; every request is tried either way.
func (s *Session) ServerGone(message string) error {
	s.mu.Lock()
	s.goneMessage = message
	ids := make([][]byte, 0, len(s.pendingC2S))
	for k, p := range s.pendingC2S {
		delete(s.pendingC2S, k)
		p.abandoned = true
		if p.id != nil {
			ids = append(ids, p.id)
		}
	}
	s.mu.Unlock()
	s.closePrivate()
	var first error
	for _, id := range ids {
		if err := s.sendClient(errorFrame(jsonrpc.NewID(id), jsonrpc.CodeInternalError, message, nil)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sendServer writes one frame to the server.
func (s *Session) sendServer(frame []byte) error {
	if err := s.toServer.WriteFrame(frame); err != nil {
		return fmt.Errorf("%w: to server: %w", ErrFatal, err)
	}
	return nil
}

// errorFrame builds a JSON-RPC error response with the given id (null when
// absent), code and message, and optional raw JSON data.
func errorFrame(id jsonrpc.ID, code int, message string, data []byte) []byte {
	b := make([]byte, 0, 128+len(message)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id.Present() {
		b = append(b, id.Raw()...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, "}}\n"...)
	return b
}

// record notes a frame the gateway refused, dropped or could not relay: a
// warning on the diagnostic logger and, when a decision log is configured, a
// gatehouse.frame.rejected.v1 event. Frame contents are never recorded.
func (s *Session) record(direction, reason string, code int, size int, id jsonrpc.ID) {
	s.stats.Rejected.Add(1)
	s.log.Warn("frame refused", "direction", direction, "reason", reason, "bytes", size)
	if s.cfg.Log == nil {
		return
	}
	data := frameRejected{Direction: direction, Reason: reason, Code: code, Bytes: size}
	if id.Present() {
		data.RPCID = id.Raw()
	}
	if _, err := s.cfg.Log.Emit(decisionlog.TypeFrameRejected, data); err != nil {
		s.log.Error("decision log write failed", "err", err)
	}
}

type frameRejected struct {
	Direction string  `json:"direction"`
	Reason    string  `json:"reason"`
	Code      int     `json:"code,omitempty"`
	Bytes     int     `json:"bytes"`
	RPCID     rawJSON `json:"rpc_id,omitempty"`
	// Relayed marks a frame recorded as a fault but relayed all the same
	// (an error response with id null, see Session.nullIDError).
	Relayed bool `json:"relayed,omitempty"`
}

// appendJSONString appends s as a JSON string (RFC 8259 §7): control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	// Only invalid UTF-8 makes AppendQuote report an error, and it has
	// then still written the string with U+FFFD in its place.
	out, _ := jsontext.AppendQuote(b, s)
	return out
}

// rawJSON is a json.RawMessage that marshals as itself.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}
