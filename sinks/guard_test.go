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

// hostAddr is the first of hostAddrs.
func hostAddr(host string) (netip.Addr, bool) {
	if as := hostAddrs(host); len(as) > 0 {
		return as[0], true
	}
	return netip.Addr{}, false
}

// defaultGuard is the guard of a manager started without deny or allow settings.
func defaultGuard(allow ...string) *guard {
	return newGuard(Options{}.fill().DenyCIDRs, prefixes(allow...))
}

func TestGuard(t *testing.T) {
	def := DefaultDenyCIDRs()
	cases := []struct {
		name        string
		deny, allow []netip.Prefix
		addr        string
		refused     bool
	}{
		{"default denies metadata", def, nil, "169.254.169.254", true},
		{"default denies v6 link-local", def, nil, "fe80::1", true},
		{"default denies v6 link-local with zone", def, nil, "fe80::1%eth0", true},
		{"default denies v4-mapped metadata", def, nil, "::ffff:169.254.169.254", true},
		{"default denies loopback", def, nil, "127.0.0.1", true},
		{"default denies all of 127/8", def, nil, "127.254.3.4", true},
		{"default denies v6 loopback", def, nil, "::1", true},
		{"default denies v4-mapped loopback", def, nil, "::ffff:127.0.0.1", true},
		{"default denies v4-compatible loopback", def, nil, "::127.0.0.1", true},
		{"default denies NAT64 metadata", def, nil, "64:ff9b::169.254.169.254", true},
		{"default denies unspecified", def, nil, "0.0.0.0", true},
		{"default denies this network", def, nil, "0.1.2.3", true},
		{"default denies v6 unspecified", def, nil, "::", true},
		{"default denies AWS v6 metadata", def, nil, "fd00:ec2::254", true},
		{"default denies EKS pod identity", def, nil, "fd00:ec2::23", true},
		{"default denies Alibaba metadata", def, nil, "100.100.100.200", true},
		{"default denies Azure wireserver", def, nil, "168.63.129.16", true},
		{"default allows public", def, nil, "93.184.216.34", false},
		{"default allows the rest of fd00:ec2::/64", def, nil, "fd00:ec2::1", false},
		{"default allows the rest of 100.64/10", def, nil, "100.100.100.201", false},
		{"default allows v6 public", def, nil, "2001:db8::1", false},
		{"default allows NAT64 public", def, nil, "64:ff9b::93.184.216.34", false},
		{"allowing loopback exactly opens it", def, prefixes("127.0.0.0/8"), "127.0.0.1", false},
		{"allowing one loopback address", def, prefixes("127.0.0.1/32"), "127.0.0.1", false},
		{"allowing one loopback address opens no other", def, prefixes("127.0.0.1/32"), "127.0.0.2", true},
		{"allowing link-local keeps metadata denied", def, prefixes("169.254.0.0/16"), "169.254.169.254", true},
		{"allowing link-local opens the rest", def, prefixes("169.254.0.0/16"), "169.254.1.1", false},
		{"allowing everything keeps the defaults", def, prefixes("0.0.0.0/0", "::/0"), "127.0.0.1", true},
		{"allowing loopback keeps NAT64 metadata denied", def, prefixes("127.0.0.0/8", "::/0"), "64:ff9b::169.254.169.254", true},
		{"no lists allow all", nil, nil, "169.254.169.254", false},
		{"allow list restricts", nil, prefixes("10.0.0.0/8"), "192.168.1.1", true},
		{"allow list admits", nil, prefixes("10.0.0.0/8"), "10.1.2.3", false},
		{"longer allow opens a hole", prefixes("169.254.0.0/16"), prefixes("169.254.10.5/32"), "169.254.10.5", false},
		{"hole is narrow", prefixes("169.254.0.0/16"), prefixes("169.254.10.5/32"), "169.254.10.6", true},
		{"longer deny narrows an allow", prefixes("10.9.0.0/16"), prefixes("10.0.0.0/8"), "10.9.1.1", true},
		{"tie allows", prefixes("10.0.0.0/8"), prefixes("10.0.0.0/8"), "10.1.1.1", false},
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

// TestOptionsAlwaysDenyDefaults: a DenyCIDRs setting adds to the default list, it does not
// replace it (a manager passing its own list keeps loopback and metadata denied).
func TestOptionsAlwaysDenyDefaults(t *testing.T) {
	for _, deny := range [][]netip.Prefix{nil, {}, prefixes("169.254.0.0/16", "fe80::/10"), prefixes("10.0.0.0/8")} {
		o := Options{DenyCIDRs: deny}.fill()
		g := newGuard(o.DenyCIDRs, nil)
		for _, a := range []string{"127.0.0.1", "::1", "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16", "0.0.0.0"} {
			if g.check(netip.MustParseAddr(a)) == nil {
				t.Errorf("DenyCIDRs %v: %s allowed", deny, a)
			}
		}
		for _, p := range deny {
			if g.check(p.Addr()) == nil {
				t.Errorf("DenyCIDRs %v: %s allowed", deny, p.Addr())
			}
		}
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
	if err := g.control("tcp6", "[::ffff:127.0.0.1]:443", nil); err == nil {
		t.Fatal("dial to v4-mapped 127.0.0.1 allowed")
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

// TestCheckHostForms: every way of writing a denied address in a URL host is refused before
// any delivery, whatever a resolver would make of it.
func TestCheckHostForms(t *testing.T) {
	g := defaultGuard()
	for _, h := range []string{
		"127.0.0.1", "127.0.0.1.", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1",
		"0177.1", "017700000001", "0X7F.0X0.0X0.0X1", "[::1]", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1",
		"0:0:0:0:0:0:0:1", "::127.0.0.1", "0.0.0.0", "0", "::", "169.254.169.254", "2852039166", "0xa9fea9fe",
		"0251.0376.0251.0376", "169.254.43518", "::ffff:a9fe:a9fe", "64:ff9b::a9fe:a9fe", "fe80::1%eth0",
		"fd00:ec2::254", "fd00:ec2:0:0:0:0:0:254", "100.100.100.200", "1684301000",
		"168.63.129.16", "2822734096",
	} {
		a, ok := hostAddr(h)
		if !ok {
			t.Errorf("%q not read as an address", h)
			continue
		}
		if err := g.checkHost(h); err == nil {
			t.Errorf("checkHost(%q) (%s) allowed", h, a)
		}
	}
	for _, h := range []string{"example.com", "127.0.0.1.nip.io", "1.2.3.4.5", "08", "09.1.1.1", "256.1.1.1", "1.2.3.4294967296", "-1", "+1", "1..1", ""} {
		if a, ok := hostAddr(h); ok {
			t.Errorf("%q read as the address %s", h, a)
		}
	}
}
