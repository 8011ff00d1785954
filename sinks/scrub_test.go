package sinks

import (
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	s := newScrubber("s3cr3t-token", "", "s3cr3t", "Bearer s3cr3t-token\n")
	in := `Post "https://user:pw@hooks.slack.com/services/T0/B0/XYZ?token=abc#frag": header was s3cr3t-token, also s3cr3t` + "\n\tnext line"
	got := s.clean(in)
	for _, bad := range []string{"s3cr3t", "user", "pw@", "/services", "XYZ", "token=abc", "frag", "\n", "\t"} {
		if strings.Contains(got, bad) {
			t.Errorf("clean left %q in %q", bad, got)
		}
	}
	if !strings.Contains(got, "https://hooks.slack.com") || !strings.Contains(got, redacted) {
		t.Errorf("clean lost the host or the marker: %q", got)
	}
	if !strings.Contains(got, "next line") {
		t.Errorf("clean lost text: %q", got)
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := newScrubber().clean(long)
	if len(got) > maxMessage || !strings.HasSuffix(got, "…") {
		t.Fatalf("len %d, suffix %q", len(got), got[len(got)-4:])
	}
	if !strings.HasPrefix(got, "é") || strings.ContainsRune(got, '\uFFFD') {
		t.Fatal("cut inside a rune")
	}
}
