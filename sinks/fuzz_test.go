package sinks

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The fuzzers below run their seed corpus under a plain `go test`; run one for longer with, for
// example, `go test ./sinks -run '^$' -fuzz FuzzDestinationForms -fuzztime 60s`.

// fuzzGuard is the guard of a manager started with the defaults and an allow list that opens
// the public internet, as an operator restricting nothing would write it: it must leave every
// default-denied address denied.
func fuzzGuards() []*guard {
	return []*guard{
		newGuard(Options{}.fill().DenyCIDRs, nil),
		newGuard(Options{}.fill().DenyCIDRs, prefixes("0.0.0.0/0", "::/0")),
	}
}

// textForms returns ways of writing addr in a URL host that some parser (Go's, inet_aton,
// getaddrinfo) reads as addr, or as an IPv6 address carrying it.
func textForms(addr netip.Addr) []string {
	forms := []string{addr.String(), addr.String() + "."}
	if addr.Is4() {
		b := addr.As4()
		n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		forms = append(forms,
			strconv.FormatUint(uint64(n), 10),
			fmt.Sprintf("0x%x", n), fmt.Sprintf("0X%08X", n), fmt.Sprintf("0%o", n),
			fmt.Sprintf("%d.%d", b[0], n&0xffffff),
			fmt.Sprintf("%d.%d.%d", b[0], b[1], n&0xffff),
			fmt.Sprintf("0%o.0%o.0%o.0%o", b[0], b[1], b[2], b[3]),
			fmt.Sprintf("0x%x.0x%x.0x%x.0x%x", b[0], b[1], b[2], b[3]),
			fmt.Sprintf("%d.0x%x.0%o.%d", b[0], b[1], b[2], b[3]),
			"::ffff:"+addr.String(),
			fmt.Sprintf("::ffff:%x:%x", n>>16, n&0xffff),
			"0:0:0:0:0:ffff:"+addr.String(),
			"[::ffff:"+addr.String()+"]",
			"64:ff9b::"+addr.String(),
			netip.AddrFrom16(addr.As16()).StringExpanded(),
		)
	} else {
		forms = append(forms, addr.StringExpanded(), "["+addr.String()+"]", addr.WithZone("eth0").String(),
			strings.ToUpper(addr.StringExpanded()))
	}
	return forms
}

// FuzzDestinationForms: an address the guard denies is refused in every textual form, by the
// URL pre-check (checkHost, after url.Parse as buildConfig does) and, where it is an IP
// address, at dial time (control).
func FuzzDestinationForms(f *testing.F) {
	for _, p := range DefaultDenyCIDRs() {
		f.Add(p.Addr().AsSlice())
		last := p.Addr()
		for i := 0; i < 3; i++ {
			last = last.Next()
		}
		f.Add(last.AsSlice())
	}
	f.Add([]byte{93, 184, 216, 34})
	f.Add([]byte{127, 255, 255, 255})
	f.Add(netip.MustParseAddr("::ffff:169.254.169.254").AsSlice())
	f.Add(netip.MustParseAddr("64:ff9b::7f00:1").AsSlice())
	f.Fuzz(func(t *testing.T, raw []byte) {
		var addr netip.Addr
		switch {
		case len(raw) >= 16:
			addr = netip.AddrFrom16([16]byte(raw[:16]))
		case len(raw) >= 4:
			addr = netip.AddrFrom4([4]byte(raw[:4]))
		default:
			return
		}
		for _, g := range fuzzGuards() {
			if g.check(addr) == nil {
				// Allowed addresses: the forms must agree wherever they name addr itself.
				if err := g.checkHost(addr.String()); err != nil {
					t.Fatalf("check allows %s, checkHost refuses it: %v", addr, err)
				}
				continue
			}
			for _, form := range textForms(addr) {
				if g.checkHost(form) == nil {
					t.Fatalf("denied %s allowed as %q", addr, form)
				}
				host := form
				if strings.Contains(form, ":") && !strings.HasPrefix(form, "[") {
					host = "[" + strings.ReplaceAll(form, "%", "%25") + "]"
				}
				if u, err := url.Parse("http://" + host + ":8080/x"); err == nil && u.Hostname() != "" {
					if g.checkHost(u.Hostname()) == nil {
						t.Fatalf("denied %s allowed as the URL host %q", addr, u.Host)
					}
				}
				if a, err := netip.ParseAddr(strings.Trim(form, "[]")); err == nil {
					if g.control("tcp", netip.AddrPortFrom(a, 443).String(), nil) == nil {
						t.Fatalf("denied %s allowed at dial time as %q", addr, form)
					}
				}
			}
		}
	})
}

// refInetAton is a second, independent reading of inet_aton's forms (strconv's base prefixes,
// restricted to those inet_aton knows), to check hostAddr against.
func refInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" || p[0] < '0' || p[0] > '9' || strings.ContainsAny(p, "_oObB") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals {
		if i < len(vals)-1 {
			if v > 255 {
				return netip.Addr{}, false
			}
			n = n<<8 | v
			continue
		}
		rest := uint(8 * (4 - i))
		if v >= 1<<rest {
			return netip.Addr{}, false
		}
		n = n<<rest | v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// FuzzCheckHost: for any URL host, checkHost never panics, and refuses it whenever one of Go's
// parsers or inet_aton reads it as a denied address.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "127.1", "0x7f.1", "0177.0.0.01", "2130706433", "::1", "[::1]", "::ffff:127.0.0.1",
		"fe80::1%eth0", "169.254.169.254.", "0251.254.169.254", "64:ff9b::a9fe:a9fe", "::127.0.0.1",
		"example.com", "127.0.0.1.nip.io", "1.2.3.4.5", "0x", "08", "4294967296", "", ".", "[", "%",
		"fd00:ec2::254", "100.100.100.200", "168.63.129.16", "0", "0.0.0.0", "::", "1e100",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		for _, g := range fuzzGuards() {
			err := g.checkHost(host)
			var readings []netip.Addr
			for _, h := range []string{host, strings.TrimSuffix(host, "."), strings.Trim(host, "[]")} {
				if a, e := netip.ParseAddr(h); e == nil {
					readings = append(readings, a)
				}
				if ip := net.ParseIP(h); ip != nil {
					a, _ := netip.AddrFromSlice(ip)
					readings = append(readings, a)
				}
				if a, ok := refInetAton(h); ok {
					readings = append(readings, a)
				}
			}
			for _, a := range readings {
				if g.check(a) != nil && err == nil {
					t.Fatalf("checkHost(%q) allows it, but it reads as the denied %s", host, a)
				}
			}
		}
	})
}

// FuzzScrubber: whatever the values and the text around them, a cleaned message never shows a
// known secret value (as given, or as it would look on one line), and is one line of valid
// UTF-8 within maxMessage bytes.
func FuzzScrubber(f *testing.F) {
	f.Add("s3cr3t-token", "hunter22", "Post \"https://h/x?token=", "\": 401 ", "\n\tnext")
	f.Add("a\nb\tc d", "[redacted]x", "x", "a b c d", "[redacted]")
	f.Add("tok…", "abcd", strings.Repeat("é", 600), "tok", "")
	f.Add("dact", "show", "", "", "")
	f.Add("https://hooks.example.com", "T0/B0/XYZ", "see ", "/services/", " now")
	f.Add("p\xffw\xfed!", "\u00a0\u00a0pw pw", "x", "\xff", "y")
	f.Fuzz(func(t *testing.T, secret1, secret2, prefix, middle, suffix string) {
		s := newScrubber(secret1, secret2, "")
		texts := []string{
			prefix + secret1 + middle + secret2 + suffix,
			prefix + secret2 + secret1 + suffix,
			"Post \"https://user:" + secret1 + "@host/" + secret2 + "?k=" + secret1 + "\": " + middle,
			strings.Repeat(middle, 3) + secret1 + strings.Repeat(prefix, 2) + secret2,
			prefix + middle + suffix,
		}
		for _, text := range texts {
			out := s.clean(text)
			if len(out) > maxMessage || !utf8.ValidString(out) {
				t.Fatalf("clean(%q) = %q: %d bytes, valid UTF-8 %v", text, out, len(out), utf8.ValidString(out))
			}
			for _, r := range out {
				if unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ') {
					t.Fatalf("clean(%q) = %q holds %U", text, out, r)
				}
			}
			for _, v := range []string{secret1, secret2} {
				for _, form := range []string{oneLine(v), strings.TrimSpace(v)} {
					if len(form) >= minSecretLen && strings.Contains(out, form) {
						t.Fatalf("clean(%q) = %q shows the value %q", text, out, form)
					}
				}
			}
		}
	})
}
