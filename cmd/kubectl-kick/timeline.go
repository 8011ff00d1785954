package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

const timelineLong = `Print what happened to a workload, one line each, oldest first: source
changes, gate waits with their reasons, requests, restarts and completions,
and the Kubernetes Events about the workload and its KickRequests, with
durations ("restarted 0.8 s after the change; waited 3h12m for ...").
It reads KickRequests, SourceObservations and Events through the API server
(no port-forward); the manager's timeline UI shows the same entries with
more history. Kinds: deployment (deploy), statefulset (sts), daemonset (ds).`

const timelineExample = `  kubectl kick timeline deployment/web -n shop --since 2h
  kubectl kick timeline ds/agent -o json`

// timelineOptions is the parsed command line of "timeline".
type timelineOptions struct {
	kind   kickv1alpha1.TargetKind
	name   string
	since  time.Duration
	output string
}

func (o *timelineOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.since, "since", 0, "show only what happened in this last span, e.g. 2h (default: everything KICK's objects still tell)")
	fs.StringVarP(&o.output, "output", "o", "", `output format: "json" for machines (default: one line per item)`)
}

func (o *timelineOptions) validate(args []string, _ *genericclioptions.ConfigFlags) (err error) {
	if o.kind, o.name, err = targetArg(args, "timeline"); err != nil {
		return err
	}
	if o.since < 0 {
		return usagef("--since must not be negative")
	}
	return checkOutput(o.output)
}

func newTimelineCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	cmd := subcommand(&cobra.Command{
		Use:               "timeline KIND/NAME",
		Short:             "Print what happened to a workload, oldest first",
		Long:              timelineLong,
		Example:           timelineExample,
		ValidArgsFunction: completeTarget(cf, allKinds),
	}, cf, code, &timelineOptions{}, runTimeline)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "text"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// workloadTimeline is the -o json answer; the timeline server's
// /timeline answers with the same shape.
type workloadTimeline struct {
	entry.Workload
	State   string        `json:"state"`
	Entries []entry.Entry `json:"entries"`
	// Incomplete names what could not be read.
	Incomplete []string `json:"incomplete,omitempty"`
}

func runTimeline(ctx context.Context, o *timelineOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, code, ok := begin(cf, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	now := time.Now()
	tl, err := s.timeline(ctx, o.kind, o.name)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	if o.since > 0 {
		tl.Entries = entry.Since(tl.Entries, now.Add(-o.since))
	}
	for _, msg := range tl.Incomplete {
		fmt.Fprintf(stderr, "kubectl kick: warning: %s\n", msg)
	}
	if o.output == "json" {
		return printJSON(stdout, stderr, tl)
	}
	printTimeline(stdout, tl, time.Local)
	return exitOK
}

func printTimeline(out io.Writer, tl *workloadTimeline, loc *time.Location) {
	fmt.Fprintf(out, "%s (now %s)\n", tl.Workload, tl.State)
	if len(tl.Entries) == 0 {
		fmt.Fprintln(out, "nothing recorded: KICK has no request, observed change or event for this workload in this span")
		return
	}
	for _, e := range tl.Entries {
		fmt.Fprintln(out, entry.Line(e, loc))
	}
}

// timeline reads, with the caller's credentials and through the API server
// only, what KICK's objects tell about one workload: its KickRequests, the
// records of the sources it consumes, and the Events about both. Reads
// other than the requests may fail (missing permissions); the answer then
// says what it lacks.
func (s *session) timeline(ctx context.Context, kind kickv1alpha1.TargetKind, name string) (*workloadTimeline, error) {
	w := entry.Workload{Namespace: s.namespace, Kind: string(kind), Name: name}
	tl := &workloadTimeline{Workload: w}
	requests, err := s.requestsFor(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	var es []entry.Entry
	for i := range requests {
		es = append(es, entry.FromRequest(&requests[i])...)
	}
	if obj, err := newWorkload(kind); err == nil {
		switch err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, obj); {
		case apierrors.IsNotFound(err):
			tl.Incomplete = append(tl.Incomplete, fmt.Sprintf("%s/%s does not exist (any more); its sources are unknown", kind, name))
		case err != nil:
			tl.Incomplete = append(tl.Incomplete, readError("get", resourceOf(kind), s.namespace, err).Error())
		default:
			var reads map[discovery.Dependency]discovery.Keys
			if tmpl, ok := discovery.PodTemplate(obj); ok {
				reads = discovery.KeysRead(&tmpl.Spec)
			}
			for _, d := range discovery.FromWorkload(obj) {
				if !counted(d) {
					continue
				}
				df := depFacts{dep: d}
				if k, ok := reads[d]; ok {
					df.reads = &k
				}
				s.readRecord(ctx, &df)
				if df.recordErr != nil {
					tl.Incomplete = append(tl.Incomplete, df.recordErr.Error())
				} else if df.record != nil {
					s.lineUpKeys(ctx, &df)
					es = append(es, observationEntries(df, w)...)
				}
			}
		}
	}
	about := []struct{ kind, name string }{{string(kind), name}}
	for _, kr := range requests {
		about = append(about, struct{ kind, name string }{"KickRequest", kr.Name})
	}
	for _, a := range about {
		var events corev1.EventList
		if err := s.client.List(ctx, &events, client.InNamespace(s.namespace),
			client.MatchingFields{"involvedObject.kind": a.kind, "involvedObject.name": a.name}); err != nil {
			tl.Incomplete = append(tl.Incomplete, readError("list", "events", s.namespace, err).Error())
			break
		}
		for i := range events.Items {
			es = append(es, entry.FromEvent(&events.Items[i], w))
		}
	}
	es = entry.Dedupe(es)
	entry.Narrate(es)
	tl.State = entry.State(es)
	if es == nil {
		es = []entry.Entry{}
	}
	tl.Entries = es
	return tl, nil
}
