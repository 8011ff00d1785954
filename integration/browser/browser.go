// Package browser starts Debian's headless Chromium for the tests and
// benchmarks of the timeline UI, with the flags this environment needs (no
// sandbox, no GPU, no QUIC, no background or update traffic) and a fresh
// profile directory per browser.
package browser

import (
	"context"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Chromium finds the browser; without it the test fails (never skips).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: the timeline's browser tests need headless Chromium (Debian: apt-get install -y chromium)")
	return ""
}

// New starts a headless Chromium with a window of width x height and
// returns a chromedp context on a new tab; the browser and its profile
// directory go away when the test ends.
func New(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	return ctx
}
