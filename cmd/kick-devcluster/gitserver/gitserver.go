// Package gitserver serves git repositories read-only over smart HTTP on
// 127.0.0.1 (git http-backend behind net/http/cgi), so the GitOps
// controllers of the local cluster can clone from it, and commits to them
// from a work tree of its own, as a developer pushing to Git would.
package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Branch is the branch every repository is created with and pushed to.
const Branch = "main"

// Server is a running loopback git server.
type Server struct {
	// Root holds the bare repositories (Root/repos) and the work trees
	// commits are made from (Root/work).
	Root string
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	git string
	srv *http.Server
	lis net.Listener
	mu  sync.Mutex // serialises commits
}

// Start serves the repositories under root/repos on a free 127.0.0.1 port.
func Start(root string) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the git server needs the git command: %w", err)
	}
	for _, sub := range []string{"repos", "work", "home"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Root: root, URL: "http://" + lis.Addr().String(), git: git, lis: lis}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env: append(s.gitEnv(),
			"GIT_PROJECT_ROOT="+filepath.Join(root, "repos"),
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
	s.srv = &http.Server{Handler: readOnly(backend), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(lis) }()
	return s, nil
}

// readOnly refuses pushes over HTTP: repositories change only through
// Commit.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			http.Error(w, "this git server is read-only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// gitEnv isolates git from the user's and the system's configuration.
func (s *Server) gitEnv() []string {
	return []string{
		"HOME=" + filepath.Join(s.Root, "home"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=kick-devcluster", "GIT_AUTHOR_EMAIL=devcluster@kick.invalid",
		"GIT_COMMITTER_NAME=kick-devcluster", "GIT_COMMITTER_EMAIL=devcluster@kick.invalid",
		"PATH=" + os.Getenv("PATH"),
	}
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// RepoURL is the clone URL of repository name.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }

// Create makes an empty bare repository and its work tree. Creating one
// that exists is not an error.
func (s *Server) Create(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\. ") {
		return fmt.Errorf("repository name %q: use letters, digits and dashes", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bare, work := s.bare(name), s.work(name)
	if _, err := os.Stat(bare); err == nil {
		return nil
	}
	if _, err := s.run("", "init", "--quiet", "--bare", "--initial-branch="+Branch, bare); err != nil {
		return err
	}
	if _, err := s.run("", "init", "--quiet", "--initial-branch="+Branch, work); err != nil {
		return err
	}
	_, err := s.run(work, "remote", "add", "origin", bare)
	return err
}

// Commit writes files (path → content; an empty content deletes the
// file) into repository name's work tree, commits them with message and
// pushes to the branch. It returns the new commit's SHA.
func (s *Server) Commit(name, message string, files map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	work := s.work(name)
	if _, err := os.Stat(work); err != nil {
		return "", fmt.Errorf("repository %s does not exist: %w", name, err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(work, filepath.FromSlash(p))
		if !strings.HasPrefix(full, work+string(filepath.Separator)) {
			return "", fmt.Errorf("path %q leaves the repository", p)
		}
		if files[p] == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := s.run(work, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := s.run(work, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	if _, err := s.run(work, "push", "--quiet", "origin", "HEAD:"+Branch); err != nil {
		return "", err
	}
	sha, err := s.run(work, "rev-parse", "HEAD")
	return strings.TrimSpace(sha), err
}

func (s *Server) bare(name string) string { return filepath.Join(s.Root, "repos", name+".git") }
func (s *Server) work(name string) string { return filepath.Join(s.Root, "work", name) }

func (s *Server) run(dir string, args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	cmd.Env = s.gitEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}
