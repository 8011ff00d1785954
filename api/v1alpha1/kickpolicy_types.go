/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KickPolicySpec decides which workloads KICK manages in its namespace, which
// of their dependencies may trigger a restart, and when a restart may run.
type KickPolicySpec struct {
	// Discovery narrows the workloads and dependencies the policy covers.
	// Leaving it out covers every supported workload and every dependency
	// they consume.
	// +optional
	Discovery *DiscoverySpec `json:"discovery,omitempty"`

	// Schedule holds KICK's own cron windows. Leaving it out allows restarts
	// at any time (subject to the GitOps gate).
	// +optional
	Schedule *ScheduleSpec `json:"schedule,omitempty"`

	// GitOps chooses the GitOps tool whose ownership and sync state must
	// allow a restart. Leaving it out means provider None: no GitOps gate.
	// +optional
	// +kubebuilder:default={}
	GitOps *GitOpsSpec `json:"gitOps,omitempty"`

	// Restart tunes how often a workload may be restarted.
	// +optional
	// +kubebuilder:default={}
	Restart *RestartSpec `json:"restart,omitempty"`

	// Suspend stops the policy from starting restarts without deleting it.
	// Requests that are waiting stay open and continue once it is unset.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// DryRun evaluates gates and freshness as usual but never patches a
	// workload: the KickRequest ends in phase DryRun, with the decision in
	// its conditions.
	// +optional
	// +kubebuilder:default=false
	DryRun bool `json:"dryRun,omitempty"`
}

// DiscoverySpec scopes a policy with two label selectors. An omitted or empty
// selector matches everything on its side.
type DiscoverySpec struct {
	// WorkloadSelector picks the workloads (Deployments, StatefulSets,
	// DaemonSets, Rollouts) this policy may restart, by their labels.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="matchExpressions with operator In or NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="matchExpressions with operator Exists or DoesNotExist take no values"
	WorkloadSelector *metav1.LabelSelector `json:"workloadSelector,omitempty"`

	// DependencySelector picks, by their labels, the consumed Secrets and
	// ConfigMaps whose changes count. Dependencies outside it are ignored,
	// both as triggers and in the freshness check.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="matchExpressions with operator In or NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="matchExpressions with operator Exists or DoesNotExist take no values"
	DependencySelector *metav1.LabelSelector `json:"dependencySelector,omitempty"`
}

// ScheduleSpec is KICK's native time gate. It needs no GitOps tool.
type ScheduleSpec struct {
	// Windows are cron-started time ranges. A restart may run when the
	// current time lies in no Deny window and, if any Allow window is
	// defined, in at least one Allow window; Deny wins over Allow. With only
	// Deny windows, restarts may run at any time outside them. An empty list
	// places no limit.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Windows []ScheduleWindow `json:"windows,omitempty"`
}

// WindowType says whether a window permits or forbids restarts.
// +kubebuilder:validation:Enum=Allow;Deny
type WindowType string

const (
	// WindowAllow permits restarts while the window is open.
	WindowAllow WindowType = "Allow"
	// WindowDeny forbids restarts while the window is open.
	WindowDeny WindowType = "Deny"
)

// ScheduleWindow is a time range that opens at every cron match and stays
// open for Duration.
type ScheduleWindow struct {
	// Type is Allow or Deny.
	// +required
	Type WindowType `json:"type"`

	// Cron is a standard five-field cron expression (minute, hour,
	// day-of-month, month, day-of-week) giving the moments the window opens,
	// for example "0 2 * * *" for 02:00 every day. Descriptors such as
	// "@daily" and a seconds field are not accepted.
	// +required
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$')",message="cron must have exactly 5 fields (minute hour day-of-month month day-of-week), e.g. \"0 2 * * *\""
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$') || self.matches(r'^\\s*(\\*|\\?|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]?)?(,(\\*|\\?|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]?)?)*\\s+\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s*$')",message="cron minute field must list values 0-59 as a, a-b, *, ? with an optional /step, separated by commas"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$') || self.matches(r'^\\s*\\S+\\s+(\\*|\\?|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]?)?(,(\\*|\\?|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]?)?)*\\s+\\S+\\s+\\S+\\s+\\S+\\s*$')",message="cron hour field must list values 0-23 as a, a-b, *, ? with an optional /step, separated by commas"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$') || self.matches(r'^\\s*\\S+\\s+\\S+\\s+(\\*|\\?|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]?)?(,(\\*|\\?|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]?)?)*\\s+\\S+\\s+\\S+\\s*$')",message="cron day-of-month field must list values 1-31 as a, a-b, *, ? with an optional /step, separated by commas"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$') || self.matches(r'^\\s*\\S+\\s+\\S+\\s+\\S+\\s+(\\*|\\?|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]?)?(,(\\*|\\?|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]?)?)*\\s+\\S+\\s*$')",message="cron month field must list values 1-12 or jan-dec as a, a-b, *, ? with an optional /step, separated by commas"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'^\\s*\\S+(\\s+\\S+){4}\\s*$') || self.matches(r'^\\s*\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s+(\\*|\\?|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]?)?(,(\\*|\\?|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]?)?)*\\s*$')",message="cron day-of-week field must list values 0-6 or sun-sat as a, a-b, *, ? with an optional /step, separated by commas"
	Cron string `json:"cron"`

	// Duration is how long the window stays open after each start, as a
	// positive Go duration such as "30m" or "1h30m".
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="duration must be a positive Go duration such as \"30m\" or \"1h30m\" (units ns, us, ms, s, m, h)"
	Duration string `json:"duration"`

	// TimeZone is the IANA time zone the cron expression is read in, for
	// example "Europe/Berlin". An unknown zone marks the policy Ready=False.
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`
}

// GitOpsProvider names the GitOps tool that gates restarts.
type GitOpsProvider string

const (
	// ProviderNone: no GitOps gate; only the native schedule applies.
	ProviderNone GitOpsProvider = "None"
	// ProviderAuto: detect the owning tool (Argo CD or Flux) per workload.
	ProviderAuto GitOpsProvider = "Auto"
	// ProviderArgoCD: the owning Argo CD Application must allow the restart.
	ProviderArgoCD GitOpsProvider = "ArgoCD"
	// ProviderFlux: the owning Flux Kustomization or HelmRelease must allow it.
	ProviderFlux GitOpsProvider = "Flux"
	// ProviderKargo: no Kargo promotion may be running for the authorised
	// Stage, then the Argo CD gate applies.
	ProviderKargo GitOpsProvider = "Kargo"
)

// GitOpsSpec configures the GitOps gate.
type GitOpsSpec struct {
	// Provider selects the GitOps tool: None (no gate), Auto (detect Argo CD
	// or Flux per workload), ArgoCD, Flux, or Kargo. Kargo is never detected
	// automatically and must be named here.
	// +optional
	// +kubebuilder:default=None
	// +kubebuilder:validation:Enum=None;Auto;ArgoCD;Flux;Kargo
	Provider GitOpsProvider `json:"provider,omitempty"`

	// RequireReconciled makes KICK wait until the owning GitOps object has
	// applied its desired state (Argo CD: Synced with no sync running; Flux:
	// Ready) before restarting. Ignored with provider None.
	// +optional
	// +kubebuilder:default=true
	RequireReconciled *bool `json:"requireReconciled,omitempty"`
}

// RestartSpec limits restart frequency.
type RestartSpec struct {
	// MinInterval is the least time between two restarts of the same
	// workload, as a Go duration such as "30s" or "5m". A change that arrives
	// sooner is held and applied once the interval has passed.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+)$')",message="minInterval must be a non-negative Go duration such as \"30s\" or \"5m\" (units ns, us, ms, s, m, h)"
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`

	// Settle waits until a workload's sources have been quiet for this long
	// before acting on their changes, as a Go duration such as "10s": a tool
	// that rewrites three Secrets over a few seconds then causes one restart,
	// not three. The wait is kept in the KickRequest (phase WaitingForGate,
	// reason Settling), so it survives a manager restart. Omitted or "0s":
	// act at once.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+)$')",message="settle must be a non-negative Go duration such as \"10s\" (units ns, us, ms, s, m, h)"
	Settle *metav1.Duration `json:"settle,omitempty"`

	// MaxConcurrent caps how many of this policy's workloads may have a
	// KICK restart in progress at once: issued, and its rollout not yet
	// complete (nor past the manager's --rollout-timeout). An integer such
	// as 5, or a percentage of the workloads the policy matches, such as
	// "10%" (rounded up, at least 1). The rest wait in phase WaitingForGate
	// with reason RestartBudget and start as slots free up, oldest change
	// first. Omitted: no cap (the manager's --max-concurrent-restarts still
	// applies across the cluster).
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrent must be an integer of at least 1 or a percentage from 1% to 100%, such as 5 or \"10%\""
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`

	// Keys says which changes of a Secret or ConfigMap count for a
	// workload. Read (the default): only changes of the keys its pod
	// template reads (a secretKeyRef or configMapKeyRef, a volume's items,
	// the key a subPath names); envFrom and volumes mounted whole read every
	// key, and for them an added or removed key counts too. All: every
	// change of the object counts, whichever keys the workload reads, for
	// applications that reach their data in ways the pod template does not
	// show.
	// +optional
	// +kubebuilder:default=Read
	Keys KeyPolicy `json:"keys,omitempty"`

	// Waves order the restarts that one change of a source causes among
	// this policy's workloads. The workloads of the first wave restart
	// first; those of the next wave only once every workload of the waves
	// before it that consumes the changed source runs the change, has
	// completed its rollout and has stayed available for that wave's bake.
	// A workload belongs to the first wave whose selector matches its
	// labels; workloads no wave matches go last. maxConcurrent still
	// applies within each wave. Waiting restarts show phase WaitingForGate
	// with reason EarlierWave. Omitted: every consumer may restart at once.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Waves []RestartWave `json:"waves,omitempty"`
}

// KeyPolicy says which changes of a source count for a workload.
// +kubebuilder:validation:Enum=Read;All
type KeyPolicy string

const (
	// KeysRead counts the changes of the keys the workload reads.
	KeysRead KeyPolicy = "Read"
	// KeysAll counts every change of the source.
	KeysAll KeyPolicy = "All"
)

// RestartWave is one step of an ordered fan-out.
type RestartWave struct {
	// Name names the wave in status messages, Events and notifications,
	// such as "canary".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Selector picks the wave's workloads by their labels, among the
	// workloads the policy selects. An empty selector matches every
	// workload not taken by an earlier wave.
	Selector metav1.LabelSelector `json:"selector"`

	// Bake is how long every workload of this wave must stay rolled out
	// and available before the next wave starts, as a Go duration such as
	// "2m". Omitted or "0s": the next wave starts as soon as this one has
	// rolled out.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+)$')",message="bake must be a non-negative Go duration such as \"2m\" (units ns, us, ms, s, m, h)"
	Bake *metav1.Duration `json:"bake,omitempty"`
}

// KickPolicyStatus is written by the policy controller.
type KickPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// MatchedWorkloads counts the workloads this policy alone selects.
	// +optional
	MatchedWorkloads int32 `json:"matchedWorkloads"`

	// BlockedWorkloads counts the selected workloads whose restart is
	// currently held back by a gate: their open KickRequest waits for a
	// window, minInterval, settle, the GitOps owner or a resumed policy.
	// While it stays above zero it is refreshed at most every 5 seconds.
	// +optional
	BlockedWorkloads int32 `json:"blockedWorkloads"`

	// AmbiguousWorkloads counts the workloads this policy selects together
	// with another policy of the namespace; KICK restarts none of them until
	// exactly one policy selects each.
	// +optional
	AmbiguousWorkloads int32 `json:"ambiguousWorkloads"`

	// Conditions describe the policy; Ready is False when the policy cannot
	// be applied as written (for example an unknown time zone).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// KickPolicy tells KICK which workloads in its namespace to restart when a
// Secret or ConfigMap they consume changes, and which gates a restart must
// pass.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=kpol,categories=kick
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.gitOps.provider`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedWorkloads`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blockedWorkloads`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KickPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour.
	// +optional
	// +kubebuilder:default={}
	Spec KickPolicySpec `json:"spec,omitempty"`

	// Status is the observed state.
	// +optional
	Status KickPolicyStatus `json:"status,omitempty"`
}

// KickPolicyList is a list of KickPolicy.
// +kubebuilder:object:root=true
type KickPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KickPolicy `json:"items"`
}

func init() {
	register(&KickPolicy{}, &KickPolicyList{})
}
