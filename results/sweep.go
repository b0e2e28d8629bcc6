package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindSweep is the kind of a sweep document.
const KindSweep = "Sweep"

// SweepFile is the file in a sweep's directory that links its results.
const SweepFile = "sweep.json"

// DefaultSLO is the latency objective a sweep answers for when none is
// given: the Kubernetes API call latency SLO for mutating calls (p99 at or
// below 1 s).
const DefaultSLO = time.Second

// Sweep is one capacity-planning run: the same workload at increasing
// values of one axis (writers, objects, rate or clients), for one or more
// series (e.g. one per strategy), each point a result kept below the
// sweep's directory.
type Sweep struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	RunID      string `json:"runID"`
	// Workload describes the first point and says which settings vary.
	Workload string `json:"workload"`
	// Axis is the setting swept ("writers", "objects", "rate", "clients").
	Axis string `json:"axis"`
	// SLO is the p99 latency objective the analysis answers for.
	SLO time.Duration `json:"slo"`
	// StopAt are the thresholds that end a series early when a point
	// breaks one ("p99 > 5s").
	StopAt []string `json:"stopAt,omitempty"`
	// Interrupted is set when the sweep was stopped (Ctrl-C, or a target
	// that stopped answering): the point under way is left out, its
	// samples are in their directories.
	Interrupted bool `json:"interrupted,omitempty"`
	// Series are the lines of the sweep, in the order they were given.
	Series []SweepSeries `json:"series"`
}

// SweepSeries is one line of a sweep: its points and what they mean.
type SweepSeries struct {
	// Label names the series by the settings that set it apart
	// ("strategy=ssa"); empty when the sweep has one series.
	Label string `json:"label"`
	// Points are in the order they ran (increasing axis values).
	Points []SweepPoint `json:"points"`
	// Stopped says why no larger values ran, when a stop condition held.
	Stopped string `json:"stopped,omitempty"`
	// Model is the USL fitted to successful writes/s against writers
	// (writers sweeps only); ModelNote says why there is none.
	Model     *USL   `json:"model,omitempty"`
	ModelNote string `json:"modelNote,omitempty"`
	// SLO is the answer for the sweep's latency objective.
	SLO SLOAnswer `json:"sloAnswer"`
	// Summary says in words what the series showed.
	Summary string `json:"summary"`
}

// SweepPoint is one value of the axis in one series: where its results
// are and the medians of their headline figures.
type SweepPoint struct {
	Value float64 `json:"value"`
	// Dir is the point's result directory (a result, or a set of samples),
	// relative to the sweep's directory.
	Dir     string `json:"dir"`
	Samples int    `json:"samples"`
	// Medians over the samples.
	Throughput      float64       `json:"throughput"`
	WriteThroughput float64       `json:"writeThroughput"`
	ConflictRate    float64       `json:"conflictRate"`
	AttemptsP99     int64         `json:"attemptsP99"`
	P99             time.Duration `json:"p99"`
	GaveUp          int64         `json:"gaveUp,omitempty"`
	// GaveUpRatio is GaveUp over operations.
	GaveUpRatio float64 `json:"gaveUpRatio,omitempty"`
	LostUpdates int64   `json:"lostUpdates"`
	// ServerMatch is true when every sample's server cross-check matched.
	ServerMatch bool `json:"serverMatch"`
}

// SLOAnswer is how far along the axis the p99 stays within the SLO.
type SLOAnswer struct {
	// Within is the largest axis value up to which every point's p99 is
	// within the SLO (0: not even the first); ConflictRate is the conflict
	// rate there.
	Within       float64 `json:"within"`
	ConflictRate float64 `json:"conflictRate"`
	// Breach is the first value whose p99 is above the SLO (0: none ran).
	Breach float64 `json:"breach,omitempty"`
}

// NewSweepPoint summarises the samples of one point.
func NewSweepPoint(value float64, dir string, samples []*Result) SweepPoint {
	p := SweepPoint{Value: value, Dir: dir, Samples: len(samples), ServerMatch: true}
	med := func(f func(r *Result) float64) float64 { return median(values(samples, f)) }
	p.Throughput = med(func(r *Result) float64 { return r.Summary.Throughput })
	p.WriteThroughput = med(func(r *Result) float64 { return r.Summary.WriteThroughput })
	p.ConflictRate = med(func(r *Result) float64 { return r.Summary.ConflictRate })
	p.AttemptsP99 = int64(math.Round(med(func(r *Result) float64 { return float64(r.Summary.AttemptsP99) })))
	p.P99 = time.Duration(med(func(r *Result) float64 { return float64(r.Summary.Latency.P99) }))
	p.GaveUp = int64(math.Round(med(func(r *Result) float64 { return float64(r.Summary.GaveUp) })))
	p.GaveUpRatio = med(func(r *Result) float64 {
		if r.Summary.Ops == 0 {
			return 0
		}
		return float64(r.Summary.GaveUp) / float64(r.Summary.Ops)
	})
	for _, r := range samples {
		p.LostUpdates = max(p.LostUpdates, r.Summary.LostUpdates)
		if r.Server == nil || !r.Server.Available || !r.Server.Match {
			p.ServerMatch = false
		}
	}
	return p
}

// Analyze fills each series' model, SLO answer and summary from its
// points.
func (s *Sweep) Analyze() {
	for i := range s.Series {
		ser := &s.Series[i]
		ser.Model, ser.ModelNote = nil, ""
		if s.Axis == "writers" {
			n := make([]float64, len(ser.Points))
			x := make([]float64, len(ser.Points))
			for j, p := range ser.Points {
				n[j], x[j] = p.Value, p.WriteThroughput
			}
			m, err := FitUSL(n, x)
			if err != nil {
				ser.ModelNote = err.Error()
			}
			ser.Model = m
		} else {
			ser.ModelNote = "the USL models throughput against concurrency: fitted for writers sweeps only"
		}
		ser.SLO = SLOAnswer{}
		for _, p := range ser.Points {
			if p.P99 > s.SLO {
				ser.SLO.Breach = p.Value
				break
			}
			ser.SLO.Within, ser.SLO.ConflictRate = p.Value, p.ConflictRate
		}
		ser.Summary = s.describe(ser)
	}
}

// describe says what a series showed, in one or two sentences.
func (s *Sweep) describe(ser *SweepSeries) string {
	if len(ser.Points) == 0 {
		return "no point ran"
	}
	name := ser.Label + ": "
	if ser.Label == "" {
		name = ""
	}
	unit := func(v float64) string {
		if s.Axis == "rate" {
			return s.AxisValue(v) + " ops/s offered"
		}
		if v == 1 {
			return "1 " + strings.TrimSuffix(s.Axis, "s")
		}
		return s.AxisValue(v) + " " + s.Axis
	}
	peak := slices.MaxFunc(ser.Points, func(a, b SweepPoint) int {
		return cmp.Compare(a.WriteThroughput, b.WriteThroughput)
	})
	parts := []string{fmt.Sprintf("%sat most %.0f successful writes/s (at %s)", name, peak.WriteThroughput, unit(peak.Value))}
	switch m := ser.Model; {
	case m == nil:
	case m.Poor:
		parts = append(parts, fmt.Sprintf("the USL fits poorly (R² %.2f), so it predicts nothing", m.R2))
	case m.Kappa == 0:
		parts = append(parts, fmt.Sprintf("the USL fit says throughput levels off at %.0f/s", m.Lambda/m.Sigma))
	case m.PeakN < 1.5:
		parts = append(parts, fmt.Sprintf("the USL fit (R² %.2f) says every writer past the first costs throughput", m.R2))
	default:
		parts = append(parts, fmt.Sprintf("the USL fit predicts a peak of %.0f/s at ~%.0f writers", m.PeakX, m.PeakN))
	}
	slo := "p99 under " + s.SLO.String()
	last := ser.Points[len(ser.Points)-1].Value
	switch {
	case ser.SLO.Within == 0:
		parts = append(parts, fmt.Sprintf("p99 is over %s already at %s", s.SLO, unit(ser.Points[0].Value)))
	case ser.SLO.Breach == 0:
		parts = append(parts, fmt.Sprintf("%s at every point up to %s (%s conflicts there)", slo, unit(last), percent(ser.SLO.ConflictRate)))
	default:
		parts = append(parts, fmt.Sprintf("%s up to %s (%s conflicts there), over it from %s", slo, unit(ser.SLO.Within), percent(ser.SLO.ConflictRate), unit(ser.SLO.Breach)))
	}
	for _, p := range ser.Points {
		if p.GaveUp > 0 {
			parts = append(parts, fmt.Sprintf("retries give up from %s (%s of operations)", unit(p.Value), percent(p.GaveUpRatio)))
			break
		}
	}
	for _, p := range ser.Points {
		if p.LostUpdates > 0 {
			parts = append(parts, fmt.Sprintf("LOST UPDATES from %s", unit(p.Value)))
			break
		}
	}
	if ser.Stopped != "" {
		parts = append(parts, "stopped early: "+ser.Stopped)
	}
	return strings.Join(parts, "; ")
}

// AxisValue formats a value of the sweep's axis.
func (s *Sweep) AxisValue(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteSweep saves s as dir/sweep.json, atomically.
func WriteSweep(dir string, s *Sweep) error {
	c := *s
	c.APIVersion, c.Kind = APIVersion, KindSweep
	return writeDocument(filepath.Join(dir, SweepFile), "the sweep", &c)
}

// ReadSweep reads a sweep document: its directory or its sweep.json.
func ReadSweep(path string) (*Sweep, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, SweepFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Sweep
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Kind != KindSweep {
		return nil, fmt.Errorf("%s is a %q document, not a %s", path, s.Kind, KindSweep)
	}
	if newer, ok := newerVersion(s.APIVersion, APIVersion); !ok || newer {
		return nil, fmt.Errorf("%s has apiVersion %q, which this kb-bench (%s) cannot read: use a newer kb-bench", path, s.APIVersion, APIVersion)
	}
	return &s, nil
}

// WriteSweepTables writes a table per series (text or markdown), with the
// fitted model and the summary in words under each.
func WriteSweepTables(w io.Writer, s *Sweep, format string) error {
	markdown := format == "markdown"
	if s.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the sweep was stopped; the point under way is left out")
		fmt.Fprintln(w)
	}
	for i, ser := range s.Series {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := ser.Label
		if title == "" {
			title = s.Workload
		}
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", title)
		} else {
			fmt.Fprintf(w, "%s\n", title)
		}
		rows := [][]string{{s.Axis, "ops/s", "successful writes/s", "conflict rate", "attempts p99", "p99", "gave up", "lost updates", "server"}}
		for _, p := range ser.Points {
			server := "match"
			if !p.ServerMatch {
				server = "MISMATCH"
			}
			gaveUp := "-"
			if p.GaveUp > 0 {
				gaveUp = percent(p.GaveUpRatio)
			}
			rows = append(rows, []string{s.AxisValue(p.Value), fmt.Sprintf("%.1f", p.Throughput), fmt.Sprintf("%.1f", p.WriteThroughput),
				percent(p.ConflictRate), strconv.FormatInt(p.AttemptsP99, 10), FormatDuration(p.P99), gaveUp, strconv.FormatInt(p.LostUpdates, 10), server})
		}
		if err := writeRows(w, rows, markdown); err != nil {
			return err
		}
		if markdown {
			fmt.Fprintln(w)
		}
		switch {
		case ser.Model != nil:
			fmt.Fprintf(w, "USL fit: %s\n", ser.Model)
		case s.Axis == "writers" && ser.ModelNote != "":
			fmt.Fprintf(w, "USL fit: none (%s)\n", ser.ModelNote)
		}
		if markdown {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, ser.Summary+".")
	}
	return nil
}
