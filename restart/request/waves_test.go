package request

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/restart/assess"
)

// The shared wave members live for waveCacheTTL, never come from a clock
// that went back, and the cache stops taking sources when full.
func TestWaveCache(t *testing.T) {
	var c waveCache
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	m := []assess.WaveMember{{Workload: "Deployment shop/canary"}}
	c.put("shop/p\x00Secret/tls", m, t0, 0)
	if got, ok := c.get("shop/p\x00Secret/tls", t0.Add(waveCacheTTL), 0); !ok || len(got) != 1 {
		t.Errorf("within the TTL: %v %v", got, ok)
	}
	for _, at := range []time.Time{t0.Add(waveCacheTTL + time.Millisecond), t0.Add(-time.Second)} {
		if _, ok := c.get("shop/p\x00Secret/tls", at, 0); ok {
			t.Errorf("read at %s, put at %s: still served", at, t0)
		}
	}
	for i := range waveCacheMax + 10 {
		c.put(string(rune(i))+"/x", m, t0, 0)
	}
	if n := len(c.entries); n > waveCacheMax {
		t.Errorf("%d sources kept, at most %d", n, waveCacheMax)
	}
	var none *waveCache
	none.put("k", m, t0, 0)
	if _, ok := none.get("k", t0, 0); ok {
		t.Error("a nil cache served")
	}
}
