package gitops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// MissingBranchError says that --catalog-branch names a branch the catalog
// repo does not have, while the repo has other branches: publishing would
// create a branch that no Argo CD Application or Flux GitRepository
// watches. It is an input error; Options.CreateBranch (--create-branch)
// allows the new branch.
type MissingBranchError struct {
	URL      string
	Branch   string
	Branches []string // the branches the repo has, sorted
}

func (e *MissingBranchError) Error() string {
	return fmt.Sprintf("catalog repo %s has no branch %q (it has: %s): check --catalog-branch, or pass --create-branch to create it",
		redact(e.URL), e.Branch, strings.Join(e.Branches, ", "))
}

// remoteBranches lists the branch names of the repo at url (go-git's
// ls-remote), sorted.
func remoteBranches(ctx context.Context, o Options, url string) ([]string, error) {
	auth, err := o.auth()
	if err != nil {
		return nil, err
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	refs, err := rem.ListContext(cctx, &git.ListOptions{Auth: auth, CABundle: o.CABundle})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range refs {
		if r.Name().IsBranch() {
			out = append(out, r.Name().Short())
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkBranch is called when o.Branch is missing from a repo that may have
// other branches: it returns a *MissingBranchError unless o.CreateBranch or
// the repo has no branch at all (a new, empty repo is seeded).
func checkBranch(ctx context.Context, o Options, url string) error {
	if o.CreateBranch {
		return nil
	}
	branches, err := remoteBranches(ctx, o, url)
	if err != nil {
		return &UnreachableError{URL: o.URL, Op: "list branches", Err: err}
	}
	if len(branches) == 0 {
		return nil
	}
	return &MissingBranchError{URL: o.URL, Branch: o.Branch, Branches: branches}
}

// NotCatalogError says that the catalog repo (or --catalog-path) holds files
// but no state (publish/state/, or the older publish/state.yaml): it is some other repository, and publishing
// would write the template and a catalog into it. It is an input error;
// --init-catalog, or --catalog-path naming an absent or empty directory,
// says the user means it.
type NotCatalogError struct {
	URL   string
	Path  string   // --catalog-path, "" for the repo root
	Found []string // some of the entries found, directories with a trailing '/'
	More  int      // how many more entries there are
}

func (e *NotCatalogError) Error() string {
	where := "catalog repo " + redact(e.URL)
	if e.Path != "" {
		where = fmt.Sprintf("--catalog-path %s in catalog repo %s", e.Path, redact(e.URL))
	}
	found := strings.Join(e.Found, ", ")
	if e.More > 0 {
		found += fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("%s is not a catalog: it has no %s but holds %s. Nothing was mirrored or committed. Check --catalog and --catalog-branch; to make it a catalog anyway, pass --init-catalog, or use --catalog-path DIR naming an absent or empty directory", where, StateDir+"/", found)
}

// forgeFile reports whether a top-level entry is one a forge creates with a
// new repository (GitHub, GitLab, Gitea: README, LICENSE, .gitignore,
// .gitattributes), which does not make the repo someone else's project.
func forgeFile(name string, isDir bool) bool {
	if isDir {
		return false
	}
	u := strings.ToUpper(name)
	return strings.HasPrefix(u, "README") || strings.HasPrefix(u, "LICENSE") || name == ".gitignore" || name == ".gitattributes"
}

// Entry is one top-level entry of the catalog root, for CheckCatalog.
type Entry struct {
	Name string
	Dir  bool
}

// Entries lists the top-level entries of the catalog files
// (slash-separated paths relative to its root, in memory): each file at
// the root, and each directory holding a file; sorted by name.
func Entries(files map[string][]byte) []Entry {
	seen := map[string]bool{}
	var out []Entry
	for p := range files {
		name, _, nested := strings.Cut(p, "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, Entry{Name: name, Dir: nested})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CheckCatalog decides whether a catalog root whose top-level entries are
// entries, and which has a state file (HasState) when hasState, may be published
// to. A tree with the state file is a catalog. Without it, the tree is
// seeded from the template when it is empty, when o.Path (--catalog-path)
// is set and the directory is absent or empty, when it holds at the repo
// root only files a forge creates with a new repository (README*,
// LICENSE*, .gitignore, .gitattributes), or when o.InitCatalog
// (--init-catalog) is set. Otherwise the error is a *NotCatalogError naming
// what was found.
func CheckCatalog(hasState bool, entries []Entry, o Options) error {
	if hasState || o.InitCatalog {
		return nil
	}
	sub, _ := cleanPath(o.Path)
	var found []string
	for _, e := range entries {
		if e.Name == ".git" || sub == "" && forgeFile(e.Name, e.Dir) {
			continue
		}
		n := e.Name
		if e.Dir {
			n += "/"
		}
		found = append(found, n)
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	err := &NotCatalogError{URL: o.URL, Path: sub, Found: found}
	if len(found) > 5 {
		err.Found, err.More = found[:5], len(found)-5
	}
	return err
}

// CheckBranch is called when o.Branch is missing from the catalog repo
// (a clone found no such branch): it returns a *MissingBranchError naming
// the branches the repo has, unless o.CreateBranch (--create-branch) or the
// repo has no branch at all (a new, empty repo is seeded). Errors:
// *UnreachableError when the branches cannot be listed.
func CheckBranch(ctx context.Context, o Options) error {
	o.defaults()
	url, err := o.endpoint()
	if err != nil {
		return err
	}
	return checkBranch(ctx, o, url)
}
