package schedule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kick-operator/kick/api/v1alpha1"
)

// The CRD checks cron field ranges at admission with CEL regular
// expressions. These tests hold them to the compiler: admission must never
// refuse an expression Compile accepts, and what it lets through that Compile
// refuses must be something a regular expression cannot see (a reversed
// range, a date that never occurs), which the policy's Ready condition
// reports instead.

// admissionRules reads the cron field rules from the generated CRD and
// returns, per field rule, the regular expression it requires.
func admissionRules(t testing.TB) []*regexp.Regexp {
	t.Helper()
	data, err := os.ReadFile("../../deploy/crds/kick.corewire.io_kickpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	cron := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.
		at("spec", "schedule", "windows").Items.Properties["cron"]
	guarded := regexp.MustCompile(`^!self\.matches\(r'[^']*'\) \|\| self\.matches\(r'([^']*)'\)$`)
	var out []*regexp.Regexp
	for _, v := range cron.Validations {
		if m := guarded.FindStringSubmatch(v.Rule); m != nil {
			out = append(out, regexp.MustCompile(m[1]))
		}
	}
	if len(out) != 5 {
		t.Fatalf("found %d cron field rules in the CRD, want one per field (5)", len(out))
	}
	return out
}

type schemaNode struct {
	Properties  map[string]*schemaNode `json:"properties"`
	Items       *schemaNode            `json:"items"`
	Validations []struct {
		Rule string `json:"rule"`
	} `json:"x-kubernetes-validations"`
}

func (n *schemaNode) at(path ...string) *schemaNode {
	for _, p := range path {
		n = n.Properties[p]
	}
	return n
}

// admitted applies the field rules to a five-field expression.
func admitted(rules []*regexp.Regexp, expr string) bool {
	for _, r := range rules {
		if !r.MatchString(expr) {
			return false
		}
	}
	return true
}

// notVisibleToAdmission: compile errors a per-field pattern cannot catch.
func notVisibleToAdmission(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "beyond end of range") || strings.Contains(msg, "never matches")
}

func compiles(expr string) error {
	_, err := Compile([]v1alpha1.ScheduleWindow{{Type: v1alpha1.WindowAllow, Cron: expr, Duration: "1h"}})
	return err
}

func TestAdmissionNamesTheFieldOutOfRange(t *testing.T) {
	rules := admissionRules(t)
	for _, tc := range []struct {
		expr  string
		field int // index of the rule that refuses it; -1: admitted
	}{
		{"0 2 * * *", -1},
		{"*/15 9-17 ? jan-dec MON-FRI", -1},
		{"0,30 0-23/2 1-31 1-12 0-6", -1},
		{"60 * * * *", 0},
		{"0 24 * * *", 1},
		{"0 0 0 * *", 2},
		{"0 0 32 * *", 2},
		{"0 0 * 13 *", 3},
		{"0 0 * foo *", 3},
		{"0 0 * * 7", 4},
		{"0 0 * * sunday", 4},
		{"*/0 * * * *", 0},
		{"1-2-3 * * * *", 0},
	} {
		refusedBy := -1
		for i, r := range rules {
			if !r.MatchString(tc.expr) {
				refusedBy = i
				break
			}
		}
		if refusedBy != tc.field {
			t.Errorf("%q: refused by field rule %d, want %d", tc.expr, refusedBy, tc.field)
		}
		if err := compiles(tc.expr); (err == nil) != (tc.field < 0) {
			t.Errorf("%q: Compile error %v, but admission expectation %d", tc.expr, err, tc.field)
		}
	}
}

// TestAdmissionAgreesWithCompile generates many expressions near the field
// bounds and checks both directions.
func TestAdmissionAgreesWithCompile(t *testing.T) {
	rules := admissionRules(t)
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}
	names := [5][]string{nil, nil, nil, {"jan", "Feb", "DEC"}, {"sun", "Mon", "SAT"}}
	value := func(f int) string {
		lo, hi := bounds[f][0], bounds[f][1]
		if len(names[f]) > 0 && rng.IntN(4) == 0 {
			return names[f][rng.IntN(len(names[f]))]
		}
		return fmt.Sprint(lo - 1 + rng.IntN(hi-lo+3)) // one past each end too
	}
	item := func(f int) string {
		var s string
		switch rng.IntN(4) {
		case 0:
			s = []string{"*", "?"}[rng.IntN(2)]
		case 1:
			s = value(f) + "-" + value(f)
		default:
			s = value(f)
		}
		if rng.IntN(3) == 0 {
			s += fmt.Sprintf("/%d", rng.IntN(99)) // 0 is refused by both
		}
		return s
	}
	for range 20000 {
		fields := make([]string, 5)
		for f := range fields {
			items := make([]string, 1+rng.IntN(3))
			for i := range items {
				items[i] = item(f)
			}
			fields[f] = strings.Join(items, ",")
		}
		expr := strings.Join(fields, " ")
		err := compiles(expr)
		switch ok := admitted(rules, expr); {
		case err == nil && !ok:
			t.Fatalf("admission refuses %q, which Compile accepts", expr)
		case err != nil && ok && !notVisibleToAdmission(err):
			t.Fatalf("admission lets %q through, but Compile refuses it: %v", expr, err)
		}
	}
}
