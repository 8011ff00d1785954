package request

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Metrics are the kick_* restart metrics of the metrics reference.
type Metrics struct {
	requests     *prometheus.CounterVec
	restarts     *prometheus.CounterVec
	errors       *prometheus.CounterVec
	latency      prometheus.Histogram
	gateWait     prometheus.Histogram
	driverEvents *prometheus.CounterVec
	undated      prometheus.Gauge
	unrecorded   prometheus.Gauge
	queueDropped prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// exported, as in unit tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_requests_total", Help: "KickRequests that reached a terminal phase, by GitOps provider and result.",
		}, []string{"provider", "result"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_restarts_total", Help: "Restarts started, and their rollouts' outcomes, by GitOps provider.",
		}, []string{"provider", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_controller_errors_total", Help: "Reconcile errors by controller and reason.",
		}, []string{"controller", "reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kick_change_to_restart_seconds",
			Help:    "Time from the latest relevant dependency change to the restart patch.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
		gateWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kick_gate_wait_seconds",
			Help:    "Time a request waited for its gates before restarting.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 12),
		}),
		driverEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_driver_decisions_total", Help: "What the restart driver did with a source change for one consumer.",
		}, []string{"decision"}),
		undated: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kick_driver_undated_rollouts",
			Help: "Workloads whose rollout the restart driver is waiting to date (no ReplicaSet of the template yet) before it decides.",
		}),
		unrecorded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kick_requests_unrecorded_restarts",
			Help: "KickRequests following a restart the driver applied whose status does not record it yet (the first write waits 5 s, 60 s while 10 or more wait).",
		}),
		queueDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kick_request_queue_dropped_total",
			Help: "KickRequest reconciles not queued because their namespace had its bound of queued requests already; its requests are listed again once its backlog drained.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.restarts, m.errors, m.latency, m.gateWait, m.driverEvents, m.undated, m.unrecorded, m.queueDropped)
	}
	return m
}

func providerLabel(p kickv1alpha1.GitOpsProvider) string {
	if p == "" {
		return "unknown"
	}
	return strings.ToLower(string(p))
}

func (m *Metrics) outcome(p kickv1alpha1.GitOpsProvider, phase kickv1alpha1.KickRequestPhase) {
	if m == nil {
		return
	}
	result := map[kickv1alpha1.KickRequestPhase]string{
		kickv1alpha1.PhaseSucceeded:        "succeeded",
		kickv1alpha1.PhaseNoLongerRequired: "no_longer_required",
		kickv1alpha1.PhaseFailed:           "failed",
		kickv1alpha1.PhaseDryRun:           "dry_run",
	}[phase]
	m.requests.WithLabelValues(providerLabel(p), result).Inc()
}

func (m *Metrics) restart(p kickv1alpha1.GitOpsProvider, result string) {
	if m != nil {
		m.restarts.WithLabelValues(providerLabel(p), result).Inc()
	}
}

func (m *Metrics) error(controller, reason string) {
	if m != nil {
		m.errors.WithLabelValues(controller, reason).Inc()
	}
}

func (m *Metrics) observeLatency(d time.Duration) {
	if m != nil && d >= 0 {
		m.latency.Observe(d.Seconds())
	}
}

func (m *Metrics) observeGateWait(d time.Duration) {
	if m != nil && d >= 0 {
		m.gateWait.Observe(d.Seconds())
	}
}

func (m *Metrics) undatedRollouts(n int) {
	if m != nil {
		m.undated.Set(float64(n))
	}
}

func (m *Metrics) unrecordedRollouts(n int) {
	if m != nil {
		m.unrecorded.Set(float64(n))
	}
}

func (m *Metrics) decision(d string) {
	if m != nil {
		m.driverEvents.WithLabelValues(d).Inc()
	}
}

// requestQueueDropped counts a KickRequest reconcile dropped over its
// namespace's bound.
func (m *Metrics) requestQueueDropped() {
	if m != nil {
		m.queueDropped.Inc()
	}
}
