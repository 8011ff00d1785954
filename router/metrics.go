package router

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the router's collectors. Label values are event kinds (closed set) and subscriber
// labels (few and fixed: a family of subscriptions shares one, see MetricsLabel), so cardinality
// stays bounded.
type metrics struct {
	published map[EventKind]prometheus.Counter // read-only after newMetrics
	delivered *prometheus.CounterVec
	dropped   *prometheus.CounterVec
	depth     *prometheus.GaugeVec
	wait      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	published := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kick_router_published_total",
		Help: "Events published to the router, by event kind.",
	}, []string{"event"}))
	m := &metrics{
		published: make(map[EventKind]prometheus.Counter, len(allKinds)),
		delivered: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_router_delivered_total",
			Help: "Events enqueued for a subscriber (including ones later dropped).",
		}, []string{"subscriber"})),
		dropped: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_router_dropped_total",
			Help: "Queued events discarded because a drop-oldest subscriber's queue was full.",
		}, []string{"subscriber"})),
		depth: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kick_router_queue_depth",
			Help: "Events waiting in a subscriber's queue.",
		}, []string{"subscriber"})),
		wait: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kick_router_publish_wait_seconds",
			Help:    "Time a Publish call spent blocked on full block-policy queues (only calls that blocked).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs … ~26s
		})),
	}
	for _, k := range allKinds {
		m.published[k] = published.WithLabelValues(string(k))
	}
	return m
}

// register registers c, or returns the equal collector already registered (two routers on one
// registry share series). A nil registerer leaves c unregistered. Other errors are programming
// errors and panic, like prometheus.MustRegister.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
