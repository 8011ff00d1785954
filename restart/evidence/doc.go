// Package evidence formats and reads the note a restart leaves on its
// workload (annotation kick.corewire.io/restarted-for) when it is applied
// before the records of the change and its KickRequest are written: which
// stamp, which change, and which Secret and ConfigMap versions it answered.
// It is pure; the driver writes the note and the source observer and the
// driver read it back after a manager restart.
package evidence
