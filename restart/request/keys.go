package request

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
)

// KeyNamer names a key of a source as the observation records do
// (observe.Fingerprinter.KeyName): an HMAC of the name, bound to the
// source, keyed with the installation's key.
type KeyNamer func(namespace, kind, source, key string) string

// keysRead is which keys of each source the workload's pod template reads.
func keysRead(target client.Object) map[string]discovery.Keys {
	if t, ok := discovery.PodTemplate(target); ok {
		return discovery.KeysRead(&t.Spec)
	}
	return nil
}

// keys tells the assessment which keys of dep the workload reads, and how
// the record names them; without a KeyNamer every key counts.
func (b *Batch) keys(reads map[string]discovery.Keys, namespace string, dep discovery.Dependency, d *assess.Dependency) {
	k, ok := reads[dep.IndexKey()]
	if !ok || b.KeyNames == nil {
		return
	}
	d.Reads = &k
	names, kind, name := b.KeyNames, dep.Kind, dep.Name
	d.KeyName = func(key string) string { return names(namespace, kind, name, key) }
}
