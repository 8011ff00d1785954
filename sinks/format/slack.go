package format

import (
	"strconv"
	"strings"
	"unicode/utf8"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// Slack limits, in characters.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
	slackFieldMax   = 2000
)

// slackFormatter renders a Slack incoming-webhook message: a fallback text for notifications
// and Block Kit blocks. It adds no links and turns link unfurling off; every string that
// comes from the cluster or the requester is escaped, so it cannot form a link or a mention.
type slackFormatter struct{}

type slackMessage struct {
	Text        string       `json:"text"`
	Blocks      []slackBlock `json:"blocks"`
	UnfurlLinks bool         `json:"unfurl_links"`
	UnfurlMedia bool         `json:"unfurl_media"`
}

type slackBlock struct {
	Type   string           `json:"type"`
	Text   *slackTextBlock  `json:"text,omitempty"`
	Fields []slackTextBlock `json:"fields,omitempty"`
}

type slackTextBlock struct {
	Type  string `json:"type"` // plain_text or mrkdwn
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji,omitempty"`
}

func (slackFormatter) Format(ev router.Event) (Message, error) {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return phaseView(e).message()
	case router.GateChanged:
		return gateView(e).message()
	}
	return Message{}, unsupported(ev)
}

// Summarize shows a fan-out summary: the sentence, then one field per count.
func (slackFormatter) Summarize(s Summary) (Message, error) {
	word := "Fan-out finished"
	if !s.Finished() {
		word = "Fan-out still open"
	}
	v := slackView{
		header: word + ": " + s.Source(),
		d:      description{Sentence: s.Text()},
		fields: [][2]string{
			{"Workloads", strconv.Itoa(s.Workloads)},
			{"Succeeded", strconv.Itoa(s.Succeeded)},
			{"Failed", strconv.Itoa(s.Failed)},
			{"Held", strconv.Itoa(s.Held)},
			{"Still open", strconv.Itoa(s.Open())},
		},
	}
	if s.Waves > 0 {
		v.fields = append(v.fields, [2]string{"Waves", strconv.Itoa(s.Waves)})
	}
	if !s.LastCompletion.IsZero() {
		label := "Last restart finished after"
		if s.Finished() {
			label = "Finished in"
		}
		v.fields = append(v.fields, [2]string{label, s.Duration().String()})
	}
	return v.message()
}

// slackView is what one Slack message shows: a header, the description, labelled fields and
// labelled sections. message escapes every piece.
type slackView struct {
	header   string
	d        description
	fields   [][2]string // label, value: at most 10
	sections [][2]string // label, text
}

// newSlackView starts the view of an event about a request: the header "<word>: <Kind>
// <namespace>/<name>", the description, and the fields first, Workload, Namespace and Reason.
func newSlackView(word string, first [2]string, req router.RequestRef, target router.ObjectRef, d description) slackView {
	return slackView{
		header: word + ": " + target.Kind + " " + req.Namespace + "/" + target.Name,
		d:      d,
		fields: [][2]string{
			first,
			{"Workload", target.Kind + "/" + target.Name},
			{"Namespace", req.Namespace},
			{"Reason", d.Reason},
		},
	}
}

// phaseView shows a phase change: outcome, workload, namespace and reason, then what it waits
// for or more detail, and the requester's reason.
func phaseView(ev router.PhaseChanged) slackView {
	outcome, outcomeMessage := outcomeOf(ev)
	d := describe(ev, outcome, outcomeMessage)
	word := statusWord(kickv1alpha1.KickRequestPhase(ev.To))
	v := newSlackView(word, [2]string{"Outcome", word}, ev.Request, ev.Target, d)
	if d.Detail != "" {
		label := "Details"
		if kickv1alpha1.KickRequestPhase(ev.To).IsWaiting() {
			label = "Waiting for"
		}
		v.sections = append(v.sections, [2]string{label, d.Detail})
	}
	if ev.Reason != "" {
		v.sections = append(v.sections, [2]string{"Requested because", ev.Reason})
	}
	return v
}

// gateView shows a gate change: which gate decided and why, the workload, and, when known, the
// GitOps owner, the object that caused the decision and when it may open; then the gate's own
// message.
func gateView(ev router.GateChanged) slackView {
	d := describeGate(ev)
	word, gate := "Waiting", ev.Stage
	switch {
	case ev.Allowed:
		word, gate = "May run now", "none"
	case gate == "":
		gate = "unknown"
	}
	v := newSlackView(word, [2]string{"Gate", gate}, ev.Request, ev.Target, d)
	if ev.Owner != "" {
		v.fields = append(v.fields, [2]string{"Owner", ev.Owner})
	}
	if !ev.Cause.IsZero() {
		v.fields = append(v.fields, [2]string{"Caused by", ev.Cause.String()})
	}
	if !ev.OpensAt.IsZero() && !ev.Allowed {
		v.fields = append(v.fields, [2]string{"May open at", ev.OpensAt.UTC().Format("2006-01-02 15:04:05 UTC")})
	}
	if d.Detail != "" {
		v.sections = append(v.sections, [2]string{"Details", d.Detail})
	}
	return v
}

// message renders the view. The header is plain text built from Kubernetes names, which cannot
// hold &, < or >; it is escaped anyway, like every other string, so no input can turn into
// markup.
func (v slackView) message() (Message, error) {
	noEmoji := false
	fields := make([]slackTextBlock, len(v.fields))
	for i, f := range v.fields {
		label := "*" + f[0] + "*\n"
		fields[i] = *mrkdwn(label + slackEscape(f[1], slackFieldMax-len(label)))
	}
	blocks := []slackBlock{
		{Type: "header", Text: &slackTextBlock{Type: "plain_text", Text: slackEscape(v.header, slackHeaderMax), Emoji: &noEmoji}},
		{Type: "section", Text: mrkdwn(slackEscape(v.d.Sentence+".", slackSectionMax)), Fields: fields},
	}
	for _, s := range v.sections {
		label := "*" + s[0] + "*\n"
		blocks = append(blocks, slackBlock{Type: "section", Text: mrkdwn(label + slackEscape(s[1], slackSectionMax-len(label)))})
	}
	return jsonMessage(slackMessage{
		Text:   slackEscape(v.d.Text(), slackSectionMax),
		Blocks: blocks,
	})
}

func mrkdwn(s string) *slackTextBlock { return &slackTextBlock{Type: "mrkdwn", Text: s} }

// statusWord is the one- or two-word outcome shown in Slack.
func statusWord(p kickv1alpha1.KickRequestPhase) string {
	switch p {
	case kickv1alpha1.PhasePending:
		return "Requested"
	case kickv1alpha1.PhaseExecuting:
		return "Restarting"
	case kickv1alpha1.PhaseSucceeded:
		return "Restarted"
	case kickv1alpha1.PhaseNoLongerRequired:
		return "Not needed"
	case kickv1alpha1.PhaseDryRun:
		return "Dry run"
	case kickv1alpha1.PhaseFailed:
		return "Failed"
	}
	if p.IsWaiting() {
		return "Waiting"
	}
	return "Unknown"
}

// slackEscape replaces the characters Slack treats as markup (&, < and >) by their entities
// and keeps the result within max characters, ending a cut string with an ellipsis. It never
// splits an entity.
func slackEscape(s string, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		piece := string(r)
		switch r {
		case '&':
			piece = "&amp;"
		case '<':
			piece = "&lt;"
		case '>':
			piece = "&gt;"
		}
		w := utf8.RuneCountInString(piece)
		// Keep room for the ellipsis unless this is the last rune and it fits exactly.
		if n+w > max || (n+w == max && i < len(s)) {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		n += w
	}
	return b.String()
}
