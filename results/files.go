package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/metrics"
)

// The files Write puts in a result directory.
const (
	ResultFile = "result.json"  // the Result document
	HlogFile   = "latency.hlog" // HdrHistogram interval log of operation latency (µs)
	SeriesFile = "series.csv"   // the per-second series
)

// Write saves r in dir (created if needed) as result.json, latency.hlog and
// series.csv. Each file is written to a temporary file in dir, synced and
// renamed into place, so a reader never sees half a file and an interrupted
// write leaves the previous version intact.
func Write(dir string, r *Result) error {
	if r == nil {
		return errors.New("no result to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the result directory: %w (choose another with --out)", err)
	}
	doc, err := Encode(r)
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
	for _, f := range []struct {
		name string
		data []byte
	}{{ResultFile, doc}, {HlogFile, hlog.Bytes()}, {SeriesFile, series.Bytes()}} {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// Encode returns r as the indented JSON of result.json, with APIVersion and
// Kind filled in.
func Encode(r *Result) ([]byte, error) {
	c := *r
	c.APIVersion, c.Kind = APIVersion, KindResult
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return append(b, '\n'), nil
}

// syncDir makes the renames durable. Some filesystems cannot sync a
// directory; that is not worth failing a run for.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !isUnsupported(err) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

func isUnsupported(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not supported")
}

// Read loads a Result from path: a result.json file or a directory holding
// one. It refuses documents of another kind or version, and unknown fields.
func Read(path string) (*Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ResultFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading a result: %w (pass a result.json or the directory of a run)", err)
	}
	defer f.Close()
	r, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Decode reads a Result document: apiVersion and kind first, then the body
// strictly (unknown fields are errors).
func Decode(rd io.Reader) (*Result, error) {
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a kb-bench result (invalid JSON): %w", err)
	}
	if head.Kind != KindResult {
		return nil, fmt.Errorf("kind is %q, not %q: this is not a kb-bench result document", head.Kind, KindResult)
	}
	if head.APIVersion != APIVersion {
		if newer, ok := newerVersion(head.APIVersion, APIVersion); ok && newer {
			return nil, fmt.Errorf("apiVersion %s is newer than this kb-bench reads (%s): upgrade kb-bench to read it", head.APIVersion, APIVersion)
		}
		return nil, fmt.Errorf("apiVersion %q is not supported: this kb-bench reads %s", head.APIVersion, APIVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the %s result: %w", APIVersion, err)
	}
	return &r, nil
}

// newerVersion reports whether apiVersion a ("kb-bench.io/v1beta2") is
// newer than b in Kubernetes version order (v1alpha1 < v1beta1 < v1 < v2alpha1);
// ok is false when either is not a kb-bench.io version.
func newerVersion(a, b string) (newer, ok bool) {
	ka, oka := versionKey(a)
	kb, okb := versionKey(b)
	if !oka || !okb {
		return false, false
	}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] > kb[i], true
		}
	}
	return false, true
}

// versionKey orders "kb-bench.io/vMAJOR[alpha|betaN]" as (major, stage, n)
// with stage alpha=0, beta=1, GA=2.
func versionKey(apiVersion string) ([3]int, bool) {
	group, v, found := strings.Cut(apiVersion, "/")
	if !found || group != strings.Split(APIVersion, "/")[0] || !strings.HasPrefix(v, "v") {
		return [3]int{}, false
	}
	major, stage, n := v[1:], 2, "0"
	for _, st := range []struct {
		name  string
		stage int
	}{{"alpha", 0}, {"beta", 1}} {
		if before, after, found := strings.Cut(major, st.name); found {
			major, stage, n = before, st.stage, after
			break
		}
	}
	mj, err1 := strconv.Atoi(major)
	nn, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return [3]int{}, false
	}
	return [3]int{mj, stage, nn}, true
}

// WriteHlog writes operation latency as an HdrHistogram interval log: one
// interval per series point when the series carries interval histograms,
// otherwise one interval covering the measured window. Values are in
// microseconds; timestamps are seconds from the recorder's start (the
// #[StartTime] header gives it), so standard HdrHistogram log tools read it.
func WriteHlog(w io.Writer, r *Result) error {
	start := r.Measurements.SeriesStart
	if start.IsZero() {
		start = r.Started
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	startMs := start.UnixMilli()
	lw.SetBaseTime(startMs)
	header := []func() error{
		func() error {
			return lw.OutputComment(fmt.Sprintf("[kb-bench %s run %s: operation latency in microseconds; Interval_Max in seconds]", r.Version, r.RunID))
		},
		lw.OutputLogFormatVersion,
		// hdrhistogram-go writes these two with whole seconds, but
		// interval timestamps count from the base time to the
		// millisecond: a reader would place every interval up to a
		// second early. They are written as the Java HdrHistogram does,
		// to the millisecond.
		func() error {
			_, err := fmt.Fprintf(w, "#[StartTime: %.3f (seconds since epoch), %s]\n", float64(startMs)/1000, start.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
			return err
		},
		func() error {
			_, err := fmt.Fprintf(w, "#[BaseTime: %.3f (seconds since epoch)]\n", float64(startMs)/1000)
			return err
		},
		lw.OutputLegend,
	}
	for _, f := range header {
		if err := f(); err != nil {
			return fmt.Errorf("writing the latency log: %w", err)
		}
	}
	out := func(enc string, from, to time.Time) error {
		h, err := metrics.DecodeHistogram(enc)
		if err != nil {
			return err
		}
		h.SetTag(HistOp)
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
		return out(r.Measurements.Histograms[HistOp], r.Started, r.Ended)
	}
	return nil
}

// seriesOutcomes are the outcome columns of series.csv, in Outcome order.
func seriesOutcomes() []string {
	names := make([]string, metrics.NumOutcomes)
	for i := range names {
		names[i] = metrics.Outcome(i).String()
	}
	return names
}

// WriteSeriesCSV writes the per-second series as CSV: the interval's end and
// length in seconds, operations in total and by final outcome, write
// attempts and those answered 409 (retried ones included), and p50/p99 of
// operation latency in ms.
func WriteSeriesCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	outcomes := seriesOutcomes()
	header := append([]string{"at_s", "span_s", "ops"}, outcomes...)
	header = append(header, "write_attempts", "write_conflicts", "p50_ms", "p99_ms")
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
		row = append(row, strconv.FormatInt(writes, 10), strconv.FormatInt(pointConflicts(p), 10), ms(p.P50), ms(p.P99))
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

// pointConflicts is the write attempts of a series point answered 409.
func pointConflicts(p metrics.SeriesPoint) int64 {
	return p.Writes[metrics.VersionConflict.String()] + p.Writes[metrics.FieldManagerConflict.String()]
}
