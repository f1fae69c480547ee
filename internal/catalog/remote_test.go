package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
)

// TestPushRefusedByHook: a push that a pre-receive hook refuses says what
// the hook printed (git's "remote: ..." lines), cleaned of control
// characters and credentials, on both ways to the server; the branch does
// not move.
func TestPushRefusedByHook(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			o, bare := b.make(t)
			head := seed(t, bare, "main", catalogFiles())
			hook := "#!/bin/sh\n" +
				"printf 'main is protected: open a merge request\\n'\n" +
				"printf 'ask https://robot:s3cret@ci.example.com/help \\033[31mnow\\033[0m\\n'\n" +
				"exit 1\n"
			if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
			tip := openTip(t, o)
			w, err := tip.Commit(files(map[string]string{"rendered/global/etcd/v1.1.0.yaml": "a\n"}), opts("refused"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tip.Push(context.Background(), w)
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("push: %v, want a *RefusedError", err)
			}
			if gitops.IsRejected(err) {
				t.Errorf("a hook's refusal is not a branch that moved on (it is not retried): %v", err)
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{"pre-receive hook declined", "main is protected: open a merge request", "ci.example.com/help"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			for _, bad := range []string{"s3cret", "\x1b"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message has %q: %q", bad, msg)
				}
			}
			if got := run(t, bare, "rev-parse", "main"); got != head {
				t.Errorf("the refused push moved main to %s", got)
			}
		})
	}
}
