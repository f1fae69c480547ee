package pipeline

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
)

// snapshot lists every entry below root (links, pipes and directories
// included) with its kind and, for regular files, content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = "dir"
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + string(data)
		default:
			out[rel] = "other " + d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderWithin runs Render into dir and fails the test when it does not
// return within a minute; unblock is called then (to release what it waits
// on) before the test fails.
func renderWithin(t *testing.T, o RenderOptions, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Render(context.Background(), o)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		if unblock != nil {
			unblock()
		}
		<-done
		t.Fatal("Render did not return within a minute")
		return nil
	}
}

// publishedCheckout runs publish once and returns a clone of the catalog
// whose overlay is edited so that the next render renders everything
// again (the render key changed), with an object of the cluster's own
// (rendered/global/_cluster, written before rendered/global/tiny).
func publishedCheckout(t *testing.T, f *fixture) string {
	t.Helper()
	f.run(t)
	dir := t.TempDir()
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml")
	data, err := os.ReadFile(ov)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ov, append(data, "labels:\n- pairs:\n    example.com/owner: platform-team\nconfigMapGenerator:\n- name: settings\n  namespace: ops\n  literals: [a=b]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRenderCheckoutOddEntries: a checkout that holds a named pipe where
// publish writes a file, or where it writes a directory, a directory
// where it writes a file, or a file where a directory must be
// (kustomize/clusters) either renders or is refused with the path, in
// bounded time, and a refused render leaves the checkout exactly as it
// was. A file where the render writes a directory is replaced, as the
// render in memory and its commit replace it.
func TestRenderCheckoutOddEntries(t *testing.T) {
	f := newFixture(t)
	first := publishedCheckout(t, f)
	for _, tc := range []struct {
		name, at string
		kind     string // pipe, file or dir
		renders  bool   // the odd entry is replaced, as a commit replaces it
	}{
		{"pipe at a rendered file", "rendered/global/tiny/artifact_tiny.yaml", "pipe", false},
		{"pipe where a directory is written", "rendered/global/tiny", "pipe", false},
		{"pipe where a generated directory is written", "publish/generated/global/tiny", "pipe", false},
		{"file at kustomize/clusters", "kustomize/clusters", "file", false},
		{"file where a directory is written", "rendered/global/tiny", "file", true},
		{"empty directory at a rendered file", "rendered/global/tiny/artifact_tiny.yaml", "dir", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(first)); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(dir, filepath.FromSlash(tc.at))
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc.kind {
			case "pipe":
				err = syscall.Mkfifo(at, 0o644)
			case "file":
				err = os.WriteFile(at, []byte("a file\n"), 0o644)
			case "dir":
				err = os.Mkdir(at, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			unblock := func() {
				// Open the pipe for reading so that a write blocked on it returns.
				if r, err := os.OpenFile(at, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
					time.Sleep(100 * time.Millisecond)
					r.Close()
				}
			}
			err = renderWithin(t, RenderOptions{Source: f.source, CatalogDir: dir}, unblock)
			t.Logf("Render: %v", err)
			if err == nil {
				if fi, err := os.Stat(filepath.Join(dir, "rendered/global/tiny/artifact_tiny.yaml")); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("rendered, but rendered/global/tiny/artifact_tiny.yaml is not a file: %v", err)
				}
				return // rendered: the odd entry was replaced
			}
			if tc.renders {
				t.Errorf("Render: %v; want %s replaced, as a commit of the render replaces it", err, tc.at)
			}
			if !strings.Contains(err.Error(), tc.at) {
				t.Errorf("Render: %v; want the error to name %s", err, tc.at)
			}
			after := snapshot(t, dir)
			for p, v := range before {
				if after[p] != v {
					t.Errorf("refused render changed %s: %.60q, was %.60q", p, after[p], v)
				}
			}
			for p, v := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("refused render added %s (%.60q)", p, v)
				}
			}
		})
	}
}

// TestRenderRemovesStaleLinks: a symbolic link or a named pipe left in
// rendered/<cluster> (committed, or made by hand) is not something
// publish rendered; the render removes it, as it removes a stale file,
// rather than leave it for Argo CD or Flux to apply.
func TestRenderRemovesStaleLinks(t *testing.T) {
	f := newFixture(t)
	dir, outside := publishedCheckout(t, f), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rendered/global/tiny/configmap_outside.yaml")
	if err := os.Symlink(filepath.Join(outside, "cm.yaml"), link); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "rendered/global/tiny/pipe.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "rendered/global/tiny/stale.yaml")
	if err := os.WriteFile(stale, []byte("kind: Stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderWithin(t, RenderOptions{Source: f.source, CatalogDir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, link, pipe} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left in rendered/global after the render (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "cm.yaml")); err != nil {
		t.Errorf("the link's target outside the checkout: %v", err)
	}
}

// TestRenderLinksInside: a symbolic link on the way to what the render
// writes that points inside the checkout (rendered/global/tiny to
// another directory of it, publish/generated/global to rendered/) is
// refused as one pointing outside is, and an overlay file that is a link
// (to a file outside) is not read: the render is refused with the path,
// and the checkout is left exactly as it was.
func TestRenderLinksInside(t *testing.T) {
	f := newFixture(t)
	first := publishedCheckout(t, f)
	secret := filepath.Join(t.TempDir(), "patch.yaml")
	if err := os.WriteFile(secret, []byte("apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata: {name: tiny}\nspec: {registry: stolen.example.com}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ link, target, says string }{
		{"rendered/global/tiny", "../../kustomize", "rendered/global/tiny is a symbolic link"},
		{"publish/generated/global", "../../rendered/global", "publish/generated/global is a symbolic link"},
		{"kustomize/clusters/global/patch.yaml", secret, "patch.yaml"},
	} {
		t.Run(strings.ReplaceAll(tc.link, "/", "_"), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(first)); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(dir, filepath.FromSlash(tc.link))
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, at); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(tc.link, "patch.yaml") {
				ov := filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml")
				data, _ := os.ReadFile(ov)
				if err := os.WriteFile(ov, append(data, "patches:\n- path: patch.yaml\n"...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			err := renderWithin(t, RenderOptions{Source: f.source, CatalogDir: dir}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Render: %v; want it refused naming %q", err, tc.says)
			}
			after := snapshot(t, dir)
			for p, v := range before {
				if after[p] != v {
					t.Errorf("refused render changed %s: %.60q, was %.60q", p, after[p], v)
				}
			}
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("refused render added %s", p)
				}
			}
		})
	}
}
