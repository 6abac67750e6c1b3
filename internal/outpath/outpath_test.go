package outpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(filepath.Join(dir, "x"), 0o700)
	os.Symlink("x", filepath.Join(dir, "rel"))
	for in, want := range map[string]string{
		filepath.Join(dir, "rel", "f"):           filepath.Join(dir, "x", "f"),
		dir + "/./rel/../x/./f":                  filepath.Join(dir, "x", "f"),
		dir + "//x///f":                          filepath.Join(dir, "x", "f"),
		filepath.Join(dir, "missing", "..", "f"): filepath.Join(dir, "f"),
	} {
		got, err := Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestAlias(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Link(f, filepath.Join(dir, "hard"))
	os.Symlink("f", filepath.Join(dir, "soft"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{f, filepath.Join(dir, "hard"), true},
		{f, filepath.Join(dir, "soft"), true},
		{f, filepath.Join(dir, "sub", "..", "f"), true},
		{filepath.Join(dir, "new"), filepath.Join(dir, "sub", "..", "new"), true},
		{f, filepath.Join(dir, "sub", "f"), false},
	} {
		why, got, err := Alias(tc.a, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("Alias(%q, %q) = %v (%s), %v; want %v", tc.a, tc.b, got, why, err, tc.want)
		}
	}
}

func TestWritableDir(t *testing.T) {
	dir := t.TempDir()
	if err := WritableDir(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	if err := WritableDir(missing); err == nil || !strings.Contains(err.Error(), "mkdir -p "+missing) {
		t.Fatalf("missing directory: %v, want an error saying to create it", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	if err := WritableDir(f); err == nil {
		t.Fatal("a file accepted as a directory")
	}
}
