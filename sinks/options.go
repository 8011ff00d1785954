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

// DefaultDenyCIDRs are the destinations webhooks never reach unless Options.AllowCIDRs names
// them: the unspecified and "this network" addresses (0.0.0.0/8, ::), loopback (127.0.0.0/8,
// ::1), the deprecated IPv4-compatible IPv6 range, link-local (169.254.0.0/16, fe80::/10), and
// the cloud metadata and credential endpoints (169.254.169.254, fd00:ec2::254 and
// fd00:ec2::23 on AWS, 100.100.100.200 on Alibaba Cloud, 168.63.129.16 on Azure). The metadata
// addresses are listed on their own, so that allowing all of link-local still leaves them
// denied. The list is applied whatever Options.DenyCIDRs says.
func DefaultDenyCIDRs() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("169.254.169.254/32"),
		netip.MustParsePrefix("100.100.100.200/32"),
		netip.MustParsePrefix("168.63.129.16/32"),
		netip.MustParsePrefix("::/128"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("::/96"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("fd00:ec2::254/128"),
		netip.MustParsePrefix("fd00:ec2::23/128"),
	}
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

	// DenyCIDRs are destination ranges webhooks may never reach, in addition to
	// DefaultDenyCIDRs(), which always apply. They are checked on the resolved address when
	// connecting, and before a request is handed to a proxy.
	DenyCIDRs []netip.Prefix
	// AllowCIDRs, when not empty, restricts webhooks to these ranges. When both lists match an
	// address the longer prefix decides and a tie allows, so allowing exactly a denied range
	// (127.0.0.0/8) or a part of it (127.0.0.1/32) opens it, and a longer denied range narrows
	// an allowed one (allowing 169.254.0.0/16 leaves 169.254.169.254/32 denied).
	AllowCIDRs []netip.Prefix

	// Replay, with a positive ReplayWindow, makes every policy with a watermark
	// (status.handledThrough) re-send, when the dispatcher first takes it up after a manager
	// start, the events Replay returns that it delivers and that are not older than its
	// watermark nor than ReplayWindow: notifications a previous leader may not have delivered.
	// They carry the ids they were announced with. Nil, or a zero window: no replay.
	Replay       ReplaySource
	ReplayWindow time.Duration

	// FanOuts lists the KickRequests of a namespace for the summaries of policies with
	// spec.rollUp. Nil: no summaries are sent.
	FanOuts FanOutSource
	// RollUpInterval is the longest time between two looks at a rolled-up policy's fan-outs
	// (a request's phase change triggers a look sooner). Default DefaultRollUpInterval.
	RollUpInterval time.Duration
	// MaxOpenRollUps bounds the fan-outs each policy follows while they are open; beyond it the
	// oldest are given up (no summary) and counted in status.rollUpsEvicted. Default
	// DefaultMaxOpenRollUps.
	MaxOpenRollUps int

	// MaxConcurrentReconciles is the number of reconcile workers; 0 means 1.
	MaxConcurrentReconciles int
}

func (o Options) withDefaults() (Options, error) {
	if o.Router == nil {
		return o, errors.New("sinks: Options.Router is required")
	}
	return o.fill(), nil
}

// fill sets the defaults; withDefaults also checks what is required.
func (o Options) fill() Options {
	if o.QueueCapacity <= 0 {
		o.QueueCapacity = DefaultQueueCapacity
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.RollUpInterval <= 0 {
		o.RollUpInterval = DefaultRollUpInterval
	}
	if o.MaxOpenRollUps <= 0 {
		o.MaxOpenRollUps = DefaultMaxOpenRollUps
	}
	o.DenyCIDRs = append(DefaultDenyCIDRs(), o.DenyCIDRs...)
	return o
}
