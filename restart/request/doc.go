// Package request drives restarts through durable KickRequests: the driver
// turns source changes from the router into requests (only when there is
// something to do), and the reconciler runs each request's state machine:
// gate, freshness, restart, rollout tracking, retention.
package request
