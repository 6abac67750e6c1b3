package drift

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-mcp/gatehouse/internal/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -run %s -update rewrites it):\n%s", name, t.Name(), got)
	}
}

// TestRenderGolden renders the draft's example, plain and coloured.
func TestRenderGolden(t *testing.T) {
	base := load(t, "publish_artifact_baseline.json")
	cur := load(t, "publish_artifact_current.json")
	r := Compare(base, cur, Options{})
	for _, tc := range []struct {
		file  string
		color bool
	}{{"publish_artifact.diff.golden", false}, {"publish_artifact.color.golden", true}} {
		var buf bytes.Buffer
		if err := Render(&buf, base, cur, r, tc.color); err != nil {
			t.Fatal(err)
		}
		if !tc.color && bytes.Contains(buf.Bytes(), []byte("\x1b")) {
			t.Error("plain output holds an escape sequence")
		}
		if tc.color && !bytes.Contains(buf.Bytes(), []byte(ansiRed)) {
			t.Error("coloured output has no red")
		}
		golden(t, tc.file, buf.Bytes())
	}
}

// TestRenderSafe: terminal controls in a server's strings (a name, a
// description, a property name) never reach the output as they are.
func TestRenderSafe(t *testing.T) {
	base := mcp.Tool{Name: "t\x1b]0;pwned\x07", Description: "a", InputSchema: []byte(`{"type":"object"}`)}
	cur := base
	cur.Description = "b\u009b31m\u202e"
	cur.InputSchema = []byte(`{"type":"object","properties":{"x\u001b[2J":{"type":"string"}}}`)
	var buf bytes.Buffer
	if err := Render(&buf, base, cur, Compare(base, cur, Options{}), false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}

// TestRenderIdentical says so when nothing changed.
func TestRenderIdentical(t *testing.T) {
	base := load(t, "publish_artifact_baseline.json")
	var buf bytes.Buffer
	if err := Render(&buf, base, base, Compare(base, base, Options{}), true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "definitions are identical") || !strings.Contains(buf.String(), "drift none, default action allow, 0 change(s)") {
		t.Errorf("got:\n%s", buf.String())
	}
}
