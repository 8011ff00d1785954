package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memoryLimit is the manager's memory limit, as in the shipped manifests
// (limits.memory 256Mi, and GOMEMLIMIT set from it).
const memoryLimit = 256 << 20

// confinement bounds the manager's memory: a memory cgroup of its own when
// this machine lets the test make one (cgroup v2, else v1), else nothing
// but GOMEMLIMIT, with the RSS watchdog failing the run over the limit.
type confinement struct {
	// How says which, for the report.
	How string
	// dir is the cgroup directory; empty without one.
	dir string
	// peakFile and oomFile are the cgroup's peak usage and OOM counters.
	peakFile, oomFile string
}

// confine makes the cgroup, removed when the test ends. It looks for the
// cgroup file systems in /proc/self/mounts and puts the manager's cgroup
// below the test's own (/proc/self/cgroup); a limit file the kernel did
// not create (no memory controller there) means no cgroup.
func confine(t *testing.T) *confinement {
	t.Helper()
	c := &confinement{How: "no memory cgroup could be made: GOMEMLIMIT=256MiB and the RSS watchdog only"}
	mounts, err1 := os.ReadFile("/proc/self/mounts")
	own, err2 := os.ReadFile("/proc/self/cgroup")
	if err1 != nil || err2 != nil {
		return c
	}
	var v2, v1 string // mount points
	for line := range strings.SplitSeq(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		switch {
		case f[2] == "cgroup2" && v2 == "":
			v2 = f[1]
		case f[2] == "cgroup" && slices.Contains(strings.Split(f[3], ","), "memory"):
			v1 = f[1]
		}
	}
	var path2, path1 string // the test's own cgroup in each hierarchy
	for line := range strings.SplitSeq(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) < 3:
		case parts[0] == "0" && parts[1] == "":
			path2 = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			path1 = parts[2]
		}
	}
	name := fmt.Sprintf("kick-soak-%d", os.Getpid())
	try := func(dir, limitFile, peakFile, oomFile, how string) bool {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return false
		}
		// Not created: the file must be the kernel's.
		f, err := os.OpenFile(filepath.Join(dir, limitFile), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(strconv.Itoa(memoryLimit))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			_ = os.Remove(dir)
			return false
		}
		c.dir, c.peakFile, c.oomFile, c.How = dir, filepath.Join(dir, peakFile), filepath.Join(dir, oomFile), how
		t.Cleanup(func() { _ = os.Remove(dir) }) // empty once the manager is gone
		return true
	}
	switch {
	case v2 != "" && try(filepath.Join(v2, path2, name), "memory.max", "memory.peak", "memory.events", "cgroup v2, memory.max 256 MiB"):
	case v1 != "" && try(filepath.Join(v1, path1, name), "memory.limit_in_bytes", "memory.max_usage_in_bytes", "memory.oom_control", "cgroup v1, memory.limit_in_bytes 256 MiB"):
	}
	return c
}

// wrap returns an executable that enters the cgroup, sets GOMEMLIMIT as the
// manifests do, and execs binary (so the pid is the manager's).
func (c *confinement) wrap(t *testing.T, binary string) string {
	t.Helper()
	script := "#!/bin/sh\n"
	if c.dir != "" {
		script += "echo $$ > " + filepath.Join(c.dir, "cgroup.procs") + " || exit 1\n"
	}
	script += fmt.Sprintf("GOMEMLIMIT=%d exec %s \"$@\"\n", memoryLimit, binary)
	path := filepath.Join(t.TempDir(), "kick-manager")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// peak is the cgroup's peak usage (it counts page cache too), 0 without.
func (c *confinement) peak() int64 {
	if c.peakFile == "" {
		return 0
	}
	data, _ := os.ReadFile(c.peakFile)
	v, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return v
}

// oomKills is how many processes the cgroup's limit killed.
func (c *confinement) oomKills() int {
	if c.oomFile == "" {
		return 0
	}
	data, _ := os.ReadFile(c.oomFile)
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// rssSampler reads a process's resident set from /proc every interval and
// keeps the peak of the current run; over the limit it marks the run.
type rssSampler struct {
	pid  int
	mu   sync.Mutex
	peak int64
	over int64 // the largest sample over memoryLimit, 0 if none
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if rss, ok := statusKB(pid, "VmRSS:"); ok {
				s.mu.Lock()
				s.peak = max(s.peak, rss)
				if rss > memoryLimit {
					s.over = max(s.over, rss)
				}
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// take returns the peak since the last take and starts a new run.
func (s *rssSampler) take() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peak
	s.peak = 0
	return p
}

// overLimit is the largest sample over the limit, 0 if none.
func (s *rssSampler) overLimit() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.over
}

func (s *rssSampler) close() {
	close(s.stop)
	<-s.done
}

// statusKB reads a field of /proc/PID/status (VmRSS:, VmHWM:) in bytes.
func statusKB(pid int, field string) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// cpuTime is the CPU time (user and system) a process used so far.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it do not.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// componentPids finds the processes of the control plane's kube-apiserver
// and etcd by their command line: the binary's name and a flag naming the
// component's port.
func componentPids(ports map[string]int) map[string]int {
	want := map[string]string{
		"kube-apiserver": fmt.Sprintf("--secure-port=%d", ports["kube-apiserver"]),
		"etcd":           fmt.Sprintf("127.0.0.1:%d", ports["etcd"]),
	}
	out := map[string]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for name, flag := range want {
			if filepath.Base(args[0]) == name && slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, flag) }) {
				out[name] = pid
			}
		}
	}
	return out
}

// cpuTimes is cpuTime of each process, by name.
func cpuTimes(pids map[string]int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range pids {
		out[name] = cpuTime(pid)
	}
	return out
}
