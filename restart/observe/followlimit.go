package observe

import (
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The followed set of a source kind is bounded twice: per namespace, so one tenant reaching
// its bound changes nothing for the others, and in all, as a last resort. A source refused
// is not cached and not observed: its events become bookmarks and Fetch reports
// errFollowLimit. The namespace is logged when it first reaches its bound, and
// kick_observe_follow_refusals_total counts the refusals.
const (
	// DefaultMaxFollowedPerNamespace bounds the followed sources of one kind in one namespace.
	DefaultMaxFollowedPerNamespace = 10_000
	// DefaultMaxFollowed bounds the followed sources of one kind in all.
	DefaultMaxFollowed = 500_000
)

// errFollowLimit reports that a source was not followed: its namespace (or the cluster)
// already has as many followed sources as SourceCache allows.
var errFollowLimit = errors.New("observe: too many followed sources in this namespace")

// SetFollowLimits sets the bounds of the followed set, per namespace and in all, per source
// kind (values <= 0 keep the defaults). Call it before the manager starts.
func (c *SourceCache) SetFollowLimits(perNamespace, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perNamespace, c.total = perNamespace, total
}

func (c *SourceCache) limitsLocked() (perNamespace, total int) {
	perNamespace, total = c.perNamespace, c.total
	if perNamespace <= 0 {
		perNamespace = DefaultMaxFollowedPerNamespace
	}
	if total <= 0 {
		total = DefaultMaxFollowed
	}
	return perNamespace, total
}

// followLocked marks a source followed unless that would pass a bound. It returns false for a
// refusal; first is true for the first refusal in the namespace since it was last under its
// bound (log it).
func (c *SourceCache) followLocked(f *sourceFeed, key types.NamespacedName) (ok, first bool) {
	if _, already := f.followed[key]; already {
		return true, false
	}
	perNamespace, total := c.limitsLocked()
	if f.perNamespace[key.Namespace] >= perNamespace || len(f.followed) >= total {
		f.refusals++
		if f.capped[key.Namespace] {
			return false, false
		}
		f.capped[key.Namespace] = true
		return false, true
	}
	f.followed[key] = struct{}{}
	f.perNamespace[key.Namespace]++
	return true, false
}

// unfollowLocked drops a source's followed mark.
func (c *SourceCache) unfollowLocked(f *sourceFeed, key types.NamespacedName) {
	if _, ok := f.followed[key]; !ok {
		return
	}
	delete(f.followed, key)
	if n := f.perNamespace[key.Namespace] - 1; n > 0 {
		f.perNamespace[key.Namespace] = n
	} else {
		delete(f.perNamespace, key.Namespace)
	}
	delete(f.capped, key.Namespace)
}

// logRefused logs the first refusal of a namespace: it names the namespace and the bound, not
// the source.
func (c *SourceCache) logRefused(kind string, key types.NamespacedName) {
	c.mu.Lock()
	perNamespace, total := c.limitsLocked()
	c.mu.Unlock()
	log.Log.WithName("source-cache").Info("too many followed sources: further ones in this namespace are not observed until some go",
		"namespace", key.Namespace, "kind", kind, "maxPerNamespace", perNamespace, "maxTotal", total)
}

// followStats returns, by kind, how many sources are followed and how many were refused.
func (c *SourceCache) followStats() (followed, refused map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	followed, refused = make(map[string]int, len(c.feeds)), make(map[string]int, len(c.feeds))
	for kind, f := range c.feeds {
		followed[kind], refused[kind] = len(f.followed), f.refusals
	}
	return followed, refused
}
