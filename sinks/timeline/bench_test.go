package timeline

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kick-operator/kick/router"
)

// synthetic returns n router events spread over workloads workloads in 50
// namespaces, the mix a busy cluster produces: a change, a gate decision,
// the restart, the completion.
func synthetic(n, workloads int, start time.Time) []router.Event {
	evs := make([]router.Event, 0, n)
	for i := 0; len(evs) < n; i++ {
		w := i % workloads
		ns := fmt.Sprintf("team-%02d", w%50)
		target := router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: fmt.Sprintf("svc-%04d", w)}
		req := router.RequestRef{Namespace: ns, Name: "deployment-" + target.Name, UID: fmt.Sprint(w)}
		at := start.Add(time.Duration(i) * 250 * time.Millisecond)
		switch i / workloads % 4 {
		case 0:
			evs = append(evs, router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: ns, Name: fmt.Sprintf("db-%04d", w)},
				Class: router.ClassRelevant, ChangeTime: at, Consumers: []router.ObjectRef{target}})
		case 1:
			evs = append(evs, router.GateChanged{Request: req, Target: target, Stage: "Schedule", Reason: "OutsideSchedule",
				Message: "outside the allowed window mon-fri 09:00-17:00 Europe/Berlin", Time: at, OpensAt: at.Add(time.Hour)})
		case 2:
			evs = append(evs, router.PhaseChanged{Request: req, From: "WaitingForGate", To: "Executing", Target: target, Time: at})
		case 3:
			evs = append(evs, router.PhaseChanged{Request: req, From: "WaitingForRollout", To: "Succeeded", Target: target, Time: at,
				Outcome: "RestartCompleted", OutcomeMessage: "Deployment rolled out with restart stamp " + at.Format(time.RFC3339Nano)})
		}
	}
	return evs
}

// BenchmarkHistory50k: the memory of a full history of 50,000 entries
// (goal: about 20 MB at most), reported as MB/history, and the time to
// record them.
func BenchmarkHistory50k(b *testing.B) {
	var heap float64
	for b.Loop() {
		heap = historyHeap(b, 50000)
	}
	b.ReportMetric(heap, "MB/history")
}

// BenchmarkOverview1000x20000: building and encoding the overview of 1,000
// workloads with 20,000 entries, reported with its size.
func BenchmarkOverview1000x20000(b *testing.B) {
	evs := synthetic(20000, 1000, time.Now().Add(-4*time.Hour))
	h := NewHistory(50000, 0)
	for _, ev := range evs {
		h.Add(FromRouter(ev)...)
	}
	var size int
	for b.Loop() {
		es := h.Select(nil)
		o := buildOverview(time.Time{}, time.Now(), nil, es)
		cw := &countingWriter{}
		if err := json.NewEncoder(cw).Encode(o); err != nil {
			b.Fatal(err)
		}
		size = cw.n
		if len(o.Lanes) != 1000 {
			b.Fatalf("%d lanes", len(o.Lanes))
		}
	}
	b.ReportMetric(float64(size)/1e6, "MB/json")
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkRecordedEvent: what recording one router event costs the
// timeline's goroutine (the publisher only enqueues).
func BenchmarkRecordedEvent(b *testing.B) {
	evs := synthetic(4096, 1000, time.Now().Add(-time.Hour))
	h := NewHistory(50000, 24*time.Hour)
	i := 0
	for b.Loop() {
		h.Add(FromRouter(evs[i%len(evs)])...)
		i++
	}
}
