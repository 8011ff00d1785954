// Package preflight composes the admission preflight's answer: from the
// assessments of the workloads that consume a Secret or ConfigMap being
// written (each made by restart/assess as if the write had happened), it
// words the admission warnings kubectl prints, their summary and the audit
// annotations. It is pure; restart/preflight/admission gathers the facts.
package preflight
