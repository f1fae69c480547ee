package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// airgap is step 5 of `-airgap`: the air-gapped transfer instead of
// `publish run`. On the connected side it packages every version into one
// archive (twice, the second time from the --cache the first filled) and
// verifies it; then the source registry is stopped (the site cannot reach
// it), and on the site `publish push --catalog` loads the archive into the
// destination registry and commits the catalog, from the archive alone.
func (d *demo) airgap(ctx context.Context) error {
	dir := filepath.Join(d.work, "airgap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive, cache := filepath.Join(dir, "operators.tgz"), filepath.Join(dir, "cache")
	d.header("5a. Connected side: publish package, filling a cache")
	if err := d.publishCmd(ctx, "", "package", "--source", d.pkgRepo, "-o", archive, "--plain-http", "--cache", cache); err != nil {
		return err
	}
	d.header("5b. publish package again: every blob from the cache, the same archive")
	first, err := os.ReadFile(archive + ".sha256")
	if err != nil {
		return err
	}
	if err := d.publishCmd(ctx, "", "package", "--source", d.pkgRepo, "-o", archive, "--plain-http", "--cache", cache); err != nil {
		return err
	}
	second, err := os.ReadFile(archive + ".sha256")
	if err != nil {
		return err
	}
	if string(first) != string(second) {
		return fmt.Errorf("the archive from the cache differs: %s vs %s", strings.TrimSpace(string(first)), strings.TrimSpace(string(second)))
	}
	fmt.Fprintf(d.out, "same sha256 both times: %s", second)

	d.header("5c. publish verify: checksum, every digest, the structure")
	if err := d.publishCmd(ctx, "", "verify", archive); err != nil {
		return err
	}

	d.header("5d. The air gap: the source registry is stopped")
	if err := d.src.Close(); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "source registry http://%s: stopped\n", d.src.Host)

	d.header("5e. Site: publish push --catalog, from the archive alone")
	return d.publishCmd(ctx, "", "push", archive, "--dst-repo", d.dst.Host+"/site", "--plain-http", "--no-auth", "--catalog", d.catalog)
}

// publishCmd runs publish with args, showing the command (paths below the
// work directory as $WORK/...) and its output; errors start with label
// ("publish run #2", say; "" for "publish <first argument>").
func (d *demo) publishCmd(ctx context.Context, label string, args ...string) error {
	if label == "" {
		label = "publish " + args[0]
	}
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = d.display(a)
	}
	fmt.Fprintf(d.out, "$ publish %s\n", strings.Join(shown, " "))
	runCtx, cancel := context.WithTimeout(ctx, d.runTimeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, d.publish, args...)
	pw := &prefixWriter{w: d.out, prefix: "  | "}
	cmd.Stdout, cmd.Stderr = pw, pw
	err := cmd.Run()
	pw.Flush()
	if err != nil {
		if runCtx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%s did not finish within %s", label, d.runTimeout)
		}
		return fmt.Errorf("%s failed: %w", label, err)
	}
	return nil
}
