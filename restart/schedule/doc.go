// Package schedule compiles a KickPolicy's native cron windows and decides, for a given instant,
// whether a restart may run and when that answer can next change. Each Allow or Deny window opens at
// every match of its five-field cron expression, read in its own time zone, and stays open for its duration.
//
// The gate is open at t when no Deny window is active and either some Allow window is active or there
// are no Allow windows at all; Deny always wins, and no windows means always open. The last clause is a
// deliberate departure from the reference formula, which needs an active Allow window: like Argo CD sync
// windows, a schedule made only of Deny windows is open whenever none of them is.
//
// A window's duration is elapsed time, and cron starts follow robfig/cron around daylight-saving
// changes: a start time the clock skips does not occur that day, and a start time the clock repeats
// occurs twice. The package is pure: no clock, no API calls.
package schedule
