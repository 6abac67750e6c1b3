package receipts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func chdir(t *testing.T, dir string) {
	t.Helper()
	t.Chdir(dir)
}

func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dlog := filepath.Join(dir, "decisions.jsonl")
	must(os.WriteFile(dlog, []byte("x\n"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	must(os.Symlink(dir, filepath.Join(dir, "linkdir")))
	must(os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")))
	must(os.Link(dlog, filepath.Join(dir, "hardlink.jsonl")))
	must(os.Symlink("decisions.jsonl", filepath.Join(dir, "symlink.jsonl")))
	// A decision log path that is a dangling symlink pointing at where
	// the receipts would go.
	must(os.Symlink(filepath.Join(dir, "future.jsonl"), filepath.Join(dir, "dlog-link.jsonl")))
	// A symlinked directory whose ".." is not the lexical parent.
	must(os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "sublink")))
	plainFile := filepath.Join(dir, "file")
	must(os.WriteFile(plainFile, nil, 0o600))
	chdir(t, dir)

	for _, tc := range []struct {
		name   string
		path   string
		others []string
		want   string // "" for accepted
	}{
		{"fresh path", filepath.Join(dir, "requests.jsonl"), []string{dlog}, ""},
		{"empty others ignored", filepath.Join(dir, "requests.jsonl"), []string{"", dlog}, ""},
		{"relative fresh", "requests.jsonl", []string{dlog}, ""},
		{"empty", "", nil, "empty path"},
		{"trailing slash", dir + "/", nil, "directory"},
		{"exists", dlog, nil, "already exists"},
		{"dangling symlink exists", filepath.Join(dir, "dangling"), nil, "already exists"},
		{"directory exists", filepath.Join(dir, "sub"), nil, "already exists"},
		{"parent missing", filepath.Join(dir, "missing", "r.jsonl"), nil, "does not exist"},
		{"parent is a file", filepath.Join(plainFile, "r.jsonl"), nil, "not a directory"},
		{"alias same path", dlog, []string{dlog}, "aliases"},
		{"alias relative", "decisions.jsonl", []string{dlog}, "aliases"},
		{"alias relative other", dlog, []string{"./decisions.jsonl"}, "aliases"},
		{"alias dotdot", filepath.Join(dir, "sub", "..", "decisions.jsonl"), []string{dlog}, "aliases"},
		{"alias symlinked parent", filepath.Join(dir, "linkdir", "decisions.jsonl"), []string{dlog}, "aliases"},
		{"alias symlink file", filepath.Join(dir, "symlink.jsonl"), []string{dlog}, "aliases"},
		{"alias hard link", filepath.Join(dir, "hardlink.jsonl"), []string{dlog}, "same device and inode"},
		{"alias fresh through dangling other", filepath.Join(dir, "future.jsonl"), []string{filepath.Join(dir, "dlog-link.jsonl")}, "aliases"},
		{"alias fresh both", filepath.Join(dir, "a.jsonl"), []string{"a.jsonl"}, "aliases"},
		{"alias fresh dotdot through symlink", filepath.Join(dir, "sublink", "..", "b.jsonl"), []string{filepath.Join(dir, "b.jsonl")}, "aliases"},
		{"no alias: lexical .. differs", filepath.Join(dir, "sublink", "..", "c.jsonl"), []string{filepath.Join(dir, "sub", "c.jsonl")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPath(tc.path, tc.others)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrPathRefused) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.path != "" && !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("error does not name the path: %v", err)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "requests.jsonl")); err == nil {
		t.Fatal("CheckPath created the file")
	}
}

func TestCheckPathUnwritableParent(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	err := CheckPath(filepath.Join(dir, "r.jsonl"), nil)
	if err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckPathSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Symlink(b, a)
	os.Symlink(a, b)
	if err := CheckPath(filepath.Join(a, "r.jsonl"), nil); err == nil {
		t.Fatal("loop accepted")
	}
}
