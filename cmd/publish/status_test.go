package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/operator-publish/publish/internal/logging"
)

// fakeTTY is a buffer that says it is a terminal (logging.IsTerminal).
type fakeTTY struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (f *fakeTTY) IsTerminal() bool { return true }
func (f *fakeTTY) Width() int       { return 200 }
func (f *fakeTTY) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.Write(p)
}
func (f *fakeTTY) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.String()
}

// screen returns what a terminal shows after out: the finished lines, and
// the text left on the last line ("" when the status line was erased).
// "\r" goes back to the first column; "\r\x1b[K" erases the line.
func screen(out string) (lines []string, last string) {
	out = strings.ReplaceAll(out, "\r\x1b[K", "\r")
	var cur string
	for _, r := range out {
		switch r {
		case '\r':
			cur = ""
		case '\n':
			lines = append(lines, cur)
			cur = ""
		default:
			cur += string(r)
		}
	}
	return lines, cur
}

// TestLiveStatusWiring: the logger of a text, non-quiet invocation on a
// terminal writes through a live status line (the registry client finds
// it with logging.StatusOf), made once for both logger set-ups of the
// root; --log-format json, --quiet or a stderr that is not a terminal get
// none. A transfer bar on that terminal becomes a part of the status line.
func TestLiveStatusWiring(t *testing.T) {
	tty := &fakeTTY{}
	var l logFlags
	l.formatName = "text"
	log, err := l.logger(tty)
	if err != nil {
		t.Fatal(err)
	}
	st := logging.StatusOf(log)
	if st == nil {
		t.Fatal("no status line on a terminal")
	}
	if log2, _ := l.logger(tty); logging.StatusOf(log2) != st {
		t.Error("the second logger of the root made a second status line")
	}
	inv := newInvocation(nil)
	inv.logFlags, inv.log = l, log
	p := inv.newProgress(tty, "push")
	if p == nil || !p.Terminal || p.Out == tty {
		t.Errorf("progress on the status terminal: %+v, want a bar in the status line", p)
	}
	p.Start(2048)
	p.Add(1024)
	p.Done()
	log.Info("push: done")
	inv.finish()
	lines, last := screen(tty.String())
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "push [") || lines[1] != "push: done" || last != "" {
		t.Errorf("screen %q, last line %q", lines, last)
	}

	for _, tc := range []struct {
		name string
		l    logFlags
		w    io.Writer
	}{
		{"json", logFlags{formatName: "json"}, &fakeTTY{}},
		{"quiet", logFlags{formatName: "text", quiet: true}, &fakeTTY{}},
		{"not a terminal", logFlags{formatName: "text"}, &bytes.Buffer{}},
	} {
		log, err := tc.l.logger(tc.w)
		if err != nil {
			t.Fatal(err)
		}
		if logging.StatusOf(log) != nil {
			t.Errorf("%s: a live status line", tc.name)
		}
	}
	var plain bytes.Buffer
	inv = newInvocation(nil)
	inv.logFlags.formatName = "text"
	if inv.log, err = inv.logFlags.logger(&plain); err != nil {
		t.Fatal(err)
	}
	if p := inv.newProgress(&plain, "push"); p == nil || p.Terminal {
		t.Errorf("progress off a terminal: %+v, want lines", p)
	}
}

// TestMirrorOnTerminal: publish mirror with a terminal for stderr shows
// the same lines as without one, once the status line's redraws are
// applied, and leaves no status line behind; on a buffer stderr holds no
// terminal control sequence at all.
func TestMirrorOnTerminal(t *testing.T) {
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	pushRandom(t, src+"/team/a:v1")
	args := []string{"mirror", "--dst-registry", dst + "/m", "--image", src + "/team/a:v1"}
	if _, _, err := runPublishErr(t, args...); err != nil {
		t.Fatal(err)
	}
	_, plain, err := runPublishErr(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(plain, "\r\x1b") {
		t.Errorf("control sequences off a terminal: %q", plain)
	}

	inv := newInvocation(nil)
	root := newRoot(inv)
	root.SetArgs(args)
	var out bytes.Buffer
	tty := &fakeTTY{}
	root.SetOut(&out)
	root.SetErr(tty)
	err = root.ExecuteContext(t.Context())
	inv.finish()
	if err != nil {
		t.Fatal(err)
	}
	if inv.logFlags.statusOf(tty) != nil {
		t.Error("the status line outlives the command")
	}
	lines, last := screen(tty.String())
	if got := strings.Join(lines, "\n") + "\n"; got != plain || last != "" {
		t.Errorf("terminal shows\n%s[%s]\nwant\n%s", got, last, plain)
	}
}
