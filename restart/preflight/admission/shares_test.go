package admission

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestSharesAreFair(t *testing.T) {
	s := NewShares(8)
	take := func(ns string, n int) (got int) {
		for range n {
			if _, ok := s.Take(ns); ok {
				got++
			}
		}
		return got
	}
	// Alone, a namespace gets half: the rest stays free for others.
	if got := take("flood", 8); got != 4 {
		t.Fatalf("a lone namespace took %d of 8 slots, want 4", got)
	}
	// A second namespace gets its share of a third (8/3 = 2).
	if got := take("bystander", 8); got != 2 {
		t.Fatalf("the second namespace took %d, want 2", got)
	}
	// A third still finds a slot: 8/4 = 2, and two are free.
	if got := take("third", 8); got != 2 {
		t.Fatalf("the third namespace took %d, want 2", got)
	}
	// All 8 are taken: nobody gets more, not even a newcomer.
	if got := take("fourth", 1); got != 0 {
		t.Fatalf("a fourth namespace took %d slots past the bound", got)
	}
	// A released slot is free again, once.
	s2 := NewShares(2)
	release, ok := s2.Take("a")
	if !ok {
		t.Fatal("the first slot was refused")
	}
	if _, ok := s2.Take("a"); ok {
		t.Fatal("a lone namespace took both of 2 slots")
	}
	release()
	release()
	if s2.total != 0 || len(s2.held) != 0 {
		t.Fatalf("after a double release: total %d, held %v", s2.total, s2.held)
	}
}

// holding holds every List in namespace ns until release is closed,
// telling entered first: a review of ns is being answered and holds its
// slot.
type holding struct {
	client.Reader
	ns               string
	entered, release chan struct{}
}

func (h *holding) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if (&client.ListOptions{}).ApplyOptions(opts).Namespace == h.ns {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Reader.List(ctx, list, opts...)
}

// TestFloodingNamespaceLeavesRoomForOthers plays a tenant writing Secrets
// in its namespace flood as fast as it can, through the API server: as
// many reviews as the webhook answers at once, each held while it is
// answered. The flood holds only its share; its other writes are answered
// at once as not assessed, and a write in team-b, the bystander, is still
// answered in full. Before reviews were charged per namespace, the flood
// held every slot and team-b's review was refused (429).
func TestFloodingNamespaceLeavesRoomForOthers(t *testing.T) {
	const slots = 4
	p := newPKI(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.clientCA.CertPEM)
	c := teamChecker(t)
	h := &holding{Reader: c.Client, ns: "flood", entered: make(chan struct{}), release: make(chan struct{})}
	c.Client = h
	var once sync.Once
	stop := func() { once.Do(func() { close(h.release) }) }
	url := serve(t, p, c, &ClientAuth{CAs: pool, Names: []string{"kube-apiserver"}}, slots)
	t.Cleanup(stop) // before the server closes, which waits for held reviews
	user := authenticationv1.UserInfo{Username: "flooder"}

	type result struct {
		status int
		resp   string
		err    error
	}
	results := make(chan result, slots)
	for i := range slots {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flood", Name: fmt.Sprintf("s%d", i)},
			Data: map[string][]byte{"k": []byte("new")}}
		body := reviewBody(t, secretRequest(t, updateOf(t, s, map[string][]byte{"k": []byte("old")}), user))
		go func() {
			status, resp, err := post(t, p, url, p.apiServer, body)
			results <- result{status, warnings(resp), err}
		}()
	}
	// Wait until every flood review is either held or answered.
	held, answered := 0, 0
	deadline := time.After(60 * time.Second)
	for held+answered < slots {
		select {
		case <-h.entered:
			held++
		case r := <-results:
			answered++
			if r.err != nil || r.status != http.StatusOK || r.resp != "[kick: cannot assess ("+busy+")]" {
				t.Errorf("a flood review over its share: %d %s %v", r.status, r.resp, r.err)
			}
		case <-deadline:
			t.Fatalf("after a minute %d flood reviews held, %d answered, of %d", held, answered, slots)
		}
	}
	if held != fairShare(slots, 1) {
		t.Errorf("the flood holds %d of %d slots, want its share %d", held, slots, fairShare(slots, 1))
	}

	body := reviewBody(t, secretRequest(t, guess(t, "db", "new", "old"), authenticationv1.UserInfo{Username: "alice"}))
	status, resp, err := post(t, p, url, p.apiServer, body)
	if err != nil || status != http.StatusOK || warnings(resp) != "[kick: restarts deployment/web now (policy default)]" {
		t.Errorf("the bystander's review while the flood holds its share: %d %s %v", status, warnings(resp), err)
	}
	stop()
	for range held {
		if r := <-results; r.err != nil || r.status != http.StatusOK {
			t.Errorf("a held flood review: %d %v", r.status, r.err)
		}
	}
}

// warnings are the response's warnings as text, or "none" without a
// response.
func warnings(r *admissionv1.AdmissionResponse) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprint(r.Warnings)
}
