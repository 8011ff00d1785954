// Package assess answers one question for one workload at one moment: does
// it need a restart, and may the restart run now? It is pure: callers gather
// the facts (the manager from its caches, kubectl kick with the user's own
// credentials, the admission preflight from the manager's caches) and all of
// them get the same answer from the same code.
//
// An Assessment carries the selected policy, Λ (the newest relevant change
// of the in-scope dependencies, and where it came from), σ (the rollout),
// the freshness verdict and the gate, evaluated in one fixed order:
// suspend, dry run, settle, schedule windows, minInterval, GitOps, restart
// budget.
package assess
