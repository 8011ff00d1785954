package sinks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Notification throughput: phase changes published on the router and delivered by a
// NotificationPolicy's worker to a CloudEvents receiver (sdk-go) on loopback, alone and next to
// a second policy whose endpoint takes 10 s per request. Reported per sub-benchmark:
//
//	deliveries/s    events the fast receiver got, per second
//	p50-ms, p99-ms  publish → received by the fast receiver
//	slow-dropped    events the slow policy's full queue discarded (drop-oldest)
//	queued-max      most events queued in both policies' subscriptions at once
//	heap-max-B      most heap in use above the start, sampled every 20 ms: what the queues,
//	                the requests in flight and the receiver hold
//
// The publisher keeps at most benchWindow events ahead of the fast receiver (fewer than the
// queue holds), so the fast policy never drops and its latency is its own queueing and
// delivery. Run: go test -run '^$' -bench NotificationThroughput -benchtime 20000x ./sinks

// benchWindow is how many events the publisher keeps ahead of the fast receiver.
const benchWindow = 32

// slowDelay is how long the slow endpoint takes per request.
const slowDelay = 10 * time.Second

func BenchmarkNotificationThroughput(b *testing.B) {
	b.Run("alone", func(b *testing.B) { benchmarkDeliveries(b, false) })
	b.Run("with-slow-policy", func(b *testing.B) { benchmarkDeliveries(b, true) })
}

func benchmarkDeliveries(b *testing.B, withSlow bool) {
	d, _ := testDispatcher(b, DefaultQueueCapacity)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	n := b.N
	published := make([]atomic.Int64, n) // unix nanoseconds, by event index
	latency := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var received atomic.Int64
	progress := make(chan struct{}, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := cehttp.NewEventFromHTTPRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The source ends in the request's name, "r-<index>".
		i, err := strconv.Atoi(ev.Source()[strings.LastIndex(ev.Source(), "-")+1:])
		if err != nil || i >= n {
			http.Error(w, "unknown event", http.StatusBadRequest)
			return
		}
		lat := time.Since(time.Unix(0, published[i].Load()))
		mu.Lock()
		latency = append(latency, lat)
		mu.Unlock()
		received.Add(1)
		select {
		case progress <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer fast.Close()

	var slowSt *policyState
	if withSlow {
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(slowDelay):
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer slow.Close()
		defer close(release) // before Close, which waits for the handlers
		p := benchPolicy(slow.URL, "slow", "uid-slow")
		p.Spec.Webhook.TimeoutSeconds = int32(slowDelay / time.Second)
		slowSt = applyPolicy(b, d, p, mustBuild(b, p, nil), nil)
	}
	p := benchPolicy(fast.URL, "fast", "uid-fast")
	fastSt := applyPolicy(b, d, p, mustBuild(b, p, nil), nil)
	d.run(ctx)

	var queuedMax atomic.Int64
	var heapMax uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBase := ms.HeapInuse
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			q := int64(fastSt.sub.Len())
			if slowSt != nil {
				q += int64(slowSt.sub.Len())
			}
			if q > queuedMax.Load() {
				queuedMax.Store(q)
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			heapMax = max(heapMax, m.HeapInuse)
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	ev := phaseChanged("Succeeded")
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		for int64(i)-received.Load() >= benchWindow {
			select {
			case <-progress:
			case <-time.After(wait):
				b.Fatalf("the fast receiver got %d of %d events", received.Load(), i)
			}
		}
		ev.Request.Name, ev.Request.UID = "r-"+strconv.Itoa(i), "uid-"+strconv.Itoa(i)
		published[i].Store(time.Now().UnixNano())
		if err := d.opts.Router.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	for received.Load() < int64(n) {
		select {
		case <-progress:
		case <-time.After(wait):
			b.Fatalf("the fast receiver got %d of %d events", received.Load(), n)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(stopSampling)
	<-sampled

	fastSt.mu.Lock()
	fastDropped := fastSt.dropped
	fastSt.mu.Unlock()
	if fastDropped != 0 {
		b.Fatalf("the fast policy dropped %d events", fastDropped)
	}
	slices.Sort(latency)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(latency[len(latency)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latency[min(len(latency)*99/100, len(latency)-1)].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(queuedMax.Load()), "queued-max")
	b.ReportMetric(float64(heapMax-min(heapMax, heapBase)), "heap-max-B")
	if slowSt != nil {
		slowSt.mu.Lock()
		b.ReportMetric(float64(slowSt.dropped), "slow-dropped")
		slowSt.mu.Unlock()
	}
	b.ReportMetric(0, "ns/op") // per-delivery time is deliveries/s
}

// benchPolicy is a CloudEvents policy for every phase change in testNS.
func benchPolicy(url, name, uid string) *kickv1alpha1.NotificationPolicy {
	p := policy(url, func(w *kickv1alpha1.WebhookSpec) { w.Format = kickv1alpha1.FormatCloudEvents })
	p.Name, p.UID = name, types.UID(uid)
	return p
}
