package harness

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cat is a process that echoes its stdin line by line.
var cat = []string{"/bin/cat"}

func TestDriverRoundTrip(t *testing.T) {
	d := Start(t, Options{Argv: cat})
	d.Send("one\n")
	d.SendLine("two")
	if got := string(d.Read(5 * time.Second)); got != "one\n" {
		t.Fatalf("Read = %q", got)
	}
	l, before := d.ReadUntil(5*time.Second, func(l []byte) bool { return strings.HasPrefix(string(l), "two") })
	if string(l) != "two\n" || len(before) != 0 {
		t.Fatalf("ReadUntil = %q, %q", l, before)
	}
	d.ExpectNoLine(50 * time.Millisecond)
	if _, err := d.TryRead(10 * time.Millisecond); !errors.Is(err, ErrNoLine) {
		t.Fatalf("TryRead without a line: %v, want ErrNoLine", err)
	}
	d.Send("three")
	d.CloseStdin()
	if code := d.Wait(5 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := string(d.Read(time.Second)); got != "three" {
		t.Fatalf("last, unterminated line = %q", got)
	}
	if _, err := d.TryRead(time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("TryRead at EOF: %v, want io.EOF", err)
	}
	if d.Sent() != "one\ntwo\nthree" || string(d.Received()) != "one\ntwo\nthree" {
		t.Fatalf("Sent %q, Received %q", d.Sent(), d.Received())
	}
	if !d.Exited() {
		t.Fatal("Exited is false after Wait")
	}
}

func TestDriverExitCodeEnvDirStderr(t *testing.T) {
	dir := t.TempDir()
	d := Start(t, Options{Argv: []string{"/bin/sh", "-c", `echo "$HARNESS_X $(pwd)" >&2; exit 7`}, Env: []string{"HARNESS_X=x1"}, Dir: dir})
	if code := d.Wait(5 * time.Second); code != 7 {
		t.Fatalf("exit %d, want 7", code)
	}
	if got, want := d.Stderr.String(), "x1 "+dir+"\n"; got != want {
		t.Fatalf("stderr %q, want %q", got, want)
	}
	d.WaitStderr("x1", time.Second)
}

func TestDriverTail(t *testing.T) {
	d := Start(t, Options{Argv: []string{"/bin/sh", "-c", `i=0; while [ $i -lt 1000 ]; do echo "0123456789"; i=$((i+1)); done >&2`}})
	d.Wait(5 * time.Second)
	tail := d.Tail()
	if !strings.HasPrefix(tail, "...") || len(tail) != 3+TailBytes || !strings.HasSuffix(tail, "0123456789\n") {
		t.Fatalf("Tail: %d bytes, starting %.10q", len(tail), tail)
	}
}

// TestDriverSendTimeout: a Send to a process that does not read fails the
// test within SendTimeout instead of hanging.
func TestDriverSendTimeout(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	done := make(chan bool)
	go func() {
		ft := &fatalRecorder{TB: t}
		defer func() { recover(); done <- ft.failed }()
		d := Start(ft, Options{Argv: []string{"/bin/sleep", "30"}, SendTimeout: 200 * time.Millisecond, Setpgid: true, KillGroup: true})
		d.Send(big)
	}()
	select {
	case failed := <-done:
		if !failed {
			t.Fatal("a Send that could not finish did not fail")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not time out")
	}
}

// fatalRecorder records a Fatalf and stops the goroutine with a panic
// (Start and Send call Fatalf from the test's goroutine only).
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fatalRecorder) Helper()               {}

// TestDriverCleanupKills: cleanup kills a process that ignores EOF, after
// CleanupGrace, and the processes named in KillAtCleanup pid files, then
// runs the OnCleanup functions.
func TestDriverCleanupKills(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	var d *Driver
	var child int
	ran := false
	t.Run("run", func(t *testing.T) {
		d = Start(t, Options{Argv: []string{"/bin/sh", "-c", `sleep 30 & echo $! > "$1"; exec sleep 30`, "sh", pidFile}, Setpgid: true, CleanupGrace: 100 * time.Millisecond})
		child = WaitPID(t, pidFile, 5*time.Second)
		d.KillAtCleanup(pidFile)
		d.OnCleanup(func() {
			ran = true
			if !d.Exited() {
				t.Error("OnCleanup ran before the process was gone")
			}
		})
	})
	if !d.Exited() || !ran {
		t.Fatalf("after cleanup: exited %v, OnCleanup ran %v", d.Exited(), ran)
	}
	if d.Cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("process state %v, want killed by SIGKILL", d.Cmd.ProcessState)
	}
	ExpectGone(t, "the child named in the pid file", child, 5*time.Second)
}

func TestRunCLI(t *testing.T) {
	r := RunCLI(t, 5*time.Second, "", []string{"HARNESS_Y=y"}, "/bin/sh", "-c", `echo "out $HARNESS_Y"; echo err >&2; exit 3`)
	if r.Code != 3 || r.Stdout != "out y\n" || r.Stderr != "err\n" {
		t.Fatalf("RunCLI = %+v", r)
	}
}

func TestHelpers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\r\nb\nc", []string{"a\r\n", "b\n", "c"}},
	} {
		if got := SplitLines([]byte(tc.in)); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := JSONString(`<a&"b">` + "\n"); got != `"<a&\"b\">\n"` {
		t.Errorf("JSONString = %s", got)
	}
	if Str([]byte(`"x"`)) != "x" || Str([]byte(`1`)) != "" || Str(nil) != "" {
		t.Error("Str")
	}
	dir := t.TempDir()
	if ReadFile(t, filepath.Join(dir, "none")) != nil {
		t.Error("ReadFile of a missing file is not nil")
	}
	p := filepath.Join(dir, "pid")
	if ReadPID(p) != 0 {
		t.Error("ReadPID of a missing file")
	}
	if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid := WaitPID(t, p, time.Second); pid != os.Getpid() || !Alive(pid) {
		t.Errorf("WaitPID = %d, Alive %v", pid, Alive(pid))
	}
}
