// Package execute performs KICK's only write to a workload: it stamps the
// pod template's restartedAt annotation with a sub-second time that is never
// older than the change it answers, so the workload controller rolls out.
package execute
