package e2e

import (
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/test/harness"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Paths set up by TestMain.
var (
	// repoRoot is the module root (the directory holding go.mod).
	repoRoot string
	// gatehouseBin is the gatehouse binary under test.
	gatehouseBin string
	// fakeServerBin is test/fakeserver, built for this run.
	fakeServerBin string
	// npmDir is where scripts/install-test-deps.sh installs the npm packages.
	npmDir string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot find the module root from", wd)
		return 1
	}
	npmDir = os.Getenv("GATEHOUSE_NPM_DIR")
	if npmDir == "" {
		npmDir = filepath.Join(repoRoot, ".cache", "npm")
	}

	// harness.Setup builds into a temporary directory and points
	// XDG_STATE_HOME there: each gatehouse the tests start keeps its audit
	// ledger (and its checkpoint key) in it, not in the user's state
	// directory.
	builds := []harness.Build{{Out: "fakeserver", Pkg: "github.com/gatehouse-mcp/gatehouse/test/fakeserver"}}
	gatehouseBin = os.Getenv("GATEHOUSE_BIN")
	if gatehouseBin == "" {
		gh := harness.Build{Out: "gatehouse", Pkg: "github.com/gatehouse-mcp/gatehouse/cmd/gatehouse"}
		if os.Getenv("GATEHOUSE_E2E_RACE") == "1" {
			gh.Flags = []string{"-race"}
		}
		builds = append(builds, gh)
	} else if !filepath.IsAbs(gatehouseBin) {
		gatehouseBin = filepath.Join(repoRoot, gatehouseBin)
	}
	tmp, cleanup, err := harness.Setup("gatehouse-e2e-bin-", builds...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cleanup()
	if gatehouseBin == "" {
		gatehouseBin = filepath.Join(tmp, "gatehouse")
	}
	if _, err := os.Stat(gatehouseBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: GATEHOUSE_BIN:", err)
		return 1
	}
	fakeServerBin = filepath.Join(tmp, "fakeserver")
	return m.Run()
}

// inCI reports whether the tests run in CI, where missing dependencies are
// failures rather than reasons to skip.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// missingDependency skips the test, or fails it under CI=true.
func missingDependency(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (install with scripts/install-test-deps.sh, or run make test)"
	if inCI() {
		t.Fatal("missing test dependency under CI=true: " + msg)
	}
	t.Skip("skipping: " + msg)
}

// npmBin returns the path of an executable installed by
// scripts/install-test-deps.sh (mcp-server-filesystem, mcp-server-everything,
// mcp-inspector-cli), skipping or failing the test when it is absent.
func npmBin(t testing.TB, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missingDependency(t, "node is not on PATH")
	}
	p := filepath.Join(npmDir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		missingDependency(t, "%s is not installed in %s", name, npmDir)
	}
	return p
}

// inspectorScript returns scripts/inspector after checking that the
// inspector it wraps is installed.
func inspectorScript(t testing.TB) string {
	t.Helper()
	npmBin(t, "mcp-inspector-cli")
	if _, err := exec.LookPath("bash"); err != nil {
		missingDependency(t, "bash is not on PATH")
	}
	return filepath.Join(repoRoot, "scripts", "inspector")
}

// examplePolicy returns the path of examples/policies/NAME.
func examplePolicy(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot, "examples", "policies", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example policy: %v", err)
	}
	return p
}
