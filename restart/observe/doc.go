// Package observe turns Secrets and ConfigMaps into durable SourceObservation records: a cache
// transform swaps their content for a keyed fingerprint and last-write time, and a controller
// classifies each observation (Baseline, Relevant, ...) and publishes the ones that matter.
package observe
