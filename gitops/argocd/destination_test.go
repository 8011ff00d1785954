package argocd

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// destination sets an Application's spec.destination.namespace.
func destination(ns string) appOpt {
	return func(a *argov1alpha1.Application) { a.Spec.Destination.Namespace = ns }
}

func inProject(name string) appOpt {
	return func(a *argov1alpha1.Application) { a.Spec.Project = name }
}

// restricted is an AppProject whose destinations are the given namespace
// patterns.
func restricted(name string, namespaces ...string) *argov1alpha1.AppProject {
	p := project(name)
	p.Spec.Destinations = nil
	for _, ns := range namespaces {
		p.Spec.Destinations = append(p.Spec.Destinations, argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: ns})
	}
	p.Spec.SourceNamespaces = []string{"*"}
	return p
}

// TestDestinationRule plays a tenant of namespace shop (who can write its
// own workloads and, with apps in any namespace, Applications in namespace
// team) against the Applications of other teams: no tracking annotation,
// instance label or status.resources entry makes an Application gate, or
// un-gate, a workload outside the namespaces it deploys to.
func TestDestinationRule(t *testing.T) {
	teamNS := Options{ApplicationNamespaces: []string{"team"}}
	deny := &argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "* * * * *", Duration: "1h", Applications: []string{"*"}}
	outOfSync := func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync }
	cases := []struct {
		name     string
		world    *world
		target   map[string]string // the workload's annotations (or labels, with labelled)
		labelled bool
		want     kickv1alpha1.GateReason
		owner    string // the owner the decision names, "" for none
		owners   []string
		msg      string
	}{
		{name: "tracking id naming another team's synced Application does not un-gate",
			world:  (&world{}).add(application(cp, "payments", destination("payments")), project("default")),
			target: tracked("payments", "shop", "web"), want: kickv1alpha1.GateOwnerUnknown, owners: []string{"argocd/payments"},
			msg: "names Application argocd/payments through its tracking annotation, but that Application cannot own it: an owner must exist and deploy to namespace shop"},
		{name: "tracking id naming another team's Application does not gate on its windows or sync state",
			world:  (&world{}).add(application(cp, "payments", destination("payments"), outOfSync), project("default", deny)),
			target: tracked("payments", "shop", "web"), want: kickv1alpha1.GateOwnerUnknown, owners: []string{"argocd/payments"}, msg: "cannot own it"},
		{name: "tracking id naming the team's own Application",
			world:  (&world{}).add(application(cp, "web", destination("shop")), project("default")),
			target: tracked("web", "shop", "web"), want: kickv1alpha1.GateAllowed, owner: "argocd/web", owners: []string{"argocd/web"}},
		{name: "instance label naming another team's Application falls back to status.resources",
			world: (&world{opts: Options{TrackingMethod: "label"}}).add(application(cp, "payments", destination("payments")),
				application(cp, "shop", destination("shop"), lists("shop", "web")), project("default")),
			target: map[string]string{DefaultLabelKey: "payments"}, labelled: true, want: kickv1alpha1.GateAllowed, owner: "argocd/shop", owners: []string{"argocd/shop"}},
		{name: "instance label naming another team's Application and nothing else",
			world:  (&world{opts: Options{TrackingMethod: "label"}}).add(application(cp, "payments", destination("payments")), project("default")),
			target: map[string]string{DefaultLabelKey: "payments"}, labelled: true, want: kickv1alpha1.GateOwnerUnknown,
			msg: "its instance label names Application argocd/payments, but that Application cannot own it"},
		{name: "status.resources of an Application deploying elsewhere is not believed",
			world: (&world{opts: teamNS}).add(application("team", "grab", destination("team"), lists("shop", "web")),
				project("default")),
			want: kickv1alpha1.GateOwnerUnknown,
			msg:  "no Application that may own it lists it in status.resources"},
		{name: "a spoofed status.resources entry does not make the real owner ambiguous",
			world: (&world{opts: teamNS}).add(application("team", "grab", destination("team"), lists("shop", "web")),
				application(cp, "web", destination("shop"), lists("shop", "web")), project("default")),
			want: kickv1alpha1.GateAllowed, owner: "argocd/web", owners: []string{"argocd/web"}},
		{name: "a tenant Application naming the victim namespace as destination needs its project to admit it",
			world: (&world{opts: teamNS}).add(application("team", "grab", destination("shop"), inProject("team"), lists("shop", "web")),
				restricted("team", "team", "team-*")),
			want: kickv1alpha1.GateOwnerUnknown,
			msg:  "no Application that may own it lists it in status.resources"},
		{name: "an Application outside the Argo CD namespace whose project admits the namespace",
			world: (&world{opts: teamNS}).add(application("team", "web", destination("shop"), inProject("team")),
				restricted("team", "team", "sh*")),
			target: tracked("team_web", "shop", "web"), want: kickv1alpha1.GateAllowed, owner: "team/web", owners: []string{"team/web"}},
		{name: "empty destination namespace: the project admits the workload's namespace",
			world:  (&world{}).add(application(cp, "multi", destination("")), project("default")),
			target: tracked("multi", "shop", "web"), want: kickv1alpha1.GateAllowed, owner: "argocd/multi", owners: []string{"argocd/multi"}},
		{name: "empty destination namespace: the project admits other namespaces only",
			world:  (&world{}).add(application(cp, "payments", destination(""), inProject("payments")), restricted("payments", "payments", "payments-*")),
			target: tracked("payments", "shop", "web"), want: kickv1alpha1.GateOwnerUnknown, owners: []string{"argocd/payments"},
			msg: "that Application cannot own it"},
		{name: "empty destination namespace: the project excludes the namespace",
			world:  (&world{}).add(application(cp, "wide", destination(""), inProject("wide")), restricted("wide", "!shop", "*")),
			target: tracked("wide", "shop", "web"), want: kickv1alpha1.GateOwnerUnknown, owners: []string{"argocd/wide"}, msg: "that Application cannot own it"},
		{name: "empty destination namespace: the project's missing AppProject blocks later",
			world:  (&world{}).add(application(cp, "orphan", destination(""), inProject("gone")), project("default")),
			target: tracked("orphan", "shop", "web"), want: kickv1alpha1.GateProjectUnknown, owner: "argocd/orphan", owners: []string{"argocd/orphan"}, msg: "AppProject gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := deployment("shop", "web", c.target, nil)
			if c.labelled {
				target = deployment("shop", "web", nil, c.target)
			}
			p := c.world.add(target).provider(t)
			d := p.Decide(context.Background(), target, policy(nil), time.Now())
			if d.Reason != c.want || !strings.Contains(d.Message, c.msg) {
				t.Fatalf("decision = %s %q, want %s mentioning %q", d.Reason, d.Message, c.want, c.msg)
			}
			if got := ""; d.Owner != nil {
				got = d.Owner.Namespace + "/" + d.Owner.Name
				if got != c.owner {
					t.Fatalf("owner %s, want %q", got, c.owner)
				}
			} else if c.owner != "" {
				t.Fatalf("no owner, want %s", c.owner)
			}
			owners, err := p.Owners(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range owners {
				names = append(names, o.Namespace+"/"+o.Name)
			}
			if !slices.Equal(names, c.owners) {
				t.Fatalf("Owners = %v, want %v", names, c.owners)
			}
		})
	}
}

// TestForeignApplicationLooksAbsent plays a tenant of namespace shop
// probing for another team's Applications: it names one in its workload's
// tracking annotation (or instance label), or reads the gate of a workload
// another team's Application lists in status.resources. Whatever that
// Application is (where it deploys, its project), the gate message is the
// one a name no Application has gets: it confirms no existence and names
// no destination or project.
func TestForeignApplicationLooksAbsent(t *testing.T) {
	teamNS := Options{ApplicationNamespaces: []string{"team"}}
	secretive := restricted("ledger-project", "ledger", "ledger-*")
	// decide returns the gate message of web in shop in the given world.
	// (The foreign Application deploys to ledger in project ledger-project;
	// the workload knows only the name it wrote, if any.)
	decide := func(t *testing.T, w *world, annotations, labels map[string]string) string {
		t.Helper()
		target := deployment("shop", "web", annotations, labels)
		d := w.add(target).provider(t).Decide(context.Background(), target, policy(nil), time.Now())
		if d.Reason != kickv1alpha1.GateOwnerUnknown {
			t.Fatalf("decision = %s %q, want OwnerUnknown", d.Reason, d.Message)
		}
		leaks := []string{"ledger"}
		if annotations == nil && labels == nil {
			leaks = append(leaks, "payments")
		}
		for _, leak := range leaks {
			if strings.Contains(d.Message, leak) {
				t.Fatalf("message reveals %q about another team's Application: %q", leak, d.Message)
			}
		}
		return d.Message
	}
	foreign := map[string]func() *world{
		"deploys elsewhere": func() *world {
			return (&world{opts: teamNS}).add(application(cp, "payments", destination("ledger"), inProject("ledger-project"), lists("ledger", "web")), secretive)
		},
		"no destination, project elsewhere": func() *world {
			return (&world{opts: teamNS}).add(application(cp, "payments", destination(""), inProject("ledger-project"), lists("shop", "web")), secretive)
		},
		"outside the Argo CD namespace, project elsewhere": func() *world {
			return (&world{opts: teamNS}).add(application("team", "payments", destination("shop"), inProject("ledger-project"), lists("shop", "web")), secretive)
		},
	}
	for _, claim := range []struct {
		name                string
		annotations, labels map[string]string
		opts                Options
	}{
		{name: "tracking annotation", annotations: tracked("payments", "shop", "web")},
		{name: "tracking annotation, apps in any namespace", annotations: tracked("team_payments", "shop", "web")},
		{name: "instance label", labels: map[string]string{DefaultLabelKey: "payments"}, opts: Options{TrackingMethod: "label"}},
		{name: "status.resources only"},
	} {
		absent := &world{opts: teamNS}
		absent.opts.TrackingMethod = claim.opts.TrackingMethod
		want := decide(t, absent.add(project("default"), secretive), claim.annotations, claim.labels)
		for name, w := range foreign {
			t.Run(claim.name+"/"+name, func(t *testing.T) {
				world := w()
				world.opts.TrackingMethod = claim.opts.TrackingMethod
				if got := decide(t, world.add(project("default")), claim.annotations, claim.labels); got != want {
					t.Fatalf("another team's Application shows through:\n got %q\nwant %q (no such Application)", got, want)
				}
			})
		}
	}
}

func TestNamespaceAdmitted(t *testing.T) {
	dests := func(patterns ...string) []argov1alpha1.ApplicationDestination {
		var out []argov1alpha1.ApplicationDestination
		for _, p := range patterns {
			out = append(out, argov1alpha1.ApplicationDestination{Server: "*", Namespace: p})
		}
		return out
	}
	for _, c := range []struct {
		patterns []string
		ns       string
		want     bool
	}{
		{nil, "shop", false},
		{[]string{"*"}, "shop", true},
		{[]string{"shop"}, "shop", true},
		{[]string{"shop"}, "shop-2", false},
		{[]string{"shop-*"}, "shop-2", true},
		{[]string{"team-?"}, "team-a", true},
		{[]string{"{shop,web}"}, "web", true},
		{[]string{"[invalid"}, "shop", false},
		{[]string{""}, "shop", false},
		{[]string{"!kube-system"}, "shop", true},
		{[]string{"!kube-system"}, "kube-system", false},
		{[]string{"*", "!shop"}, "shop", false},
		{[]string{"!shop", "*"}, "shop", false},
		{[]string{"*", "!shop"}, "web", true},
	} {
		if got := NamespaceAdmitted(dests(c.patterns...), c.ns); got != c.want {
			t.Errorf("NamespaceAdmitted(%q, %s) = %t, want %t", c.patterns, c.ns, got, c.want)
		}
	}
}

// TestProjectChangeWakesRefusedClaimants: a request waits because the
// project did not admit the workload's namespace; widening the project's
// destinations wakes it through the claimant's key (it has no owner to be
// woken by).
func TestProjectChangeWakesRefusedClaimants(t *testing.T) {
	claimant := deployment("shop", "web", tracked("multi", "shop", "web"), nil)
	proj := restricted("payments", "payments")
	app := application(cp, "multi", destination(""), inProject("payments"))
	p := (&world{}).add(claimant, app, proj).provider(t)
	if d := p.Decide(context.Background(), claimant, policy(nil), time.Now()); d.Reason != kickv1alpha1.GateOwnerUnknown {
		t.Fatalf("before: %+v", d)
	}
	keys := p.Wakes()[1].Keys(context.Background(), &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: "payments"}})
	if !slices.Contains(keys, gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "web")) {
		t.Fatalf("AppProject keys %v do not name the workload claiming one of its Applications", keys)
	}
}
