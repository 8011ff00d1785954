// Package lazylog defers the encoding of a zap logger's context fields
// until something is actually logged with them.
//
// controller-runtime gives every reconcile a logger with the controller,
// the object's kind, namespace and name and a reconcile ID. zap encodes
// such fields when the logger is made: it clones the JSON encoder (a 1 KiB
// buffer) and encodes the object reference by reflection, on every
// reconcile, although almost none of them logs a line. In a burst of 200
// restarts that was about 9 MB of garbage, and the collector's CPU with
// it. With Core the fields are kept as they are and encoded, once per
// logger, on its first line. A value given to With is therefore encoded as
// it is at that first line: pass values (strings, numbers, object
// references), not pointers to something that changes meanwhile.
package lazylog

import (
	"sync"

	"go.uber.org/zap/zapcore"
)

// Core wraps core so that With only records its fields; they are encoded
// the first time the resulting core writes an entry. Use it as
// zap.WrapCore(lazylog.Core). Levels, entries and their order are those
// of core.
func Core(core zapcore.Core) zapcore.Core {
	return &lazyCore{base: core}
}

// lazyCore is base plus context fields not encoded yet.
type lazyCore struct {
	base   zapcore.Core
	fields []zapcore.Field // context added by With since base, oldest first

	once  sync.Once
	built zapcore.Core // base.With(fields), made on the first write
}

func (c *lazyCore) Enabled(lvl zapcore.Level) bool { return c.base.Enabled(lvl) }

// Level lets zapcore.LevelOf see the wrapped core's level.
func (c *lazyCore) Level() zapcore.Level { return zapcore.LevelOf(c.base) }

func (c *lazyCore) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	all := make([]zapcore.Field, 0, len(c.fields)+len(fields))
	all = append(append(all, c.fields...), fields...)
	return &lazyCore{base: c.base, fields: all}
}

func (c *lazyCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *lazyCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	return c.encoded().Write(ent, fields)
}

func (c *lazyCore) Sync() error { return c.base.Sync() }

// encoded is the wrapped core with the context fields encoded.
func (c *lazyCore) encoded() zapcore.Core {
	c.once.Do(func() {
		c.built = c.base
		if len(c.fields) > 0 {
			c.built = c.base.With(c.fields)
		}
	})
	return c.built
}
