// Command mirror benchmarks `publish mirror` against `crane copy` (one image
// at a time and four at a time) between two Debian docker-registry
// instances on free loopback ports, side by side in one run: first copy
// and no-op rerun, wall time, CPU time of the destination registry
// (/proc/<pid>/stat) and the requests it served (its access log).
//
// The image set is generated here, deterministically: -images images in as
// many repositories, each made of a shared "os" base layer, one of two
// shared "runtime" layers and a layer of its own, of random bytes from a
// seeded ChaCha8 stream; -unique-mb is the total size of the unique blobs.
// See run.sh.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	publish := flag.String("publish", "", "publish binary")
	crane := flag.String("crane", "", "crane binary (go-containerregistry v0.22.1)")
	n := flag.Int("images", 30, "images in the set")
	uniqueMB := flag.Int("unique-mb", 500, "total size of the unique blobs, MB")
	concurrency := flag.Int("concurrency", 4, "publish --concurrency and crane parallel copies")
	flag.Parse()
	if *publish == "" || *crane == "" {
		fmt.Fprintln(os.Stderr, "usage: mirror -publish PATH -crane PATH [-images 30] [-unique-mb 500]")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "bench-mirror-")
	check(err)
	defer os.RemoveAll(work)

	src := startRegistry(filepath.Join(work, "src"))
	defer src.stop()
	start := time.Now()
	refs, uniq := generate(src.host, *n, int64(*uniqueMB)<<20)
	fmt.Fprintf(os.Stderr, "generated %d images, %d unique blobs, %.0f MB unique, in %v\n", len(refs), uniq.blobs, float64(uniq.bytes)/(1<<20), time.Since(start).Round(time.Second))

	type tool struct {
		name string
		run  func(dst string) error
	}
	tools := []tool{
		{"publish mirror", func(dst string) error {
			args := []string{"mirror", "--plain-http", "--dst-registry", dst + "/publish", "--concurrency", strconv.Itoa(*concurrency)}
			for _, r := range refs {
				args = append(args, "--image", src.host+"/"+r)
			}
			return run(*publish, args...)
		}},
		{"crane copy, one at a time", func(dst string) error {
			for _, r := range refs {
				if err := run(*crane, "copy", src.host+"/"+r, dst+"/crane/"+r); err != nil {
					return err
				}
			}
			return nil
		}},
		{fmt.Sprintf("crane copy, %d at a time", *concurrency), func(dst string) error {
			sem := make(chan struct{}, *concurrency)
			errs := make(chan error, len(refs))
			var wg sync.WaitGroup
			for _, r := range refs {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					errs <- run(*crane, "copy", src.host+"/"+r, dst+"/crane/"+r)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	type phase struct {
		wall     time.Duration
		cpu      time.Duration
		requests int
	}
	results := make([][2]phase, len(tools))
	for i, t := range tools {
		dst := startRegistry(filepath.Join(work, fmt.Sprintf("dst%d", i)))
		for p := range 2 {
			cpu0, req0 := dst.cpu(), dst.requests()
			t0 := time.Now()
			if err := t.run(dst.host); err != nil {
				dst.stop()
				check(fmt.Errorf("%s: %w", t.name, err))
			}
			results[i][p] = phase{wall: time.Since(t0), cpu: dst.cpu() - cpu0, requests: dst.requests() - req0}
			fmt.Fprintf(os.Stderr, "%s, %s: %v\n", t.name, []string{"first copy", "no-op rerun"}[p], results[i][p].wall.Round(10*time.Millisecond))
		}
		dst.stop()
		os.RemoveAll(dst.dir)
	}

	fmt.Printf("%d images in %d repositories, %d unique blobs, %.0f MB unique (%.0f MB if every image is copied whole); publish --concurrency %d\n\n",
		len(refs), len(refs), uniq.blobs, float64(uniq.bytes)/(1<<20), float64(uniq.total)/(1<<20), *concurrency)
	fmt.Println("| tool | first copy: wall | dst CPU | dst requests | no-op rerun: wall | dst CPU | dst requests (per image) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for i, t := range tools {
		f, r := results[i][0], results[i][1]
		fmt.Printf("| %s | %.2f s | %.2f s | %d | %.2f s | %.2f s | %d (%.2f) |\n", t.name,
			f.wall.Seconds(), f.cpu.Seconds(), f.requests, r.wall.Seconds(), r.cpu.Seconds(), r.requests, float64(r.requests)/float64(len(refs)))
	}
	fmt.Printf("\npublish mirror first copy / crane one at a time: %.2fx; no-op rerun: %.2fx\n",
		results[0][0].wall.Seconds()/results[1][0].wall.Seconds(), results[0][1].wall.Seconds()/results[1][1].wall.Seconds())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
}

func run(bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args[:min(len(args), 4)], " "), err, out.Bytes())
	}
	return nil
}

// registry is a docker-registry process with its access log in a file.
type registry struct {
	dir, host, log string
	cmd            *exec.Cmd
}

var listening = regexp.MustCompile(`listening on (\S+?:\d+)\b`)

// startRegistry starts docker-registry on a free loopback port with its
// storage in dir, access log on.
func startRegistry(dir string) *registry {
	check(os.MkdirAll(dir, 0o755))
	cfg := filepath.Join(dir, "config.yml")
	check(os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: 127.0.0.1:0
`, strconv.Quote(filepath.Join(dir, "data")))), 0o644))
	r := &registry{dir: dir, log: filepath.Join(dir, "registry.log")}
	f, err := os.Create(r.log)
	check(err)
	r.cmd = exec.Command("docker-registry", "serve", cfg)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.cmd.Env = nil
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REGISTRY_") {
			r.cmd.Env = append(r.cmd.Env, kv)
		}
	}
	check(r.cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(r.log)
		// level warn hides "listening on"; the access log has no address:
		// ask /proc for the listening socket instead.
		if m := listening.FindSubmatch(data); m != nil {
			r.host = string(m[1])
			return r
		}
		if h := listenAddr(r.cmd.Process.Pid); h != "" {
			r.host = h
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.stop()
	check(fmt.Errorf("docker-registry in %s did not start", dir))
	return nil
}

// listenAddr finds the 127.0.0.1 TCP port pid listens on, from
// /proc/<pid>/fd and /proc/net/tcp.
func listenAddr(pid int) string {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// local_address st ... inode; st 0A is LISTEN.
		if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] {
			port, err := strconv.ParseUint(strings.Split(fs[1], ":")[1], 16, 32)
			if err == nil {
				return fmt.Sprintf("127.0.0.1:%d", port)
			}
		}
	}
	return ""
}

// cpu returns the user and system CPU time of the registry process.
func (r *registry) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	check(err)
	// Fields after the command name in parentheses; utime and stime are
	// fields 14 and 15 (1-based), in clock ticks (USER_HZ = 100).
	fs := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// requests counts the requests in the access log (combined log format).
func (r *registry) requests() int {
	time.Sleep(200 * time.Millisecond) // let the log writer catch up
	data, err := os.ReadFile(r.log)
	check(err)
	return bytes.Count(data, []byte(` HTTP/1.1" `))
}

func (r *registry) stop() {
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

type uniqueStats struct {
	blobs        int
	bytes, total int64
}

// generate pushes n images to host: repositories bench/app-NN (every third
// one nested: bench/team/app-NN), tag v1. Layers are random bytes from a
// ChaCha8 stream seeded with the layer's name, so every run has the same
// digests.
func generate(host string, n int, unique int64) ([]string, uniqueStats) {
	layer := func(seed string, size int64) v1.Layer {
		var key [32]byte
		copy(key[:], seed)
		rng := rand.NewChaCha8(key)
		data := make([]byte, size)
		_, err := io.ReadFull(rng, data)
		check(err)
		return static.NewLayer(data, types.OCIUncompressedLayer)
	}
	osLayer := layer("os", unique*10/100)
	runtimes := []v1.Layer{layer("runtime-a", unique*6/100), layer("runtime-b", unique*4/100)}
	own := unique * 80 / 100 / int64(n)
	st := uniqueStats{blobs: 3}
	for _, l := range append([]v1.Layer{osLayer}, runtimes...) {
		s, _ := l.Size()
		st.bytes += s
	}
	var refs []string
	var first name.Repository
	ctx := context.Background()
	for i := range n {
		repo := fmt.Sprintf("bench/app-%02d", i)
		if i%3 == 2 {
			repo = fmt.Sprintf("bench/team/app-%02d", i)
		}
		ref, err := name.ParseReference(host + "/" + repo + ":v1")
		check(err)
		mine := layer(fmt.Sprintf("app-%02d", i), own)
		bases := []v1.Layer{osLayer, runtimes[i%2]}
		if i > 0 {
			// Mount the shared layers from the first repository: a quick
			// setup.
			for j, b := range bases {
				d, _ := b.Digest()
				bases[j] = &remote.MountableLayer{Layer: b, Reference: first.Digest(d.String())}
			}
		} else {
			first = ref.Context()
		}
		img, err := mutate.AppendLayers(empty.Image, append(bases, mine)...)
		check(err)
		img, err = mutate.Config(img, v1.Config{Labels: map[string]string{"bench": repo}})
		check(err)
		check(remote.Write(ref, img, remote.WithContext(ctx)))
		refs = append(refs, repo+":v1")
		s, _ := mine.Size()
		st.bytes += s
		st.blobs += 2 // its layer and its config
		m, _ := img.Manifest()
		for _, l := range m.Layers {
			st.total += l.Size
		}
	}
	return refs, st
}
