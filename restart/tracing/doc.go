// Package tracing makes one OpenTelemetry trace per restart cycle: dependency.changed when a
// change opens a KickRequest, and its child restart.executed when the workload is restarted.
// The first span's W3C traceparent is kept on the request, so whichever manager restarts the
// workload continues the same trace. A nil *Tracer records nothing and allocates nothing.
package tracing
