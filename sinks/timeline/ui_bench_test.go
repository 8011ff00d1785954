package timeline

import (
	"context"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/browser"
)

// BenchmarkOverviewInChromium serves the UI from the timeline server with
// a history of 1,000 workloads and 20,000 events, loads the overview
// (range=all) in headless Chromium once per iteration and reports, as
// p50 and p99 over the iterations: ms-to-drawn, from the start of the
// navigation to the first frame painted with the lanes (the UI's
// "kick:drawn" mark), and its parts at p50: ms-to-fetch (page and script
// loaded, the overview asked for), ms-fetch (the server's answer arrived
// and parsed; ms-fetch-http of it from request to the last byte) and ms-render (from the data to the painted frame). The goal is under a second to drawn. It also reports the page's
// DOM nodes (the overview draws the rows near the viewport) and JS heap,
// checks that scrolling to the end draws the last lane, and the Go heap of a full history of 50,000
// entries (goal: about 20 MB; BenchmarkHistory50k measures the same).
//
//	go test -run '^$' -bench OverviewInChromium -benchtime 10x ./sinks/timeline/
func BenchmarkOverviewInChromium(b *testing.B) {
	h := NewHistory(50000, 0)
	for _, ev := range synthetic(20000, 1000, time.Now().Add(-4*time.Hour)) {
		h.Add(FromRouter(ev)...)
	}
	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kickv1alpha1.AddToScheme(scheme)
	reader := fake.NewClientBuilder().WithScheme(scheme).Build()
	srv := httptest.NewServer((&Server{opts: Options{History: h}, cat: catalog{reader: reader}}).Handler())
	defer srv.Close()

	ctx := browser.New(b, 1500, 900)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var toFetch, fetch, server, toDrawn, render []float64
	var nodes, markers int
	var jsHeap float64
	for b.Loop() {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+"/timeline/ui?range=all"),
			chromedp.WaitReady(chromedp.CSS(`body[data-drawn]`)),
		); err != nil {
			b.Fatal(err)
		}
		marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`["kick:fetch", "kick:data", "kick:drawn"].map((n) => performance.getEntriesByName(n).at(-1).startTime).concat(
			performance.getEntriesByType("resource").filter((r) => r.name.includes("/timeline/overview")).map((r) => r.responseEnd - r.requestStart).at(-1))`))
		if err != nil {
			b.Fatal(err)
		}
		page, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[document.getElementsByTagName("*").length,
			document.querySelectorAll("[data-lane] .marker").length, document.getElementById("lanes").height.baseVal.value,
			performance.memory ? performance.memory.usedJSHeapSize / 1e6 : 0]`))
		if err != nil {
			b.Fatal(err)
		}
		nodes, markers, jsHeap = int(page[0]), int(page[1]), page[3]
		// 1,000 lanes and 50 namespace rows below the ruler; the rows on
		// screen drawn with their markers.
		if height := page[2]; height < 1000*24+50*20 || markers < 200 {
			b.Fatalf("overview %v px high with %d markers drawn", height, markers)
		}
		toFetch, fetch, server = append(toFetch, marks[0]), append(fetch, marks[1]-marks[0]), append(server, marks[3])
		toDrawn, render = append(toDrawn, marks[2]), append(render, marks[2]-marks[1])
	}
	b.StopTimer()
	// Scrolled to the end, the last namespace's lanes are drawn.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, document.body.scrollHeight), true`)); err != nil {
		b.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-lane="team-49/Deployment/svc-0999"] .marker`))); err != nil {
		b.Fatalf("the last lane after scrolling to the end: %v", err)
	}
	p := func(v []float64, q float64) float64 {
		slices.Sort(v)
		return v[int(q*float64(len(v)-1))]
	}
	b.ReportMetric(p(toDrawn, 0.5), "p50-ms-to-drawn")
	b.ReportMetric(p(toDrawn, 0.99), "p99-ms-to-drawn")
	b.ReportMetric(p(toFetch, 0.5), "p50-ms-to-fetch")
	b.ReportMetric(p(fetch, 0.5), "p50-ms-fetch")
	b.ReportMetric(p(server, 0.5), "p50-ms-fetch-http")
	b.ReportMetric(p(render, 0.5), "p50-ms-render")
	b.ReportMetric(float64(nodes), "dom-nodes")
	b.ReportMetric(jsHeap, "MB-js-heap")
	b.ReportMetric(historyHeap(b, 50000), "MB/history-50k")
}

// historyHeap is the Go heap a history of n synthetic entries holds, in MB.
func historyHeap(b *testing.B, n int) float64 {
	evs := synthetic(n, 1000, time.Now().Add(-4*time.Hour))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	h := NewHistory(n, 24*time.Hour)
	for _, ev := range evs {
		h.Add(FromRouter(ev)...)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if h.Len() != n {
		b.Fatalf("history holds %d", h.Len())
	}
	runtime.KeepAlive(h)
	runtime.KeepAlive(evs)
	return float64(after.HeapAlloc-before.HeapAlloc) / 1e6
}
