package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/status"
)

func newStatusCmd(_ *invocation) *cobra.Command {
	var (
		kube                     kubeFlags
		catalogDir, cluster, dir string
		output, summary          string
		wait, refreshAfter       time.Duration
		catalogOperator          string
		record                   bool
		cat                      = catalogFlags{readOnly: true}
		tls                      tlsFlags
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the cluster lists every version the catalog asks for (and wait for it)",
		Long: `status reads what rendered/<cluster> of the catalog asks for and, from the
cluster, for every ArtifactVersion: its phase and reason, whether the
platform's PackageManifest (OperatorHub) lists it, and what to do when it is
not as asked (for AlreadyAdd: the other ArtifactVersion that holds the
version). For an olm cluster: the CatalogSource's READY state or the
ClusterCatalog's Serving condition. The health rules are those of the
catalog template's Argo CD and Flux health checks (docs/after-sync.md).

--wait DURATION waits, watching the cluster, until everything is as asked
(exit 0) or something failed (exit 1 at once), and exits 1 at the end of
DURATION naming what is still waiting: a CI job after the sync can gate on
it. Without --wait: exit 1 when something failed, else 0.

The cluster: --kubeconfig (or $KUBECONFIG, ~/.kube/config), else the
in-cluster service account; it needs get, list and watch on ArtifactVersions
and PackageManifests (or CatalogSources / ClusterCatalogs).

--record also reads the install health of every version the cluster's state
(publish/state/<cluster>.yaml of --catalog) lists: OLM v0 Subscriptions and
their CSVs' phase (Succeeded, Failed with its reason), OLM v1
ClusterExtensions' Installed and Progressing conditions where the cluster
serves them; and commits it to publish/health/<cluster>.yaml of --catalog,
the evidence of the gates with healthy: true (docs/rollout.md#health). It
needs list on Subscriptions and ClusterExtensions, get on CSVs, and push to
the catalog repo. Without a rendered/<cluster> directory (no --catalog-dir
or --rendered given) --record records only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case status.FormatText, status.FormatJSON, status.FormatMarkdown:
			default:
				return usagef("--output %q: want text, json or markdown", output)
			}
			if wait < 0 {
				return usagef("--wait %s: want a positive duration such as 10m", wait)
			}
			co, err := refreshOperator(catalogOperator, refreshAfter)
			if err != nil {
				return err
			}
			if record {
				if err := cat.require(); err != nil {
					return usagef("--record: %v", err)
				}
			}
			explicit := cmd.Flags().Changed("catalog-dir") || cmd.Flags().Changed("rendered")
			if dir == "" {
				dir = filepath.Join(catalogDir, "rendered", cluster)
			}
			if st, err := os.Stat(dir); record && !explicit && (err != nil || !st.IsDir()) {
				client, err := kube.client("operator-publish status", cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				return recordHealth(cmd, client, &cat, &tls, cluster)
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usagef("%s is not a directory: pass --catalog-dir (a checkout of the catalog repo) and --cluster, or --rendered", dir)
			}
			asked, err := status.ReadRendered(dir)
			if err != nil {
				return &usageError{err}
			}
			client, err := kube.client("operator-publish status", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rep, err := checkStatus(cmd.Context(), client, cmd.ErrOrStderr(), cluster, asked, wait, refreshAfter, co)
			if rep != nil {
				if perr := printStatus(cmd.OutOrStdout(), rep, output, summary); perr != nil {
					return perr
				}
			}
			if record {
				if rerr := recordHealth(cmd, client, &cat, &tls, cluster); rerr != nil {
					return rerr
				}
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&refreshAfter, "refresh-after", 0, "opt-in: restart the catalog pods of a PackageManifest that still lacks a version Present for this long (e.g. 10m); needs delete on pods (docs/after-sync.md#refresh)")
	fs.StringVar(&catalogOperator, "refresh-catalog-operator", "", "opt-in, with --refresh-after: also restart this catalog-operator Deployment, NAMESPACE/NAME (the platform's: "+status.DefaultCatalogOperator.String()+"), when a version Present for that long is an upgrade its PackageManifest does not show yet; needs patch on that Deployment (docs/after-sync.md#refresh)")
	fs.StringVar(&catalogDir, "catalog-dir", ".", "local checkout of the catalog repo")
	fs.StringVar(&cluster, "cluster", "global", "cluster overlay whose rendered/<cluster> is compared with the cluster")
	fs.StringVar(&dir, "rendered", "", "directory of the rendered objects (default: <catalog-dir>/rendered/<cluster>)")
	kube.register(fs)
	fs.StringVarP(&output, "output", "o", status.FormatText, "text, json or markdown")
	fs.StringVar(&summary, "summary", "", "also append the Markdown report to this file (e.g. $GITHUB_STEP_SUMMARY)")
	fs.DurationVar(&wait, "wait", 0, "wait up to this long (e.g. 10m) until every version is as asked; exit 1 when one fails or at the end")
	fs.BoolVar(&record, "record", false, "also read the install health (Subscription/CSV, ClusterExtension) of the versions the cluster lists and commit it to publish/health/<cluster>.yaml of --catalog (docs/rollout.md#health)")
	cat.register(fs, "push", "with --record: catalog Git repo to commit the health record to: URL or local path")
	tls.register(fs)
	withEnvHelp(fs)
	return cmd
}

// recordHealth is status --record: status.Record on the cluster of client
// into the catalog of cat, at the runner's clock; it prints what it
// recorded to stderr. Errors name --record.
func recordHealth(cmd *cobra.Command, client dynamic.Interface, cat *catalogFlags, tls *tlsFlags, cluster string) error {
	o, err := cat.options(tls)
	if err != nil {
		return err
	}
	res, err := status.Record(cmd.Context(), client, status.RecordOptions{Catalog: o, Cluster: cluster, Now: time.Now()})
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	status.PrintRecorded(cmd.ErrOrStderr(), cluster, res)
	return nil
}

// checkStatus compares what the cluster of client has with asked (the
// rendered objects of cluster): once, or, with wait > 0, watching until all
// is as asked, one failed or wait is over (a first progress line goes to
// stderr). With refreshAfter > 0 it restarts, through status.RefreshWith
// with catalog operator co, the catalog pods that lag that long, printing
// the restarts to stderr. It returns the report (nil when none could be
// made) and a *statusError when a version failed or is still waiting at
// the end of wait, else the error of the check, else that of the refresh.
func checkStatus(ctx context.Context, client dynamic.Interface, stderr io.Writer, cluster string, asked *status.Asked, wait, refreshAfter time.Duration, co status.ObjectRef) (*status.Report, error) {
	var refreshErr error
	refresh := func() {
		if refreshAfter <= 0 || refreshErr != nil {
			return
		}
		for _, ns := range namespaces(asked) {
			rs, err := status.RefreshWith(ctx, client, status.RefreshOptions{Namespace: ns, Grace: refreshAfter, Now: time.Now(), CatalogOperator: co})
			status.PrintRestarted(stderr, rs)
			if err != nil {
				refreshErr = err
				return
			}
		}
	}
	var rep *status.Report
	var err error
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		first := true
		rep, err = status.Wait(wctx, client, cluster, asked, func(r *status.Report) {
			refresh()
			if first {
				fmt.Fprintf(stderr, "waiting up to %s for cluster %s: %d as asked, %d waiting\n", wait, cluster, r.Count(status.AsAsked), r.Count(status.Waiting))
				first = false
			}
		})
		var nae *status.NotAsAskedError
		if errors.As(err, &nae) && nae.TimedOut {
			err = &statusError{fmt.Errorf("--wait %s: %w", wait, err)}
		} else if errors.As(err, &nae) {
			err = &statusError{err}
		}
	} else {
		rep, err = status.Check(ctx, client, cluster, asked)
		if err == nil {
			refresh()
		}
		if err == nil && rep.Count(status.Failed) > 0 {
			err = &statusError{&status.NotAsAskedError{Failed: rep.Count(status.Failed), Waiting: rep.Count(status.Waiting), Report: rep}}
		}
	}
	if err == nil {
		err = refreshErr
	}
	return rep, err
}

// printStatus prints rep to w in format output and, when summary (the
// --summary file) is not "", appends its Markdown to that file. The error
// is that of printing to w, or a usage error naming --summary when the
// file cannot be opened, or the error of closing it.
func printStatus(w io.Writer, rep *status.Report, output, summary string) error {
	if perr := rep.Print(w, output); perr != nil {
		return perr
	}
	if summary != "" {
		f, ferr := os.OpenFile(summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if ferr != nil {
			return &usageError{fmt.Errorf("--summary: %w", ferr)}
		}
		rep.Print(f, status.FormatMarkdown)
		if ferr := f.Close(); ferr != nil {
			return fmt.Errorf("--summary: %w", ferr)
		}
	}
	return nil
}

// namespaces are the namespaces of the asked ArtifactVersions, sorted.
func namespaces(a *status.Asked) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range a.Versions {
		if !seen[v.GetNamespace()] {
			seen[v.GetNamespace()] = true
			out = append(out, v.GetNamespace())
		}
	}
	sort.Strings(out)
	return out
}

// statusError is a cluster that is not as the catalog asks: exit 1.
type statusError struct{ err error }

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// ErrorClass implements errclass.Classified: the cluster is not as the
// catalog asks (exit 1).
func (e *statusError) ErrorClass() errclass.Class { return errclass.Input }
