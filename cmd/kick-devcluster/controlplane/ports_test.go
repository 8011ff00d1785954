package controlplane

import (
	"errors"
	"testing"
)

// TestUnassignedPortSkipsPortsGivenToAnotherComponent: the kernel may hand
// out the same free port twice before anything binds it; a component must
// never get a port another one of the cluster was given.
func TestUnassignedPortSkipsPortsGivenToAnotherComponent(t *testing.T) {
	c := &Cluster{ports: map[string]int{"etcd": 41737}}
	offered := []int{41737, 41737, 41801}
	free := func() (int, error) {
		if len(offered) == 0 {
			return 0, errors.New("no more ports")
		}
		p := offered[0]
		offered = offered[1:]
		return p, nil
	}
	port, err := c.unassignedPort(free)
	if err != nil || port != 41801 {
		t.Fatalf("got port %d (%v), want 41801", port, err)
	}

	always := func() (int, error) { return 41737, nil }
	if port, err := c.unassignedPort(always); err == nil {
		t.Fatalf("got port %d from a kernel that only offers a taken port, want an error", port)
	}
}
