package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCloneOverHTTP commits twice and clones over smart HTTP, as the
// GitOps controllers do; a push over HTTP is refused.
func TestCloneOverHTTP(t *testing.T) {
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on loopback", s.URL)
	}
	if err := s.Create("shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("shop", "first", map[string]string{"app/a.yaml": "a: 1\n", "app/b.yaml": "b: 1\n"}); err != nil {
		t.Fatal(err)
	}
	sha, err := s.Commit("shop", "second", map[string]string{"app/a.yaml": "a: 2\n", "app/b.yaml": ""})
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := git("", "clone", "--quiet", s.RepoURL("shop"), clone); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if out, _ := git(clone, "rev-parse", "HEAD"); strings.TrimSpace(out) != sha {
		t.Fatalf("cloned HEAD %q, want %s", out, sha)
	}
	if data, err := os.ReadFile(filepath.Join(clone, "app", "a.yaml")); err != nil || string(data) != "a: 2\n" {
		t.Fatalf("a.yaml = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(clone, "app", "b.yaml")); !os.IsNotExist(err) {
		t.Fatalf("b.yaml was deleted in the second commit, but the clone has it (%v)", err)
	}
	if out, err := git(clone, "push", "origin", "HEAD:main"); err == nil {
		t.Fatalf("a push over HTTP succeeded:\n%s", out)
	}
	if err := s.Create("../escape"); err == nil {
		t.Fatal("a repository name with a path was accepted")
	}
}
