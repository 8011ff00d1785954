// Package inflight tracks the SourceObservation records this manager is
// writing right now. The source observer announces a change as soon as it
// has classified it and writes the record meanwhile; whoever restarts a
// workload waits here until the records of the workload's sources are
// durable. So a restart starts while its bookkeeping is still being written,
// yet never lands before the record of the change it answers: a manager that
// dies after the restart finds the change recorded and the workload fresh.
package inflight
