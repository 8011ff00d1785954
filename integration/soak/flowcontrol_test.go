package soak

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// flowStats are API Priority and Fairness counters of one flow schema
// (and the priority level it sends to), from the API server's /metrics.
type flowStats struct {
	dispatched, rejected float64
	// waitSum and waitCount: the time requests waited in APF's queues.
	waitSum, waitCount float64
}

// flowSnapshot is flowStats per "flow schema → priority level".
type flowSnapshot map[string]flowStats

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// flowControl reads the APF counters; nil when APF is off or /metrics
// cannot be read (the report then says so).
func flowControl(ctx context.Context, cfg *rest.Config) flowSnapshot {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	out := flowSnapshot{}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		key := l["flow_schema"] + " → " + l["priority_level"]
		s := out[key]
		switch name {
		case "apiserver_flowcontrol_dispatched_requests_total":
			s.dispatched += v
		case "apiserver_flowcontrol_rejected_requests_total":
			s.rejected += v
		case "apiserver_flowcontrol_request_wait_duration_seconds_sum":
			s.waitSum += v
		case "apiserver_flowcontrol_request_wait_duration_seconds_count":
			s.waitCount += v
		default:
			continue
		}
		out[key] = s
	}
	return out
}

// since is what happened between two snapshots, one "schema → level:
// dispatched N, rejected N, mean queue wait D" per flow schema that saw
// requests, most requests first.
func (after flowSnapshot) since(before flowSnapshot) []string {
	type row struct {
		key string
		s   flowStats
	}
	var rows []row
	for key, a := range after {
		b := before[key]
		d := flowStats{a.dispatched - b.dispatched, a.rejected - b.rejected, a.waitSum - b.waitSum, a.waitCount - b.waitCount}
		if d.dispatched+d.rejected > 0 {
			rows = append(rows, row{key, d})
		}
	}
	slices.SortFunc(rows, func(x, y row) int { return int(y.s.dispatched - x.s.dispatched) })
	var out []string
	for _, r := range rows {
		wait := time.Duration(0)
		if r.s.waitCount > 0 {
			wait = time.Duration(r.s.waitSum / r.s.waitCount * float64(time.Second))
		}
		out = append(out, fmt.Sprintf("%s: dispatched %.0f, rejected %.0f, mean queue wait %s", r.key, r.s.dispatched, r.s.rejected, wait.Round(time.Microsecond)))
	}
	return out
}
