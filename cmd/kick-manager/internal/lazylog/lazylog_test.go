package lazylog

import (
	"bytes"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// countingCore is a zapcore.Core that counts how often context fields are
// encoded into it (With) and records what it writes.
type countingCore struct {
	zapcore.LevelEnabler
	mu      *sync.Mutex
	withs   *int
	context []zapcore.Field
	written *[][]zapcore.Field
}

func newCountingCore(level zapcore.Level) *countingCore {
	return &countingCore{LevelEnabler: level, mu: &sync.Mutex{}, withs: new(int), written: &[][]zapcore.Field{}}
}

func (c *countingCore) With(fields []zapcore.Field) zapcore.Core {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.withs++
	cp := *c
	cp.context = append(append([]zapcore.Field(nil), c.context...), fields...)
	return &cp
}

func (c *countingCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *countingCore) Write(_ zapcore.Entry, fields []zapcore.Field) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.written = append(*c.written, append(append([]zapcore.Field(nil), c.context...), fields...))
	return nil
}

func (c *countingCore) Sync() error { return nil }

func (c *countingCore) counts() (withs, writes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.withs, len(*c.written)
}

func keys(fields []zapcore.Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Key
	}
	return out
}

func TestContextIsEncodedOnlyWhenALineIsWritten(t *testing.T) {
	base := newCountingCore(zapcore.InfoLevel)
	log := zap.New(Core(base))

	// What controller-runtime does for every reconcile.
	perReconcile := log.With(zap.String("controller", "observe-secret")).
		With(zap.String("namespace", "team-a"), zap.String("name", "db")).
		With(zap.String("reconcileID", "1234"))
	perReconcile.Debug("below the level")
	if withs, writes := base.counts(); withs != 0 || writes != 0 {
		t.Fatalf("context encoded %d times and %d lines written before anything was logged; want 0 and 0", withs, writes)
	}

	perReconcile.Info("restarted workload", zap.Int("attempt", 1))
	perReconcile.Info("again")
	withs, writes := base.counts()
	if withs != 1 || writes != 2 {
		t.Fatalf("after two lines: context encoded %d times, %d lines written; want 1 and 2", withs, writes)
	}
	got := keys((*base.written)[0])
	want := []string{"controller", "namespace", "name", "reconcileID", "attempt"}
	if len(got) != len(want) {
		t.Fatalf("fields of the first line %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fields of the first line %v, want %v (context oldest first, then the line's own)", got, want)
		}
	}
}

func TestBranchesKeepTheirOwnContext(t *testing.T) {
	base := newCountingCore(zapcore.InfoLevel)
	parent := zap.New(Core(base)).With(zap.String("controller", "c"))
	a := parent.With(zap.String("name", "a"))
	b := parent.With(zap.String("name", "b"))
	b.Info("b")
	a.Info("a")
	parent.Info("parent")
	lines := *base.written
	if len(lines) != 3 {
		t.Fatalf("%d lines written, want 3", len(lines))
	}
	for i, want := range [][]string{{"controller", "name"}, {"controller", "name"}, {"controller"}} {
		if got := keys(lines[i]); len(got) != len(want) {
			t.Errorf("line %d has fields %v, want %v", i, got, want)
		}
	}
	if lines[0][1].String != "b" || lines[1][1].String != "a" {
		t.Errorf("branches mixed their context: %q then %q, want b then a", lines[0][1].String, lines[1][1].String)
	}
}

// The JSON a lazy logger writes is byte for byte what zap writes with the
// context encoded eagerly.
func TestOutputIsTheSameAsEager(t *testing.T) {
	write := func(wrap func(zapcore.Core) zapcore.Core) string {
		var buf bytes.Buffer
		cfg := zap.NewProductionEncoderConfig()
		cfg.TimeKey = ""
		core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(&buf), zapcore.DebugLevel)
		log := zap.New(wrap(core)).Named("setup")
		l := log.With(zap.String("controller", "kickrequest"), zap.Any("ref", struct{ Namespace, Name string }{"ns", "web"})).
			With(zap.Int("n", 3))
		l.Info("first", zap.Bool("ok", true))
		l.Named("sub").Warn("second")
		log.Error("third")
		return buf.String()
	}
	eager := write(func(c zapcore.Core) zapcore.Core { return c })
	lazy := write(Core)
	if lazy != eager {
		t.Fatalf("lazy output differs from eager:\nlazy:\n%s\neager:\n%s", lazy, eager)
	}
}

func TestConcurrentFirstWritesEncodeOnce(t *testing.T) {
	base := newCountingCore(zapcore.InfoLevel)
	l := zap.New(Core(base)).With(zap.String("controller", "c"))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { l.Info("line") })
	}
	wg.Wait()
	if withs, writes := base.counts(); withs != 1 || writes != 16 {
		t.Fatalf("context encoded %d times for %d lines; want 1 for 16", withs, writes)
	}
}

func TestLevelIsTheWrappedCores(t *testing.T) {
	c := Core(zapcore.NewNopCore())
	if got := zapcore.LevelOf(Core(newCountingCore(zapcore.WarnLevel))); got != zapcore.WarnLevel {
		t.Errorf("LevelOf = %v, want warn", got)
	}
	if c.Enabled(zapcore.ErrorLevel) {
		t.Errorf("a wrapped nop core is enabled")
	}
}

// BenchmarkPerReconcileLogger is what each reconcile pays for its logger
// when it logs nothing: controller-runtime's three With calls.
func BenchmarkPerReconcileLogger(b *testing.B) {
	for _, bc := range []struct {
		name string
		wrap func(zapcore.Core) zapcore.Core
	}{{"eager", func(c zapcore.Core) zapcore.Core { return c }}, {"lazy", Core}} {
		b.Run(bc.name, func(b *testing.B) {
			core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&bytes.Buffer{}), zapcore.InfoLevel)
			log := zap.New(bc.wrap(core)).With(zap.String("controller", "observe-secret"))
			ref := struct{ Namespace, Name string }{"team-a", "db"}
			b.ReportAllocs()
			for b.Loop() {
				l := log.With(zap.Any("Secret", ref), zap.String("namespace", "team-a"), zap.String("name", "db")).
					With(zap.String("reconcileID", "6f1c"))
				l.Debug("not logged")
			}
		})
	}
}
