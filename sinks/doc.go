// Package sinks delivers KickRequest phase changes to the webhooks that NotificationPolicies name:
// it validates each policy and keeps its status, matches router events against it, and sends each
// policy's notifications from its own bounded queue, worker and HTTP client (retries, TLS, signing).
package sinks
