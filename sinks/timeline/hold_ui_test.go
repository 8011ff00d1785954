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

// TestKickHoldIsMarked: in headless Chromium, a restart a person held with
// a KickHold (web: its gate with reason Held and the HeldByKickHold Event)
// shows a hold marker, a pause sign in its own colour, that differs in
// shape and colour from the held marker of a halted fan-out (api); the
// hold's tooltip names the KickHold, its reason and how to release it, and
// the legend explains both.
func TestKickHoldIsMarked(t *testing.T) {
	browser.Chromium(t)
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	api := entry.Workload{Namespace: "shop", Kind: "Deployment", Name: "api"}
	web := entry.Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}
	holdMessage := `held by KickHold hold-secret-db (Secret/db): "INC-42: rotating"; it holds restarts that bring in a change of Secret/db ` +
		`until it is released (kubectl kick release -n shop secret/db)`
	h := NewHistory(100, 0)
	h.Add(
		entry.NewChange(web, "Secret db", "Relevant", at, 1),
		entry.NewGate(web, entry.GateDecision{Request: "deployment-web", Stage: "Hold", Reason: string(kickv1alpha1.GateHeld),
			Message: holdMessage, At: at.Add(time.Second)}),
		entry.Entry{Time: at.Add(time.Second), Type: entry.Event, Workload: web, Reason: "HeldByKickHold",
			Summary: holdMessage, ID: "hold-event"},
		entry.NewChange(api, "Secret shared", "Relevant", at, 1),
		entry.NewGate(api, entry.GateDecision{Request: "deployment-api", Stage: "Halt", Reason: string(kickv1alpha1.GateRolloutHalted),
			Message: "Secret/shared: halted after Deployment shop/cache failed its rollout", At: at.Add(40 * time.Second)}),
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
	holdGate := lane(web) + ` [data-mark="hold"][data-type="gate"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/timeline/ui?"+span.Encode()),
		chromedp.WaitVisible(chromedp.CSS(holdGate)),
		chromedp.WaitVisible(chromedp.CSS(lane(web)+` [data-mark="hold"][data-type="event"]`)),
		chromedp.WaitVisible(chromedp.CSS(lane(api)+` [data-mark="held"]`)),
	); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("the hold and held markers: %v\npage:\n%.3000s", err, html)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`(() => {
		const q = (sel) => document.querySelector(sel);
		const hold = q(%q), held = q(%q);
		hold.dispatchEvent(new MouseEvent("mouseover", {bubbles: true, clientX: 10, clientY: 10}));
		return [hold.tagName, held.tagName, getComputedStyle(hold).fill, getComputedStyle(held).stroke,
			document.querySelectorAll(%q).length + "", document.querySelectorAll(%q).length + "",
			q("#tip").hidden + "", q("#tip").textContent, q("#legend").textContent];
	})()`, holdGate, lane(api)+` [data-mark="held"]`, lane(web)+` [data-mark="held"], `+lane(web)+` [data-mark="halt"]`, lane(api)+` [data-mark="hold"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("page answered %q", got)
	}
	if got[0] == got[1] || got[2] == got[3] {
		t.Errorf("the hold marker (%s, fill %s) looks like the held marker of a halt (%s, stroke %s)", got[0], got[2], got[1], got[3])
	}
	if got[4] != "0" || got[5] != "0" {
		t.Errorf("%s halt markers on the held lane, %s hold markers on the halted lane; want none", got[4], got[5])
	}
	if tip := got[7]; got[6] != "false" || !strings.Contains(tip, "waiting at the Hold gate: Held") ||
		!strings.Contains(tip, `"INC-42: rotating"`) || !strings.Contains(tip, "kubectl kick release -n shop secret/db") {
		t.Errorf("the hold's tooltip (hidden %s) does not name the hold, its reason and its release:\n%s", got[6], tip)
	}
	if legend := got[8]; !strings.Contains(legend, "held by a KickHold") || !strings.Contains(legend, "held by a halt") {
		t.Errorf("legend %q does not tell a KickHold from a halt", legend)
	}
}
