package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestStampedBuild: tools/scripts/build.sh (make build's) stamps the
// version, revision (the checkout's HEAD), branch, build user and date
// into the binary: `promhbase --version` prints them, and a serve of it
// reports them in /api/v1/status/buildinfo (the status page's source)
// and promhbase_build_info.
func TestStampedBuild(t *testing.T) {
	t.Parallel()
	root := testproc.Root(t, ".")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the revision stamp has nothing to be compared with", err)
	}
	bin := filepath.Join(t.TempDir(), "promhbase")
	cmd := exec.Command(testproc.Root(t, "tools/scripts/build.sh"), bin)
	cmd.Env = append(os.Environ(), "VERSION=9.8.7-test", "BRANCH=release-9.8", "BUILD_DATE=20261129-10:11:12", "BUILD_USER=tester@builder")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	rev := strings.TrimSpace(string(head))
	for _, want := range []string{"promhbase, version 9.8.7-test (branch: release-9.8, revision: " + rev, "build user:       tester@builder",
		"build date:       20261129-10:11:12"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--version lacks %q:\n%s", want, out)
		}
	}
	// The embedded store whatever the test backend: the stamps are the
	// binary's, not the store's.
	_, base := startServe(t, bin, "--storage.backend=embedded", "--storage.embedded.path="+t.TempDir())
	code, body := httpDo(t, "GET", base+"/api/v1/status/buildinfo", "", "", nil)
	var bi struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &bi); code != 200 || err != nil {
		t.Fatalf("buildinfo: %d %v %s", code, err, body)
	}
	for k, want := range map[string]string{"version": "9.8.7-test", "branch": "release-9.8", "buildUser": "tester@builder", "buildDate": "20261129-10:11:12"} {
		if bi.Data[k] != want {
			t.Errorf("buildinfo %s = %q, want %q", k, bi.Data[k], want)
		}
	}
	if !strings.HasPrefix(bi.Data["revision"], rev) {
		t.Errorf("buildinfo revision %q, want %s (with -modified for a changed tree)", bi.Data["revision"], rev)
	}
	_, metrics := httpDo(t, "GET", base+"/metrics", "", "", nil)
	if want := `branch="release-9.8"`; !strings.Contains(metrics, "promhbase_build_info{"+want) {
		t.Errorf("/metrics: promhbase_build_info lacks %s", want)
	}
}

// TestDockerfile: deploy/Dockerfile is a multi-stage build whose final
// image runs as a non-root user, declares the data volume and the port,
// carries the OCI labels of its stamps, downloads the modules with the
// gohbase fork go.mod replaces in place, and builds with build.sh. Where
// a container builder is installed the image is built and run.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	path := testproc.Root(t, "deploy/Dockerfile")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "\n")
	froms, fork, download := 0, -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FROM "):
			froms++
		case strings.HasPrefix(l, "COPY internal/third_party/gohbase/"):
			fork = i
		case l == "RUN go mod download":
			download = i
		}
	}
	if froms < 2 {
		t.Errorf("%d FROM lines: want a multi-stage build", froms)
	}
	if fork < 0 || download < 0 || fork > download {
		t.Errorf("the gohbase fork (line %d) must be copied before go mod download (line %d): go.mod replaces gohbase with it", fork, download)
	}
	for _, want := range []string{"tools/scripts/build.sh", "EXPOSE 9201", `VOLUME ["/data"]`, "USER 65532:65532",
		"org.opencontainers.image.revision=", "org.opencontainers.image.version=", "org.opencontainers.image.created=", "org.opencontainers.image.source="} {
		if !strings.Contains(text, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	t.Run("built", func(t *testing.T) {
		var builder string
		var why []string
		for _, b := range []string{"docker", "podman", "buildah"} {
			if _, err := exec.LookPath(b); err != nil {
				continue
			}
			// A CLI without its daemon (docker) cannot build.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			out, err := exec.CommandContext(ctx, b, "info").CombinedOutput()
			cancel()
			if err != nil {
				why = append(why, fmt.Sprintf("%s info: %v: %s", b, err, testproc.TailLines(string(out), 2)))
				continue
			}
			builder = b
			break
		}
		if builder == "" {
			t.Skipf("no working container builder (docker, podman, buildah): %v", why)
		}
		args := []string{"build", "-f", path, "-t", "promhbase-test:latest", "--build-arg", "REVISION=test", testproc.Root(t, ".")}
		if builder == "buildah" {
			args[0] = "bud"
		}
		if out, err := exec.CommandContext(t.Context(), builder, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s build: %v\n%s", builder, err, out)
		}
		if builder == "buildah" {
			return
		}
		out, err := exec.CommandContext(t.Context(), builder, "run", "--rm", "promhbase-test:latest", "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "revision: test") {
			t.Errorf("%s run --version: %v\n%s", builder, err, out)
		}
	})
}
