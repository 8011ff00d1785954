package request

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/discovery"
)

// KeyNamer names a key of a source as the observation records do
// (observe.Fingerprinter.KeyName): an HMAC of the name, bound to the
// source, keyed with the installation's key.
type KeyNamer func(namespace, kind, source, key string) string

// keyReads are the keys a workload reads of each of its sources.
type keyReads struct {
	m   map[discovery.Dependency]discovery.Keys
	buf []discovery.Keys // holds what of returns, one allocation for all
}

// keysRead is which keys of each of its n sources the workload's pod
// template reads; nil without a KeyNamer, which could not use them.
func (b *Batch) keysRead(target client.Object, n int) *keyReads {
	if b.KeyNames == nil {
		return nil
	}
	if t, ok := discovery.PodTemplate(target); ok {
		return &keyReads{m: discovery.KeysRead(&t.Spec), buf: make([]discovery.Keys, 0, n)}
	}
	return nil
}

// of returns the keys read of dep; nil (every key counts) when unknown.
func (r *keyReads) of(dep discovery.Dependency) *discovery.Keys {
	if r == nil {
		return nil
	}
	k, ok := r.m[dep]
	if !ok || len(r.buf) == cap(r.buf) {
		return nil
	}
	r.buf = append(r.buf, k) // within capacity: earlier pointers stay valid
	return &r.buf[len(r.buf)-1]
}
