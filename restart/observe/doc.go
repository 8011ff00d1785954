// Package observe turns Secrets and ConfigMaps into durable SourceObservation records. The
// manager watches and caches them metadata-only (NewCacheOptions, SourceMetadata), so their
// content never enters its cache. A controller reads a source in full from the API server only
// when a managed workload consumes it (or it has a record) and its resourceVersion moved past
// the one its record was written for; it then computes a keyed fingerprint and the last-write
// time, drops the object, classifies the observation (Baseline, Relevant, ...) and publishes
// the ones that matter.
package observe
