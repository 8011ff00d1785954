package docscheck

import (
	"os"
	"strings"
	"testing"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Every reason that holds a restart back is explained where people look:
// the reasons table of the gates page, the troubleshooting table of waiting
// requests, and the notification payload reference.
func TestEveryGateReasonIsDocumented(t *testing.T) {
	tables := []struct{ page, heading string }{
		{"../../docs/concepts/gates.md", "Reasons and phases"},
		{"../../docs/operations/troubleshooting.md", "A request is waiting"},
	}
	for _, tb := range tables {
		rows, err := Table(tb.page, tb.heading)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, r := range rows {
			for _, c := range Code(r.Cells[0]) {
				listed[c] = true
			}
		}
		for _, reason := range kickv1alpha1.WaitingReasons() {
			if !listed[string(reason)] {
				t.Errorf("%s: the table under %q has no row for gate reason `%s`", tb.page, tb.heading, reason)
			}
		}
	}
	const payload = "../../docs/reference/notifications.md"
	raw, err := os.ReadFile(payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range kickv1alpha1.WaitingReasons() {
		if !strings.Contains(string(raw), "`"+string(reason)+"`") {
			t.Errorf("%s never names gate reason `%s`, which notifications carry", payload, reason)
		}
	}
}
