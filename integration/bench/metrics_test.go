package main

import (
	"strings"
	"testing"
)

func parse(t *testing.T, text string) promSnapshot {
	t.Helper()
	s, err := parseProm(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServerCallsAreTheWindowsMeanPerRequestKind(t *testing.T) {
	before := parse(t, `
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PATCH",version="v1"} 1.0
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PATCH",version="v1"} 100
apiserver_request_duration_seconds_sum{component="apiserver",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 50
apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="WATCH",version="v1"} 100
apiserver_request_duration_seconds_count{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
`)
	after := parse(t, `
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PATCH",version="v1"} 1.06
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PATCH",version="v1"} 110
apiserver_request_duration_seconds_sum{component="apiserver",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 50
apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="WATCH",version="v1"} 400
apiserver_request_duration_seconds_count{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="WATCH",version="v1"} 2
apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="GET",version="v1"} 0.004
apiserver_request_duration_seconds_count{component="apiserver",group="",resource="secrets",scope="namespace",subresource="",verb="GET",version="v1"} 2
`)
	got := serverCalls(before, after)
	if c := got["PATCH deployments"]; c.Count != 10 || c.MeanMS < 5.99 || c.MeanMS > 6.01 {
		t.Errorf("PATCH deployments = %+v, want 10 calls of 6 ms", c)
	}
	if c := got["GET secrets"]; c.Count != 2 || c.MeanMS < 1.99 || c.MeanMS > 2.01 {
		t.Errorf("GET secrets (new in the window) = %+v, want 2 calls of 2 ms", c)
	}
	if _, ok := got["PUT deployments/status"]; ok {
		t.Errorf("a request kind with no call in the window is listed: %v", got)
	}
	if _, ok := got["WATCH secrets"]; ok {
		t.Errorf("a watch's duration is how long it stayed open, not a request's time: %v", got)
	}
	if serverCalls(nil, after) != nil {
		t.Error("without a first scrape there is no window")
	}
}

func TestServerWatchesCountWhatWasSentPerResource(t *testing.T) {
	before := parse(t, `
apiserver_watch_events_total{group="apps",resource="deployments",version="v1"} 100
apiserver_watch_events_sizes_sum{group="apps",resource="deployments",version="v1"} 102400
apiserver_watch_events_total{group="",resource="secrets",version="v1"} 7
`)
	after := parse(t, `
apiserver_watch_events_total{group="apps",resource="deployments",version="v1"} 160
apiserver_watch_events_sizes_sum{group="apps",resource="deployments",version="v1"} 163840
apiserver_watch_events_total{group="",resource="secrets",version="v1"} 7
apiserver_longrunning_requests{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="WATCH",version="v1"} 3
apiserver_longrunning_requests{component="apiserver",group="apps",resource="deployments",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",verb="CONNECT",version="v1"} 2
`)
	got := serverWatches(before, after)
	if w := got["deployments"]; w.Watches != 4 || w.Events != 60 || w.KB != 60 {
		t.Errorf("deployments = %+v, want 4 watches open, 60 events, 60 KiB", w)
	}
	if _, ok := got["secrets"]; ok {
		t.Errorf("a resource with no event in the window and no watch open is listed: %v", got)
	}
	if _, ok := got["pods"]; ok {
		t.Errorf("a CONNECT is not a watch: %v", got)
	}
}
