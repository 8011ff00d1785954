package timeline

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/browser"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// TestHaltedFanOutIsMarked: a fan-out halted by api's failed rollout shows,
// in headless Chromium, a stop-sign marker on api's lane (the RolloutHalted
// Event) and held markers on web's lane (its RolloutHalted gate and its
// request's HeldByRolloutHalt Event), both in
// the failure colour, and the legend explains them.
func TestHaltedFanOutIsMarked(t *testing.T) {
	browser.Chromium(t)
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	api := entry.Workload{Namespace: "shop", Kind: "Deployment", Name: "api"}
	web := entry.Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}
	h := NewHistory(100, 0)
	h.Add(
		entry.NewChange(api, "Secret shared", "Relevant", at, 2),
		entry.NewChange(web, "Secret shared", "Relevant", at, 2),
		entry.NewRestart(api, "deployment-api", at.Add(time.Second), 1),
		entry.NewGate(web, entry.GateDecision{Request: "deployment-web", Stage: "Halt", Reason: string(kickv1alpha1.GateRolloutHalted),
			Message: "Secret/shared: halted after Deployment shop/api failed its rollout", At: at.Add(40 * time.Second)}),
		entry.NewPhase(api, entry.Phase{Request: "deployment-api", To: "Failed", At: at.Add(40 * time.Second), Outcome: kickv1alpha1.ReasonProgressDeadlineExceeded}),
		entry.Entry{Time: at.Add(40 * time.Second), Type: entry.Event, Workload: api, Reason: "RolloutHalted", Warning: true,
			Summary: "Secret/shared: halted after Deployment shop/api failed its rollout; 1 restarts held", ID: "halt-event"},
		entry.Entry{Time: at.Add(41 * time.Second), Type: entry.Event, Workload: web, Reason: "HeldByRolloutHalt",
			Summary: "KickRequest deployment-web: HeldByRolloutHalt", ID: "held-event"},
	)
	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kickv1alpha1.AddToScheme(scheme)
	srv := httptest.NewServer((&Server{opts: Options{History: h}, cat: catalog{reader: fake.NewClientBuilder().WithScheme(scheme).Build()}}).Handler())
	defer srv.Close()

	ctx, cancel := context.WithTimeout(browser.New(t, 1280, 480), 90*time.Second)
	defer cancel()
	span := url.Values{"from": {at.Add(-time.Minute).Format(time.RFC3339)}, "to": {at.Add(2 * time.Minute).Format(time.RFC3339)}}
	lane := func(w entry.Workload) string { return fmt.Sprintf(`[data-lane=%q]`, w.Key()) }
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/timeline/ui?"+span.Encode()),
		chromedp.WaitVisible(chromedp.CSS(lane(api)+` [data-mark="halt"]`)),
		chromedp.WaitVisible(chromedp.CSS(lane(web)+` [data-mark="held"]`)),
	); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("the halt and held markers: %v\npage:\n%.3000s", err, html)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`(() => {
		const style = (sel) => getComputedStyle(document.querySelector(sel));
		const failure = getComputedStyle(document.querySelector(%q)).fill;
		return [style(%q).fill, style(%q).stroke, failure,
			document.querySelectorAll(%q).length + "", document.getElementById("legend").textContent,
			document.querySelectorAll(%q).length + ""];
	})()`, lane(api)+` [data-type="failure"]`, lane(api)+` [data-mark="halt"]`, lane(web)+` [data-mark="held"]`, `[data-mark="halt"]`,
		lane(web)+` [data-mark="held"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[0] != got[2] || got[1] != got[2] || got[3] != "1" || got[5] != "2" {
		t.Errorf("halt fill %s, held stroke %s, want both the failure colour %s; %s halt markers, want 1; held markers %v, want 2", got[0], got[1], got[2], got[3], got[5:])
	}
	if legend := got[4]; !strings.Contains(legend, "halt") || !strings.Contains(legend, "held") {
		t.Errorf("legend %q names neither halt nor held", legend)
	}
}
