package main

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/hack/docscheck"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/timeline"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// The gate walk lives here because the explain renderer is this command's:
// it walks every reason that can hold a restart back and checks that each
// says its own name on every surface people read.

// walkStages is the stage whose answer carries each waiting reason ("" for
// AmbiguousPolicy, decided by the policy selection before any stage). A
// reason the API adds to WaitingReasons(), or a stage the gate adds, fails
// the walk until it has a row here, and then until every surface names it.
var walkStages = map[kickv1alpha1.GateReason]assess.Stage{
	kickv1alpha1.GateSuspended:             assess.StageSuspend,
	kickv1alpha1.GateHeld:                  assess.StageHold,
	kickv1alpha1.GateSettling:              assess.StageSettle,
	kickv1alpha1.GateOutsideSchedule:       assess.StageSchedule,
	kickv1alpha1.GateConfigurationError:    assess.StageSchedule,
	kickv1alpha1.GateMinIntervalNotElapsed: assess.StageMinInterval,
	kickv1alpha1.GateRolloutHalted:         assess.StageHalt,
	kickv1alpha1.GateEarlierWave:           assess.StageWave,
	kickv1alpha1.GateAmbiguousPolicy:       "",
	kickv1alpha1.GateOwnerUnknown:          assess.StageGitOps,
	kickv1alpha1.GateAmbiguousOwner:        assess.StageGitOps,
	kickv1alpha1.GateOwnerOutOfSync:        assess.StageGitOps,
	kickv1alpha1.GateOwnerReconciling:      assess.StageGitOps,
	kickv1alpha1.GateOwnerSuspended:        assess.StageGitOps,
	kickv1alpha1.GatePromotionRunning:      assess.StageGitOps,
	kickv1alpha1.GateProjectUnknown:        assess.StageGitOps,
	kickv1alpha1.GateProviderUnavailable:   assess.StageGitOps,
	kickv1alpha1.GateRestartBudget:         assess.StageBudget,
}

// explainLabels is the label of each stage's line in the explain text.
var explainLabels = map[assess.Stage]string{
	assess.StageSuspend: "suspend", assess.StageHold: "hold", assess.StageSettle: "settle",
	assess.StageSchedule: "schedule", assess.StageMinInterval: "minInterval", assess.StageHalt: "halt",
	assess.StageWave: "waves", assess.StageGitOps: "gitOps", assess.StageBudget: "budget",
}

const (
	walkNS      = "shop"
	walkRequest = "deployment-web"
	walkMessage = "the gate's own message"
)

var walkAt = time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)

// TestEveryGateSaysItsNameEverywhere walks every gate reason the code can
// produce (kickv1alpha1.WaitingReasons()) and every stage the gate
// evaluates, and checks each surface: the notification payloads in every
// format, the kubectl kick explain text, the timeline, the request's Event
// reason, and the reference and troubleshooting docs.
func TestEveryGateSaysItsNameEverywhere(t *testing.T) {
	s := newScene()
	s.relevantChange(t0.Add(5 * time.Minute))
	covered := map[assess.Stage]bool{}
	for _, st := range walkStages {
		covered[st] = true
	}
	evaluated := assess.Assess(s.facts().assessFacts(nil)).Gate.Stages
	if len(evaluated) == 0 {
		t.Fatal("the gate evaluated no stage; the walk is broken")
	}
	for _, r := range evaluated {
		if r.Stage != assess.StageDryRun && (!covered[r.Stage] || explainLabels[r.Stage] == "") {
			t.Errorf("the gate evaluates stage %s, which the walk does not cover: give its reasons rows in walkStages and its explain line a label", r.Stage)
		}
	}

	summaries := map[string]kickv1alpha1.GateReason{}
	for _, r := range kickv1alpha1.WaitingReasons() {
		stage, ok := walkStages[r]
		if !ok {
			t.Errorf("gate reason %s is not in walkStages: wire it on every surface, then add it", r)
			continue
		}
		t.Run(string(r), func(t *testing.T) {
			walkNotifications(t, r, stage)
			walkExplain(t, r, stage)
			summary := walkTimeline(t, r, stage)
			if other, dup := summaries[summary]; dup {
				t.Errorf("the timeline labels %s and %s alike: %q", r, other, summary)
			}
			summaries[summary] = r
			walkEvent(t, r)
			walkDocs(t, r)
		})
	}
}

func walkTarget() router.ObjectRef {
	return router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: walkNS, Name: "web"}
}

// walkNotifications: the phase change into the waiting phase and the gate
// change carry the reason in every format; PagerDuty pages failures only,
// so it sends neither.
func walkNotifications(t *testing.T, r kickv1alpha1.GateReason, stage assess.Stage) {
	req := router.RequestRef{Namespace: walkNS, Name: walkRequest, UID: "uid"}
	phase := router.PhaseChanged{Request: req, Target: walkTarget(), From: string(kickv1alpha1.PhasePending),
		To: string(r.WaitingPhase()), GateReason: string(r), GateMessage: walkMessage, Policy: "p", Time: walkAt}
	gate := router.GateChanged{Request: req, Target: walkTarget(), Stage: string(stage), Reason: string(r),
		Message: walkMessage, Policy: "p", Time: walkAt}
	if d := format.NewGatePayload(gate).Message; strings.Contains(d, "its gates to allow it") {
		t.Errorf("the gate change says only %q: describe what %s waits for", d, r)
	}
	for _, spec := range []kickv1alpha1.WebhookSpec{
		{Format: kickv1alpha1.FormatJSON},
		{Format: kickv1alpha1.FormatCloudEvents, CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: kickv1alpha1.CloudEventsStructured}},
		{Format: kickv1alpha1.FormatCloudEvents, CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: kickv1alpha1.CloudEventsBinary}},
		{Format: kickv1alpha1.FormatSlack},
		{Format: kickv1alpha1.FormatPagerDuty},
	} {
		f, err := format.New(spec, "routing-key")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range []router.Event{phase, gate} {
			m, err := f.Format(ev)
			switch {
			case spec.Format == kickv1alpha1.FormatPagerDuty && errors.Is(err, format.ErrSkip):
				continue
			case err != nil:
				t.Errorf("%s %T: %v", spec.Format, ev, err)
				continue
			}
			if got := payloadReason(t, spec.Format, m.Body); got != string(r) {
				t.Errorf("%s %T: reason %q, want %q\n%s", spec.Format, ev, got, r, m.Body)
			}
		}
	}
}

// payloadReason is the machine reason a formatted message carries: the
// reason field of the document (the CloudEvent's data), Slack's Reason
// field.
func payloadReason(t *testing.T, f kickv1alpha1.PayloadFormat, body []byte) string {
	var doc struct {
		Reason string          `json:"reason"`
		Data   json.RawMessage `json:"data"`
		Blocks []struct {
			Fields []struct{ Text string } `json:"fields"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	switch {
	case f == kickv1alpha1.FormatSlack:
		for _, b := range doc.Blocks {
			for _, fl := range b.Fields {
				if v, ok := strings.CutPrefix(fl.Text, "*Reason*\n"); ok {
					return v
				}
			}
		}
		return ""
	case doc.Data != nil:
		return payloadReason(t, kickv1alpha1.FormatJSON, doc.Data)
	}
	return doc.Reason
}

// walkRequestFor is an open request the gate holds back for r.
func walkRequestFor(r kickv1alpha1.GateReason, stage assess.Stage) kickv1alpha1.KickRequest {
	at := metav1.NewTime(walkAt)
	return kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: walkNS, Name: walkRequest, CreationTimestamp: metav1.NewTime(walkAt.Add(-time.Minute))},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
		Status: kickv1alpha1.KickRequestStatus{Phase: r.WaitingPhase(),
			Gate: &kickv1alpha1.GateStatus{Reason: r, Stage: string(stage), Message: walkMessage, LastEvaluated: &at}},
	}
}

// walkExplain: the explain text names the reason on the line of the stage
// that holds the restart back (the KickPolicy line for AmbiguousPolicy).
func walkExplain(t *testing.T, r kickv1alpha1.GateReason, stage assess.Stage) {
	s := newScene()
	s.relevantChange(t0.Add(5 * time.Minute))
	kr := walkRequestFor(r, stage)
	s.requests = []kickv1alpha1.KickRequest{kr}
	p := &s.policies[0]
	switch stage {
	case assess.StageSuspend:
		p.Spec.Suspend = true
	case assess.StageGitOps:
		p.Spec.GitOps = &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD}
	case "":
		s.policies = append(s.policies, policyFor("other", "web"))
	}
	f := s.facts()
	e := analyze(f)
	label := "KickPolicy:"
	if stage != "" {
		if e.Gate == nil {
			t.Fatalf("explain evaluated no gate: %s", e.Summary)
		}
		af := f.assessFacts(&kr)
		a := assess.Assess(af)
		a.Gate = closed(a.Gate, stage, r)
		recorded := af.GitOps
		if stage == assess.StageGitOps {
			recorded = &gitops.Decision{Reason: r, Message: walkMessage}
		}
		// MinIntervalNotElapsed comes only with a restart stamp.
		e.Gate = describeGate(a.Gate, p, recorded, &kr, walkAt.Add(-10*time.Second))
		describeHoldStage(e, a)
		label = "  " + explainLabels[stage] + ":"
	}
	text := explainText(t, e)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, label) {
			if !strings.Contains(line, string(r)) {
				t.Errorf("explain's %q line does not name %s: %q", strings.TrimSpace(label), r, line)
			}
			return
		}
	}
	t.Errorf("explain has no %q line:\n%s", strings.TrimSpace(label), text)
}

// closed is g with stage closed for reason r, the first stage to hold the
// restart back.
func closed(g assess.Gate, stage assess.Stage, r kickv1alpha1.GateReason) assess.Gate {
	g.Stages = slices.Clone(g.Stages)
	for i, s := range g.Stages {
		if s.Stage == stage {
			g.Stages[i] = assess.StageResult{Stage: stage, Reason: r, Message: walkMessage}
		}
	}
	g.Allowed, g.Stage, g.Reason, g.Message = false, stage, r, walkMessage
	return g
}

// walkTimeline: the manager's timeline (from the gate change) and kubectl
// kick timeline (from the request) show a gate entry that names the reason
// and, where there is one, the stage. It returns the entry's summary.
func walkTimeline(t *testing.T, r kickv1alpha1.GateReason, stage assess.Stage) string {
	live := timeline.FromRouter(router.GateChanged{Request: router.RequestRef{Namespace: walkNS, Name: walkRequest},
		Target: walkTarget(), Stage: string(stage), Reason: string(r), Message: walkMessage, Time: walkAt})
	kr := walkRequestFor(r, stage)
	var rebuilt *entry.Entry
	for _, e := range entry.FromRequest(&kr) {
		if e.Type == entry.Gate {
			rebuilt = &e
		}
	}
	if len(live) != 1 || rebuilt == nil {
		t.Fatalf("timeline gate entries: live %+v, rebuilt %v", live, rebuilt)
	}
	for _, e := range []entry.Entry{live[0], *rebuilt} {
		line := entry.Line(e, time.UTC)
		if e.Reason != string(r) || !strings.Contains(line, string(r)) || !strings.Contains(line, string(stage)) {
			t.Errorf("timeline entry %q (reason %q) does not name %s at stage %q", line, e.Reason, r, stage)
		}
	}
	return live[0].Summary
}

// walkEvent: the request records an Event with a reason of the gate's own,
// not the generic WaitingForGate.
func walkEvent(t *testing.T, r kickv1alpha1.GateReason) {
	if got := request.WaitingEventReason(r); got == "" || got == "WaitingForGate" {
		t.Errorf("a request held for %s records Event reason %q: give the gate an Event reason of its own", r, got)
	}
}

// walkDocs: the gates page gives the reason's phase and Event reason, the
// Events reference lists that Event reason for it, the troubleshooting
// page says what to do, and the notification reference names it.
func walkDocs(t *testing.T, r kickv1alpha1.GateReason) {
	const (
		gates  = "../../docs/concepts/gates.md"
		events = "../../docs/reference/events.md"
		trbl   = "../../docs/operations/troubleshooting.md"
		notes  = "../../docs/reference/notifications.md"
	)
	name, event := "`"+string(r)+"`", request.WaitingEventReason(r)
	row := func(page, heading string, first string) *docscheck.Row {
		rows, err := docscheck.Table(page, heading)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if slices.Contains(docscheck.Code(rows[i].Cells[0]), first) {
				return &rows[i]
			}
		}
		t.Errorf("%s: the table under %q has no row for `%s`", page, heading, first)
		return nil
	}
	if g := row(gates, "Reasons and phases", string(r)); g != nil {
		if len(g.Cells) < 3 || !slices.Equal(docscheck.Code(g.Cells[1]), []string{string(r.WaitingPhase())}) ||
			!slices.Equal(docscheck.Code(g.Cells[2]), []string{event}) {
			t.Errorf("%s:%d: row %q, want phase `%s` and event `%s`", gates, g.Line, g.Cells, r.WaitingPhase(), event)
		}
	}
	if e := row(events, "On KickRequests", event); e != nil && event != string(r) && !strings.Contains(strings.Join(e.Cells[1:], " "), name) {
		t.Errorf("%s:%d: the row of Event reason `%s` does not say it is recorded for %s", events, e.Line, event, name)
	}
	if tr := row(trbl, "A request is waiting", string(r)); tr != nil &&
		(len(tr.Cells) < 2 || !slices.Equal(docscheck.Code(tr.Cells[1]), []string{string(r.WaitingPhase())})) {
		t.Errorf("%s:%d: row %q, want phase `%s`", trbl, tr.Line, tr.Cells, r.WaitingPhase())
	}
	if raw := readDoc(t, notes); !strings.Contains(raw, name) {
		t.Errorf("%s never names gate reason %s, which notifications carry", notes, name)
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
