package receipts

import (
	"errors"
	"fmt"
	"github.com/gatehouse-mcp/gatehouse/internal/outpath"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrPathRefused is wrapped by every [CheckPath] error.
var ErrPathRefused = errors.New("request receipts: output path refused")

// CheckPath validates the sidecar path before the server is spawned
// (request-receipts.md §2). It refuses, with an error wrapping
// [ErrPathRefused] that names the path and the reason:
//
//   - an empty path, or one ending in a path separator;
//   - a path whose parent directory does not exist, is not a directory, or
//     is not writable and searchable by this process;
//   - a path at which anything exists, checked with lstat so that a
//     dangling symlink counts as existing;
//   - a path that aliases one of others (the decision log, the ledger, any
//     other file the run writes; empty entries are ignored): the two
//     resolve to the same location after making them absolute and resolving
//     "." and "..", and symlinks of every existing component (a dangling
//     final symlink in others is followed to its target), or their parent
//     directories are the same directory (same device and inode, e.g. a
//     bind mount) and the names are equal, or both exist and are the same
//     file (same device and inode, e.g. hard links).
//
// Aliasing is reported before existence so that the message names the
// clash. CheckPath creates nothing. A path can still be taken between this
// check and [Recorder.Open]; Open then fails with [ErrPathTaken].
func CheckPath(path string, others []string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrPathRefused, path, fmt.Sprintf(format, args...))
	}
	if path == "" {
		return fmt.Errorf("%w: empty path", ErrPathRefused)
	}
	if strings.HasSuffix(path, string(filepath.Separator)) {
		return refuse("names a directory, not a file")
	}
	resolved, err := outpath.Resolve(path)
	if err != nil {
		return refuse("cannot resolve: %v", err)
	}
	for _, other := range others {
		if other == "" {
			continue
		}
		if why, alias := outpath.AliasResolved(path, resolved, other); alias {
			return refuse("aliases %s (%s); the request receipts must be a file of their own", other, why)
		}
	}
	if _, err := os.Lstat(path); err == nil {
		return refuse("something already exists there (a dangling symlink counts); the receipts file is created exclusively")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return refuse("cannot check it: %v", err)
	}
	parent := filepath.Dir(resolved)
	st, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refuse("parent directory %s does not exist", parent)
	case err != nil:
		return refuse("parent directory %s: %v", parent, err)
	case !st.IsDir():
		return refuse("parent %s is not a directory", parent)
	}
	if err := outpath.WritableDir(parent); err != nil {
		return refuse("parent directory %s is not writable: %v", parent, err)
	}
	return nil
}
