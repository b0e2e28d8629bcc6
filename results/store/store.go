// Package store is the one place that knows how kb-bench lays its
// documents out on disk (results, sets, matrix runs, sweeps and verdicts):
// it writes every file atomically, reads each kind as what it is, and
// names the directories a run makes.
package store

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// The files of kb-bench's directories.
const (
	ResultFile = "result.json"  // a result's Result document
	HlogFile   = "latency.hlog" // a result's HdrHistogram interval log of operation latency (µs)
	SeriesFile = "series.csv"   // a result's per-second series
	SetFile    = "set.json"     // a set's list of samples
	SweepFile  = "sweep.json"   // a sweep's document, which links its points
	// VerdictsFile is a gated run's verdicts, beside the results judged
	// (an A/B run's: in its directory, beside its sides).
	VerdictsFile = "verdicts.json"
)

// Write saves r in dir (created if needed) as result.json, latency.hlog and
// series.csv, each atomically. A write that fails (a full disk) leaves
// nothing of r behind: the files and directories it made are removed (a
// file it replaced keeps r's version).
func Write(dir string, r *results.Result) (err error) {
	if r == nil {
		return errors.New("no result to write")
	}
	doc, err := results.Encode(r)
	if err != nil {
		return err
	}
	var hlog, series bytes.Buffer
	if err := WriteHlog(&hlog, r); err != nil {
		return err
	}
	if err := WriteSeriesCSV(&series, r); err != nil {
		return err
	}
	var made, wrote []string
	defer func() {
		if err == nil {
			return
		}
		for _, f := range wrote {
			_ = os.Remove(f)
		}
		for _, d := range slices.Backward(made) {
			_ = os.Remove(d) // only when empty
		}
	}()
	if made, err = mkdirAll(dir); err != nil {
		return fmt.Errorf("creating the result directory: %w (choose another with --out)", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{ResultFile, doc}, {HlogFile, hlog.Bytes()}, {SeriesFile, series.Bytes()}} {
		path := filepath.Join(dir, f.name)
		_, serr := os.Lstat(path)
		if err := atomicfile.WriteFile(path, f.data, 0o644); err != nil {
			return err
		}
		if errors.Is(serr, fs.ErrNotExist) { // a file replaced is not removed
			wrote = append(wrote, path)
		}
	}
	return syncDir(dir)
}

// mkdirAll makes dir and its missing parents, and returns the ones it
// made, outermost first, also when it fails for want of one.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	slices.Reverse(missing)
	var made []string
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err == nil {
			made = append(made, d)
		} else if !errors.Is(err, fs.ErrExist) {
			return made, err
		}
	}
	return made, nil
}

// syncDir makes the renames durable. Some filesystems cannot sync a
// directory; that is not worth failing a run for.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// Read loads a Result from path: a result.json file or a directory holding
// one. It refuses documents of another kind or version, and unknown fields.
func Read(ctx context.Context, path string) (*results.Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ResultFile)
	}
	b, err := readfile.Read(ctx, path, readfile.Result, "a result")
	if err != nil {
		return nil, fmt.Errorf("%w (pass a result.json or the directory of a run)", err)
	}
	r, err := results.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteHlog writes operation latency (µs) as an HdrHistogram interval log,
// which standard HdrHistogram log tools read: an interval per series point
// with a histogram, else one for the measured window.
func WriteHlog(w io.Writer, r *results.Result) error {
	start := r.Measurements.SeriesStart
	if start.IsZero() {
		start = r.Started
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	startMs := start.UnixMilli()
	lw.SetBaseTime(startMs)
	err := lw.OutputComment(fmt.Sprintf("[kb-bench %s run %s: operation latency in microseconds; Interval_Max in seconds]", r.Version, r.RunID))
	if err == nil {
		err = lw.OutputLogFormatVersion()
	}
	// hdrhistogram-go writes StartTime and BaseTime with whole seconds,
	// but interval timestamps count from the base time to the
	// millisecond: a reader would place every interval up to a second
	// early. They are written as the Java HdrHistogram does, to the
	// millisecond.
	if err == nil {
		_, err = fmt.Fprintf(w, "#[StartTime: %.3f (seconds since epoch), %s]\n#[BaseTime: %.3f (seconds since epoch)]\n",
			float64(startMs)/1000, start.UTC().Format("2006-01-02T15:04:05.000Z07:00"), float64(startMs)/1000)
	}
	if err == nil {
		err = lw.OutputLegend()
	}
	if err != nil {
		return fmt.Errorf("writing the latency log: %w", err)
	}
	out := func(enc string, from, to time.Time) error {
		h, err := metrics.DecodeHistogram(enc)
		if err != nil {
			return err
		}
		h.SetTag(results.HistOp)
		h.SetStartTimeMs(from.UnixMilli())
		h.SetEndTimeMs(to.UnixMilli())
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return fmt.Errorf("writing the latency log: %w", err)
		}
		return nil
	}
	intervals := 0
	for _, p := range r.Series {
		if p.Histogram == "" {
			continue
		}
		if err := out(p.Histogram, start.Add(p.At-p.Span), start.Add(p.At)); err != nil {
			return err
		}
		intervals++
	}
	if intervals == 0 && r.Measurements.Ops > 0 {
		return out(r.Measurements.Histograms[results.HistOp], r.Started, r.Ended)
	}
	return nil
}

// WriteSeriesCSV writes the per-second series as CSV (409s of every write
// attempt, retried ones included).
func WriteSeriesCSV(w io.Writer, r *results.Result) error {
	cw := csv.NewWriter(w)
	outcomes := make([]string, metrics.NumOutcomes) // in Outcome order
	for o := range metrics.NumOutcomes {
		outcomes[o] = o.String()
	}
	header := slices.Concat([]string{"at_s", "span_s", "ops"}, outcomes, []string{"write_attempts", "write_conflicts", "p50_ms", "p99_ms"})
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("writing the series: %w", err)
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	for _, p := range r.Series {
		row := []string{secs(p.At), secs(p.Span), strconv.FormatInt(p.Ops, 10)}
		for _, o := range outcomes {
			row = append(row, strconv.FormatInt(p.Outcomes[o], 10))
		}
		var writes int64
		for _, n := range p.Writes {
			writes += n
		}
		row = append(row, strconv.FormatInt(writes, 10), strconv.FormatInt(p.Conflicts(), 10), ms(p.P50), ms(p.P99))
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("writing the series: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the series: %w", err)
	}
	return nil
}

// WriteSet saves s as dir/set.json, atomically.
func WriteSet(dir string, s *results.ResultSet) error {
	c := *s
	c.APIVersion, c.Kind = results.APIVersion, results.KindResultSet
	return writeDocument(filepath.Join(dir, SetFile), "the result set", &c)
}

// ReadSet reads the set document in dir.
func ReadSet(ctx context.Context, dir string) (*results.ResultSet, error) {
	return readDocument(ctx, filepath.Join(dir, SetFile), "a set of samples", results.DecodeSet)
}

// WriteSweep saves s as dir/sweep.json, atomically.
func WriteSweep(dir string, s *results.Sweep) error {
	c := *s
	c.APIVersion, c.Kind = results.APIVersion, results.KindSweep
	return writeDocument(filepath.Join(dir, SweepFile), "the sweep", &c)
}

// ReadSweep reads a sweep document: its directory or its sweep.json.
func ReadSweep(ctx context.Context, path string) (*results.Sweep, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, SweepFile)
	}
	return readDocument(ctx, path, "a sweep", results.DecodeSweep)
}

// WriteVerdicts saves a gated run's verdicts as dir/verdicts.json,
// atomically.
func WriteVerdicts(dir string, vs []analysis.Verdict) error {
	return writeDocument(filepath.Join(dir, VerdictsFile), "the gate's verdicts", analysis.NewVerdicts(vs))
}

// ReadVerdicts reads the verdicts of the gated run saved in dir; none
// (nil) when it was not gated.
func ReadVerdicts(ctx context.Context, dir string) ([]analysis.Verdict, error) {
	path := filepath.Join(dir, VerdictsFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	d, err := readDocument(ctx, path, "the gate's verdicts", analysis.DecodeVerdicts)
	if err != nil {
		return nil, err
	}
	return d.Verdicts, nil
}

// readDocument reads the document in path, of kind what, with decode.
func readDocument[T any](ctx context.Context, path, what string, decode func([]byte) (*T, error)) (*T, error) {
	b, err := readfile.Read(ctx, path, readfile.Document, what)
	if err != nil {
		return nil, err
	}
	doc, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// writeDocument saves v as indented JSON in path, atomically; what names
// it in an error.
func writeDocument(path, what string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("saving %s: %w", what, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}
