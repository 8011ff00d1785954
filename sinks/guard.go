package sinks

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// guard decides which addresses webhooks may connect to. It runs in the dialer's Control hook,
// after name resolution and before the connection is made, so a DNS name cannot route around it.
type guard struct {
	deny, allow []netip.Prefix
}

func newGuard(deny, allow []netip.Prefix) *guard {
	norm := func(ps []netip.Prefix) []netip.Prefix {
		out := make([]netip.Prefix, 0, len(ps))
		for _, p := range ps {
			if p.IsValid() {
				out = append(out, p.Masked())
			}
		}
		return out
	}
	return &guard{deny: norm(deny), allow: norm(allow)}
}

// refusedHint tells people where the ranges come from.
const refusedHint = " (the manager's webhook deny and allow CIDR settings decide which addresses notifications may reach)"

// RefusedError reports a webhook destination the guard refused.
type RefusedError struct {
	Addr netip.Addr
	// Prefix is the denied range that matched; invalid when the address is outside every
	// allowed range.
	Prefix netip.Prefix
}

func (e *RefusedError) Error() string {
	if e.Prefix.IsValid() {
		return fmt.Sprintf("destination %s is in the denied range %s", e.Addr, e.Prefix)
	}
	return fmt.Sprintf("destination %s is outside the allowed ranges", e.Addr)
}

// check returns a *RefusedError when addr may not be reached. The longest matching prefix of
// either list decides, a tie denies; an address no list matches is allowed only when there is
// no allow list.
func (g *guard) check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	deny, dbits := longest(g.deny, addr)
	_, abits := longest(g.allow, addr)
	switch {
	case dbits >= 0 && dbits >= abits:
		return &RefusedError{Addr: addr, Prefix: deny}
	case abits >= 0:
		return nil
	case len(g.allow) > 0:
		return &RefusedError{Addr: addr}
	}
	return nil
}

// longest returns the longest prefix of ps containing addr and its length, or -1.
func longest(ps []netip.Prefix, addr netip.Addr) (netip.Prefix, int) {
	best, bits := netip.Prefix{}, -1
	for _, p := range ps {
		if p.Contains(addr) && p.Bits() > bits {
			best, bits = p, p.Bits()
		}
	}
	return best, bits
}

// control is a net.Dialer Control function: address is the resolved "ip:port" about to be dialed.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("destination %q is not an IP address", host)
	}
	return g.check(addr)
}

// checkHost pre-checks a URL host that is an IP literal, so such a policy is refused before any
// delivery. Names are only checked when dialing.
func (g *guard) checkHost(host string) error {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	return g.check(addr)
}
