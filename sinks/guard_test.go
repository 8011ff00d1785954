package sinks

import (
	"errors"
	"net/netip"
	"testing"
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func TestGuard(t *testing.T) {
	cases := []struct {
		name        string
		deny, allow []netip.Prefix
		addr        string
		refused     bool
	}{
		{"default denies metadata", DefaultDenyCIDRs(), nil, "169.254.169.254", true},
		{"default denies v6 link-local", DefaultDenyCIDRs(), nil, "fe80::1", true},
		{"default denies v6 link-local with zone", DefaultDenyCIDRs(), nil, "fe80::1%eth0", true},
		{"default denies v4-mapped metadata", DefaultDenyCIDRs(), nil, "::ffff:169.254.169.254", true},
		{"default allows public", DefaultDenyCIDRs(), nil, "93.184.216.34", false},
		{"default allows loopback", DefaultDenyCIDRs(), nil, "127.0.0.1", false},
		{"no lists allow all", nil, nil, "169.254.169.254", false},
		{"allow list restricts", nil, prefixes("10.0.0.0/8"), "192.168.1.1", true},
		{"allow list admits", nil, prefixes("10.0.0.0/8"), "10.1.2.3", false},
		{"longer allow opens a hole", prefixes("169.254.0.0/16"), prefixes("169.254.10.5/32"), "169.254.10.5", false},
		{"hole is narrow", prefixes("169.254.0.0/16"), prefixes("169.254.10.5/32"), "169.254.10.6", true},
		{"longer deny narrows an allow", prefixes("10.9.0.0/16"), prefixes("10.0.0.0/8"), "10.9.1.1", true},
		{"tie denies", prefixes("10.0.0.0/8"), prefixes("10.0.0.0/8"), "10.1.1.1", true},
		{"unmasked prefix", prefixes("127.0.0.1/8"), nil, "127.5.5.5", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := newGuard(c.deny, c.allow).check(netip.MustParseAddr(c.addr))
			var refused *RefusedError
			if got := errors.As(err, &refused); got != c.refused {
				t.Fatalf("check(%s) = %v, want refused=%v", c.addr, err, c.refused)
			}
		})
	}
}

func TestGuardControl(t *testing.T) {
	g := newGuard(prefixes("127.0.0.0/8"), nil)
	if err := g.control("tcp4", "127.0.0.1:80", nil); err == nil {
		t.Fatal("dial to 127.0.0.1 allowed")
	}
	if err := g.control("tcp6", "[::1]:443", nil); err != nil {
		t.Fatalf("dial to ::1 refused: %v", err)
	}
	if err := g.checkHost("example.com"); err != nil {
		t.Fatalf("a host name is only checked when dialing, got %v", err)
	}
	if err := g.checkHost("127.0.0.9"); err == nil {
		t.Fatal("an IP literal in a denied range passed the pre-check")
	}
	msg := (&RefusedError{Addr: netip.MustParseAddr("10.0.0.1")}).Error()
	if msg != "destination 10.0.0.1 is outside the allowed ranges" {
		t.Fatalf("message %q", msg)
	}
}
