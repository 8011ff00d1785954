// Package inflight tracks the SourceObservation records this manager is
// writing right now, and for which content version. The source observer
// announces a change as soon as it has classified it and writes the record
// meanwhile. A restart that cannot wait for bookkeeping (the driver's
// immediately allowed restart) names the versions still in flight on the
// workload in the same write (package evidence), so a manager that dies
// before the records land finds the change answered; every other restart
// waits here until the records of the workload's sources are durable, so
// it never lands before the record of the change it answers.
package inflight
