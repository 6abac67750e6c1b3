// Package outpath checks the paths of files a run writes: where they
// really point (after ".", "..", and symlinks of existing components, the
// way the kernel walks them), whether two paths name the same file, and
// whether a directory is writable. It creates nothing.
package outpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds symlink resolution (Linux uses 40).
const maxSymlinkHops = 40

// Alias reports whether paths a and b name the same file, and how: the
// same location after Resolve; the same device and inode when both exist
// (hard links); or the same name in directories that are the same device
// and inode (bind mounts). The error is Resolve's for a.
func Alias(a, b string) (why string, alias bool, err error) {
	ra, err := Resolve(a)
	if err != nil {
		return "", false, err
	}
	why, alias = AliasResolved(a, ra, b)
	return why, alias, nil
}

// aliases reports whether path (already resolved to resolved) and other
// name the same location, and how.
// AliasResolved is Alias for a path already resolved by Resolve.
func AliasResolved(path, resolved, other string) (why string, alias bool) {
	ro, err := Resolve(other)
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

// Resolve returns p as an absolute path with every "." and ".." and
// every symlink of an existing component resolved, the way the kernel would
// walk it (".." after a symlink goes up from the symlink's target, not
// lexically). Components from the first missing one on are appended and
// cleaned lexically. A final component that is a dangling symlink is
// followed to its (missing) target.
func Resolve(p string) (string, error) {
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

// ErrNotWritable is wrapped by WritableDir's errors.
var ErrNotWritable = errors.New("directory not writable")

// WritableDir returns nil when dir exists, is a directory, and this process
// may create files in it; otherwise an error naming dir and why.
func WritableDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist (create it first: mkdir -p %s)", dir, dir)
	}
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := accessWrite(dir); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotWritable, dir, err)
	}
	return nil
}
