package execute

import (
	"testing"
	"time"
)

func TestStampIsNeverOlderThanTheChange(t *testing.T) {
	change := time.Date(2026, 11, 29, 12, 0, 0, 500, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"clock ahead of the change", change.Add(time.Second), change.Add(time.Second)},
		{"clock equal to the change", change, change.Add(time.Nanosecond)},
		{"clock behind the change (skew)", change.Add(-time.Second), change.Add(time.Nanosecond)},
	} {
		if got := Stamp(tc.now, change); !got.Equal(tc.want) {
			t.Errorf("%s: Stamp = %s, want %s", tc.name, got, tc.want)
		}
	}
	now := time.Now()
	if got := Stamp(now, time.Time{}); !got.Equal(now) {
		t.Errorf("no known change: Stamp = %s, want now", got)
	}
}
