// Package admission serves the preflight as a validating admission webhook:
// for a Secret or ConfigMap being written it finds the consuming workloads
// in the manager's cache indexes, assesses each (restart/assess, through the
// same fact gathering as the request reconciler) as if the write had
// happened, and answers with the warnings restart/preflight composes. It
// reads only caches, within a budget, and never keeps or logs source data.
package admission
