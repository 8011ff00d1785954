package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/plan"
	"github.com/kick-operator/kick/restart/rollout"
)

// sourceAliases are the spellings of the source kinds explain accepts.
var sourceAliases = map[string]string{
	"secret": discovery.KindSecret, "secrets": discovery.KindSecret,
	"configmap": discovery.KindConfigMap, "configmaps": discovery.KindConfigMap, "cm": discovery.KindConfigMap,
}

// sourceArg reads a "secret/NAME" or "configmap/NAME" argument; ok is
// false when the argument names no source kind.
func sourceArg(args []string) (kind, name string, ok bool) {
	if len(args) != 1 {
		return "", "", false
	}
	k, n, _ := strings.Cut(args[0], "/")
	kind, ok = sourceAliases[strings.ToLower(k)]
	return kind, n, ok && n != "" && !strings.Contains(n, "/")
}

// sourceExplanation is the answer of "explain secret/NAME": the workloads
// that consume the source, what each would do, and how a change would roll
// out now. It names no key and holds no Secret data.
type sourceExplanation struct {
	Namespace   string           `json:"namespace"`
	Kind        string           `json:"kind"`
	Name        string           `json:"name"`
	EvaluatedAt time.Time        `json:"evaluatedAt"`
	Consumers   []consumerResult `json:"consumers"`
	// Restarts counts the consumers a change of the source would restart:
	// selected by one policy that counts the source.
	Restarts int `json:"restarts"`
	// Plans word how those restarts roll out, one per policy.
	Plans []string `json:"plans,omitempty"`
	// Holds are the KickHolds that would hold those restarts now.
	Holds     []string `json:"holds,omitempty"`
	HoldError string   `json:"holdError,omitempty"`
}

type consumerResult struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Policy string `json:"policy,omitempty"`
	// Counted is set when a change of the source restarts the consumer.
	Counted bool `json:"counted"`
	// Reads says which changes count for it: "every key", or "N keys"
	// when it reads only some (the manager then counts only changes of
	// those; explain names no key).
	Reads   string `json:"reads,omitempty"`
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
}

func runExplainSource(ctx context.Context, o *explainOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, err := connect(cf)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	s.client = newMemoReader(s.client)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	e, err := s.explainSource(ctx, o.source, o.name, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	if o.output == "json" {
		return printJSON(stdout, stderr, e)
	}
	printSourceExplanation(stdout, e)
	return exitOK
}

// explainSource explains each workload of the namespace that consumes the
// source, and plans the restarts a change of it would make.
func (s *session) explainSource(ctx context.Context, kind, name string, now time.Time) (*sourceExplanation, error) {
	e := &sourceExplanation{Namespace: s.namespace, Kind: kind, Name: name, EvaluatedAt: now.UTC(), Consumers: []consumerResult{}}
	consumers, err := s.consumersOf(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	var restarts []plan.Restart
	for _, w := range consumers {
		f, err := s.gather(ctx, w.kind, w.name, now)
		if err != nil {
			return nil, err
		}
		x := analyze(f)
		c := consumerResult{Kind: x.Kind, Name: x.Name, Policy: x.Policy.Name, Verdict: x.Verdict, Summary: x.Summary}
		for _, d := range x.Dependencies {
			if d.Kind == kind && d.Name == name && d.Scope == assess.ScopeIn {
				c.Counted = c.Policy != ""
				c.Reads = d.Reads
			}
		}
		if c.Counted {
			e.Restarts++
			restarts = append(restarts, plan.Restart{Policy: policyNamed(f.policies, c.Policy), Labels: f.workload.GetLabels(), Rollout: lastRollout(f.requests)})
		}
		e.Consumers = append(e.Consumers, c)
	}
	for _, p := range plan.Make(plan.Input{Restarts: restarts}) {
		e.Plans = append(e.Plans, fmt.Sprintf("policy %s %s", p.Policy, p))
	}
	e.Holds, e.HoldError = s.holdsOf(ctx, kind, name, now)
	return e, nil
}

type workloadName struct {
	kind kickv1alpha1.TargetKind
	name string
}

// consumersOf lists the workloads of the namespace whose pod templates
// consume the source, as the manager's discovery reads them.
func (s *session) consumersOf(ctx context.Context, kind, name string) ([]workloadName, error) {
	lists := map[kickv1alpha1.TargetKind]client.ObjectList{
		kickv1alpha1.TargetDeployment: &appsv1.DeploymentList{}, kickv1alpha1.TargetStatefulSet: &appsv1.StatefulSetList{},
		kickv1alpha1.TargetDaemonSet: &appsv1.DaemonSetList{}, kickv1alpha1.TargetRollout: &rollout.RolloutList{},
	}
	var out []workloadName
	for _, k := range allKinds {
		err := s.client.List(ctx, lists[k], client.InNamespace(s.namespace))
		switch {
		case err != nil && k == kickv1alpha1.TargetRollout && (meta.IsNoMatchError(err) || isMissingResource(err)):
			continue // no Argo Rollouts in this cluster
		case err != nil:
			return nil, readError("list", resourceOf(k), s.namespace, err)
		}
		for _, w := range workloadItems(lists[k]) {
			for _, d := range discovery.FromWorkload(w) {
				if d.Kind == kind && d.Name == name {
					out = append(out, workloadName{kind: k, name: w.GetName()})
					break
				}
			}
		}
	}
	return out, nil
}

func workloadItems(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.DaemonSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *rollout.RolloutList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

func policyNamed(policies []kickv1alpha1.KickPolicy, name string) *kickv1alpha1.KickPolicy {
	for i := range policies {
		if policies[i].Name == name {
			return &policies[i]
		}
	}
	return nil
}

// lastRollout is how long the workload's last restart KICK completed took
// to roll out; zero when unknown.
func lastRollout(requests []kickv1alpha1.KickRequest) time.Duration {
	var d time.Duration
	var at time.Time
	for _, kr := range requests {
		st := kr.Status
		if st.Phase != kickv1alpha1.PhaseSucceeded || st.LastRestartTime == nil || st.CompletionTime == nil || st.CompletionTime.Time.Before(at) {
			continue
		}
		at, d = st.CompletionTime.Time, max(st.CompletionTime.Sub(st.LastRestartTime.Time), 0)
	}
	return d
}

// holdsOf words the KickHolds that hold the restarts a change of the
// source would make: holds of the source and of the namespace.
func (s *session) holdsOf(ctx context.Context, kind, name string, now time.Time) ([]string, string) {
	holds, err := s.holds(ctx)
	if err != nil {
		return nil, err.Error()
	}
	var out []string
	for _, h := range holds {
		t := h.Target
		active := h.ExpiresAt.IsZero() || now.Before(h.ExpiresAt)
		if !active || t.Kind != kickv1alpha1.HoldNamespace && (string(t.Kind) != kind || t.Name != name) {
			continue
		}
		line := fmt.Sprintf("KickHold %s (%s): %q holds them until it is released", h.Name, t, h.Reason)
		if !h.ExpiresAt.IsZero() {
			line += " or expires at " + h.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out = append(out, line)
	}
	return out, ""
}

func printSourceExplanation(out io.Writer, e *sourceExplanation) {
	line := func(label, format string, a ...any) {
		fmt.Fprintf(out, "%-15s %s\n", label+":", fmt.Sprintf(format, a...))
	}
	line("Source", "%s %s/%s", e.Kind, e.Namespace, e.Name)
	if len(e.Consumers) == 0 {
		line("Consumers", "none: no Deployment, StatefulSet, DaemonSet or Rollout in %s consumes it", e.Namespace)
		return
	}
	line("Consumers", "%d; a change restarts %d", len(e.Consumers), e.Restarts)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, c := range e.Consumers {
		policy, counted := "no policy", "not counted"
		if c.Policy != "" {
			policy = "policy " + c.Policy
		}
		if c.Counted {
			counted = "counted: " + c.Reads
		}
		fmt.Fprintf(tw, "  %s/%s\t%s\t%s\t%s\n", strings.ToLower(c.Kind), c.Name, policy, counted, c.Summary)
	}
	_ = tw.Flush()
	for i, p := range e.Plans {
		label := ""
		if i == 0 {
			label = "Plan"
		}
		fmt.Fprintf(out, "%-15s %s\n", label+map[bool]string{true: ":", false: ""}[i == 0], p)
	}
	if len(e.Plans) > 0 {
		fmt.Fprintf(out, "%-15s %s\n", "", "(the manager's --max-concurrent-restarts may slow it further)")
	}
	switch {
	case e.HoldError != "":
		line("Holds", "unknown: %s", e.HoldError)
	case len(e.Holds) == 0:
		line("Holds", "none")
	default:
		for i, h := range e.Holds {
			label := ""
			if i == 0 {
				label = "Holds:"
			}
			fmt.Fprintf(out, "%-15s %s\n", label, h)
		}
	}
}
