package format

import (
	"net/http"
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

func (slackFormatter) Format(ev router.PhaseChanged) (Message, error) {
	outcome, outcomeMessage := outcomeOf(ev)
	d := describe(ev, outcome, outcomeMessage)
	word := statusWord(kickv1alpha1.KickRequestPhase(ev.To))
	workload := ev.Target.Kind + "/" + ev.Target.Name

	// The header is plain text built from Kubernetes names, which cannot hold &, < or >; it is
	// escaped anyway so no input can turn into markup.
	noEmoji := false
	header := word + ": " + ev.Target.Kind + " " + ev.Request.Namespace + "/" + ev.Target.Name
	blocks := []slackBlock{
		{Type: "header", Text: &slackTextBlock{Type: "plain_text", Text: slackEscape(header, slackHeaderMax), Emoji: &noEmoji}},
		{
			Type: "section",
			Text: mrkdwn(slackEscape(d.Sentence+".", slackSectionMax)),
			Fields: []slackTextBlock{
				*mrkdwn("*Outcome*\n" + word),
				*mrkdwn("*Workload*\n" + slackEscape(workload, slackFieldMax-len("*Workload*\n"))),
				*mrkdwn("*Namespace*\n" + slackEscape(ev.Request.Namespace, slackFieldMax-len("*Namespace*\n"))),
				*mrkdwn("*Reason*\n" + d.Reason),
			},
		},
	}
	if d.Detail != "" {
		label := "*Details*\n"
		if kickv1alpha1.KickRequestPhase(ev.To).IsWaiting() {
			label = "*Waiting for*\n"
		}
		blocks = append(blocks, slackBlock{Type: "section", Text: mrkdwn(label + slackEscape(d.Detail, slackSectionMax-len(label)))})
	}
	if ev.Reason != "" {
		label := "*Requested because*\n"
		blocks = append(blocks, slackBlock{Type: "section", Text: mrkdwn(label + slackEscape(ev.Reason, slackSectionMax-len(label)))})
	}

	body, err := marshal(slackMessage{
		Text:   slackEscape(d.Text(), slackSectionMax),
		Blocks: blocks,
	})
	if err != nil {
		return Message{}, err
	}
	h := make(http.Header)
	h.Set("Content-Type", "application/json")
	return Message{Body: body, Header: h}, nil
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
