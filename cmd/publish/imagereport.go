package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/shard"
)

// checkReportFlag refuses, before any work, a --report FILE whose
// directory does not exist: the report is written at the end, whatever
// the outcome, and must not be lost then. Errors are usage errors naming
// --report.
func checkReportFlag(path string) error { return checkOutputFlag("--report", path) }

// checkOutputFlag is checkReportFlag for the file flag named flag.
func checkOutputFlag(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return usagef("%s %s: its directory %s does not exist: create it or name a file in an existing one", flag, path, filepath.Dir(path))
	}
	return nil
}

// writeReport writes the image report (docs/report.md) of command to
// path ("": none) from what the mirror stage did (rep, nil when it did not
// start), the outcome of each image's signature check and the images
// signed, unsigned and failed per artifact (res, nil for none) and the
// command's error err, whose failed images it lists. It
// returns err joined with a failure to write, which names --report.
func writeReport(path, command string, rep *mirror.Report, res *pipeline.Result, err error) error {
	if path == "" {
		return err
	}
	r := report.New(command)
	r.AddMirror(rep, pipeline.ImageErrors(err))
	if res != nil {
		r.AddVerification(res.Verified)
		r.AddSignatures(res.Signatures)
	}
	if werr := r.WriteFile(path); werr != nil {
		return errors.Join(err, fmt.Errorf("--report: %w", werr))
	}
	return err
}

// writeShardResult writes the result of the part s of a split (--shard-result
// FILE): the image report of mr (nil: nothing tried) with the plan of the
// split and the part's items (report.Report.AddShard) and the outcome of
// each image's signature check (verified, nil for none), whatever err is. A part that failed
// before it planned writes the report without its plan, which a merge
// refuses. It returns err, joined with the write's error.
func writeShardResult(path, command string, s shard.Shard, mr *mirror.Report, plan *shard.Plan, part []shard.Item, verified map[string]model.Verification, err error) error {
	path = shardResultPath(path, s)
	r := report.New(command)
	r.AddMirror(mr, pipeline.ImageErrors(err))
	r.AddVerification(verified)
	if plan != nil {
		r.AddShard(s, plan, part)
	}
	if werr := r.WriteFile(path); werr != nil {
		return errors.Join(err, fmt.Errorf("--shard-result: %w", werr))
	}
	return err
}

// shardResultPath is where the result of part s goes for --shard-result
// path: path itself, or, when path is a directory, the file
// shard-<I>-of-<N>.json in it (one name per part, so that the parts'
// results gather in one directory without colliding).
func shardResultPath(path string, s shard.Shard) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() && s.Total > 0 {
		return filepath.Join(path, fmt.Sprintf("shard-%d-of-%d.json", s.Index, s.Total))
	}
	return path
}
