package sinks

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric outcome label values.
const (
	outcomeLabelSuccess = "success"
	outcomeLabelFailure = "failure"
)

// metrics are the dispatcher's collectors. The policy labels are bounded by the number of
// NotificationPolicies; a deleted policy's series are removed.
type metrics struct {
	deliveries *prometheus.CounterVec
	dropped    prometheus.Counter
	// rollUpsEvicted counts fan-outs whose summary was given up (Options.MaxOpenRollUps).
	rollUpsEvicted prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		deliveries: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_notification_deliveries_total",
			Help: "Notifications a NotificationPolicy matched, by outcome: success, or failure (the endpoint failed after the retries, or the policy cannot send as configured). A failed notification never fails a restart.",
		}, []string{"namespace", "policy", "outcome"})),
		dropped: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kick_notification_dropped_total",
			Help: "Notifications discarded because a policy's queue of pending deliveries (its router subscription) was full: its endpoint is not keeping up.",
		})),
		rollUpsEvicted: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kick_notification_rollups_evicted_total",
			Help: "Fan-out summaries given up because a NotificationPolicy with spec.rollUp had more open fan-outs at once than the manager follows per policy (64); per policy in status.rollUpsEvicted.",
		})),
	}
}

func (m *metrics) delivered(namespace, policy string, ok bool) {
	outcome := outcomeLabelFailure
	if ok {
		outcome = outcomeLabelSuccess
	}
	m.deliveries.WithLabelValues(namespace, policy, outcome).Inc()
}

func (m *metrics) forget(namespace, policy string) {
	m.deliveries.DeleteLabelValues(namespace, policy, outcomeLabelSuccess)
	m.deliveries.DeleteLabelValues(namespace, policy, outcomeLabelFailure)
}

// register registers c, or returns the equal collector already registered (so two dispatchers
// can share a registry). A nil registerer leaves c unregistered; other errors panic, as
// prometheus.MustRegister does.
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
