package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/rollout"
)

const explainLong = `Say what KICK sees for a workload: the KickPolicy selecting it, each
dependency with its last relevant change, the rollout start, the verdict
(fresh, stale, rollout in progress, cannot assess), what the gate says now
and the workload's KickRequest. It only reads, and never shows Secret
values, keys or fingerprints. Kinds: deployment (deploy), statefulset (sts),
daemonset (ds), rollout (an Argo Rollout; one that runs a Deployment's
template through spec.workloadRef is explained through that Deployment).

For a source (secret/NAME, configmap/NAME or cm/NAME) it lists the
workloads that consume it, what each would do, and how a change of it would
roll out now: how many restarts, how many at a time, in which waves, about
how long, and the KickHolds that would hold them.

Exit codes: 0 explained; 1 the workload or a permission is missing; 2 bad
usage.`

const explainExample = `  # Why did (or didn't) the Deployment web restart?
  kubectl kick explain deployment/web -n shop

  # The same for a script
  kubectl kick explain sts/db -o json

  # Who consumes the Secret db, and how would a change of it roll out?
  kubectl kick explain secret/db -n shop`

// explainOptions is the parsed command line of "explain".
type explainOptions struct {
	// source is Secret or ConfigMap when a source is explained.
	source string
	kind   kickv1alpha1.TargetKind
	name   string
	output string
}

func (o *explainOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", `output format: "json" for machines (default: text for people)`)
}

func (o *explainOptions) validate(args []string, _ *genericclioptions.ConfigFlags) (err error) {
	var isSource bool
	if o.source, o.name, isSource = sourceArg(args); isSource {
		return checkOutput(o.output)
	}
	if o.kind, o.name, err = targetArg(args, "explain"); err != nil {
		return err
	}
	return checkOutput(o.output)
}

func newExplainCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	cmd := subcommand(&cobra.Command{
		Use:               "explain KIND/NAME | secret/NAME | configmap/NAME",
		Short:             "Say what KICK sees for a workload and why it did or did not restart",
		Long:              explainLong,
		Example:           explainExample,
		ValidArgsFunction: completeTarget(cf, allKinds),
	}, cf, code, &explainOptions{}, runExplain)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "text"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runExplain(ctx context.Context, o *explainOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	if o.source != "" {
		return runExplainSource(ctx, o, cf, stdout, stderr)
	}
	s, err := connect(cf)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if o.kind == kickv1alpha1.TargetRollout {
		if d, err := s.rolloutTemplateOwner(ctx, o.name); err != nil {
			fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
			return exitFailed
		} else if d != "" && o.output != "json" {
			fmt.Fprintf(stdout, "rollout/%s runs the pod template of deployment/%s (spec.workloadRef): KICK selects, assesses and restarts it through the Deployment\n\n", o.name, d)
			o.kind, o.name = kickv1alpha1.TargetDeployment, d
		} else if d != "" {
			o.kind, o.name = kickv1alpha1.TargetDeployment, d
		}
	}
	f, err := s.gather(ctx, o.kind, o.name, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	e := analyze(f)
	if o.output == "json" {
		return printJSON(stdout, stderr, e)
	}
	printExplanation(stdout, e)
	return exitOK
}

// facts are the live reads explain (and the reopen check of restart
// --wait) work from. Reads that failed are kept as errors: they make parts
// of the answer unknown rather than the whole command fail.
type facts struct {
	now       time.Time
	namespace string
	kind      kickv1alpha1.TargetKind
	name      string
	workload  client.Object
	// rollout is σ and completeness; rolloutErr is set when the
	// Deployment's ReplicaSets could not be read.
	rollout    freshness.Rollout
	rolloutErr error
	policies   []kickv1alpha1.KickPolicy
	deps       []depFacts
	// requests are the KickRequests whose target is the workload; halts
	// the namespace's failed restarts that halt a fan-out.
	requests    []kickv1alpha1.KickRequest
	halts       []assess.Halt
	requestsErr error
	// holds are the namespace's KickHolds; holdsErr is set when they
	// could not be read (the hold stage is then unknown).
	holds    []assess.Hold
	holdsErr error
}

// depFacts is what was read about one dependency. Sources are read as
// metadata only: explain never loads Secret data.
type depFacts struct {
	dep    discovery.Dependency
	fields []string
	// reads are the keys the pod template reads (nil: not a Secret or
	// ConfigMap).
	reads     *discovery.Keys
	labels    map[string]string
	missing   bool
	sourceErr error
	record    *kickv1alpha1.SourceObservation
	recordErr error
	// keys lines the source's key names up with the record's entries.
	keys keyLines
}

// gather reads everything explain needs with the caller's credentials. Only
// the workload and the KickPolicies are required; they fail the command.
func (s *session) gather(ctx context.Context, kind kickv1alpha1.TargetKind, name string, now time.Time) (*facts, error) {
	f := &facts{now: now, namespace: s.namespace, kind: kind, name: name}
	w, err := newWorkload(kind)
	if err != nil {
		return nil, err
	}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &notFoundError{kind: kind, name: name, namespace: s.namespace}
		}
		return nil, readError("get", resourceOf(kind), s.namespace, err)
	}
	f.workload = w
	f.rollout, f.rolloutErr = s.inspect(ctx, w)

	var policies kickv1alpha1.KickPolicyList
	if err := s.client.List(ctx, &policies, client.InNamespace(s.namespace)); err != nil {
		return nil, readError("list", "kickpolicies.kick.corewire.io", s.namespace, err)
	}
	f.policies = policies.Items

	tmpl, _ := discovery.PodTemplate(w)
	fields := dependencyFields(&tmpl.Spec)
	reads := discovery.KeysRead(&tmpl.Spec)
	for _, d := range discovery.FromWorkload(w) {
		df := depFacts{dep: d, fields: fields[d]}
		if k, ok := reads[d]; ok {
			df.reads = &k
		}
		if counted(d) {
			s.readSource(ctx, &df)
			s.readRecord(ctx, &df)
			s.lineUpKeys(ctx, &df)
		}
		f.deps = append(f.deps, df)
	}
	f.requests, f.halts, f.requestsErr = s.requestsAndHalts(ctx, kind, name)
	f.holds, f.holdsErr = s.holds(ctx)
	return f, nil
}

// holds reads the namespace's KickHolds. A caller who may not list them
// (or a cluster without the KickHold API) gets an error that leaves the
// hold stage unknown instead of failing the command.
func (s *session) holds(ctx context.Context) ([]assess.Hold, error) {
	var list kickv1alpha1.KickHoldList
	if err := s.client.List(ctx, &list, client.InNamespace(s.namespace)); err != nil {
		return nil, readError("list", holdsResource, s.namespace, err)
	}
	return assess.HoldsOf(list.Items), nil
}

// counted reports whether KICK's freshness check counts a dependency: only
// Secrets and ConfigMaps have observation records it reads.
func counted(d discovery.Dependency) bool {
	return d.Kind == string(kickv1alpha1.SourceSecret) || d.Kind == string(kickv1alpha1.SourceConfigMap)
}

// readSource reads a source's labels, metadata only.
func (s *session) readSource(ctx context.Context, df *depFacts) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1GVK(df.dep.Kind))
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: df.dep.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		df.missing = true
	case err != nil:
		df.sourceErr = readError("get", strings.ToLower(df.dep.Kind)+"s", s.namespace, err)
	default:
		df.labels = obj.Labels
	}
}

// readRecord reads the source's SourceObservation, named as the observer
// names it.
func (s *session) readRecord(ctx context.Context, df *depFacts) {
	rec := &kickv1alpha1.SourceObservation{}
	key := client.ObjectKey{Namespace: s.namespace, Name: kickv1alpha1.ObservationName(df.dep.Kind, df.dep.Name)}
	err := s.client.Get(ctx, key, rec)
	switch {
	case apierrors.IsNotFound(err) && !isMissingResource(err):
	case err != nil:
		df.recordErr = readError("get", "sourceobservations.kick.corewire.io", s.namespace, err)
	default:
		df.record = rec
	}
}

// inspect returns σ and completeness. A Deployment's ReplicaSets are
// listed live with the Deployment's selector (the manager reads them from
// an owner index, which a live client cannot serve); freshness.Deployment
// ignores those another controller owns.
func (s *session) inspect(ctx context.Context, w client.Object) (freshness.Rollout, error) {
	switch w := w.(type) {
	case *appsv1.Deployment:
		sel, err := metav1.LabelSelectorAsSelector(w.Spec.Selector)
		if err != nil {
			return freshness.Rollout{}, fmt.Errorf("deployment selector: %w", err)
		}
		var rss appsv1.ReplicaSetList
		if err := s.client.List(ctx, &rss, client.InNamespace(w.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return freshness.Rollout{}, readError("list", "replicasets.apps", w.Namespace, err)
		}
		return freshness.Deployment(w, freshness.ReplicaSetRefs(rss.Items...)), nil
	case *appsv1.StatefulSet:
		return freshness.StatefulSet(w), nil
	case *appsv1.DaemonSet:
		return freshness.DaemonSet(w), nil
	case *rollout.Rollout:
		// rollout.Inspect keeps only the ReplicaSets the Rollout controls.
		var rss appsv1.ReplicaSetList
		if err := s.client.List(ctx, &rss, client.InNamespace(w.Namespace)); err != nil {
			return freshness.Rollout{}, readError("list", "replicasets.apps", w.Namespace, err)
		}
		return rollout.Inspect(w, freshness.ReplicaSetRefs(rss.Items...)), nil
	}
	return freshness.Rollout{}, fmt.Errorf("cannot inspect the rollout of %T", w)
}

// requestsFor returns the KickRequests of a target: a list filtered by
// target, or, when listing is not allowed, the request KICK would name.
func (s *session) requestsFor(ctx context.Context, kind kickv1alpha1.TargetKind, name string) ([]kickv1alpha1.KickRequest, error) {
	requests, _, err := s.requestsAndHalts(ctx, kind, name)
	return requests, err
}

// requestsAndHalts is requestsFor, with the failed restarts of the
// namespace that halt a fan-out (none when the caller may not list
// requests).
func (s *session) requestsAndHalts(ctx context.Context, kind kickv1alpha1.TargetKind, name string) ([]kickv1alpha1.KickRequest, []assess.Halt, error) {
	var list kickv1alpha1.KickRequestList
	err := s.client.List(ctx, &list, client.InNamespace(s.namespace))
	if err == nil {
		var out []kickv1alpha1.KickRequest
		for _, kr := range list.Items {
			if kr.Spec.TargetRef.Kind == kind && kr.Spec.TargetRef.Name == name {
				out = append(out, kr)
			}
		}
		return out, assess.HaltsOf(list.Items), nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, nil, readError("list", requestsResource, s.namespace, err)
	}
	var kr kickv1alpha1.KickRequest
	if gerr := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: kickv1alpha1.RequestName(kind, name)}, &kr); gerr != nil {
		if apierrors.IsNotFound(gerr) && !isMissingResource(gerr) {
			return nil, nil, nil
		}
		return nil, nil, readError("list", requestsResource, s.namespace, err)
	}
	if kr.Spec.TargetRef.Kind != kind || kr.Spec.TargetRef.Name != name {
		return nil, nil, nil // the name is taken by a request for another target
	}
	return []kickv1alpha1.KickRequest{kr}, nil, nil
}

// notFoundError reports a missing workload.
type notFoundError struct {
	kind      kickv1alpha1.TargetKind
	name      string
	namespace string
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("%s/%s not found in namespace %s", strings.ToLower(string(e.kind)), e.name, e.namespace)
}

// newWorkload returns an empty object of a kind explain supports.
func newWorkload(kind kickv1alpha1.TargetKind) (client.Object, error) {
	switch kind {
	case kickv1alpha1.TargetDeployment:
		return &appsv1.Deployment{}, nil
	case kickv1alpha1.TargetStatefulSet:
		return &appsv1.StatefulSet{}, nil
	case kickv1alpha1.TargetDaemonSet:
		return &appsv1.DaemonSet{}, nil
	case kickv1alpha1.TargetRollout:
		return &rollout.Rollout{}, nil
	}
	return nil, fmt.Errorf("kind %s is not supported here: use deployment, statefulset, daemonset or rollout", kind)
}

func resourceOf(kind kickv1alpha1.TargetKind) string {
	if kind == kickv1alpha1.TargetRollout {
		return "rollouts.argoproj.io"
	}
	return strings.ToLower(string(kind)) + "s.apps"
}

// rolloutTemplateOwner returns the Deployment whose pod template a Rollout
// runs through spec.workloadRef ("" when it has a template of its own).
func (s *session) rolloutTemplateOwner(ctx context.Context, name string) (string, error) {
	ro := &rollout.Rollout{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, ro); err != nil {
		if apierrors.IsNotFound(err) && !isMissingResource(err) {
			return "", &notFoundError{kind: kickv1alpha1.TargetRollout, name: name, namespace: s.namespace}
		}
		return "", readError("get", resourceOf(kickv1alpha1.TargetRollout), s.namespace, err)
	}
	return ro.ReferencedDeployment(), nil
}

func corev1GVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Version: "v1", Kind: kind}
}

// readError explains a failed read: for Forbidden it names the permission
// the caller lacks.
func readError(verb, resource, namespace string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("permission denied: you need %q on %s in namespace %s (ask for a Role granting it)", verb, resource, namespace)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authenticated to the cluster; check your kubeconfig and credentials: %v", err)
	case (meta.IsNoMatchError(err) || isMissingResource(err)) && strings.HasSuffix(resource, kickv1alpha1.GroupVersion.Group):
		return fmt.Errorf("the %s API is not installed in this cluster; install KICK first: %v", resource, err)
	case meta.IsNoMatchError(err) || isMissingResource(err):
		return fmt.Errorf("the %s API is not installed in this cluster: %v", resource, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the API server did not answer in time: %v", err)
	}
	return fmt.Errorf("%s %s: %v", verb, resource, err)
}
