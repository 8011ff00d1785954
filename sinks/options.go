package sinks

import (
	"errors"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kick-operator/kick/router"
)

// Defaults of Options.
const (
	DefaultQueueCapacity  = 100
	DefaultStatusInterval = 3 * time.Second
)

// SubscriberName is the "subscriber" label of the kick_router_* metrics under which every
// NotificationPolicy's router subscription is counted, and the prefix of those subscriptions'
// names ("notifications/<namespace>/<name>").
const SubscriberName = "notifications"

// DefaultDenyCIDRs are the destinations refused when Options.DenyCIDRs is nil: the IPv4 and IPv6
// link-local ranges, where cloud metadata services answer.
func DefaultDenyCIDRs() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10")}
}

// Options configure the NotificationPolicy controller and its dispatcher.
type Options struct {
	// Router is where PhaseChanged and GateChanged events come from. Required.
	Router *router.Router
	// Registerer receives kick_notification_deliveries_total and
	// kick_notification_dropped_total (controller-runtime's metrics.Registry in the manager).
	// Nil: the metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Log receives delivery logs. The zero value uses the manager's logger.
	Log logr.Logger

	// QueueCapacity bounds each policy's router subscription, its queue of pending deliveries;
	// when it is full the oldest pending event is dropped and counted. Default
	// DefaultQueueCapacity.
	QueueCapacity int
	// StatusInterval is the least time between two status writes of one policy caused by
	// deliveries (spec and Secret changes are written at once). Default DefaultStatusInterval.
	StatusInterval time.Duration

	// DenyCIDRs are destination ranges webhooks may never reach, checked on the resolved address
	// when connecting. Nil means DefaultDenyCIDRs(); an empty non-nil slice denies nothing.
	DenyCIDRs []netip.Prefix
	// AllowCIDRs, when not empty, restricts webhooks to these ranges. When both lists match an
	// address the longer prefix decides (a tie denies), so an allowed /32 can open a hole in a
	// denied range and a denied range can narrow an allowed one.
	AllowCIDRs []netip.Prefix

	// MaxConcurrentReconciles is the number of reconcile workers; 0 means 1.
	MaxConcurrentReconciles int
}

func (o Options) withDefaults() (Options, error) {
	if o.Router == nil {
		return o, errors.New("sinks: Options.Router is required")
	}
	if o.QueueCapacity <= 0 {
		o.QueueCapacity = DefaultQueueCapacity
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.DenyCIDRs == nil {
		o.DenyCIDRs = DefaultDenyCIDRs()
	}
	return o, nil
}
