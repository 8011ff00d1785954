package observe

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metrics count observations. Labels are the source kind and the class (or the reason a source
// was skipped: Unconsumed, NotFound, Deleting), both small closed sets.
type metrics struct {
	observations *prometheus.CounterVec
	events       *prometheus.CounterVec
	recordWaits  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		reg = crmetrics.Registry
	}
	return &metrics{
		observations: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_observe_observations_total",
			Help: "Source reconciles by source kind and outcome (Baseline, Relevant, Rebaseline, MetaOnly, NoChange, or why the source was skipped).",
		}, []string{"kind", "class"})),
		events: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_observe_events_published_total",
			Help: "SourceChanged events published, by source kind and class.",
		}, []string{"kind", "class"})),
		recordWaits: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_observe_record_waits_total",
			Help: "Records of announced changes written after waiting for the restarter, by how the wait ended: looked (every consumer looked at, its restart seen by the manager's watch) or bound (20 ms passed first).",
		}, []string{"ended"})),
	}
}

// register registers c, or returns the collector already registered under the same
// description (a second manager in the same process).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// cachedSources reports how many Secrets and ConfigMaps the SourceCache lets the manager's cache
// hold, by kind: what the cache's memory grows with; and how many it follows, and refused to
// follow (see SetFollowLimits).
type cachedSources struct {
	cache                   *SourceCache
	desc, followed, refused *prometheus.Desc
}

func registerCachedSources(reg prometheus.Registerer, c *SourceCache) error {
	if reg == nil {
		reg = crmetrics.Registry
	}
	err := reg.Register(cachedSources{cache: c, desc: prometheus.NewDesc("kick_observe_cached_sources",
		"Secrets and ConfigMaps held in the manager's cache (metadata only), by kind: those a managed workload consumes, that have an observation record, or that another component follows.",
		[]string{"kind"}, nil),
		followed: prometheus.NewDesc("kick_observe_followed_sources",
			"Secrets and ConfigMaps whose events the manager's cache receives, by kind; bounded per namespace and in all.",
			[]string{"kind"}, nil),
		refused: prometheus.NewDesc("kick_observe_follow_refusals_total",
			"Secrets and ConfigMaps not followed (so not observed) because their namespace, or the cluster, reached the bound of followed sources, by kind.",
			[]string{"kind"}, nil)})
	if errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return nil // a second manager in the same process: the first one's stays
	}
	return err
}

func (s cachedSources) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.desc
	ch <- s.followed
	ch <- s.refused
}

func (s cachedSources) Collect(ch chan<- prometheus.Metric) {
	for kind, n := range s.cache.held() {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(n), kind)
	}
	followed, refused := s.cache.followStats()
	for kind, n := range followed {
		ch <- prometheus.MustNewConstMetric(s.followed, prometheus.GaugeValue, float64(n), kind)
		ch <- prometheus.MustNewConstMetric(s.refused, prometheus.CounterValue, float64(refused[kind]), kind)
	}
}

// recordWaited counts a record's wait for the restarter, by whether every
// look came before the bound.
func (m *metrics) recordWaited(looked bool) {
	if m == nil {
		return
	}
	ended := "bound"
	if looked {
		ended = "looked"
	}
	m.recordWaits.WithLabelValues(ended).Inc()
}

func (m *metrics) observed(kind string, out outcome) {
	if m == nil {
		return
	}
	label := string(out.class)
	if label == "" {
		label = out.skipped
	}
	m.observations.WithLabelValues(kind, label).Inc()
	if out.published {
		m.events.WithLabelValues(kind, string(out.class)).Inc()
	}
}
