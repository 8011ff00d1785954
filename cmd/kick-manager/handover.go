package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// argoCDBuild is the file name of the manager build that links the Argo CD
// integration. `make build` and the container image install it next to the
// lean kick-manager, which hands over to it only on clusters that serve
// Argo CD: a cluster without Argo CD never pays for its API packages.
const argoCDBuild = "kick-manager-argocd"

// execve replaces the process image; tests swap it.
var execve = syscall.Exec

// handOverToArgoCDBuild replaces this process with the Argo CD build found
// next to executable, keeping the arguments, environment and process id (so
// a container runtime sees the same process). It returns only on failure.
func handOverToArgoCDBuild(executable string, args, env []string) error {
	path := filepath.Join(filepath.Dir(executable), argoCDBuild)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s is not installed next to %s: %w", argoCDBuild, executable, err)
	}
	if err := execve(path, append([]string{path}, args...), env); err != nil {
		return fmt.Errorf("start %s: %w", path, err)
	}
	return nil
}
