// Package forge: TEMPORARY stub of the API agreed with the forge helper,
// removed when the forge branch is merged.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

type Options struct {
	Kind, APIURL, Repo, Token, CatalogURL string
	CABundle                              []byte
	HTTPClient                            *http.Client
}

func New(o Options) (Forge, error) { return nil, errors.New("stub") }

type PullRequest struct {
	Number              int
	URL                 string
	Title, Body         string
	Head, Base, HeadSHA string
	State               string
	Labels              []string
}
type Change struct {
	Title, Body string
	Labels      []string
}
type Forge interface {
	Kind() string
	Repo() string
	MaxBody() int
	Check(ctx context.Context) error
	Find(ctx context.Context, head, base string) (*PullRequest, error)
	Create(ctx context.Context, head, base string, c Change) (*PullRequest, error)
	Update(ctx context.Context, number int, c Change) (*PullRequest, error)
	Comment(ctx context.Context, number int, body string) error
	Close(ctx context.Context, number int, comment string) error
	AutoMerge(ctx context.Context, pr *PullRequest, method string) error
}

var ErrAutoMergeUnsupported = errors.New("auto-merge unsupported")

type PermissionError struct {
	Kind, Repo, Op, Need string
	Status               int
	Message              string
}

func (e *PermissionError) Error() string { return fmt.Sprint(e.Op, e.Need) }
