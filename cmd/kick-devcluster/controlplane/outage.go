package controlplane

import (
	"context"
	"fmt"
	"time"
)

// StopComponent stops one running component (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok) as an outage would: SIGTERM,
// then SIGKILL after a short grace period. StartComponent brings it back.
// Neither is safe to call concurrently with the other methods of Cluster.
func (c *Cluster) StopComponent(name string) error {
	i, err := c.component(name)
	if err != nil {
		return err
	}
	c.procs[i].Stop(5 * time.Second)
	return nil
}

// StartComponent starts a stopped component again with the same binary,
// flags, ports and data directory, and waits until it serves as Start does
// (etcd /health, kube-apiserver /readyz). Its log is appended to.
func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	i, err := c.component(name)
	if err != nil {
		return err
	}
	old := c.procs[i]
	if done, _ := old.Exited(); !done {
		return fmt.Errorf("%s is still running", name)
	}
	p, err := StartProcess(old.name, old.binary, old.args, old.env, c.logDir)
	if err != nil {
		return err
	}
	c.procs[i] = p
	return c.waitReady(ctx, p)
}

func (c *Cluster) component(name string) (int, error) {
	for i, p := range c.procs {
		if p.name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no component %q in this control plane", name)
}
