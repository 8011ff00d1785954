package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// promSnapshot is one scrape of the controller's Prometheus endpoint,
// reduced to the series the report uses: client-go's request counter and
// latency, controller-runtime's workqueue histograms and Go's memory stats.
// Any controller built on client-go and controller-runtime exposes them.
type promSnapshot map[string][]promSample

type promSample struct {
	labels map[string]string
	value  float64
}

var promNames = []string{
	"rest_client_requests_total",
	"rest_client_request_duration_seconds_sum", "rest_client_request_duration_seconds_count",
	"workqueue_adds_total",
	"workqueue_queue_duration_seconds_sum", "workqueue_queue_duration_seconds_count",
	"workqueue_work_duration_seconds_sum", "workqueue_work_duration_seconds_count",
	"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes",
	// kube-apiserver's own view of the requests it served (see serverCalls).
	"apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count",
	// and the watch events it sent (see serverWatches).
	"apiserver_watch_events_total", "apiserver_watch_events_sizes_sum", "apiserver_longrunning_requests",
}

// scrape reads the metrics endpoint; nil without one.
func (p *controllerProc) scrape() (promSnapshot, error) {
	if p.metricsURL == "" {
		return nil, nil
	}
	resp, err := httpClient.Get(p.metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", p.metricsURL, resp.Status)
	}
	return parseProm(resp.Body)
}

// parseProm parses the Prometheus text format, keeping promNames only.
func parseProm(r io.Reader) (promSnapshot, error) {
	want := map[string]bool{}
	for _, n := range promNames {
		want[n] = true
	}
	out := promSnapshot{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if !want[name] {
			continue
		}
		rest := line[len(name):]
		labels := map[string]string{}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			for _, kv := range splitLabels(rest[1:end]) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest) // value [timestamp]
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] = append(out[name], promSample{labels, v})
	}
	return out, sc.Err()
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var parts []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == ',' && !inQuote:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}

func (s promSnapshot) has(name string) bool { return len(s[name]) > 0 }

func (s promSnapshot) sum(name string) float64 {
	var t float64
	for _, x := range s[name] {
		t += x.value
	}
	return t
}

func (s promSnapshot) sumBy(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s[name] {
		out[x.labels[label]] += x.value
	}
	return out
}

// Internals is what the controller's own metrics say about a phase.
type Internals struct {
	APICalls       float64            `json:"apiCalls"`
	APICallsByVerb map[string]float64 `json:"apiCallsByMethod,omitempty"`
	// APIMeanMS is the mean client-side API request latency.
	APIMeanMS       float64            `json:"apiMeanMs"`
	APIMeanMSByVerb map[string]float64 `json:"apiMeanMsByVerb,omitempty"`
	Queues          []QueueStats       `json:"workqueues,omitempty"`
}

// QueueStats is one controller workqueue during a phase.
type QueueStats struct {
	Name       string  `json:"name"`
	Adds       float64 `json:"adds"`
	MeanWaitMS float64 `json:"meanWaitMs"`
	MeanWorkMS float64 `json:"meanWorkMs"`
}

// internals computes the deltas between two scrapes; nil when the
// controller exposes no client-go metrics.
func internals(a, b promSnapshot) *Internals {
	if a == nil || b == nil || !b.has("rest_client_requests_total") {
		return nil
	}
	in := &Internals{APICalls: b.sum("rest_client_requests_total") - a.sum("rest_client_requests_total")}
	in.APICallsByVerb = deltaBy(a, b, "rest_client_requests_total", "method")
	in.APIMeanMS = meanMS(b.sum("rest_client_request_duration_seconds_sum")-a.sum("rest_client_request_duration_seconds_sum"),
		b.sum("rest_client_request_duration_seconds_count")-a.sum("rest_client_request_duration_seconds_count"))
	sums := deltaBy(a, b, "rest_client_request_duration_seconds_sum", "verb")
	counts := deltaBy(a, b, "rest_client_request_duration_seconds_count", "verb")
	in.APIMeanMSByVerb = map[string]float64{}
	for verb, n := range counts {
		in.APIMeanMSByVerb[verb] = meanMS(sums[verb], n)
	}
	adds := deltaBy(a, b, "workqueue_adds_total", "name")
	waitSum, waitN := deltaBy(a, b, "workqueue_queue_duration_seconds_sum", "name"), deltaBy(a, b, "workqueue_queue_duration_seconds_count", "name")
	workSum, workN := deltaBy(a, b, "workqueue_work_duration_seconds_sum", "name"), deltaBy(a, b, "workqueue_work_duration_seconds_count", "name")
	for name, n := range adds {
		in.Queues = append(in.Queues, QueueStats{Name: name, Adds: n,
			MeanWaitMS: meanMS(waitSum[name], waitN[name]), MeanWorkMS: meanMS(workSum[name], workN[name])})
	}
	sort.Slice(in.Queues, func(i, j int) bool { return in.Queues[i].Name < in.Queues[j].Name })
	return in
}

// deltaBy returns b-a per label value, leaving out values that did not grow.
func deltaBy(a, b promSnapshot, name, label string) map[string]float64 {
	before, after := a.sumBy(name, label), b.sumBy(name, label)
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// ServerCall is one kind of request as kube-apiserver timed it, from
// receiving it to writing its response (apiserver_request_duration_seconds).
type ServerCall struct {
	Count  float64 `json:"count"`
	MeanMS float64 `json:"meanMs"`
}

// serverCalls is what kube-apiserver served between two scrapes of its
// metrics, per "VERB resource[/subresource]", leaving out WATCH (a watch's
// duration is how long it stayed open). Beside the controller's own timing
// it tells where a request's time went: a request slower on the client
// than on the server waited in the client or on its connection.
func serverCalls(a, b promSnapshot) map[string]ServerCall {
	if a == nil || b == nil {
		return nil
	}
	key := func(l map[string]string) string {
		k := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			k += "/" + l["subresource"]
		}
		return k
	}
	total := func(s promSnapshot, name string) map[string]float64 {
		out := map[string]float64{}
		for _, x := range s[name] {
			if v := x.labels["verb"]; v != "WATCH" && v != "CONNECT" {
				out[key(x.labels)] += x.value
			}
		}
		return out
	}
	sum0, sum1 := total(a, "apiserver_request_duration_seconds_sum"), total(b, "apiserver_request_duration_seconds_sum")
	n0, n1 := total(a, "apiserver_request_duration_seconds_count"), total(b, "apiserver_request_duration_seconds_count")
	out := map[string]ServerCall{}
	for k, n := range n1 {
		if d := n - n0[k]; d > 0 {
			out[k] = ServerCall{Count: d, MeanMS: meanMS(sum1[k]-sum0[k], d)}
		}
	}
	return out
}

// ServerWatch is what kube-apiserver sent on the watches of one resource:
// every watcher's copy of every event counts.
type ServerWatch struct {
	Watches float64 `json:"watches"`
	Events  float64 `json:"events"`
	KB      float64 `json:"kb"`
}

// serverWatches is, per resource, how many watches were open at the end
// (apiserver_longrunning_requests) and the watch events sent and their
// size between two scrapes of kube-apiserver's metrics: the work each
// watching client adds to every write of what it watches.
func serverWatches(a, b promSnapshot) map[string]ServerWatch {
	if a == nil || b == nil {
		return nil
	}
	out := map[string]ServerWatch{}
	// Older API servers label watch events by kind instead of resource.
	label := "resource"
	if len(b["apiserver_watch_events_total"]) > 0 && b["apiserver_watch_events_total"][0].labels["resource"] == "" {
		label = "kind"
	}
	events, size := deltaBy(a, b, "apiserver_watch_events_total", label), deltaBy(a, b, "apiserver_watch_events_sizes_sum", label)
	for r, n := range events {
		w := out[r]
		w.Events, w.KB = n, size[r]/1024
		out[r] = w
	}
	for _, x := range b["apiserver_longrunning_requests"] {
		if x.labels["verb"] == "WATCH" && x.value > 0 {
			w := out[x.labels["resource"]]
			w.Watches += x.value
			out[x.labels["resource"]] = w
		}
	}
	return out
}

func meanMS(sumSeconds, count float64) float64 {
	if count <= 0 {
		return 0
	}
	return sumSeconds / count * 1000
}
