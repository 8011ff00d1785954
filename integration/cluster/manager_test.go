package cluster

import "testing"

// TestFreeAddrHandsOutEachAddressOnce: the kernel may give a port it just
// freed to the next listener on port 0; among 2,000 calls some port would come
// back (the birthday bound over about 28,000 ephemeral ports), and a manager
// given the same address for two of its servers exits.
func TestFreeAddrHandsOutEachAddressOnce(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr := freeAddr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
	}
}
