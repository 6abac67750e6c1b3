package receipts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrPathRefused is wrapped by every [CheckPath] error.
var ErrPathRefused = errors.New("request receipts: output path refused")

// maxSymlinkHops bounds symlink resolution (Linux uses 40).
const maxSymlinkHops = 40

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
	resolved, err := resolvePath(path)
	if err != nil {
		return refuse("cannot resolve: %v", err)
	}
	for _, other := range others {
		if other == "" {
			continue
		}
		if why, alias := aliases(path, resolved, other); alias {
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
	if err := writableDir(parent); err != nil {
		return refuse("parent directory %s is not writable: %v", parent, err)
	}
	return nil
}

// aliases reports whether path (already resolved to resolved) and other
// name the same location, and how.
func aliases(path, resolved, other string) (why string, alias bool) {
	ro, err := resolvePath(other)
	if err == nil && ro == resolved {
		return "same location after resolving \".\", \"..\" and symlinks", true
	}
	if a, errA := os.Stat(path); errA == nil {
		if b, errB := os.Stat(other); errB == nil && os.SameFile(a, b) {
			return "same device and inode", true
		}
	}
	if err == nil && filepath.Base(ro) == filepath.Base(resolved) {
		a, errA := os.Stat(filepath.Dir(resolved))
		b, errB := os.Stat(filepath.Dir(ro))
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "same name in the same directory (same device and inode)", true
		}
	}
	return "", false
}

// resolvePath returns p as an absolute path with every "." and ".." and
// every symlink of an existing component resolved, the way the kernel would
// walk it (".." after a symlink goes up from the symlink's target, not
// lexically). Components from the first missing one on are appended and
// cleaned lexically. A final component that is a dangling symlink is
// followed to its (missing) target.
func resolvePath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p
	}
	pending := splitPath(p)
	resolved := string(filepath.Separator)
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			rest := append([]string{next}, pending...)
			return filepath.Clean(filepath.Join(rest...)), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		pending = append(splitPath(target), pending...)
	}
	return resolved, nil
}

// splitPath splits p into its non-empty components.
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
