package lazylog

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// zaprLogger is a zapr logger writing JSON lines at info level and above to out, with the
// caller, as a manager's logger would with caller reporting on.
func zaprLogger(out *bytes.Buffer, lazySink bool) logr.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	core := Core(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(out), zapcore.InfoLevel))
	l := zapr.NewLogger(zap.New(core, zap.AddCaller()))
	if lazySink {
		l = logr.New(Sink(l.GetSink()))
	}
	return l
}

// TestSinkWritesWhatZaprWrites: through Sink, names, values (in branches of one logger),
// levels, errors and the caller come out as zapr writes them itself.
func TestSinkWritesWhatZaprWrites(t *testing.T) {
	var lazyOut, eagerOut bytes.Buffer
	for _, c := range []struct {
		out  *bytes.Buffer
		lazy bool
	}{{&lazyOut, true}, {&eagerOut, false}} {
		log := zaprLogger(c.out, c.lazy).WithName("observe").WithValues("controller", "observe-secret")
		a := log.WithValues("Secret", klog.KRef("team-a", "db")).WithName("a")
		b := log.WithValues("Secret", klog.KRef("team-b", "db"))
		a.Info("first", "consumers", 2)
		b.Error(errors.New("boom"), "second")
		b.V(1).Info("not written")
		a.WithValues("reconcileID", "6f1c").Info("third")
		logr.FromContextOrDiscard(logr.NewContext(context.Background(), a)).Info("fourth")
		a.WithCallDepth(0).Info("fifth")
	}
	if lazyOut.String() != eagerOut.String() {
		t.Fatalf("through Sink:\n%s\nzapr alone:\n%s", lazyOut.String(), eagerOut.String())
	}
	if !strings.Contains(lazyOut.String(), `"caller":"lazylog/sink_test.go:`) || strings.Count(lazyOut.String(), "\n") != 5 {
		t.Errorf("want 5 lines naming this file as their caller:\n%s", lazyOut.String())
	}
}

// reconcileLogger is what controller-runtime does for each reconcile's logger (its builder's
// LogConstructor, then the reconcile ID and the context) when the reconcile logs nothing.
func reconcileLogger(base logr.Logger, req types.NamespacedName) {
	log := base.WithValues("Secret", klog.KRef(req.Namespace, req.Name)).WithValues("namespace", req.Namespace, "name", req.Name)
	log = log.WithValues("reconcileID", types.UID("6f1c2a9e-0000-4000-8000-000000000000"))
	ctx := logf.IntoContext(context.Background(), log)
	log.V(5).Info("Reconciling")
	logf.FromContext(ctx).V(5).Info("Reconcile successful")
}

// TestReconcileLoggerThatWritesNothingIsCheap: a reconcile's logger made through Sink and
// never written to allocates at most 60% of what it does through zapr with Core alone (what is
// left: the values boxed into interfaces, the context, the slices of each call).
func TestReconcileLoggerThatWritesNothingIsCheap(t *testing.T) {
	var out bytes.Buffer
	req := types.NamespacedName{Namespace: "team-a", Name: "db"}
	count := func(lazy bool) float64 {
		base := zaprLogger(&out, lazy).WithValues("controller", "observe-secret", "controllerGroup", "", "controllerKind", "Secret")
		return testing.AllocsPerRun(200, func() { reconcileLogger(base, req) })
	}
	if lazy, eager := count(true), count(false); lazy*5 > eager*3 {
		t.Errorf("a reconcile's logger: %.0f allocations through Sink, %.0f through zapr; want at most 60%%", lazy, eager)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}

// BenchmarkReconcileLogger is controller-runtime's per-reconcile logger that logs nothing,
// through zapr with Core ("zapr") and with Sink as well ("sink").
func BenchmarkReconcileLogger(b *testing.B) {
	req := types.NamespacedName{Namespace: "team-a", Name: "db"}
	for _, c := range []struct {
		name string
		lazy bool
	}{{"zapr", false}, {"sink", true}} {
		b.Run(c.name, func(b *testing.B) {
			base := zaprLogger(&bytes.Buffer{}, c.lazy).WithValues("controller", "observe-secret", "controllerGroup", "", "controllerKind", "Secret")
			b.ReportAllocs()
			for b.Loop() {
				reconcileLogger(base, req)
			}
		})
	}
}
