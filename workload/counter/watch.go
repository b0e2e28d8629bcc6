package counter

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/reads"
)

// Watch delay: for every successful write in the measured window, the
// time from its response (its ack) until each watcher sees its
// resourceVersion. Plain watchers (--watchers) are watches of their own on
// the run's clients; with --read informer the writers' informers are
// watchers too, timed when their event handler runs, as a controller's
// would be. A watcher that sees a write before its writer has the
// response is counted apart (its delay would be negative); one that sees
// it after its ack left the object's ring cannot be timed and is counted
// as untimed; acks a watcher never saw by the end are missed.

// watcher kinds: the index of a kind's figures.
const (
	plainWatcher = iota
	informerWatcher
)

var watcherKinds = [reads.WatcherKinds]string{plainWatcher: "plain", informerWatcher: "informer"}

// sighting is what one kind of watcher saw, in the measured window.
type sighting struct {
	mu              sync.Mutex
	delay           *hdrhistogram.Histogram
	watchers        int   // of the kind
	early, untimed  int64 // seen before the ack; seen too late to time
	relists, closed int64 // lists after the first (a 410 or an error); watches the server ended
}

// watching is the run's watchers and what they saw.
type watching struct {
	acks     []reads.Acks
	names    map[string]int // object name -> index
	kinds    [len(watcherKinds)]sighting
	measured atomic.Int64 // measured acks
	last     []*atomic.Int64
	stop     context.CancelFunc
	done     sync.WaitGroup
	// inWindow says whether now is in the measured window (for relists).
	inWindow func() bool
}

func newWatching(c *counter) *watching {
	w := &watching{acks: c.acks, names: map[string]int{}, inWindow: func() bool { return c.env.Recorder.Stripe(0).Measured(time.Now()) }}
	for i, n := range c.names {
		w.names[n] = i
	}
	for i := range w.kinds {
		w.kinds[i].delay = metrics.NewHistogram()
	}
	return w
}

// acked counts an ack of the measured window and the sightings of it
// that came before it (add's early).
func (w *watching) acked(early [reads.WatcherKinds]int32) {
	w.measured.Add(1)
	for k, n := range early {
		if n > 0 {
			s := &w.kinds[k]
			s.mu.Lock()
			s.early += int64(n)
			s.mu.Unlock()
		}
	}
}

// saw records that a watcher of kind k saw obj at resourceVersion rv at
// time at.
func (w *watching) saw(k int, obj metav1.Object, at time.Time, last *atomic.Int64) {
	rv := reads.ParseRV(obj.GetResourceVersion())
	last.Store(rv)
	i, ok := w.names[obj.GetName()]
	if !ok {
		return
	}
	x, found, pending := w.acks[i].Saw(rv, k) // pending: Add counts it when the ack comes
	s := &w.kinds[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	switch d := at.UnixNano() - x.At; {
	case pending:
	case !found:
		s.untimed++ // the ring moved past it
	case !x.Measured:
	case d < 0:
		s.early++
	default:
		metrics.RecordLatency(s.delay, time.Duration(d))
	}
}

// start opens the plain watchers, each on the run's clients in turn.
func (w *watching) start(ctx context.Context, c *counter) {
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stop = stop
	w.kinds[plainWatcher].watchers = c.env.Spec.Watchers
	for i := range c.env.Spec.Watchers {
		last := &atomic.Int64{}
		w.last = append(w.last, last)
		lw := cache.ToListerWatcherWithContext(c.objType.listWatch(i, c.env.RunID))
		w.done.Go(func() { w.watch(run, lw, last) })
	}
}

// hook makes informer inf a watcher: called before it starts.
func (w *watching) hook(inf cache.SharedIndexInformer) error {
	last := &atomic.Int64{}
	w.last = append(w.last, last)
	w.kinds[informerWatcher].watchers++
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		if m, err := meta.Accessor(o); err == nil {
			w.saw(informerWatcher, m, time.Now(), last)
		}
	}})
	if err != nil {
		return err
	}
	return inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) { w.relisted(informerWatcher) })
}

func (w *watching) relisted(k int) {
	if w.inWindow() {
		w.kinds[k].mu.Lock()
		w.kinds[k].relists++
		w.kinds[k].mu.Unlock()
	}
}

// watch is one plain watcher: it watches from where it last saw, and
// after a 410 Gone (or an error) from the current state, as a relist.
func (w *watching) watch(ctx context.Context, lw cache.ListerWatcherWithContext, last *atomic.Int64) {
	rv := ""
	for ctx.Err() == nil {
		wi, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			w.relisted(plainWatcher)
			rv = ""
			if !k8s.Sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		rv = w.events(ctx, wi, rv, last)
		if ctx.Err() == nil && w.inWindow() {
			s := &w.kinds[plainWatcher]
			s.mu.Lock()
			s.closed++
			s.mu.Unlock()
		}
	}
}

// events reads one watch until it ends and returns the resourceVersion
// to watch from next ("" after a 410 Gone).
func (w *watching) events(ctx context.Context, wi watch.Interface, rv string, last *atomic.Int64) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			at := time.Now()
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					w.relisted(plainWatcher)
					return ""
				}
				return rv
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = m.GetResourceVersion()
			if ev.Type == watch.Modified {
				w.saw(plainWatcher, m, at, last)
			}
		}
	}
}

// finish waits (up to catchUp, and while ctx lasts) for every watcher to
// see the last ack, stops the watchers and returns their figures.
func (w *watching) finish(ctx context.Context, catchUp time.Duration) []results.Figure {
	var newest int64
	for i := range w.acks {
		newest = max(newest, w.acks[i].Latest())
	}
	ctx, cancel := context.WithTimeout(ctx, catchUp)
	defer cancel()
	for slices.ContainsFunc(w.last, func(l *atomic.Int64) bool { return l.Load() < newest }) && k8s.Sleep(ctx, 10*time.Millisecond) {
	}
	w.stop()
	w.done.Wait()
	var out []results.Figure
	measured := w.measured.Load()
	for k := range w.kinds {
		s := &w.kinds[k]
		if s.watchers == 0 {
			continue
		}
		s.mu.Lock()
		labels := func(extra ...string) map[string]string {
			l := map[string]string{"watcher": watcherKinds[k]}
			for i := 0; i < len(extra); i += 2 {
				l[extra[i]] = extra[i+1]
			}
			return l
		}
		count := func(name string, n int64, better results.Better, help string) {
			out = append(out, results.Figure{Name: name, Labels: labels(), Value: float64(n), Unit: results.UnitCount, Sum: true, Better: better, Help: help})
		}
		timed := s.delay.TotalCount()
		out = append(out, results.Figure{Name: "watchers", Labels: labels(), Value: float64(s.watchers), Unit: results.UnitCount,
			Help: "Watchers of the kind: plain watches (--watchers), or the writers' informers (one per client)."})
		count("watchEventsTimed", timed, "", "Measured writes a watcher saw after their response, each timed into watchDelay (one per write and watcher).")
		count("watchSeenBeforeResponse", s.early, "", "Measured writes a watcher saw before their writer had the response (delay 0, counted apart).")
		count("watchEventsUntimed", s.untimed, results.BetterLower, "Writes a watcher saw after the object's last 256 acks had moved past them: too far behind to time.")
		count("watchEventsMissed", max(measured*int64(s.watchers)-timed-s.early, 0), results.BetterLower,
			"Measured writes times watchers, less those seen (timed or before the response): never seen by the end, or seen too late to time.")
		count("relists", s.relists, results.BetterLower, "Watches that ended in an error (410 Gone: too far behind) and listed again, from the start of the measured window.")
		if k == plainWatcher {
			count("watchesClosed", s.closed, "", "Plain watches the server ended (and the watcher opened again), from the start of the measured window.")
		}
		qs := []float64{0.5, 0.9, 0.99, 1}
		for i, v := range metrics.Percentiles(s.delay, qs...) {
			if timed > 0 {
				out = append(out, results.Figure{Name: "watchDelay", Labels: labels("quantile", strconv.FormatFloat(qs[i], 'g', -1, 64)),
					Value: float64(time.Duration(v) * time.Microsecond), Unit: results.UnitDuration, Better: results.BetterLower,
					Help: "From a measured write's response until a watcher saw it (quantile 1: the longest)."})
			}
		}
		s.mu.Unlock()
	}
	return out
}

// watched reports whether the run measures watch delay.
func watched(s *spec.Spec) bool { return s.Watchers > 0 || s.Read == spec.ReadInformer }
