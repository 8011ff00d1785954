package kargo

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestParseAuthorizedStage(t *testing.T) {
	cases := []struct {
		in   string
		want StageRef
		r    kickv1alpha1.GateReason
		msg  string
	}{
		{in: "shop:prod", want: StageRef{"shop", "prod"}, r: kickv1alpha1.GateAllowed},
		{in: " shop : prod ", want: StageRef{"shop", "prod"}, r: kickv1alpha1.GateAllowed},
		{in: "shop:prod,", want: StageRef{"shop", "prod"}, r: kickv1alpha1.GateAllowed},
		{in: "shop:prod,shop:staging", r: kickv1alpha1.GateAmbiguousOwner, msg: "authorizes 2 Stages (shop:prod, shop:staging)"},
		{in: "shop:*", r: kickv1alpha1.GateAmbiguousOwner, msg: "wildcard"},
		{in: "*:prod", r: kickv1alpha1.GateAmbiguousOwner, msg: "wildcard"},
		{in: "", r: kickv1alpha1.GateConfigurationError, msg: "is empty"},
		{in: " , ", r: kickv1alpha1.GateConfigurationError, msg: "is empty"},
		{in: "prod", r: kickv1alpha1.GateConfigurationError, msg: "is not <project>:<stage>"},
		{in: ":prod", r: kickv1alpha1.GateConfigurationError, msg: "is not <project>:<stage>"},
		{in: "shop:", r: kickv1alpha1.GateConfigurationError, msg: "is not <project>:<stage>"},
		{in: "shop:prod:eu", r: kickv1alpha1.GateConfigurationError, msg: "is not <project>:<stage>"},
	}
	for _, c := range cases {
		got, r, msg := ParseAuthorizedStage(c.in)
		if got != c.want || r != c.r || !strings.Contains(msg, c.msg) {
			t.Errorf("ParseAuthorizedStage(%q) = %+v %s %q; want %+v %s mentioning %q", c.in, got, r, msg, c.want, c.r, c.msg)
		}
	}
	if s := (StageRef{"shop", "prod"}).String(); s != "shop:prod" {
		t.Errorf("String = %q", s)
	}
}

func TestPromotionActive(t *testing.T) {
	for phase, active := range map[string]bool{
		"": true, "Pending": true, "Running": true, "SomethingNew": true,
		"Succeeded": false, "Failed": false, "Errored": false, "Aborted": false,
	} {
		if PromotionActive(phase) != active {
			t.Errorf("PromotionActive(%q) = %v", phase, !active)
		}
	}
}

func promotion(name, stage, phase string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     map[string]any{"stage": stage},
	}}
	if phase != "" {
		u.Object["status"] = map[string]any{"phase": phase}
	}
	return u
}

func TestActivePromotions(t *testing.T) {
	got := activePromotions([]unstructured.Unstructured{
		promotion("p1", "prod", "Succeeded"),
		promotion("p3", "prod", "Running"),
		promotion("p2", "prod", ""),
		promotion("p4", "prod", "Aborted"),
	})
	if joinNames(got) != "p2 (not started), p3 (Running)" {
		t.Fatalf("active = %v", got)
	}
}

func TestCurrentPromotion(t *testing.T) {
	stage := func(status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "prod"}}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	if _, ok := currentPromotion(stage(nil)); ok {
		t.Error("a Stage without status reports a promotion")
	}
	if _, ok := currentPromotion(stage(map[string]any{"currentPromotion": nil})); ok {
		t.Error("a null currentPromotion counts")
	}
	if name, ok := currentPromotion(stage(map[string]any{"currentPromotion": map[string]any{"name": "p1"}})); !ok || name != "p1" {
		t.Errorf("currentPromotion = %q, %v", name, ok)
	}
}

func TestCacheTransform(t *testing.T) {
	p := promotion("p1", "prod", "Running")
	p.SetAPIVersion("kargo.akuity.io/v1alpha1")
	p.SetKind("Promotion")
	p.SetResourceVersion("7")
	p.Object["spec"].(map[string]any)["steps"] = []any{map[string]any{"uses": "git-clone"}}
	var transform func(any) (any, error)
	for obj, by := range CacheOptions() {
		if obj.GetObjectKind().GroupVersionKind() == PromotionKind {
			transform = by.Transform
		}
	}
	out, err := transform(&p)
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*unstructured.Unstructured)
	if promotionStage(u) != "prod" || promotionPhase(u) != "Running" || u.GetResourceVersion() != "7" || u.GetName() != "p1" || u.GetKind() != "Promotion" {
		t.Fatalf("slim promotion lost fields: %v", u.Object)
	}
	if _, found, _ := unstructured.NestedSlice(u.Object, "spec", "steps"); found {
		t.Fatal("slim promotion kept its steps")
	}
}
