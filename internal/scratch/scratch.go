// Package scratch makes the temporary directories and files of a command,
// named after the process that made them, so that the next command can
// remove what a killed one left behind (SIGKILL, an out-of-memory kill, a
// CI job cancelled without a grace period runs no cleanup).
//
// A temporary directory or file is named publish-WHAT.pPID.RANDOM (in
// os.TempDir() or the directory given), a file written in place of another
// .NAME.pPID.RANDOM.partial next to it. Sweep removes the entries of such
// names whose process no longer runs on this machine and that have not
// changed for MinAge; MkdirTemp, CreateTemp and Partial sweep their
// directory once per process before they create. An entry of a process
// that runs, or of another machine's process that looks alive here, is
// never touched.
package scratch

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MinAge is how long an entry of a dead process must have been left
// unchanged before Sweep removes it: a margin for a process of another PID
// namespace sharing the directory (two containers on one volume), whose
// entries look dead here while it writes.
const MinAge = 10 * time.Minute

// names matches the entries Sweep may remove: the process ID is group 1.
var names = regexp.MustCompile(`^(?:publish-[a-z0-9-]+|\..+)\.p([0-9]+)\.[0-9]+(?:\.partial)?$`)

var swept sync.Map // directory -> struct{}: swept by this process

// MkdirTemp creates a new directory in dir (os.TempDir() when "") named
// publish-WHAT.pPID.RANDOM and returns its path, after sweeping dir once
// per process. what is a short lower-case word ("catalog", "bundle").
// Errors are os.MkdirTemp's.
func MkdirTemp(dir, what string) (string, error) {
	dir = orTemp(dir)
	sweepOnce(dir)
	return os.MkdirTemp(dir, pattern("publish-"+what))
}

// CreateTemp creates a new file in dir (os.TempDir() when "") named as
// MkdirTemp names directories, opened for reading and writing, after
// sweeping dir once per process. Errors are os.CreateTemp's.
func CreateTemp(dir, what string) (*os.File, error) {
	dir = orTemp(dir)
	sweepOnce(dir)
	return os.CreateTemp(dir, pattern("publish-"+what))
}

// Partial creates the file that is written in place of path and renamed
// to it at the end (.BASE.pPID.RANDOM.partial in path's directory), after
// sweeping that directory once per process: the .partial files a killed
// writer left are removed by the next one. Errors are os.CreateTemp's.
func Partial(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	sweepOnce(dir)
	return os.CreateTemp(dir, pattern("."+filepath.Base(path))+".partial")
}

func pattern(prefix string) string {
	return prefix + ".p" + strconv.Itoa(os.Getpid()) + ".*"
}

func orTemp(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}

func sweepOnce(dir string) {
	if _, done := swept.LoadOrStore(dir, struct{}{}); !done {
		_, _ = Sweep(dir, time.Now())
	}
}

// Sweep removes the entries of dir named by this package whose process
// does not run (processAlive) and that have not been modified for MinAge
// before now, and returns their paths. A directory that cannot be read is
// an error; an entry that cannot be removed is left (the next sweep tries
// again) and named in the error.
func Sweep(dir string, now time.Time) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		m := names.FindStringSubmatch(e.Name())
		if m == nil || (strings.HasPrefix(e.Name(), ".") && !strings.HasSuffix(e.Name(), ".partial")) {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < MinAge {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// WriteFile writes data to path whole or not at all: into the Partial file
// beside it, which is given perm and renamed over path at the end; on a
// failure nothing is left beside path. Errors are those of the writing
// (the caller names path's flag).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Partial(path)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
