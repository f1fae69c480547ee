// Command archive-bench measures `publish package` and `publish push` beside
// `crane pull --format oci` + `tar` and `crane push` of the same images, in
// one run, against two local registries. run.sh starts the registries and
// builds the binaries; see docs/airgap.md ("Measured") for the table.
//
// Packaging is measured from the registry, through an empty --cache, and
// from the very layout crane pulled (--cache <layout>, trusted and with
// --verify-cache) in turns with `tar -cf` of that layout; it fails unless
// every way gives the same archive bytes.
//
// The images are generated deterministically: 6 operators, each a bundle
// and 5 related images; the 30 related images share 3 base stacks (64 MiB
// each) and add one layer of their own (about 10 MiB). Layers hold random
// bytes (like compressed data, they do not compress): about 500 MiB unique.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/operator-publish/publish/internal/bundle"
)

func main() {
	src := flag.String("src", "", "source registry host:port (plain HTTP)")
	dst := flag.String("dst", "", "destination registry host:port (plain HTTP)")
	publish := flag.String("publish", "", "publish binary")
	crane := flag.String("crane", "", "crane binary")
	work := flag.String("work", "", "work directory")
	ops := flag.Int("operators", 6, "operators (5 related images each)")
	flag.IntVar(&repeat, "repeat", 3, "runs of each step; the fastest counts")
	phase := flag.String("phase", "", "generate: push the images and write the package repo; measure: run the tools")
	flag.StringVar(&steps, "steps", "all", "measure: all, or push (crane pull, publish package, crane push and publish push only)")
	flag.IntVar(&dstPID, "dst-pid", 0, "measure -steps push: the destination registry's process, whose CPU time each push costs is printed (0: not measured)")
	flag.Parse()
	var err error
	switch *phase {
	case "generate":
		err = generatePhase(*src, *work, *ops)
	case "measure":
		err = run(*dst, *publish, *crane, *work, *ops)
	default:
		err = fmt.Errorf("-phase generate|measure")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// layer makes a deterministic gzip layer holding size random bytes (gzip
// level 0: random bytes do not compress anyway, like the compressed data
// of real layers).
func layer(seed string, size int) (v1.Layer, int64, error) {
	var s [32]byte
	copy(s[:], seed)
	r := rand.New(rand.NewChaCha8(s))
	data := make([]byte, size)
	for i := 0; i+8 <= len(data); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: seed + ".bin", Mode: 0o644, Size: int64(size), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	zw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	return l, int64(len(b)), err
}

func image(layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	return mutate.ConfigFile(img, cf)
}

const csvTmpl = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: OP.v1.0.0
  annotations:
    description: Benchmark operator OP.
spec:
  displayName: OP
  version: 1.0.0
  install:
    strategy: deployment
    spec:
      deployments:
      - name: OP-controller
        spec:
          selector: {matchLabels: {app: OP}}
          template:
            metadata: {labels: {app: OP}}
            spec:
              containers:
CONTAINERS  installModes:
  - {type: AllNamespaces, supported: true}
`

func generate(src, repo string, ops int) (unique int64, refs []string, err error) {
	var bases [][]v1.Layer
	for b := range 3 {
		var stack []v1.Layer
		for j, size := range []int{48 << 20, 16 << 20} {
			l, n, err := layer(fmt.Sprintf("base-%d-%d", b, j), size)
			if err != nil {
				return 0, nil, err
			}
			stack = append(stack, l)
			unique += n
		}
		bases = append(bases, stack)
	}
	for o := range ops {
		op := fmt.Sprintf("op-%d", o)
		var related []string
		var containers strings.Builder
		for i := range 5 {
			k := o*5 + i
			own, n, err := layer(fmt.Sprintf("img-%d", k), 9<<20+k*37<<10)
			if err != nil {
				return 0, nil, err
			}
			unique += n
			img, err := image(append(append([]v1.Layer(nil), bases[k%3]...), own)...)
			if err != nil {
				return 0, nil, err
			}
			ref := fmt.Sprintf("%s/bench/%s-image-%d:v1.0.0", src, op, i)
			if err := write(ref, img); err != nil {
				return 0, nil, err
			}
			related = append(related, ref)
			fmt.Fprintf(&containers, "              - {name: c%d, image: %s}\n", i, ref)
		}
		csv := strings.ReplaceAll(strings.Replace(csvTmpl, "CONTAINERS", containers.String(), 1), "OP", op)
		ann := "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: " + op + "\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"
		b, err := bundle.LayerImage(map[string][]byte{
			"manifests/" + op + ".clusterserviceversion.yaml": []byte(csv),
			"metadata/annotations.yaml":                       []byte(ann),
		}, map[string]string{"operators.operatorframework.io.bundle.package.v1": op})
		if err != nil {
			return 0, nil, err
		}
		bref := fmt.Sprintf("%s/bench/%s-bundle:v1.0.0", src, op)
		if err := write(bref, b); err != nil {
			return 0, nil, err
		}
		refs = append(refs, append(related, bref)...)
		m := fmt.Sprintf(`apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: %s.v1.0.0
spec:
  type: bundle
  artifact: %s
  version: v1.0.0
  arch: [linux/amd64]
  info:
    displayName: %s
  relatedImages:
  - %s
`, op, bref, op, strings.Join(related, "\n  - "))
		p := filepath.Join(repo, "packages", op, "1.0.0", "manifest.yaml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
			return 0, nil, err
		}
	}
	return unique, refs, nil
}

func write(ref string, img v1.Image) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	return remote.Write(r, img)
}

var (
	repeat int
	steps  string
	dstPID int
)

// procCPU is the CPU time (user+sys, seconds) process pid has used so far,
// from /proc/PID/stat (0 when it cannot be read).
func procCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold spaces).
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime float64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return (utime + stime) / 100 // clock ticks (USER_HZ, 100 on Linux)
}

type step struct {
	tool, what string
	secs       float64
	rssMiB     float64
	bytes      int64
}

// timed runs a command and returns its wall time and peak memory.
func timed(dir string, args ...string) (float64, float64, error) {
	secs, rss, _, err := timedCPU(dir, args...)
	return secs, rss, err
}

// timedCPU is timed that also returns the command's CPU time (user+sys,
// seconds): on a shared machine it varies far less than the wall time.
func timedCPU(dir string, args ...string) (float64, float64, float64, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	rss := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return secs, rss, cpu, nil
}

// sha is the sha256 of file p ("" when it cannot be read).
func sha(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func dirSize(p string) (n int64) {
	filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// generatePhase pushes the images and writes the package repo, and the
// list of references and the unique size for the measure phase. It is a
// process of its own: a child's peak RSS on Linux starts from its parent's
// at fork, so the measuring process must stay small.
func generatePhase(src, work string, ops int) error {
	repo := filepath.Join(work, "repo")
	fmt.Fprintf(os.Stderr, "generating %d operators into %s ...\n", ops, src)
	unique, refs, err := generate(src, repo, ops)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "refs.txt"), []byte(fmt.Sprintf("%d\n%s\n", unique, strings.Join(refs, "\n"))), 0o644)
}

func run(dst, publish, crane, work string, ops int) error {
	repo := filepath.Join(work, "repo")
	data, err := os.ReadFile(filepath.Join(work, "refs.txt"))
	if err != nil {
		return err
	}
	lines := strings.Fields(string(data))
	var unique int64
	fmt.Sscan(lines[0], &unique)
	refs := lines[1:]
	fmt.Fprintf(os.Stderr, "%d images, %.0f MiB of unique layers\n", len(refs), float64(unique)/(1<<20))
	var stepList []step
	// Each step runs -repeat times (the machine is shared: the fastest run
	// is the one least disturbed); a push goes to fresh repositories each
	// time.
	add := func(tool, what string, once bool, args func(round int) []string) error {
		best := step{tool: tool, what: what, secs: -1}
		n := repeat
		if once {
			n = 1
		}
		for r := range n {
			s, rss, err := timed(work, args(r)...)
			if err != nil {
				return err
			}
			if best.secs < 0 || s < best.secs {
				best.secs = s
			}
			best.rssMiB = max(best.rssMiB, rss)
		}
		stepList = append(stepList, best)
		fmt.Fprintf(os.Stderr, "%-8s %-46s %6.1f s  %5.0f MiB RSS\n", tool, what, best.secs, best.rssMiB)
		return nil
	}
	// turns runs steps in turns (a, b, c, a, b, c, ...): each meets the
	// same state of the shared machine. Before each run its output is
	// removed and the disk synced (not timed), so every tool writes a new
	// file with no writeback of the previous run pending.
	type turn struct {
		tool, what, out string
		args            []string
	}
	turns := func(ts ...turn) error {
		best := make([]step, len(ts))
		for i, t := range ts {
			best[i] = step{tool: t.tool, what: t.what, secs: -1}
		}
		for range max(repeat, 5) {
			for i, t := range ts {
				os.Remove(t.out)
				syscall.Sync()
				secs, rss, err := timed(work, t.args...)
				if err != nil {
					return err
				}
				if best[i].secs < 0 || secs < best[i].secs {
					best[i].secs = secs
				}
				best[i].rssMiB = max(best[i].rssMiB, rss)
			}
		}
		stepList = append(stepList, best...)
		for _, s := range best {
			fmt.Fprintf(os.Stderr, "%-8s %-46s %6.2f s  %5.0f MiB RSS\n", s.tool, s.what, s.secs, s.rssMiB)
		}
		return nil
	}
	tgz := filepath.Join(work, "ops.tgz")
	layout := filepath.Join(work, "layout")
	fixed := func(a ...string) func(int) []string { return func(int) []string { return a } }
	// crane first: its pull warms the registry's page cache for both.
	if err := add("crane", "pull --format oci (one layout)", false, func(r int) []string {
		os.RemoveAll(layout)
		return append(append([]string{crane, "pull", "--format", "oci"}, refs...), layout)
	}); err != nil {
		return err
	}
	lsize := dirSize(layout)
	if steps == "push" {
		return pushSteps(add, publish, crane, repo, tgz, layout, dst)
	}
	// The same layout, three ways: tar, and publish package reading it as
	// its --cache (bundle tags are still resolved at the registry), trusting
	// it as tar does and hashing every blob (--verify-cache).
	ltar, ltgz := filepath.Join(work, "layout.tar"), tgz+".layout"
	if err := turns(
		turn{"tar", "tar -cf of that layout", ltar, []string{"tar", "-cf", ltar, "-C", layout, "."}},
		turn{"publish", "package --cache <that layout> (.tgz, gzip -1)", ltgz, []string{publish, "package", "--source", repo, "-o", ltgz, "--plain-http", "--cache", layout}},
		turn{"publish", "package --cache <that layout> --verify-cache", ltgz + ".v", []string{publish, "package", "--source", repo, "-o", ltgz + ".v", "--plain-http", "--cache", layout, "--verify-cache"}},
	); err != nil {
		return err
	}
	if err := add("tar", "tar -czf of that layout (gzip -6)", true, fixed("tar", "-czf", filepath.Join(work, "layout.tar.gz"), "-C", layout, ".")); err != nil {
		return err
	}
	if err := add("publish", "package (registry -> .tgz, gzip -1)", false, fixed(publish, "package", "--source", repo, "-o", tgz, "--plain-http")); err != nil {
		return err
	}
	if err := add("publish", "package --cache <empty dir> (registry -> cache + .tgz)", false, func(r int) []string {
		os.RemoveAll(filepath.Join(work, "cache"))
		return []string{publish, "package", "--source", repo, "-o", tgz + ".cold", "--plain-http", "--cache", filepath.Join(work, "cache")}
	}); err != nil {
		return err
	}
	if err := add("publish", "package --level 0 (store)", false, fixed(publish, "package", "--source", repo, "-o", tgz+".0", "--plain-http", "--level", "0")); err != nil {
		return err
	}
	if err := add("publish", "verify", false, fixed(publish, "verify", tgz)); err != nil {
		return err
	}
	if err := add("crane", "push --index (layout -> registry)", false, func(r int) []string {
		return []string{crane, "push", "--index", layout, fmt.Sprintf("%s/crane%d/all:v1", dst, r)}
	}); err != nil {
		return err
	}
	if err := add("publish", "push (.tgz -> registry, 36 repositories)", false, func(r int) []string {
		return []string{publish, "push", tgz, "--dst-repo", fmt.Sprintf("%s/publish%d", dst, r), "--plain-http", "--no-auth"}
	}); err != nil {
		return err
	}
	if err := add("publish", "push again (everything present)", false, fixed(publish, "push", tgz, "--dst-repo", dst+"/publish0", "--plain-http", "--no-auth")); err != nil {
		return err
	}
	get := func(what string) float64 {
		for _, s := range stepList {
			if strings.HasPrefix(s.what, what) {
				return s.secs
			}
		}
		return 0
	}
	fmt.Printf("\n%d images (%d operators: a bundle and 5 related images each), %.0f MiB of unique layers; fastest of %d runs (tar -czf: 1)\n\n", len(refs), ops, float64(unique)/(1<<20), repeat)
	fmt.Println("| tool | step | wall time | peak RSS |")
	fmt.Println("|---|---|---|---|")
	for _, s := range stepList {
		fmt.Printf("| %s | %s | %.2f s | %.0f MiB |\n", s.tool, s.what, s.secs, s.rssMiB)
	}
	fmt.Println()
	fmt.Printf("| size | bytes | vs the layout's blobs |\n|---|---|---|\n")
	fmt.Printf("| OCI layout (crane pull): every blob once | %d | 1.000 |\n", lsize)
	fmt.Printf("| tar -cf of the layout | %d | %.4f |\n", size(filepath.Join(work, "layout.tar")), float64(size(filepath.Join(work, "layout.tar")))/float64(lsize))
	fmt.Printf("| tar -czf of the layout | %d | %.4f |\n", size(filepath.Join(work, "layout.tar.gz")), float64(size(filepath.Join(work, "layout.tar.gz")))/float64(lsize))
	fmt.Printf("| publish package (gzip -1) | %d | %.4f |\n", size(tgz), float64(size(tgz))/float64(lsize))
	fmt.Printf("| publish package --level 0 | %d | %.4f |\n", size(tgz+".0"), float64(size(tgz+".0"))/float64(lsize))
	fmt.Println()
	for _, p := range []string{tgz + ".layout", tgz + ".layout.v", tgz + ".cold"} {
		if sha(p) != sha(tgz) {
			return fmt.Errorf("%s differs from %s: packaging from a cache must give the same archive", p, tgz)
		}
	}
	fmt.Printf("the archives from the registry, an empty cache and the layout (trusted or hashed) are the same bytes (sha256 %s)\n\n", sha(tgz))
	fmt.Printf("package from the layout / tar -cf of it: %.2fx (--verify-cache: %.2fx); package from the registry / (crane pull + tar -cf): %.2fx; push / crane push: %.2fx\n",
		get("package --cache <that layout> (")/get("tar -cf"), get("package --cache <that layout> --verify")/get("tar -cf"), get("package (registry")/(get("pull")+get("tar -cf")), get("push (.tgz")/get("push --index"))
	return nil
}

// pushSteps measures crane push of the layout and publish push of the
// archive of the same images, in turns (crane, publish, crane, ...), each
// into fresh repositories, and prints the ratio.
func pushSteps(add func(tool, what string, once bool, args func(round int) []string) error, publish, crane, repo, tgz, layout, dst string) error {
	tarPath := strings.TrimSuffix(tgz, ".tgz") + ".tar"
	for _, out := range []string{tgz, tarPath} {
		if err := add("publish", "package (registry -> "+filepath.Ext(out)+")", true, func(int) []string {
			return []string{publish, "package", "--source", repo, "-o", out, "--plain-http"}
		}); err != nil {
			return err
		}
	}
	// In turns, each into fresh repositories: crane push of the layout,
	// publish push of the .tgz, publish push of the .tar.
	tools := []struct{ name, what, archive string }{
		{"crane", "crane push --index (layout -> registry)", ""},
		{"publish", "publish push (.tgz -> registry)", tgz},
		{"publish", "publish push (.tar -> registry)", tarPath},
	}
	secs := make([][]float64, len(tools))
	cpus := make([][]float64, len(tools))
	regs := make([][]float64, len(tools))
	ratios := make([][]float64, len(tools))
	for r := range repeat {
		for i, tool := range tools {
			args := []string{crane, "push", "--index", layout, fmt.Sprintf("%s/crane%d/all:v1", dst, r)}
			if tool.archive != "" {
				args = []string{publish, "push", tool.archive, "--dst-repo", fmt.Sprintf("%s/publish%d-%d", dst, i, r), "--plain-http", "--no-auth"}
			}
			reg0 := procCPU(dstPID)
			sec, rss, cpu, err := timedCPU(filepath.Dir(tgz), args...)
			if err != nil {
				return err
			}
			reg := procCPU(dstPID) - reg0
			secs[i], cpus[i], regs[i] = append(secs[i], sec), append(cpus[i], cpu), append(regs[i], reg)
			line := fmt.Sprintf("%-40s round %d: %6.2f s  %5.2f s CPU  %5.2f s registry CPU  %5.0f MiB RSS", tool.what, r, sec, cpu, reg, rss)
			if i > 0 {
				ratios[i] = append(ratios[i], sec/secs[0][len(secs[0])-1])
				line += fmt.Sprintf("  (%.2fx crane's run before)", ratios[i][len(ratios[i])-1])
			}
			fmt.Fprintln(os.Stderr, line)
		}
	}
	fmt.Printf("| tool | fastest of %d | / crane, fastest | / crane, median pair | CPU time (least) | the registry's CPU (median) |\n|---|---:|---:|---:|---:|---:|\n", repeat)
	for i, tool := range tools {
		rel, pair := "", ""
		if i > 0 {
			rel = fmt.Sprintf("%.2fx", slices.Min(secs[i])/slices.Min(secs[0]))
			pair = fmt.Sprintf("%.2fx", median(ratios[i]))
		}
		fmt.Printf("| `%s` | %.2f s | %s | %s | %.2f s | %.2f s |\n", tool.what, slices.Min(secs[i]), rel, pair, slices.Min(cpus[i]), median(regs[i]))
	}
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
