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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotificationPolicySpec says which KickRequest phase changes (and, when
// asked, gate changes) in the namespace are sent to a webhook, and how.
// +kubebuilder:validation:XValidation:rule="!has(self.gateChanges) || !self.gateChanges || !has(self.webhook.format) || self.webhook.format != 'pagerduty'",message="gateChanges cannot be used with format pagerduty, which only reports failures and their recovery"
// +kubebuilder:validation:XValidation:rule="!has(self.rollUp) || !has(self.rollUp.mode) || self.rollUp.mode != 'Only' || !has(self.gateChanges) || !self.gateChanges",message="rollUp.mode Only sends nothing but the summaries; set rollUp.mode to Also to receive gateChanges too"
type NotificationPolicySpec struct {
	// Suspend stops deliveries without deleting the policy. Events that
	// happen while suspended are not sent later.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// Phases are the KickRequest phases that trigger a delivery. The default
	// is the terminal phases: Succeeded, Failed, NoLongerRequired, DryRun.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:default={"Succeeded","Failed","NoLongerRequired","DryRun"}
	Phases []KickRequestPhase `json:"phases,omitempty"`

	// GateChanges also delivers every change of an open request's gate
	// decision: which gate holds the restart back and why, the object that
	// caused it and when it may open, or that the restart may run now. Such
	// changes happen within a waiting phase too, so they can be frequent.
	// Not available with the pagerduty format.
	// +optional
	// +kubebuilder:default=false
	GateChanges bool `json:"gateChanges,omitempty"`

	// WorkloadSelector limits deliveries (phase and gate changes) to
	// requests whose target workload carries matching labels. Omit it to
	// cover every request in the namespace.
	// +optional
	WorkloadSelector *metav1.LabelSelector `json:"workloadSelector,omitempty"`

	// RollUp also sends one summary per change of a Secret or ConfigMap
	// that restarted several workloads (Alertmanager-style grouping): how
	// many workloads the change restarted, how many succeeded, failed, are
	// held or still open, and how long it took. Omit it to send only the
	// per-request notifications.
	// +optional
	RollUp *RollUpSpec `json:"rollUp,omitempty"`

	// Webhook is the HTTP endpoint that receives the notifications. Every
	// Secret it references must carry the label
	// notifications.kick.corewire.io/allow: "true", or nothing is sent.
	// +required
	Webhook WebhookSpec `json:"webhook"`
}

// RollUpMode says whether the summaries come besides the per-request
// notifications or instead of them.
// +kubebuilder:validation:Enum=Also;Only
type RollUpMode string

const (
	// RollUpAlso sends the summaries besides the per-request notifications.
	RollUpAlso RollUpMode = "Also"
	// RollUpOnly sends the summaries instead of the per-request phase
	// changes (spec.phases is then ignored).
	RollUpOnly RollUpMode = "Only"
)

// DefaultRollUpMaxWait is how long a summary waits for the last restart of
// a change when spec.rollUp.maxWait is not set.
const DefaultRollUpMaxWait = 15 * time.Minute

// RollUpSpec asks for one summary per change of a source (Alertmanager-style
// grouping). The summary covers the KickRequests of the policy's namespace
// whose target matches spec.workloadSelector and that restart, or wait to
// restart, for that change, and the consumers of the source it matches that
// KICK has still to restart and has written no request for yet.
type RollUpSpec struct {
	// Mode is Also (default: summaries besides the per-request
	// notifications) or Only (summaries instead of the per-request phase
	// changes).
	// +optional
	// +kubebuilder:default=Also
	Mode RollUpMode `json:"mode,omitempty"`

	// MaxWait bounds how long after the change the summary waits for every
	// restart of the change to finish: when it passes, the summary is sent
	// with the restarts still open or held counted as such. From 1m to 24h;
	// default 15m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="rollUp.maxWait must be a duration from 1m to 24h, e.g. 15m"
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// RollUpWait is spec.rollUp.maxWait, or DefaultRollUpMaxWait when unset.
func (r *RollUpSpec) RollUpWait() time.Duration {
	if r == nil || r.MaxWait == nil || r.MaxWait.Duration <= 0 {
		return DefaultRollUpMaxWait
	}
	return r.MaxWait.Duration
}

// RollUpStatus records which fan-outs a policy has summarized. Every change
// at or after Since gets a summary unless Sent lists it. The manager moves
// Since forward only past changes it has summarized or that are older than
// any fan-out it can still see (10 minutes back at least), and writes a
// summary into Sent right after sending it: a crash between the two sends it
// again, with the same id.
type RollUpStatus struct {
	// Since is the time from which changes are summarized: changes before it
	// happened before the policy asked for summaries, or were summarized and
	// forgotten.
	Since NanoTime `json:"since"`

	// Sent lists the changes at or after Since whose summary was sent (or
	// given up after its retries), oldest first. Written as null when empty,
	// so a merge patch clears it.
	// +optional
	// +nullable
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Sent []SourceChange `json:"sent"`
}

// WebhookMethod is the HTTP method used for deliveries.
// +kubebuilder:validation:Enum=POST;PUT
type WebhookMethod string

const (
	MethodPOST WebhookMethod = "POST"
	MethodPUT  WebhookMethod = "PUT"
)

// PayloadFormat selects the body KICK sends.
// +kubebuilder:validation:Enum=json;cloudevents;slack;pagerduty
type PayloadFormat string

const (
	// FormatJSON: KICK's own JSON document.
	FormatJSON PayloadFormat = "json"
	// FormatCloudEvents: a CloudEvents 1.0 event (see webhook.cloudEvents).
	FormatCloudEvents PayloadFormat = "cloudevents"
	// FormatSlack: a Slack incoming-webhook message.
	FormatSlack PayloadFormat = "slack"
	// FormatPagerDuty: a PagerDuty Events API v2 event (see webhook.pagerDuty).
	FormatPagerDuty PayloadFormat = "pagerduty"
)

// Every Secret a NotificationPolicy references must consent to it: the
// manager uses a Secret for notifications only when the Secret carries the
// label NotificationSecretLabel with the value NotificationSecretAllowed.
// Otherwise anybody allowed to create NotificationPolicies in a namespace
// could have the manager send any Secret of that namespace to a URL of
// their choosing. Who may set this label on a Secret (update or patch on
// Secrets) decides which Secrets notifications may carry.
const (
	// NotificationSecretLabel marks a Secret that NotificationPolicies of
	// its namespace may read. Removing it revokes the use.
	NotificationSecretLabel = "notifications.kick.corewire.io/allow"
	// NotificationSecretAllowed is the only value of
	// NotificationSecretLabel that allows the use.
	NotificationSecretAllowed = "true"
)

// WebhookSpec describes the endpoint and how to talk to it. Every Secret it
// references (headers[].valueFrom, auth, tls, pagerDuty.routingKey,
// signing.secretRef) must carry the label
// notifications.kick.corewire.io/allow: "true"; without it the policy is
// not Ready (reason SecretNotAllowed) and sends nothing.
// +kubebuilder:validation:XValidation:rule="!has(self.cloudEvents) || (has(self.format) && self.format == 'cloudevents')",message="cloudEvents can only be set when format is cloudevents"
// +kubebuilder:validation:XValidation:rule="!has(self.pagerDuty) || (has(self.format) && self.format == 'pagerduty')",message="pagerDuty can only be set when format is pagerduty"
// +kubebuilder:validation:XValidation:rule="!has(self.format) || self.format != 'pagerduty' || has(self.pagerDuty)",message="format pagerduty requires pagerDuty.routingKey"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.headers) || !self.headers.exists(h, h.name.matches('(?i)^authorization$'))",message="do not set an Authorization header together with auth"
type WebhookSpec struct {
	// URL of the endpoint, http:// or https://. Prefer https. The URL is
	// stored in plain text: keep credentials out of it and use auth or
	// headers[].valueFrom instead.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#]+') && isURL(self)",message="url must be an absolute http:// or https:// URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z]+://[^/?#]*@')",message="url must not contain user credentials (user:password@); use auth.basic or auth.bearerToken"
	URL string `json:"url"`

	// Method is the HTTP method, POST or PUT.
	// +optional
	// +kubebuilder:default=POST
	Method WebhookMethod `json:"method,omitempty"`

	// TimeoutSeconds bounds one delivery, retries and Retry-After waits
	// included, from 1 to 120 seconds.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// Format of the request body: json (KICK's own document), cloudevents,
	// slack or pagerduty.
	// +optional
	// +kubebuilder:default=json
	Format PayloadFormat `json:"format,omitempty"`

	// CloudEvents tunes the cloudevents format. Only valid with that format.
	// +optional
	CloudEvents *CloudEventsSpec `json:"cloudEvents,omitempty"`

	// PagerDuty configures the pagerduty format, which requires it.
	// +optional
	PagerDuty *PagerDutySpec `json:"pagerDuty,omitempty"`

	// Signing signs every delivery following the Standard Webhooks scheme
	// (webhook-id, webhook-timestamp and webhook-signature headers).
	// +optional
	Signing *WebhookSigning `json:"signing,omitempty"`

	// Headers are extra HTTP headers sent with every delivery.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Headers []WebhookHeader `json:"headers,omitempty"`

	// Auth adds an Authorization header from a Secret.
	// +optional
	Auth *WebhookAuth `json:"auth,omitempty"`

	// TLS configures server verification and client certificates. TLS 1.2 is
	// the minimum; certificate verification cannot be turned off.
	// +optional
	TLS *WebhookTLS `json:"tls,omitempty"`
}

// CloudEventsMode selects the CloudEvents HTTP content mode.
// +kubebuilder:validation:Enum=structured;binary
type CloudEventsMode string

const (
	// CloudEventsStructured: the whole event, attributes included, is the
	// JSON body (application/cloudevents+json).
	CloudEventsStructured CloudEventsMode = "structured"
	// CloudEventsBinary: attributes travel as ce-* headers and the body is
	// the event data.
	CloudEventsBinary CloudEventsMode = "binary"
)

// CloudEventsSpec tunes the cloudevents format.
type CloudEventsSpec struct {
	// Mode is structured (default) or binary.
	// +optional
	// +kubebuilder:default=structured
	Mode CloudEventsMode `json:"mode,omitempty"`
}

// PagerDutySeverity is the severity of a PagerDuty event.
// +kubebuilder:validation:Enum=critical;error;warning;info
type PagerDutySeverity string

const (
	SeverityCritical PagerDutySeverity = "critical"
	SeverityError    PagerDutySeverity = "error"
	SeverityWarning  PagerDutySeverity = "warning"
	SeverityInfo     PagerDutySeverity = "info"
)

// PagerDutySpec configures PagerDuty Events API v2 deliveries.
type PagerDutySpec struct {
	// RoutingKey is the integration key of the PagerDuty service, read from
	// a Secret.
	// +required
	RoutingKey SecretKeyRef `json:"routingKey"`

	// Severity of the events: critical, error (default), warning or info.
	// +optional
	// +kubebuilder:default=error
	Severity PagerDutySeverity `json:"severity,omitempty"`

	// Source overrides the event source; by default it names the workload.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Source string `json:"source,omitempty"`
}

// WebhookSigning configures Standard Webhooks signatures.
type WebhookSigning struct {
	// SecretRef holds the signing secret in Standard Webhooks form
	// ("whsec_" followed by base64).
	// +required
	SecretRef SecretKeyRef `json:"secretRef"`
}

// WebhookHeader is one extra HTTP header, given either literally or from a
// Secret.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="set exactly one of value and valueFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.value) || !self.name.matches('(?i)^(proxy-)?authorization$')",message="an Authorization header carries credentials: use valueFrom or auth instead of a literal value"
type WebhookHeader struct {
	// Name of the header.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern="^[-!#$%&'*+.^_`|~0-9A-Za-z]+$"
	Name string `json:"name"`

	// Value is a literal value. Use valueFrom for anything secret.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value *string `json:"value,omitempty"`

	// ValueFrom reads the value from a Secret key.
	// +optional
	ValueFrom *SecretKeyRef `json:"valueFrom,omitempty"`
}

// WebhookAuth sets the Authorization header from a Secret. Set at most one
// method.
// +kubebuilder:validation:XValidation:rule="!(has(self.bearerToken) && has(self.basic))",message="set at most one of auth.bearerToken and auth.basic"
type WebhookAuth struct {
	// BearerToken sends "Authorization: Bearer <token>".
	// +optional
	BearerToken *SecretKeyRef `json:"bearerToken,omitempty"`

	// Basic sends HTTP basic authentication.
	// +optional
	Basic *BasicAuth `json:"basic,omitempty"`
}

// BasicAuth reads a user name and password from Secrets.
type BasicAuth struct {
	// Username is the Secret key holding the user name.
	// +required
	Username SecretKeyRef `json:"username"`
	// Password is the Secret key holding the password.
	// +required
	Password SecretKeyRef `json:"password"`
}

// WebhookTLS configures TLS towards the endpoint.
type WebhookTLS struct {
	// CABundle is a Secret key holding PEM certificates used, instead of
	// the system roots, to verify the server.
	// +optional
	CABundle *SecretKeyRef `json:"caBundle,omitempty"`

	// ClientCertificate names a Secret of type kubernetes.io/tls whose
	// certificate (tls.crt unless key says otherwise) and tls.key are
	// presented for mutual TLS.
	// +optional
	ClientCertificate *TLSSecretRef `json:"clientCertificate,omitempty"`
}

// TLSSecretRef names a kubernetes.io/tls Secret in the same namespace and,
// optionally, the key of its certificate.
type TLSSecretRef struct {
	// Name of the Secret. It must be of type kubernetes.io/tls, holding
	// tls.crt and tls.key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key is the data key holding the PEM client certificate, followed by
	// any intermediate certificates, that is presented to the server. The
	// default is tls.crt. The private key is always read from tls.key.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// NotificationPolicyStatus is written by the notification dispatcher.
type NotificationPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastDeliveryTime is when a delivery last succeeded.
	// +optional
	LastDeliveryTime *metav1.Time `json:"lastDeliveryTime,omitempty"`

	// LastError describes the last failed delivery; it is cleared by the
	// next success. It never contains header values or credentials.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// Delivered counts successful deliveries.
	// +optional
	Delivered int64 `json:"delivered"`

	// Failed counts deliveries that failed after all retries, and matching
	// events not sent because the policy is invalid or its endpoint answered
	// 410 Gone.
	// +optional
	Failed int64 `json:"failed"`

	// Dropped counts events discarded because the policy's queue was full.
	// +optional
	Dropped int64 `json:"dropped"`

	// RollUpsEvicted counts the changes whose summary was given up because
	// more changes than the manager follows per policy were still open
	// at once (their restarts go on; only the summary is not sent).
	// +optional
	RollUpsEvicted int64 `json:"rollUpsEvicted,omitempty"`

	// RollUp is the record of the fan-out summaries (spec.rollUp), so that
	// each change's summary is sent once across manager restarts and
	// leader changes. Absent without spec.rollUp.
	// +optional
	RollUp *RollUpStatus `json:"rollUp,omitempty"`

	// HandledThrough is the policy's delivery watermark: every matching
	// event with an earlier time has been delivered or given up (failed
	// after its retries, dropped, or not sendable). A new leader re-sends
	// the current transitions of requests from this time on, within
	// its replay window, so a notification pending when a manager died is
	// still delivered, with the same event id.
	// +optional
	HandledThrough *metav1.Time `json:"handledThrough,omitempty"`

	// Conditions describe the policy; Ready is False when it cannot deliver
	// as configured (for example a referenced Secret is missing).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// NotificationPolicy sends a webhook when a KickRequest in its namespace
// reaches one of the selected phases, and, when asked, when a request's gate
// decision changes. Deliveries are best effort: a failed notification never
// affects a restart.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName={notifpol,knp},categories=kick
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.webhook.format`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Delivered",type=integer,JSONPath=`.status.delivered`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NotificationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour.
	// +required
	Spec NotificationPolicySpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status NotificationPolicyStatus `json:"status,omitempty"`
}

// NotificationPolicyList is a list of NotificationPolicy.
// +kubebuilder:object:root=true
type NotificationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NotificationPolicy `json:"items"`
}

func init() {
	register(&NotificationPolicy{}, &NotificationPolicyList{})
}
