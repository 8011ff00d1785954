package lazylog

import (
	"sync"

	"github.com/go-logr/logr"
)

// Sink wraps a logr sink so that WithValues and WithName only record what
// they are given; the wrapped sink gets them the first time the resulting
// logger writes a line. Core makes zap's own With lazy, but zapr still
// turns every key and value into a zap field and clones the zap logger on
// each WithValues: controller-runtime's three WithValues per reconcile
// cost about 25 allocations even so. Use it as logr.New(Sink(l.GetSink()))
// on a logger made by zapr (controller-runtime's zap.New); it calls the
// wrapped sink's Init itself for the one frame it adds. As with Core, pass
// values, not pointers to something that changes before the first line.
func Sink(base logr.LogSink) logr.LogSink {
	return &lazySink{base: base}
}

// lazySink is base plus names and values not given to it yet.
type lazySink struct {
	base   logr.LogSink
	names  []string // WithName since base, oldest first
	values []any    // WithValues since base, oldest first

	once  sync.Once
	built logr.LogSink // base with names and values, made on the first line
}

var (
	_ logr.LogSink          = (*lazySink)(nil)
	_ logr.CallDepthLogSink = (*lazySink)(nil)
)

// Init implements logr.LogSink: the lines go through one more frame, this
// sink's Info or Error.
func (s *lazySink) Init(logr.RuntimeInfo) { s.base.Init(logr.RuntimeInfo{CallDepth: 1}) }

func (s *lazySink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.encoded().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.encoded().Error(err, msg, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	if len(keysAndValues) == 0 {
		return s
	}
	values := make([]any, 0, len(s.values)+len(keysAndValues))
	return &lazySink{base: s.base, names: s.names, values: append(append(values, s.values...), keysAndValues...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	names := make([]string, 0, len(s.names)+1)
	return &lazySink{base: s.base, names: append(append(names, s.names...), name), values: s.values}
}

// WithCallDepth implements logr.CallDepthLogSink.
func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.base.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &lazySink{base: cd.WithCallDepth(depth), names: s.names, values: s.values}
}

// encoded is the wrapped sink with the names and values given.
func (s *lazySink) encoded() logr.LogSink {
	s.once.Do(func() {
		b := s.base
		for _, n := range s.names {
			b = b.WithName(n)
		}
		if len(s.values) > 0 {
			b = b.WithValues(s.values...)
		}
		s.built = b
	})
	return s.built
}
