package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"sigs.k8s.io/yaml"
)

// showCatalog is step 6: clone the catalog and print the rendered/ tree, the
// Artifact of the delisted package, an ArtifactVersion of the upgraded
// package, and the git log. It fails when the catalog does not show what the
// runs should have produced.
func (d *demo) showCatalog() error {
	clone := filepath.Join(d.work, "catalog-clone")
	repo, err := git.PlainClone(clone, false, &git.CloneOptions{
		URL:           d.catalog,
		ReferenceName: plumbing.NewBranchReferenceName(catalogBranch),
		SingleBranch:  true,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return errors.New("the catalog repo is empty: publish pushed no commit")
	}
	if err != nil {
		return fmt.Errorf("clone catalog: %w", err)
	}
	fmt.Fprintf(d.out, "$ git clone %s %s\n", d.display(d.catalog), d.display(clone))

	rendered := filepath.Join(clone, "rendered")
	fmt.Fprintf(d.out, "\n$ tree rendered/\n")
	if err := printTree(d, rendered); err != nil {
		return err
	}

	objs, err := loadObjects(clone, rendered)
	if err != nil {
		return err
	}
	var problems []string

	if d.airgapped {
		problems = d.checkAirgapped(objs)
	} else {
		problems = d.checkRuns(objs)
	}

	fmt.Fprintf(d.out, "\n$ git log --oneline\n")
	head, err := repo.Head()
	if err != nil {
		return err
	}
	iter, err := repo.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		return err
	}
	var last *object.Commit
	err = iter.ForEach(func(c *object.Commit) error {
		if last == nil {
			last = c
		}
		fmt.Fprintf(d.out, "%s %s\n", c.Hash.String()[:7], subject(c.Message))
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n$ git log -1   # the last catalog commit, in full\n")
	fmt.Fprintf(d.out, "commit %s\nAuthor: %s <%s>\nDate:   %s\n\n", last.Hash, last.Author.Name, last.Author.Email, last.Author.When.Format("Mon Jan 2 15:04:05 2006 -0700"))
	for _, line := range strings.Split(strings.TrimRight(last.Message, "\n"), "\n") {
		if line == "" {
			fmt.Fprintln(d.out)
			continue
		}
		fmt.Fprintf(d.out, "    %s\n", line)
	}

	if len(problems) > 0 {
		return fmt.Errorf("the catalog is not what the runs should produce:\n  - %s", strings.Join(problems, "\n  - "))
	}
	return nil
}

// renderedObject is the part of a rendered Kubernetes object the demo looks at.
// checkRuns checks what the four publish runs should leave: the delisted
// package's Artifact with spec.present: false, the upgrade's
// ArtifactVersion present.
func (d *demo) checkRuns(objs []renderedObject) []string {
	var problems []string
	delisted := pick(objs, func(o renderedObject) bool {
		return o.Kind == "Artifact" && o.Metadata.Name == delistPackage
	})
	if delisted == nil {
		problems = append(problems, fmt.Sprintf("no Artifact %s under rendered/", delistPackage))
	} else {
		d.cat(delisted)
		if delisted.Spec.Present == nil || *delisted.Spec.Present {
			problems = append(problems, fmt.Sprintf("%s: Artifact %s should have spec.present: false after the delisting", delisted.Path, delistPackage))
		}
	}

	upgrade := newest(d.bundles, upgradePackage)
	upgraded := pick(objs, func(o renderedObject) bool {
		return o.Kind == "ArtifactVersion" && o.artifact() == upgradePackage && strings.TrimPrefix(o.Spec.Tag, "v") == upgrade.Version
	})
	if upgraded == nil {
		problems = append(problems, fmt.Sprintf("no ArtifactVersion of %s with tag v%s under rendered/", upgradePackage, upgrade.Version))
	} else {
		d.cat(upgraded)
		if upgraded.Spec.Present == nil || !*upgraded.Spec.Present {
			problems = append(problems, fmt.Sprintf("%s: ArtifactVersion %s should have spec.present: true", upgraded.Path, upgraded.Metadata.Name))
		}
	}

	return problems
}

// checkAirgapped checks what push --catalog of the archive should leave:
// every Artifact present, pointing at the destination registry under the
// site prefix.
func (d *demo) checkAirgapped(objs []renderedObject) []string {
	var problems []string
	artifacts := 0
	for i, o := range objs {
		if o.Kind != "Artifact" {
			continue
		}
		artifacts++
		if o.Spec.Present == nil || !*o.Spec.Present {
			problems = append(problems, fmt.Sprintf("%s: Artifact %s should have spec.present: true", o.Path, o.Metadata.Name))
		}
		if o.Spec.Registry != d.dst.Host || !strings.HasPrefix(o.Spec.Repository, "site/") {
			problems = append(problems, fmt.Sprintf("%s: Artifact %s points at %s/%s, not the destination %s/site/...", o.Path, o.Metadata.Name, o.Spec.Registry, o.Spec.Repository, d.dst.Host))
		}
		if o.Metadata.Name == delistPackage {
			d.cat(&objs[i])
		}
	}
	if artifacts == 0 {
		problems = append(problems, "no Artifact under rendered/")
	}
	return problems
}

type renderedObject struct {
	Path     string `json:"-"` // relative to the clone
	Doc      []byte `json:"-"` // the object's YAML document
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Present    *bool  `json:"present"`
		Tag        string `json:"tag"`
		Registry   string `json:"registry"`
		Repository string `json:"repository"`
	} `json:"spec"`
}

// artifact is the Artifact an ArtifactVersion belongs to: its
// cpaas.io/artifact-version label, else the name before the first ".".
func (o renderedObject) artifact() string {
	if a := o.Metadata.Labels["cpaas.io/artifact-version"]; a != "" {
		return a
	}
	a, _, _ := strings.Cut(o.Metadata.Name, ".")
	return a
}

// loadObjects reads every YAML document below dir.
func loadObjects(root, dir string) ([]renderedObject, error) {
	var objs []renderedObject
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, doc := range splitDocs(data) {
			var o renderedObject
			if err := yaml.Unmarshal(doc, &o); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if o.Kind == "" {
				continue
			}
			o.Path, o.Doc = filepath.ToSlash(rel), doc
			objs = append(objs, o)
		}
		return nil
	})
	return objs, err
}

// splitDocs splits a multi-document YAML file at its "---" lines.
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	flush := func() {
		if len(bytes.TrimSpace(cur)) > 0 {
			docs = append(docs, cur)
		}
		cur = nil
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, "\r\n"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			continue
		}
		cur = append(cur, line...)
	}
	flush()
	return docs
}

// pick returns the first object (by path) that matches.
func pick(objs []renderedObject, match func(renderedObject) bool) *renderedObject {
	for i := range objs {
		if match(objs[i]) {
			return &objs[i]
		}
	}
	return nil
}

// cat prints one object with the file it came from.
func (d *demo) cat(o *renderedObject) {
	fmt.Fprintf(d.out, "\n$ cat %s\n%s", o.Path, o.Doc)
	if !bytes.HasSuffix(o.Doc, []byte("\n")) {
		fmt.Fprintln(d.out)
	}
}

// printTree prints the directory tree below root, like tree(1).
func printTree(d *demo, root string) error {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return errors.New("the catalog has no rendered/ directory")
	}
	fmt.Fprintln(d.out, "rendered")
	dirs, files := 0, 0
	var walk func(dir, indent string) error
	walk = func(dir, indent string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for i, e := range entries {
			branch, next := "├── ", "│   "
			if i == len(entries)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintf(d.out, "%s%s%s\n", indent, branch, e.Name())
			if e.IsDir() {
				dirs++
				if err := walk(filepath.Join(dir, e.Name()), indent+next); err != nil {
					return err
				}
			} else {
				files++
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n%d directories, %d files\n", dirs, files)
	return nil
}
