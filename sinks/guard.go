package sinks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// guard decides which addresses webhooks may connect to. It runs in the dialer's Control hook,
// after name resolution and before the connection is made, so a DNS name cannot route around it.
// When a request goes through an HTTP(S) proxy, the proxy resolves and connects instead: the
// guard then resolves the request's host itself and checks every address before the request is
// handed to the proxy (see proxyFunc).
type guard struct {
	deny, allow []netip.Prefix
	// proxyEnv chooses the proxy of a request (nil: none). http.ProxyFromEnvironment unless a
	// test sets another.
	proxyEnv func(*http.Request) (*url.URL, error)
	// lookup resolves a host name (net.DefaultResolver.LookupNetIP unless a test sets another).
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
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
	return &guard{
		deny: norm(deny), allow: norm(allow),
		proxyEnv: http.ProxyFromEnvironment,
		lookup:   net.DefaultResolver.LookupNetIP,
	}
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

// nat64 is the well-known NAT64 prefix (RFC 6052): its last 32 bits are an IPv4 address a
// NAT64 gateway connects to.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// compat is the deprecated IPv4-compatible IPv6 range (::a.b.c.d).
var compat = netip.MustParsePrefix("::/96")

// check returns a *RefusedError when addr may not be reached. The longest matching prefix of
// either list decides, and an allowed prefix as long as the denied one wins (so allowing
// exactly a denied range opens it); an address no list matches is allowed only when there is no
// allow list. An IPv4 address written as IPv6 (IPv4-mapped, IPv4-compatible or NAT64) is also
// refused when its IPv4 address is denied.
func (g *guard) check(addr netip.Addr) error {
	addr = addr.WithZone("").Unmap()
	if err := g.decide(addr); err != nil {
		return err
	}
	if v4, ok := embeddedIPv4(addr); ok {
		if deny, dbits := longest(g.deny, v4); dbits >= 0 {
			if _, abits := longest(g.allow, v4); dbits > abits {
				return &RefusedError{Addr: addr, Prefix: deny}
			}
		}
	}
	return nil
}

func (g *guard) decide(addr netip.Addr) error {
	deny, dbits := longest(g.deny, addr)
	_, abits := longest(g.allow, addr)
	switch {
	case dbits > abits:
		return &RefusedError{Addr: addr, Prefix: deny}
	case abits >= 0:
		return nil
	case len(g.allow) > 0:
		return &RefusedError{Addr: addr}
	}
	return nil
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries in its last 32 bits when it is
// IPv4-compatible (other than :: and ::1) or in the NAT64 prefix.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() || !(nat64.Contains(addr) || compat.Contains(addr)) {
		return netip.Addr{}, false
	}
	b := addr.As16()
	v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	if compat.Contains(addr) && (b[12]|b[13]) == 0 && b[14] == 0 && b[15] <= 1 {
		return netip.Addr{}, false // :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1
	}
	return v4, true
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

// checkHost pre-checks a URL host that is an IP address in any form a resolver accepts, so
// such a policy is refused before any delivery. Names are only checked when dialing (or, with
// a proxy, before handing the request to it).
func (g *guard) checkHost(host string) error {
	for _, addr := range hostAddrs(host) {
		if err := g.check(addr); err != nil {
			return err
		}
	}
	return nil
}

// hostAddrs reads host as an IP address in every way some parser would: IPv6 (with or without
// brackets and zone), dotted decimal, or any of the forms inet_aton and thus many resolvers
// accept ("127.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433"), with or without a trailing dot.
// It returns nothing for a host name. Reading too much as an address only refuses more.
func hostAddrs(host string) []netip.Addr {
	var out []netip.Addr
	h := strings.Trim(host, "[]") // even when unbalanced
	for _, c := range []string{host, strings.TrimSuffix(host, "."), h, strings.TrimSuffix(h, ".")} {
		if a, err := netip.ParseAddr(c); err == nil {
			out = append(out, a)
		}
		if ip := net.ParseIP(c); ip != nil {
			if a, ok := netip.AddrFromSlice(ip); ok {
				out = append(out, a)
			}
		}
		if a, ok := parseInetAton(c); ok {
			out = append(out, a)
		}
	}
	return out
}

// parseInetAton parses an IPv4 address the way inet_aton does: one to four parts separated by
// dots, each decimal, octal (leading 0) or hexadecimal (leading 0x); the last part fills the
// remaining bytes.
func parseInetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
			if digits == "" { // inet_aton reads "0x" as 0
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" || strings.ContainsAny(digits[:1], "+-") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// resolveAndCheck checks every address host stands for: the literal, or what it resolves to.
func (g *guard) resolveAndCheck(ctx context.Context, host string) error {
	addrs := hostAddrs(host)
	if len(addrs) == 0 {
		var err error
		if addrs, err = g.lookup(ctx, "ip", host); err != nil {
			return fmt.Errorf("resolving %s to check it before handing the request to the proxy: %w", host, err)
		}
		if len(addrs) == 0 {
			return fmt.Errorf("resolving %s to check it before handing the request to the proxy: no address", host)
		}
	}
	for _, a := range addrs {
		if err := g.check(a); err != nil {
			return err
		}
	}
	return nil
}

// proxyFunc is the transport's Proxy function. When proxyEnv chooses a proxy for a request, the
// request's host is resolved and checked here, since the proxy will connect to it, not this
// process; a host that resolves to any denied address is refused and the proxy never hears of
// it. The proxy's own address is set by the operator (the environment), so dialing it is not
// guarded: dialContext lets exactly that dial through. The proxy resolves the host again: a name
// whose answers change between the two lookups is not caught here, so restrict the proxy's own
// egress too.
func (g *guard) proxyFunc(req *http.Request) (*url.URL, error) {
	pu, err := g.proxyEnv(req)
	if err != nil || pu == nil {
		return pu, err
	}
	if err := g.resolveAndCheck(req.Context(), req.URL.Hostname()); err != nil {
		return nil, err
	}
	if d := dialIntentFrom(req.Context()); d != nil {
		addr := proxyAddr(pu)
		d.proxy.Store(&addr)
	}
	return pu, nil
}

// proxyAddr is the host:port the transport dials for a proxy URL.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// dialIntent carries, from proxyFunc to the dialer of the same request, the address of the
// proxy proxyFunc chose after checking the request's host.
type dialIntent struct {
	proxy atomic.Pointer[string]
}

type dialIntentKey struct{}

func dialIntentFrom(ctx context.Context) *dialIntent {
	d, _ := ctx.Value(dialIntentKey{}).(*dialIntent)
	return d
}

// dialContext returns the transport's DialContext: every connection is guarded, except the one
// to the proxy proxyFunc chose for this request (the request's own host was checked there). A
// request without a dialIntent has every dial guarded, its proxy's too.
func (g *guard) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := *d
	guarded.Control = g.control
	plain := *d
	plain.Control = nil
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if di := dialIntentFrom(ctx); di != nil {
			if p := di.proxy.Load(); p != nil && *p == addr {
				return plain.DialContext(ctx, network, addr)
			}
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// guardedRoundTripper gives every request its own dialIntent before the transport sees it.
type guardedRoundTripper struct {
	t *http.Transport
}

func (rt guardedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return rt.t.RoundTrip(req.WithContext(context.WithValue(req.Context(), dialIntentKey{}, &dialIntent{})))
}
