package assess

import (
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

// Facts are what an assessment reads. Reads that failed are kept as errors:
// they make parts of the answer unknown instead of failing the whole.
type Facts struct {
	// Now is the moment of the assessment, on the caller's clock.
	Now time.Time
	// Target is the workload.
	Target Target
	// Policies are the KickPolicies of the workload's namespace.
	Policies []kickv1alpha1.KickPolicy
	// Dependencies are the Secrets, ConfigMaps and other sources the pod
	// template consumes, with what was read about each.
	Dependencies []Dependency
	// Rollout is σ and completeness; RolloutErr is set when it could not be
	// read.
	Rollout    freshness.Rollout
	RolloutErr error
	// Request is the KickRequest whose change annotation counts toward Λ
	// (the one being reconciled, or CurrentRequest of the target's
	// requests); nil when there is none.
	Request *kickv1alpha1.KickRequest
	// Handed is a change the caller knows of that the records may not show
	// yet (the router event that woke the caller); zero when none.
	Handed freshness.Change
	// KeyNames names a key of a source as the records do (an HMAC of the
	// name, bound to the source); nil when the caller cannot compute it (it
	// lacks the installation's key), which counts every key.
	KeyNames func(namespace, kind, source, key string) string
	// HandedUnread is a handed change of keys the workload does not read:
	// it counts only where the policy counts every key (restart.keys All).
	HandedUnread freshness.Change
	// GitOps is the GitOps provider's decision; nil when it was not asked
	// (the gate then reports the GitOps stage as unknown).
	GitOps *gitops.Decision
	// Budget is the restart budget's answer (restart.maxConcurrent,
	// --max-concurrent-restarts); nil when no cap applies. Only the
	// manager's request reconciler takes slots: it asks right before a
	// restart every other stage allows.
	Budget *Budget
	// Halts are the failed restarts of the namespace that halt the rest of
	// their fan-out (requests in phase Failed naming the source whose
	// change they answered, not released).
	Halts []Halt
	// Holds are the KickHolds of the workload's namespace (kubectl kick
	// hold): a person's freeze of the namespace, a workload or a source.
	Holds []Hold
	// Waves are the earlier waves' consumers of the workload's sources,
	// when its policy orders restarts in waves and the workload is not in
	// the first; nil when they were not read (the wave stage is then
	// unknown for such a workload).
	Waves *Waves
}

// Halt is a restart that failed its rollout: the change of Source at
// Change broke Workload, and the other restarts that would bring that
// same change are held.
type Halt struct {
	// Source is "Kind/name" of the Secret or ConfigMap.
	Source string
	// Change is the change the failed restart answered.
	Change time.Time
	// Workload names the workload whose rollout failed ("Deployment api").
	Workload string
	// Failed is the workload whose rollout failed.
	Failed kickv1alpha1.GateCause
	// Request is the failed KickRequest's name; Reason why it failed.
	Request string
	Reason  string
}

// Budget is the restart budget's answer for the workload.
type Budget struct {
	// Open is set when the restart may take a slot now.
	Open bool
	// Message says how many restarts are in progress and how many wait.
	Message string
}

// Target identifies the workload.
type Target struct {
	Kind      kickv1alpha1.TargetKind
	Namespace string
	Name      string
	Labels    map[string]string
	// RestartedAt is the restart stamp on the pod template (KICK's or
	// kubectl rollout restart's); zero when there is none. restart.minInterval
	// counts from it.
	RestartedAt time.Time
}

// String is "Kind namespace/name".
func (t Target) String() string { return string(t.Kind) + " " + t.Namespace + "/" + t.Name }

// Dependency is one source the pod template consumes.
type Dependency struct {
	// Kind is Secret, ConfigMap or SecretProviderClass (others are listed
	// but not counted).
	Kind string
	Name string
	// Fields says where the pod template uses it (for people; optional).
	Fields []string
	// Counted is set when the freshness check reads a record for this
	// dependency: Secrets and ConfigMaps always, SecretProviderClasses when
	// the manager's CSI integration runs.
	Counted bool
	// Labels are the source's labels, for the policy's dependencySelector.
	Labels map[string]string
	// Missing is set when the source does not exist.
	Missing bool
	// SourceErr is set when the source's labels could not be read.
	SourceErr error
	// Record is the observation record's spec; nil when there is none.
	Record *kickv1alpha1.SourceObservationSpec
	// Reads are the keys of a Secret or ConfigMap the pod template reads
	// (discovery.KeysRead); nil when unknown, which counts every key.
	Reads *discovery.Keys
	// RecordErr is set when the record could not be read.
	RecordErr error
}

// HaltsOf returns the halts among a namespace's requests.
func HaltsOf(requests []kickv1alpha1.KickRequest) []Halt {
	var out []Halt
	for i := range requests {
		kr := &requests[i]
		if !kr.HaltsFanOut() {
			continue
		}
		h := Halt{Source: kr.Status.RestartedFor.String(), Change: kr.Status.RestartedFor.ChangedAt.Time,
			Workload: string(kr.Spec.TargetRef.Kind) + " " + kr.Namespace + "/" + kr.Spec.TargetRef.Name, Request: kr.Name,
			Failed: kickv1alpha1.GateCause{APIVersion: targetAPIVersion(kr.Spec.TargetRef),
				Kind: string(kr.Spec.TargetRef.Kind), Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name}}
		for _, c := range kr.Status.Conditions {
			if c.Type == kickv1alpha1.ConditionCompleted {
				h.Reason = c.Reason
			}
		}
		out = append(out, h)
	}
	return out
}

// targetAPIVersion is the API version of a target, apps/v1 when unset.
func targetAPIVersion(t kickv1alpha1.TargetRef) string {
	if t.APIVersion == "" {
		return kickv1alpha1.DefaultTargetAPIVersion
	}
	return t.APIVersion
}
