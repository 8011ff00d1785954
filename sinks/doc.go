// Package sinks delivers KickRequest phase changes, and gate changes to policies that ask for
// them, to the webhooks that NotificationPolicies name: it validates each policy and keeps its
// status, and sends each policy's notifications from its own router subscription (a bounded
// drop-oldest queue), worker and HTTP client (retries, TLS, signing).
package sinks
