package kargo

import (
	"fmt"
	"strings"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// AuthorizedStageAnnotation on an Argo CD Application names the Kargo
// Stage allowed to promote into it, as "<project>:<stage>".
const AuthorizedStageAnnotation = "kargo.akuity.io/authorized-stage"

// StageRef names a Kargo Stage; the project is its namespace.
type StageRef struct {
	Project, Stage string
}

// String is the "project:stage" form used in annotations and owners.
func (s StageRef) String() string { return s.Project + ":" + s.Stage }

// ParseAuthorizedStage reads an authorized-stage annotation value. Exactly
// one "project:stage" is accepted. Kargo allows a comma-separated list
// (and once allowed wildcards); KICK needs a single Stage to watch, so a
// list of several Stages or a wildcard is AmbiguousOwner, and a value that
// is not project:stage at all is ConfigurationError.
func ParseAuthorizedStage(value string) (StageRef, kickv1alpha1.GateReason, string) {
	var entries []string
	for _, e := range strings.Split(value, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return StageRef{}, kickv1alpha1.GateConfigurationError, fmt.Sprintf("%s is empty; it must name one Stage as <project>:<stage>", AuthorizedStageAnnotation)
	}
	if len(entries) > 1 {
		return StageRef{}, kickv1alpha1.GateAmbiguousOwner, fmt.Sprintf("%s authorizes %d Stages (%s); KICK gates on exactly one and will not guess",
			AuthorizedStageAnnotation, len(entries), strings.Join(entries, ", "))
	}
	project, stage, ok := strings.Cut(entries[0], ":")
	project, stage = strings.TrimSpace(project), strings.TrimSpace(stage)
	if strings.Contains(project, "*") || strings.Contains(stage, "*") {
		return StageRef{}, kickv1alpha1.GateAmbiguousOwner, fmt.Sprintf("%s %q is a wildcard that may match several Stages; KICK gates on exactly one and will not guess",
			AuthorizedStageAnnotation, entries[0])
	}
	if !ok || project == "" || stage == "" || strings.Contains(stage, ":") {
		return StageRef{}, kickv1alpha1.GateConfigurationError, fmt.Sprintf("%s %q is not <project>:<stage>", AuthorizedStageAnnotation, entries[0])
	}
	return StageRef{Project: project, Stage: stage}, kickv1alpha1.GateAllowed, ""
}
