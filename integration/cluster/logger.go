package cluster

import (
	"bytes"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestLogger returns a logger whose output is kept in memory and printed
// only when the test fails, so the logs of in-process managers name their
// test and do not bury the failure messages of others.
func TestLogger(t testing.TB) logr.Logger {
	buf := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("manager log:\n%s", buf.String())
		}
	})
	return zap.New(zap.WriteTo(buf), zap.UseDevMode(true))
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
