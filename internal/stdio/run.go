package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse-mcp/gatehouse/internal/gateway"
	"github.com/gatehouse-mcp/gatehouse/internal/transport"
)

// Exit codes of `gatehouse wrap` other than the server's own code (see the
// README's "Exit status").
const (
	// ExitUsage is a command-line usage error.
	ExitUsage = 64
	// ExitStartFailed means the server process could not be started.
	ExitStartFailed = 69
	// ExitGatewayFailure means Gatehouse failed after the server started
	// (e.g. the receipt file was taken, or a peer stream failed).
	ExitGatewayFailure = 70
	// ExitConfig means the configuration was refused before any spawn.
	ExitConfig = 78
	// ExitSignalBase plus a signal number is the exit code when the server
	// was killed by that signal.
	ExitSignalBase = 128
)

// Options configure one wrap run.
type Options struct {
	// Argv is the server command and its arguments, passed without a shell.
	Argv []string
	// Session configures the gateway pipeline.
	Session gateway.Config
	// MaxFrameBytes is the frame limit in bytes, terminator included, in
	// both directions; <= 0 means wire.DefaultMaxFrameBytes.
	MaxFrameBytes int
	// Grace is how long to wait after closing the server's stdin before
	// SIGTERM, and after SIGTERM before SIGKILL; <= 0 means 2 seconds.
	Grace time.Duration
	// Stdin, Stdout and Stderr are the client's streams and the diagnostic
	// stream; nil means the process's own.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// OnStart is called once the server is running, before any frame is
	// relayed (the session start event is written there).
	OnStart func(pid int)
	// OnStop is called once the server has exited with why the session
	// ended ("client_eof", "server_exit", "signal", "gateway_failure") and
	// the exit code Run returns.
	OnStop func(reason string, code int)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Run starts the server, relays between the client and the server until one
// side ends, shuts the server down, and returns the exit code for the
// gateway process: the server's own exit code, ExitSignalBase+N when it was
// killed by signal N, ExitStartFailed or ExitGatewayFailure. The error
// explains any code Gatehouse chose itself.
func Run(ctx context.Context, o Options) (int, error) {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Grace <= 0 {
		o.Grace = 2 * time.Second
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	catchSIGPIPE()

	child, err := Start(o.Argv, o.Stderr)
	if err != nil {
		return ExitStartFailed, err
	}
	defer child.Reap()
	if o.OnStart != nil {
		o.OnStart(child.Pid())
	}
	// The two Conns: the client's stdin/stdout, and the server's pipes.
	// Neither is closed through its Conn: the client's streams are the
	// process's, and the child's pipes are closed by its shutdown.
	client := transport.NewStream(o.Stdin, o.Stdout, o.MaxFrameBytes, nil)
	server := transport.NewStream(child.Stdout(), child.Stdin(), o.MaxFrameBytes, nil)
	sess := gateway.New(o.Session, client, server)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clientDone := make(chan error, 1)
	serverDone := make(chan error, 1)
	go func() { clientDone <- sess.RunClient(ctx) }()
	go func() { serverDone <- sess.RunServer(ctx) }()

	reason := ""
	var failure error
	stopping := false
	stop := func(why string) {
		if stopping {
			return
		}
		stopping = true
		if reason == "" {
			reason = why
		}
		go child.Shutdown(o.Grace)
	}
	serverOut := serverDone
	clientIn := clientDone
	clientGone := sess.ClientGone()
	for done := false; !done; {
		select {
		case <-clientGone:
			// A write to the client failed (its end of our stdout is
			// closed): nothing can reach it any more. Found by the
			// ordered queue to the client, this is the only report.
			clientGone = nil
			if failure == nil {
				failure = sess.ClientErr()
			}
			lg.Error("the client is gone", "err", sess.ClientErr())
			stop("gateway_failure")
		case err := <-clientIn:
			clientIn = nil
			if err != nil {
				failure = err
				lg.Error("relay from client failed", "err", err)
				stop("gateway_failure")
			} else {
				stop("client_eof")
			}
		case err := <-serverOut:
			serverOut = nil
			if err != nil && errors.Is(err, gateway.ErrFatal) {
				failure = err
				lg.Error("relay to client failed", "err", err)
				stop("gateway_failure")
			} else {
				// The server closed its output: it is ending the
				// session. Give it the grace period to exit.
				stop("server_exit")
			}
		case sig := <-sigs:
			if reason == "" {
				reason = "signal"
			}
			s := sig.(syscall.Signal)
			lg.Info("forwarding signal to the server", "signal", s.String())
			stopping = true
			go child.Terminate(s, o.Grace)
		case <-child.Done():
			done = true
		}
	}
	if reason == "" {
		reason = "server_exit"
	}
	// Let the last frames the server wrote reach the client; a grandchild
	// holding the pipe open must not keep the gateway alive.
	if serverOut != nil {
		select {
		case <-serverOut:
			serverOut = nil
		case <-time.After(500 * time.Millisecond):
		}
	}
	cancel()
	child.Reap()
	st := child.Status()
	// The group is gone now, and with it any grandchild that held the
	// server's stdout open: what the server wrote last is relayed before
	// the requests it left unanswered are answered.
	if serverOut != nil {
		select {
		case <-serverOut:
		case <-time.After(500 * time.Millisecond):
		}
	}
	how := fmt.Sprintf("exit code %d", st.Code)
	if st.Signal != 0 {
		how = "killed by signal " + signalName(st.Signal)
	}
	if err := sess.ServerGone("gatehouse: the server exited before answering (" + how + ")"); err != nil {
		lg.Debug("answering requests the server left pending", "err", err)
	}
	// The calls still held for a catalog fetch are decided now that their
	// fetches ended: their decision events, receipts and evidence are
	// written before the caller closes those.
	if !sess.WaitHeld(5 * time.Second) {
		lg.Warn("calls held for the catalog fetch were still undecided at exit")
	}
	code := 0
	switch {
	case failure != nil:
		code = ExitGatewayFailure
	case st.Signal != 0:
		code = ExitSignalBase + int(st.Signal)
		failure = fmt.Errorf("server killed by signal %s", signalName(st.Signal))
	default:
		code = st.Code
	}
	if o.OnStop != nil {
		o.OnStop(reason, code)
	}
	return code, failure
}

// sigpipe receives SIGPIPE for the rest of the process's life once
// catchSIGPIPE ran; nothing reads it.
var (
	sigpipe     = make(chan os.Signal, 1)
	sigpipeOnce sync.Once
)

// catchSIGPIPE makes a write to a closed pipe on the gateway's stdout or
// stderr fail with EPIPE instead of killing the process: a Go program dies
// of SIGPIPE on such a write to fd 1 or 2 unless it asked for the signal
// (os/signal, "SIGPIPE"). The client going away then ends the session in
// order: the session stop event is written and the server's process group
// is stopped and reaped. It stays in effect after Run returns (the CLI
// still writes to stderr then). A handler, unlike signal.Ignore, is reset
// to the default at exec, so the server does not inherit an ignored
// SIGPIPE.
func catchSIGPIPE() {
	sigpipeOnce.Do(func() { signal.Notify(sigpipe, syscall.SIGPIPE) })
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return fmt.Sprintf("%d (%s)", int(s), s.String())
}
