package sinks

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// testProxy is a real forward proxy on 127.0.0.1: absolute-form requests are forwarded, CONNECT
// is tunnelled. It resolves names with its own table, as a proxy with its own DNS would.
type testProxy struct {
	*httptest.Server
	resolve map[string]string // host name -> IP
	mu      sync.Mutex
	targets []string // host:port of every request it got
}

func newTestProxy(t *testing.T, ip string, resolve map[string]string) *testProxy {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	p := &testProxy{resolve: resolve}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.Listener.Close()
	p.Listener = l
	p.Start()
	t.Cleanup(p.Close)
	return p
}

func (p *testProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip, ok := p.resolve[host]; ok {
		addr = net.JoinHostPort(ip, port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (p *testProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *testProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		up, err := p.dial(r.Context(), "tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		down, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { _, _ = io.Copy(up, down); up.Close() }()
		_, _ = io.Copy(down, up)
		down.Close()
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	tr := &http.Transport{DialContext: p.dial}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// listenOn starts a receiver answering 200 on the given loopback address.
func listenOn(t *testing.T, ip string) (*receiver, string) {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	rc := &receiver{}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{at: time.Now(), header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	rc.Listener.Close()
	rc.Listener = l
	rc.Start()
	t.Cleanup(rc.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return rc, port
}

// TestProxyChecksTarget plays a tenant whose endpoint name resolves to a denied address while
// the manager sends through an HTTP(S) proxy: the guard never sees that address when dialing
// (it dials the proxy), so the request's host is resolved and checked before the proxy is
// used. The proxy itself sits on 127.0.0.1, in a denied range, and is still reachable: its
// address is the operator's choice. Targeting the proxy's address directly stays refused.
func TestProxyChecksTarget(t *testing.T) {
	good, goodPort := listenOn(t, "127.0.0.2") // allowed below
	victim, victimPort := listenOn(t, "127.0.0.1")
	dns := map[string]string{
		"good.example.test":     "127.0.0.2",
		"evil.example.test":     "127.0.0.1",
		"metadata.example.test": "169.254.169.254",
		"mixed.example.test":    "127.0.0.2",
	}
	proxy := newTestProxy(t, "127.0.0.1", dns)
	proxyURL, _ := url.Parse(proxy.URL)

	g := newGuard(Options{}.fill().DenyCIDRs, prefixes("127.0.0.2/32"))
	g.proxyEnv = func(r *http.Request) (*url.URL, error) {
		if r.URL.Hostname() == "direct.example.test" || r.URL.Hostname() == "127.0.0.1" { // as NO_PROXY would
			return nil, nil
		}
		return proxyURL, nil
	}
	g.lookup = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if host == "mixed.example.test" { // one good answer, one denied
			return []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::ffff:127.0.0.1")}, nil
		}
		ip, ok := dns[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
	client := newRetryClient(newTransport(g, nil), time.Millisecond).HTTPClient
	t.Cleanup(client.CloseIdleConnections)
	get := func(u string) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader("{}"))
		resp, err := client.Do(req)
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}

	resp, err := get("http://good.example.test:" + goodPort + "/hook")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("allowed target through the proxy: %v %v", resp, err)
	}
	if got := proxy.seen(); len(got) != 1 || len(good.seen()) != 1 {
		t.Fatalf("proxy saw %v, target got %d requests", got, len(good.seen()))
	}

	for _, u := range []string{
		"http://evil.example.test:" + victimPort + "/hook",
		"https://evil.example.test:" + victimPort + "/hook",
		"http://mixed.example.test:" + victimPort + "/hook",
		"http://metadata.example.test/latest/meta-data/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:127.0.0.1]:" + victimPort + "/hook",
		"http://2130706433:" + victimPort + "/hook",
	} {
		_, err := get(u)
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s through the proxy: %v, want a refusal", u, err)
		}
	}
	if _, err := get("http://unknown.example.test/"); err == nil {
		t.Error("a host that does not resolve was handed to the proxy")
	}
	_, proxyPort, _ := net.SplitHostPort(proxyURL.Host)
	for _, u := range []string{"http://127.0.0.1:" + proxyPort + "/", "http://127.0.0.1:" + victimPort + "/"} {
		var refused *RefusedError
		if _, err := get(u); !errors.As(err, &refused) {
			t.Errorf("direct %s: %v, want a refusal", u, err)
		}
	}
	if got := proxy.seen(); len(got) != 1 {
		t.Errorf("the proxy was asked for denied targets: %v", got)
	}
	if n := len(victim.seen()); n != 0 {
		t.Errorf("the denied endpoint got %d requests", n)
	}
}

// TestProxyDeliveryRefused: through a proxy, a delivery to a name that resolves to a denied
// address ends as refused (the policy goes Ready=False), naming the host only. The proxy's
// address is allowed here, as an operator might have done to reach it: that must not let the
// proxy reach denied addresses on the tenant's behalf.
func TestProxyDeliveryRefused(t *testing.T) {
	victim, port := listenOn(t, "127.0.0.1")
	proxy := newTestProxy(t, "127.0.0.3", map[string]string{"evil.example.test": "127.0.0.1"})
	proxyURL, _ := url.Parse(proxy.URL)
	g := newGuard(Options{}.fill().DenyCIDRs, prefixes("127.0.0.3/32", "0.0.0.0/0"))
	g.proxyEnv = func(*http.Request) (*url.URL, error) { return proxyURL, nil }
	g.lookup = func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	cfg := mustBuild(t, policy("http://evil.example.test:"+port+"/hook?token="+sentinel), g)
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeRefused || out.attempts != 1 {
		t.Fatalf("outcome %+v", out)
	}
	if !strings.Contains(out.message, "127.0.0.0/8") || !strings.Contains(out.message, "evil.example.test") ||
		strings.Contains(out.message, sentinel) || strings.Contains(out.message, "/hook") {
		t.Errorf("message %q", out.message)
	}
	if len(proxy.seen()) != 0 || len(victim.seen()) != 0 {
		t.Errorf("proxy saw %v, endpoint got %d requests", proxy.seen(), len(victim.seen()))
	}
}
