// Command tektoncheck validates Tekton Tasks and Pipelines as Tekton's own
// admission webhook does (tektoncd/pipeline cmd/webhook): each YAML document
// is decoded into a tekton.dev/v1 Task or Pipeline with unknown fields
// refused, given the default
// Tekton configuration (config.FromContextOrDefaults, what the webhook's
// config store holds before any ConfigMap changes it) and the create
// operation (apis.WithinCreate), defaulted (SetDefaults, the defaulting
// webhook) and validated (Validate).
//
// Usage: tektoncheck FILE...
//
// It prints nothing and exits 0 when every document is valid. Otherwise it
// prints one line per finding, "FILE: document N: KIND NAME: ERROR" (Tekton
// names the field path, not the line), and exits 1; 2 for a usage error or
// an unreadable file. A document of another kind is an error: the files
// given are meant to hold Tasks and Pipelines.
//
// It lives in a module of its own (hack/tektoncheck/go.mod) because Tekton's
// Kubernetes and knative versions differ from the publish module's; it is
// built by hack/tektoncheck/build.sh and run by internal/ci
// TestTektonTaskValidates (docs/testing.md).
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tektoncheck FILE...")
		os.Exit(2)
	}
	failed := false
	for _, f := range os.Args[1:] {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tektoncheck:", err)
			os.Exit(2)
		}
		for _, finding := range check(data) {
			fmt.Printf("%s: %s\n", f, finding)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check returns the findings of every YAML document in data.
func check(data []byte) []string {
	var out []string
	for i, doc := range documents(data) {
		n := i + 1
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			out = append(out, fmt.Sprintf("document %d: %v", n, err))
			continue
		}
		var obj interface {
			SetDefaults(context.Context)
			Validate(context.Context) *apis.FieldError
		}
		var name string
		switch {
		case meta.APIVersion == "tekton.dev/v1" && meta.Kind == "Task":
			task := &v1.Task{}
			obj, name = task, "Task"
			// The webhook refuses unknown fields ("disallow unknown fields: true").
			if err := yaml.UnmarshalStrict(doc, task); err != nil {
				out = append(out, fmt.Sprintf("document %d: %v", n, err))
				continue
			}
			name += " " + task.Name
		case meta.APIVersion == "tekton.dev/v1" && meta.Kind == "Pipeline":
			p := &v1.Pipeline{}
			obj, name = p, "Pipeline"
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				out = append(out, fmt.Sprintf("document %d: %v", n, err))
				continue
			}
			name += " " + p.Name
		default:
			out = append(out, fmt.Sprintf("document %d: %s %s, want tekton.dev/v1 Task or Pipeline", n, meta.APIVersion, meta.Kind))
			continue
		}
		ctx := config.ToContext(context.Background(), config.FromContextOrDefaults(context.Background()))
		ctx = apis.WithinCreate(ctx)
		obj.SetDefaults(ctx)
		ferr := obj.Validate(ctx)
		// Warnings (deprecated fields) do not refuse the object in the
		// webhook either: they are printed on stderr.
		if w := ferr.Filter(apis.WarningLevel); w != nil {
			for _, e := range w.WrappedErrors() {
				fmt.Fprintf(os.Stderr, "warning: document %d: %s: %v\n", n, name, e)
			}
		}
		if e := ferr.Filter(apis.ErrorLevel); e != nil {
			for _, e := range e.WrappedErrors() {
				out = append(out, fmt.Sprintf("document %d: %s: %v", n, name, e))
			}
		}
	}
	return out
}

// documents splits a YAML stream at its "---" lines, leaving out empty
// documents and comment-only ones.
func documents(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.String()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			flush()
			continue
		}
		io.WriteString(&cur, line)
	}
	flush()
	return docs
}

func hasContent(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
