package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controllerProc is the restart controller under test, run as its own
// process group so its memory and CPU can be read from /proc.
type controllerProc struct {
	cmd        *exec.Cmd
	line       string
	logPath    string
	readyURL   string
	metricsURL string
	done       chan struct{}
	waitErr    error

	mu      sync.Mutex
	samples []sample
	stopped chan struct{}
}

// sample is one reading of the controller's process group.
type sample struct {
	at       time.Time
	mem      memStat
	cpuTicks int64
}

// memStat is VmRSS and its split into anonymous memory (heap, stacks) and
// file-backed pages (mostly the executable's own code and data).
type memStat struct{ rss, anon, file int64 }

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat (100
// on every Linux architecture Go supports).
const clockTicks = 100

// startController expands the placeholders, starts the command through sh
// (with exec, so the shell is replaced and the pid is the controller's) and
// samples its RSS every 250 ms until stop.
func startController(c *config, kubeconfig string) (*controllerProc, error) {
	vars := map[string]string{"{kubeconfig}": kubeconfig, "{namespace}": c.namespace}
	for _, ph := range []string{"{metrics-addr}", "{probe-addr}"} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		vars[ph] = addr
	}
	expand := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, k, v)
		}
		return s
	}
	// A URL naming an address the controller was not told to bind is
	// meaningless for this controller: drop it.
	url := func(u string) string {
		for _, ph := range []string{"{metrics-addr}", "{probe-addr}"} {
			if strings.Contains(u, ph) && !strings.Contains(c.controller, ph) {
				return ""
			}
		}
		return expand(u)
	}
	p := &controllerProc{line: expand(c.controller), readyURL: url(c.readyURL), metricsURL: url(c.metricsURL),
		done: make(chan struct{}), stopped: make(chan struct{})}

	var logFile *os.File
	var err error
	if c.logPath != "" {
		logFile, err = os.Create(c.abs(c.logPath))
	} else {
		logFile, err = os.CreateTemp("", "kick-bench-controller-*.log")
	}
	if err != nil {
		return nil, err
	}
	p.logPath = logFile.Name()
	p.cmd = exec.Command("sh", "-c", "exec "+p.line)
	p.cmd.Dir = c.repoRoot
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start controller %q: %w", p.line, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	go p.sample()
	return p, nil
}

func (p *controllerProc) sample() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		mem, cpu := groupStats(p.cmd.Process.Pid)
		if mem.rss > 0 {
			p.mu.Lock()
			p.samples = append(p.samples, sample{at: time.Now(), mem: mem, cpuTicks: cpu})
			p.mu.Unlock()
		}
		select {
		case <-p.stopped:
			return
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// exited returns an error describing the controller's exit, or nil while it
// runs.
func (p *controllerProc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited (%v); log %s:\n%s", p.waitErr, p.logPath, tail(p.logPath, 3000))
	default:
		return nil
	}
}

// stop ends sampling and the process group: SIGTERM, SIGKILL after 10 s.
func (p *controllerProc) stop() {
	select {
	case <-p.stopped:
		return
	default:
		close(p.stopped)
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// httpClient talks to the controller's probe and metrics endpoints.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// waitReady polls the ready URL until it answers 200, or waits the fixed
// settle time when there is none. It returns how it decided.
func (p *controllerProc) waitReady(ctx context.Context, settle time.Duration) (string, error) {
	if p.readyURL == "" {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(settle):
		}
		return fmt.Sprintf("fixed settle time %s", settle), p.exited()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := p.exited(); err != nil {
			return "", err
		}
		if resp, err := httpClient.Get(p.readyURL); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p.readyURL + " answered 200", nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s did not answer 200 within 2m", p.readyURL)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// memBetween returns the memory samples taken in [from, to].
func (p *controllerProc) memBetween(from, to time.Time) []memStat {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []memStat
	for _, s := range p.samples {
		if !s.at.Before(from) && !s.at.After(to) {
			out = append(out, s.mem)
		}
	}
	return out
}

func (p *controllerProc) allSamples() []sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sample(nil), p.samples...)
}

// cpuSeconds reads the CPU time the controller's process group used so far.
func (p *controllerProc) cpuSeconds() float64 {
	_, ticks := groupStats(p.cmd.Process.Pid)
	return float64(ticks) / clockTicks
}

// groupStats sums VmRSS, RssAnon, RssFile (bytes) and utime+stime (ticks)
// over the processes of a process group, read from /proc.
func groupStats(pgid int) (mem memStat, cpu int64) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return mem, 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces):
		// state ppid pgrp ... utime(12th) stime(13th).
		end := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 13 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		cpu += ut + st
		m := procMem(pid)
		mem.rss, mem.anon, mem.file = mem.rss+m.rss, mem.anon+m.anon, mem.file+m.file
	}
	return mem, cpu
}

func procMem(pid int) memStat {
	var m memStat
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 { // "12345 kB"
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			*dst = kb * 1024
		}
	}
	return m
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// LogSummary is what the controller's log says went wrong.
type LogSummary struct {
	Path   string   `json:"path"`
	Lines  int      `json:"lines"`
	Errors int      `json:"errorLines"`
	Top    []string `json:"topErrors,omitempty"`
}

// scanLog counts error lines in a controller log: zap JSON lines with level
// error/dpanic/panic/fatal, klog E-lines, and lines with ERROR or panic:.
// Top lists the most frequent distinct messages.
func scanLog(path string) LogSummary {
	s := LogSummary{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return s
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		s.Lines++
		msg, isErr := classifyLine(line)
		if !isErr {
			continue
		}
		s.Errors++
		counts[msg]++
	}
	type kv struct {
		msg string
		n   int
	}
	var all []kv
	for m, n := range counts {
		all = append(all, kv{m, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || (all[i].n == all[j].n && all[i].msg < all[j].msg) })
	for i := 0; i < len(all) && i < 8; i++ {
		s.Top = append(s.Top, fmt.Sprintf("%d× %s", all[i].n, all[i].msg))
	}
	return s
}

func classifyLine(line string) (string, bool) {
	if strings.HasPrefix(line, "{") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil {
			level, _ := entry["level"].(string)
			switch strings.ToLower(level) {
			case "error", "dpanic", "panic", "fatal":
			default:
				return "", false
			}
			msg, _ := entry["msg"].(string)
			if e, ok := entry["error"].(string); ok {
				msg += ": " + e
			}
			if c, ok := entry["controller"].(string); ok {
				msg = "[" + c + "] " + msg
			}
			return shorten(msg), true
		}
	}
	if len(line) > 5 && line[0] == 'E' && line[1] >= '0' && line[1] <= '9' {
		// klog: E1129 13:22:26.123456  12345 file.go:12] message
		if i := strings.Index(line, "] "); i >= 0 {
			return shorten(line[i+2:]), true
		}
	}
	if strings.Contains(line, "ERROR") || strings.HasPrefix(line, "panic:") {
		return shorten(line), true
	}
	return "", false
}

func shorten(s string) string {
	if len(s) > 240 {
		return s[:240] + "…"
	}
	return s
}
