package admission

import "testing"

// BenchmarkCheckSharedSecretDenyModeKeys is BenchmarkCheckSharedSecretDenyMode
// with the manager's fingerprint key, as in production: every assessment
// then also works out which keys its workload reads, and the write is
// compared with the replaced object key by key.
func BenchmarkCheckSharedSecretDenyModeKeys(b *testing.B) {
	withKeys = true
	defer func() { withKeys = false }()
	BenchmarkCheckSharedSecretDenyMode(b)
}
