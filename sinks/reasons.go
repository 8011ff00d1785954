package sinks

import kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"

// Reasons of a NotificationPolicy's Ready condition, besides the shared
// kickv1alpha1.ReasonValid, ReasonSuspended, ReasonSecretNotFound and ReasonSecretKeyNotFound.
const (
	// ReasonInvalidURL: spec.webhook.url is not an absolute http(s) URL with a host.
	ReasonInvalidURL = "InvalidURL"
	// ReasonInvalidSelector: spec.workloadSelector does not convert to a label selector.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonSecretNotAllowed: a referenced Secret exists but does not carry the label
	// kickv1alpha1.NotificationSecretLabel=kickv1alpha1.NotificationSecretAllowed, so it is not
	// read and nothing is sent. Removing the label from a Secret in use revokes it the same way.
	ReasonSecretNotAllowed = "SecretNotAllowed"
	// ReasonInvalidSecret: a referenced Secret value is unusable (not PEM, not a key pair, not a
	// signing secret, not a valid header value, empty).
	ReasonInvalidSecret = "InvalidSecret"
	// ReasonInvalidSpec: the webhook settings cannot be used (for example an unknown format).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonDestinationRefused: the endpoint's address is in a denied range or outside the
	// allowed ones.
	ReasonDestinationRefused = "DestinationRefused"
	// ReasonGone: the endpoint answered 410 Gone; nothing is sent until the spec changes.
	ReasonGone = "Gone"
)

// Reused shared reasons, named here for readers of this package.
const (
	reasonValid          = kickv1alpha1.ReasonValid
	reasonSuspended      = kickv1alpha1.ReasonSuspended
	reasonSecretNotFound = kickv1alpha1.ReasonSecretNotFound
	reasonKeyNotFound    = kickv1alpha1.ReasonSecretKeyNotFound
)

// goneMessage is the Ready message after a 410 answer.
const goneMessage = "the endpoint answered 410 Gone; delivery stopped until the spec changes"

// problem is why a policy cannot deliver as written: a Ready reason and a message a person can
// act on. Messages never contain Secret values.
type problem struct {
	reason  string
	message string
}
