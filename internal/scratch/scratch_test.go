package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPID returns the ID of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestSweep: what a dead process left and nobody touched for MinAge goes;
// the entries of this process, of a live process, recent ones and other
// names stay.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	old := now.Add(-MinAge - time.Minute)
	dead := strconv.Itoa(deadPID(t))
	self := strconv.Itoa(os.Getpid())
	parent := strconv.Itoa(os.Getppid())
	mk := func(name string, isDir bool, mtime time.Time) {
		p := filepath.Join(dir, name)
		if isDir {
			if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	gone := []string{
		"publish-catalog.p" + dead + ".123",
		"publish-push-blob.p" + dead + ".9",
		".site.tar.p" + dead + ".77.partial",
	}
	kept := []string{
		"publish-catalog.p" + self + ".1",   // this process
		"publish-catalog.p" + parent + ".2", // a live process
		"publish-catalog-1234",              // the older names, no process
		"other.p" + dead + ".3",             // not ours
		".site.tar.p" + dead + ".4",         // a dot file that is no .partial
		"publish-bundle.p" + dead + ".5",    // recent: see below
	}
	for i, n := range gone {
		mk(n, i == 0, old)
	}
	for i, n := range kept {
		mt := old
		if strings.HasPrefix(n, "publish-bundle") {
			mt = now.Add(-time.Minute)
		}
		mk(n, i%2 == 0, mt)
	}
	removed, err := Sweep(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range removed {
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	want := slices.Clone(gone)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("removed %v, want %v", names, want)
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestMkdirTempSweeps: the first MkdirTemp of a process in a directory
// removes what a killed run left there, and its own name carries its
// process ID; Partial names its file after the target.
func TestMkdirTempSweeps(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, "publish-catalog.p"+strconv.Itoa(deadPID(t))+".1")
	if err := os.Mkdir(left, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * MinAge)
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	d, err := MkdirTemp(dir, "catalog")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("left by a killed run: %v", err)
	}
	if b := filepath.Base(d); !names.MatchString(b) || !strings.Contains(b, ".p"+strconv.Itoa(os.Getpid())+".") {
		t.Errorf("MkdirTemp made %s", b)
	}
	f, err := Partial(filepath.Join(dir, "site.tar"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b := filepath.Base(f.Name()); !strings.HasPrefix(b, ".site.tar.p") || !strings.HasSuffix(b, ".partial") || !names.MatchString(b) {
		t.Errorf("Partial made %s", b)
	}
}

// TestWriteFile: the file is written whole with its mode, and a write into
// a directory that does not exist leaves nothing.
func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(p); err != nil || string(data) != "{}\n" {
		t.Errorf("%q %v", data, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("left beside it: %v", entries)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir"), nil, 0o644); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
