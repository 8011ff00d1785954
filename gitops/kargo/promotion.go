package kargo

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// terminalPhases are the Promotion phases Kargo never leaves.
var terminalPhases = []string{"Succeeded", "Failed", "Errored", "Aborted"}

// PromotionActive reports whether a Promotion phase is still in flight:
// anything not terminal, including a Promotion Kargo has not picked up yet
// (no phase) and one waiting its turn (Pending), because it is about to
// change what the Stage deploys.
func PromotionActive(phase string) bool {
	return !slices.Contains(terminalPhases, phase)
}

// promotionStage is the Stage a Promotion targets (spec.stage).
func promotionStage(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "stage")
	return s
}

func promotionPhase(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return s
}

// currentPromotion is the name of the Promotion a Stage reports as
// running (status.currentPromotion), "" when none.
func currentPromotion(stage *unstructured.Unstructured) (string, bool) {
	cur, found, _ := unstructured.NestedMap(stage.Object, "status", "currentPromotion")
	if !found || len(cur) == 0 {
		return "", false
	}
	name, _ := cur["name"].(string)
	return name, true
}

// activePromotions describes the in-flight Promotions among list.
func activePromotions(list []unstructured.Unstructured) []string {
	var out []string
	for i := range list {
		if phase := promotionPhase(&list[i]); PromotionActive(phase) {
			if phase == "" {
				phase = "not started"
			}
			out = append(out, fmt.Sprintf("%s (%s)", list[i].GetName(), phase))
		}
	}
	slices.Sort(out)
	return out
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
