package format

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/kick-operator/kick/router"
)

// SummaryEventName is the value of the "event" field of every SummaryPayload.
const SummaryEventName = "FanOutSummary"

// CloudEventSummaryType is the CloudEvents type of a fan-out summary.
const CloudEventSummaryType = "io.corewire.kick.fanout.summary.v1"

// Summary is one roll-up of a fan-out: what became of the restarts one change of a Secret or
// ConfigMap caused among the workloads a NotificationPolicy covers. It names the source and
// counts requests; it never carries the source's data, key names or fingerprints.
type Summary struct {
	// Policy is the UID of the NotificationPolicy the summary is for: its id differs per policy,
	// since each policy's selector gives its own counts.
	Policy     string
	Namespace  string
	SourceKind string // Secret or ConfigMap
	SourceName string
	ChangedAt  time.Time // the change's time at full precision
	Workloads  int
	Succeeded  int
	Failed     int
	Held       int // held by a halt or a person
	Waiting    int // waiting for another gate
	InProgress int // restarted, rollout not complete
	Waves      int // 0 without waves
	// LastCompletion is the newest completion among the finished requests; zero when none.
	LastCompletion time.Time
	// Time is the summary's own time: the last completion when every request finished, else
	// the change's time plus the policy's maxWait.
	Time time.Time
}

// Open counts the requests that have not finished.
func (s Summary) Open() int { return s.Held + s.Waiting + s.InProgress }

// Finished reports whether every request of the fan-out finished.
func (s Summary) Finished() bool { return s.Open() == 0 }

// ID is the summary's delivery id (32 hex characters): derived from the policy's UID, the source
// and the change's time, so it is the same on every retry and after a manager restart, and one
// per change and policy.
func (s Summary) ID() string {
	return router.TransitionID(s.Policy+"/"+s.Namespace+"/"+s.SourceKind+"/"+s.SourceName, "fanout/summary", s.ChangedAt)
}

// Source is "Kind namespace/name".
func (s Summary) Source() string { return s.SourceKind + " " + s.Namespace + "/" + s.SourceName }

// Duration is the time from the change to the last completion; 0 without one.
func (s Summary) Duration() time.Duration {
	if s.LastCompletion.IsZero() || s.LastCompletion.Before(s.ChangedAt) {
		return 0
	}
	return s.LastCompletion.Sub(s.ChangedAt).Round(time.Second)
}

// Text is the summary in one sentence, e.g. "Secret web/web-tls changed: 212 workloads, 3 waves,
// finished in 4m12s, 1 failed, 0 held".
func (s Summary) Text() string {
	parts := []string{plural(s.Workloads, "workload")}
	if s.Waves > 0 {
		parts = append(parts, plural(s.Waves, "wave"))
	}
	if s.Finished() {
		parts = append(parts, "finished in "+s.Duration().String())
	}
	parts = append(parts, fmt.Sprintf("%d failed", s.Failed), fmt.Sprintf("%d held", s.Held))
	if !s.Finished() {
		open := fmt.Sprintf("%d still open after %s", s.Open(), s.Time.Sub(s.ChangedAt).Round(time.Second))
		if s.Waiting > 0 || s.InProgress > 0 {
			open += fmt.Sprintf(" (%d rolling out, %d waiting)", s.InProgress, s.Waiting)
		}
		parts = append(parts, open)
	}
	return s.Source() + " changed: " + strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// SummaryPayload is KICK's JSON document for a fan-out summary: the json body and the
// CloudEvents data. Every key is always present except waves (omitted without waves);
// completedAt and durationSeconds are null while no request finished.
type SummaryPayload struct {
	Event      string        `json:"event"` // SummaryEventName
	Namespace  string        `json:"namespace"`
	Source     SourcePayload `json:"source"`
	ChangedAt  string        `json:"changedAt"` // RFC 3339, UTC, with the change's fraction of a second
	Finished   bool          `json:"finished"`  // every request finished
	Workloads  int           `json:"workloads"`
	Succeeded  int           `json:"succeeded"`
	Failed     int           `json:"failed"`
	Held       int           `json:"held"`
	Waiting    int           `json:"waiting"`
	InProgress int           `json:"inProgress"`
	Open       int           `json:"open"` // held + waiting + inProgress
	Waves      int           `json:"waves,omitempty"`
	// CompletedAt is the last completion (RFC 3339, UTC); DurationSeconds the whole seconds
	// from the change to it.
	CompletedAt     *string `json:"completedAt"`
	DurationSeconds *int64  `json:"durationSeconds"`
	Message         string  `json:"message"`
	OccurredAt      string  `json:"occurredAt"` // the summary's time, RFC 3339, UTC, whole seconds
}

// SourcePayload names the Secret or ConfigMap of a summary.
type SourcePayload struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// NewSummaryPayload builds the JSON document of a summary.
func NewSummaryPayload(s Summary) SummaryPayload {
	p := SummaryPayload{
		Event:      SummaryEventName,
		Namespace:  s.Namespace,
		Source:     SourcePayload{Kind: s.SourceKind, Name: s.SourceName},
		ChangedAt:  s.ChangedAt.UTC().Format(time.RFC3339Nano),
		Finished:   s.Finished(),
		Workloads:  s.Workloads,
		Succeeded:  s.Succeeded,
		Failed:     s.Failed,
		Held:       s.Held,
		Waiting:    s.Waiting,
		InProgress: s.InProgress,
		Open:       s.Open(),
		Waves:      s.Waves,
		Message:    s.Text() + ".",
		OccurredAt: s.Time.UTC().Format(time.RFC3339),
	}
	if !s.LastCompletion.IsZero() {
		at := s.LastCompletion.UTC().Format(time.RFC3339)
		secs := int64(s.Duration() / time.Second)
		p.CompletedAt, p.DurationSeconds = &at, &secs
	}
	return p
}

// CloudEventSummarySource is the CloudEvents source of a summary: the API path of the Secret
// or ConfigMap that changed.
func CloudEventSummarySource(namespace, kind, name string) string {
	return "/api/v1/namespaces/" + url.PathEscape(namespace) + "/" + strings.ToLower(kind) + "s/" + url.PathEscape(name)
}
