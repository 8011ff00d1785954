package format

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

func decodeSlack(t *testing.T, m Message) slackMessage {
	t.Helper()
	if ct := m.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var msg slackMessage
	if err := json.Unmarshal(m.Body, &msg); err != nil {
		t.Fatalf("decode: %v\n%s", err, m.Body)
	}
	return msg
}

// texts lists every text object of a message with its limit.
func texts(msg slackMessage) (all []string) {
	all = append(all, msg.Text)
	for _, b := range msg.Blocks {
		if b.Text != nil {
			all = append(all, b.Text.Text)
		}
		for _, f := range b.Fields {
			all = append(all, f.Text)
		}
	}
	return all
}

func TestSlack(t *testing.T) {
	evil := "<!channel> see <https://evil.example|here> & <@U123>"
	cases := []struct {
		name      string
		ev        router.PhaseChanged
		header    string
		fields    []string
		sections  []string // texts of the sections after the first, in order
		fallback  string
		forbidden []string
	}{
		{
			name:     "succeeded",
			ev:       phaseChange(kickv1alpha1.PhaseSucceeded),
			header:   "Restarted: Deployment team-a/api",
			fields:   []string{"*Outcome*\nRestarted", "*Workload*\nDeployment/api", "*Namespace*\nteam-a", "*Reason*\nRestartCompleted"},
			fallback: "Deployment team-a/api was restarted and its rollout completed.",
		},
		{
			name: "waiting with requester reason",
			ev: phaseChange(kickv1alpha1.PhaseWaitingForGate, func(e *router.PhaseChanged) {
				e.GateReason, e.GateMessage, e.Reason = "OutsideSchedule", "window 02:00-04:00 <Europe/Berlin> & more", evil
			}),
			header: "Waiting: Deployment team-a/api",
			fields: []string{"*Outcome*\nWaiting", "*Workload*\nDeployment/api", "*Namespace*\nteam-a", "*Reason*\nOutsideSchedule"},
			sections: []string{
				"*Waiting for*\nwindow 02:00-04:00 &lt;Europe/Berlin&gt; &amp; more",
				"*Requested because*\n&lt;!channel&gt; see &lt;https://evil.example|here&gt; &amp; &lt;@U123&gt;",
			},
			fallback:  "The restart of Deployment team-a/api is waiting: window 02:00-04:00 &lt;Europe/Berlin&gt; &amp; more.",
			forbidden: []string{"<!channel>", "<https://", "<@U123>"},
		},
		{
			name:     "no longer required",
			ev:       phaseChange(kickv1alpha1.PhaseNoLongerRequired),
			header:   "Not needed: Deployment team-a/api",
			fields:   []string{"*Outcome*\nNot needed", "*Workload*\nDeployment/api", "*Namespace*\nteam-a", "*Reason*\nUpToDate"},
			fallback: "Deployment team-a/api already runs with every change; no restart was needed.",
		},
		{
			name: "failed ignores a stale gate message",
			ev: phaseChange(kickv1alpha1.PhaseFailed, func(e *router.PhaseChanged) {
				e.GateReason, e.GateMessage = "OutsideSchedule", "old"
			}),
			header:   "Failed: Deployment team-a/api",
			fields:   []string{"*Outcome*\nFailed", "*Workload*\nDeployment/api", "*Namespace*\nteam-a", "*Reason*\nRestartFailed"},
			fallback: "The restart of Deployment team-a/api failed.",
		},
		{
			name:     "dry run",
			ev:       phaseChange(kickv1alpha1.PhaseDryRun, func(e *router.PhaseChanged) { e.Target.Kind = "StatefulSet"; e.Target.Name = "db" }),
			header:   "Dry run: StatefulSet team-a/db",
			fields:   []string{"*Outcome*\nDry run", "*Workload*\nStatefulSet/db", "*Namespace*\nteam-a", "*Reason*\nDryRun"},
			fallback: "Dry run: KICK would have restarted StatefulSet team-a/db.",
		},
	}
	f := mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustFormat(t, f, tc.ev)
			msg := decodeSlack(t, m)
			if msg.Text != tc.fallback {
				t.Errorf("text = %q, want %q", msg.Text, tc.fallback)
			}
			if msg.UnfurlLinks || msg.UnfurlMedia {
				t.Errorf("unfurling is on")
			}
			if len(msg.Blocks) != 2+len(tc.sections) {
				t.Fatalf("blocks = %d, want %d: %s", len(msg.Blocks), 2+len(tc.sections), m.Body)
			}
			h := msg.Blocks[0]
			if h.Type != "header" || h.Text.Type != "plain_text" || h.Text.Text != tc.header || h.Text.Emoji == nil || *h.Text.Emoji {
				t.Errorf("header block = %+v %+v", h, h.Text)
			}
			s := msg.Blocks[1]
			if s.Type != "section" || s.Text.Type != "mrkdwn" || len(s.Fields) != len(tc.fields) {
				t.Fatalf("section block = %+v", s)
			}
			for i, want := range tc.fields {
				if s.Fields[i].Type != "mrkdwn" || s.Fields[i].Text != want {
					t.Errorf("field %d = %+v, want %q", i, s.Fields[i], want)
				}
			}
			for i, want := range tc.sections {
				b := msg.Blocks[2+i]
				if b.Type != "section" || b.Text.Type != "mrkdwn" || b.Text.Text != want {
					t.Errorf("section %d = %+v %+v, want %q", i, b, b.Text, want)
				}
			}
			for _, text := range texts(msg) {
				for _, bad := range tc.forbidden {
					if strings.Contains(text, bad) {
						t.Errorf("text %q contains %q", text, bad)
					}
				}
			}
		})
	}
}

func TestSlackLimits(t *testing.T) {
	long := strings.Repeat("<&é>", 2000) // 8000 characters, 4 times as many when escaped
	ev := phaseChange(kickv1alpha1.PhaseWaitingForGate, func(e *router.PhaseChanged) {
		e.GateReason, e.GateMessage, e.Reason = "Suspended", long, long
		e.Target.Name = strings.Repeat("n", 253)
	})
	msg := decodeSlack(t, mustFormat(t, mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, ""), ev))
	if n := utf8.RuneCountInString(msg.Blocks[0].Text.Text); n > slackHeaderMax {
		t.Errorf("header has %d characters", n)
	}
	for _, f := range msg.Blocks[1].Fields {
		if n := utf8.RuneCountInString(f.Text); n > slackFieldMax {
			t.Errorf("field has %d characters", n)
		}
	}
	for _, text := range texts(msg) {
		if n := utf8.RuneCountInString(text); n > slackSectionMax {
			t.Errorf("text has %d characters", n)
		}
		// A cut never leaves half an entity or a bare markup character behind.
		if strings.ContainsAny(text, "<>") {
			t.Errorf("text has a bare markup character: …%s", text[max(0, len(text)-40):])
		}
		for i := strings.IndexByte(text, '&'); i >= 0; i = nextAmp(text, i) {
			if rest := text[i:]; !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
				t.Errorf("text has a broken entity: …%s", text[max(0, len(text)-40):])
				break
			}
		}
	}
}

func nextAmp(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '&')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func TestSlackEscape(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"a&b<c>d", 100, "a&amp;b&lt;c&gt;d"},
		{"exact", 5, "exact"},
		{"toolong", 5, "tool…"},
		{"ab&cd", 4, "ab…"},   // the entity does not fit: cut before it
		{"ab&", 7, "ab&amp;"}, // fits exactly at the end
		{"ab&c", 7, "ab…"},    // fits, but leaves no room for the ellipsis
		{"éééé", 3, "éé…"},    // counts characters, not bytes
		{"&amp; stays text", 100, "&amp;amp; stays text"},
	}
	for _, tc := range cases {
		if got := slackEscape(tc.in, tc.max); got != tc.want {
			t.Errorf("slackEscape(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
