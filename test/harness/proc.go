package harness

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
)

// Proc is a started process driven by a test: its stdin, its stdout read
// line by line on a goroutine, and its stderr captured.
type Proc struct {
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Stdin is the process's standard input.
	Stdin io.WriteCloser
	// Lines receives every line the process writes to stdout, terminator
	// included (a last line without one too); it is closed at EOF.
	Lines chan []byte
	// Stderr holds everything the process wrote to stderr.
	Stderr *SyncBuffer
	// Done is closed once stdout has been read to its end and the process
	// has been waited for.
	Done chan struct{}
}

// StartProc starts cmd, which must not have been started and must not set
// Stdin, Stdout or Stderr, with a pipe for each. Lines is buffered for
// buffer lines. Wait runs only after stdout has been read to EOF (exec.Cmd
// closes the pipe in Wait, so waiting first could drop the last lines a
// process wrote before it exited). onLine, when not nil, is called with
// every line before it is sent on Lines. Errors are the pipes' or Start's,
// wrapped.
func StartProc(cmd *exec.Cmd, buffer int, onLine func([]byte)) (*Proc, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("harness: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("harness: stdout pipe: %w", err)
	}
	p := &Proc{Cmd: cmd, Stdin: stdin, Lines: make(chan []byte, buffer), Stderr: &SyncBuffer{}, Done: make(chan struct{})}
	cmd.Stderr = p.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", cmd.Path, err)
	}
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := br.ReadBytes('\n')
			if len(l) > 0 {
				if onLine != nil {
					onLine(l)
				}
				p.Lines <- l
			}
			if err != nil {
				close(p.Lines)
				_ = cmd.Wait()
				close(p.Done)
				return
			}
		}
	}()
	return p, nil
}

// Tail returns the last n bytes of what the process wrote to stderr, with
// "..." in front when it was cut.
func (p *Proc) Tail(n int) string {
	s := p.Stderr.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
