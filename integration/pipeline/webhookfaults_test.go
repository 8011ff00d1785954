package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// faultyEndpoint is a webhook receiver that misbehaves in one way and counts
// what it was sent.
type faultyEndpoint struct {
	mu       sync.Mutex
	received int // requests that arrived
	inFlight int // requests it is holding right now
	phases   []string
	srv      *httptest.Server
}

func (e *faultyEndpoint) stats() (received, inFlight int, phases []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received, e.inFlight, append([]string(nil), e.phases...)
}

// newFaultyEndpoint serves answer for every request after noting it.
func newFaultyEndpoint(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *faultyEndpoint {
	e := &faultyEndpoint{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var doc struct{ Phase string }
		_ = json.Unmarshal(body, &doc)
		e.mu.Lock()
		e.received++
		e.inFlight++
		e.phases = append(e.phases, doc.Phase)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.inFlight--
			e.mu.Unlock()
		}()
		answer(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func status(code int, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// refusedURL is an address nothing listens on.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

// TestWebhookFaultsKeepRestartsOnTime: endpoints that fail (500), throttle
// (503 with a long Retry-After), are gone (410), refuse connections, answer
// after 10 s or never answer at all do not hold up restarts, nor the
// deliveries to a healthy endpoint. The hanging endpoint still holds its
// first request when both restarts are done and reported.
func TestWebhookFaultsKeepRestartsOnTime(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // before the servers close (cleanups run after)
	hang := newFaultyEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	slow := newFaultyEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	healthy := newFaultyEndpoint(t, status(http.StatusNoContent))
	failing := newFaultyEndpoint(t, status(http.StatusInternalServerError))
	throttled := newFaultyEndpoint(t, status(http.StatusServiceUnavailable, "Retry-After", "3600"))
	gone := newFaultyEndpoint(t, status(http.StatusGone))

	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	for name, hook := range map[string]kickv1alpha1.WebhookSpec{
		"hang":      {URL: hang.srv.URL, TimeoutSeconds: 120},
		"slow":      {URL: slow.srv.URL, TimeoutSeconds: 30},
		"healthy":   {URL: healthy.srv.URL},
		"failing":   {URL: failing.srv.URL},
		"throttled": {URL: throttled.srv.URL},
		"gone":      {URL: gone.srv.URL},
		"refused":   {URL: refusedURL(t)},
	} {
		f.Create(&kickv1alpha1.NotificationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       kickv1alpha1.NotificationPolicySpec{Webhook: hook},
		})
	}
	f.WebWithSecret()

	start := time.Now()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	first := time.Since(start)
	cluster.Eventually(t, 30*time.Second, "the hanging endpoint to hold a request", func() (bool, error) {
		_, inFlight, _ := hang.stats()
		return inFlight > 0, nil
	})

	// A second change while the hanging endpoint still holds the first event.
	start = time.Now()
	f.SetSecret("db", map[string]string{"password": "charlie"})
	f.WaitReplicaSets("web", 3)
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	second := time.Since(start)

	cluster.Eventually(t, 30*time.Second, "both Succeeded transitions at the healthy endpoint", func() (bool, error) {
		_, _, phases := healthy.stats()
		n := 0
		for _, p := range phases {
			if p == string(kickv1alpha1.PhaseSucceeded) {
				n++
			}
		}
		return n == 2, fmt.Errorf("phases so far: %v", phases)
	})
	if received, inFlight, _ := hang.stats(); received != 1 || inFlight != 1 {
		t.Fatalf("the hanging endpoint received %d requests and holds %d; want its first request still held", received, inFlight)
	}
	cluster.Eventually(t, 90*time.Second, "the slow endpoint to be sent the second Succeeded too", func() (bool, error) {
		_, _, phases := slow.stats()
		n := 0
		for _, p := range phases {
			if p == string(kickv1alpha1.PhaseSucceeded) {
				n++
			}
		}
		return n >= 2, fmt.Errorf("phases so far: %v", phases)
	})
	for name, e := range map[string]*faultyEndpoint{"failing": failing, "throttled": throttled, "gone": gone} {
		if received, _, _ := e.stats(); received == 0 {
			t.Errorf("the %s endpoint was never tried", name)
		}
	}
	t.Logf("webhook faults: restart 1 in %s, restart 2 in %s with 500/503+Retry-After/410/refused/10 s slow/hanging endpoints beside a healthy one",
		first.Round(time.Millisecond), second.Round(time.Millisecond))
}
