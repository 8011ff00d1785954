package policy

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Compiled holds a policy's two selectors in matchable form. It is
// immutable and safe for concurrent use. A nil *Compiled matches nothing.
type Compiled struct {
	workloads    labels.Selector
	dependencies labels.Selector
}

// Field paths of the selectors, as named in error messages.
const (
	workloadSelectorPath   = "spec.discovery.workloadSelector"
	dependencySelectorPath = "spec.discovery.dependencySelector"
)

// Compile converts the policy's workloadSelector and dependencySelector. An
// omitted or empty selector matches every label set. A selector that does
// not convert matches nothing; Compile still returns a usable *Compiled
// together with an error naming the selector's field path (both are joined
// when both are invalid).
func Compile(p *kickv1alpha1.KickPolicy) (*Compiled, error) {
	var ws, ds *metav1.LabelSelector
	if p != nil && p.Spec.Discovery != nil {
		ws, ds = p.Spec.Discovery.WorkloadSelector, p.Spec.Discovery.DependencySelector
	}
	w, werr := convert(workloadSelectorPath, ws)
	d, derr := convert(dependencySelectorPath, ds)
	return &Compiled{workloads: w, dependencies: d}, errors.Join(werr, derr)
}

// convert turns one API selector into a labels.Selector. Unlike
// metav1.LabelSelectorAsSelector, a nil selector means "everything" here.
func convert(path string, s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing(), fmt.Errorf("%s is invalid: %w", path, err)
	}
	return sel, nil
}

// MatchesWorkload reports whether a workload with these labels is in the
// policy's workloadSelector.
func (c *Compiled) MatchesWorkload(workloadLabels map[string]string) bool {
	return c != nil && c.workloads.Matches(labels.Set(workloadLabels))
}

// InScope reports whether a Secret or ConfigMap with these labels is in the
// policy's dependencySelector.
func (c *Compiled) InScope(sourceLabels map[string]string) bool {
	return c != nil && c.dependencies.Matches(labels.Set(sourceLabels))
}

// compiledCacheLimit bounds the cache; when it is full the cache starts
// over, which costs one recompile per live policy.
const compiledCacheLimit = 4096

type compiledEntry struct {
	generation int64
	compiled   *Compiled
	err        error
}

// compiledCache memoises Compile per policy UID and generation. The spec of
// a stored object cannot change without its generation changing, so an entry
// never goes stale; entries of deleted policies are dropped when the cache
// starts over.
type compiledCache struct {
	mu      sync.RWMutex
	entries map[types.UID]compiledEntry
}

var cache = &compiledCache{entries: map[types.UID]compiledEntry{}}

// compiled returns Compile(p), from the cache when p came from the API
// server (it has a UID and a generation). Objects built in memory are
// compiled every time, since their spec may change under the same key.
func compiled(p *kickv1alpha1.KickPolicy) (*Compiled, error) {
	if p.UID == "" || p.Generation == 0 {
		return Compile(p)
	}
	cache.mu.RLock()
	e, ok := cache.entries[p.UID]
	cache.mu.RUnlock()
	if ok && e.generation == p.Generation {
		return e.compiled, e.err
	}
	c, err := Compile(p)
	cache.mu.Lock()
	if len(cache.entries) >= compiledCacheLimit {
		clear(cache.entries)
	}
	cache.entries[p.UID] = compiledEntry{generation: p.Generation, compiled: c, err: err}
	cache.mu.Unlock()
	return c, err
}
