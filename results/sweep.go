package results

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
)

// KindSweep is the kind of a sweep document.
const KindSweep = "Sweep"

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
	// Interrupted is set when the sweep was stopped early (Ctrl-C, or a
	// lost target: TargetLost): the points under way are not among the
	// series' Points (their figures would bend the curves and the fits)
	// but listed apart, as each series' UnderWay.
	Interrupted bool `json:"interrupted,omitempty"`
	// TargetLost says why the sweep stopped when its target failed (a
	// control plane that died, an apiserver that stopped answering).
	TargetLost string `json:"targetLost,omitempty"`
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
	// UnderWay is the point that was running when the sweep was stopped
	// (Interrupted): the samples that ran of it, the last one partial.
	// It takes no part in the fits or the SLO answer.
	UnderWay *SweepPoint `json:"underWay,omitempty"`
	// Stopped says why no larger values ran, when a stop condition held.
	Stopped string `json:"stopped,omitempty"`
	// Model is the USL fitted to successful writes/s against writers
	// (writers sweeps only); ModelNote says why there is none.
	Model     *USL   `json:"model,omitempty"`
	ModelNote string `json:"modelNote,omitempty"`
	// CostModel is the USL's shape fitted to the apiserver's CPU per
	// successful write against writers (writers sweeps whose points all
	// measured it); CostModelNote says why there is none.
	CostModel     *CostFit `json:"costModel,omitempty"`
	CostModelNote string   `json:"costModelNote,omitempty"`
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
	// LostUpdates is the most any sample lost; nil (absent) when a
	// sample's count is not known (Summary.LostUpdates).
	LostUpdates *int64 `json:"lostUpdates,omitempty"`
	// ServerMatch is true when every sample's server cross-check matched.
	ServerMatch bool `json:"serverMatch"`
	// Cost is the medians of the samples' cost (nil when a sample has
	// none: results from before kb-bench measured it).
	Cost *PointCost `json:"cost,omitempty"`
	// Figures are the medians of the scenario's figures every sample
	// holds (a bool: the most samples' answer).
	Figures []Figure `json:"figures,omitempty"`
}

// PointCost is what a sweep point cost the server, medians over its
// samples: CPU in cores and per successful write.
type PointCost struct {
	ApiserverCores    float64       `json:"apiserverCores"`
	ApiserverPerWrite time.Duration `json:"apiserverPerWrite"`
	// HasEtcd says etcd was read in every sample.
	HasEtcd      bool          `json:"hasEtcd,omitempty"`
	EtcdCores    float64       `json:"etcdCores,omitempty"`
	EtcdPerWrite time.Duration `json:"etcdPerWrite,omitempty"`
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

// AxisValue formats a value of the sweep's axis.
func (s *Sweep) AxisValue(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// DecodeSweep reads a sweep document and checks its figures (Validate).
func DecodeSweep(data []byte) (*Sweep, error) {
	var s Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not a sweep document (invalid JSON): %w", err)
	}
	if s.Kind != KindSweep {
		return nil, fmt.Errorf("a %q document, not a %s", s.Kind, KindSweep)
	}
	if err := readableVersion(s.APIVersion); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// SweepColumns head a sweep's table after its axis: the figures of
// PointFigures.
var SweepColumns = []string{"ops/s", "successful writes/s", "conflict rate", "attempts p99", "p99", "gave up", "lost updates", "server"}

// PointFigures are a point's row of a sweep's table: its axis value, then
// SweepColumns.
func (s *Sweep) PointFigures(p SweepPoint) []string {
	gaveUp := "-"
	if p.GaveUp > 0 {
		gaveUp = words.Percent(p.GaveUpRatio)
	}
	return []string{s.AxisValue(p.Value), fmt.Sprintf("%.1f", p.Throughput), fmt.Sprintf("%.1f", p.WriteThroughput), words.Percent(p.ConflictRate),
		strconv.FormatInt(p.AttemptsP99, 10), words.Duration(p.P99), gaveUp, FormatLost(p.LostUpdates), map[bool]string{true: "match", false: "MISMATCH"}[p.ServerMatch]}
}

// FigureColumns are the Keys of the scenario figures with a direction
// (Better) that ser's points hold: a sweep's table shows them after its
// other columns (a figure that only describes is in the points' results).
func (ser SweepSeries) FigureColumns() (keys []string) {
	for _, p := range ser.Points {
		for _, f := range p.Figures {
			if f.Better != "" {
				keys = AppendNew(keys, f.Key())
			}
		}
	}
	return keys
}

// FigureCells are p's cells of the figure columns keys ("-" where p
// lacks one).
func (p SweepPoint) FigureCells(keys []string) []string {
	cells := make([]string, len(keys))
	for i, k := range keys {
		r := Result{Figures: p.Figures}
		cells[i] = "-"
		if f, ok := r.FigureNamed(k); ok {
			cells[i] = f.Text()
		}
	}
	return cells
}

// Fits say a series' fitted models in words, "" where there is nothing
// to say: the USL (or why a writers sweep has none) and the cost.
func (s *Sweep) Fits(ser SweepSeries) (usl, cost string) {
	switch {
	case ser.Model != nil:
		usl = "USL fit: " + ser.Model.String()
	case s.Axis == "writers" && ser.ModelNote != "":
		usl = "USL fit: none (" + ser.ModelNote + ")"
	}
	switch {
	case ser.CostModel != nil:
		cost = "apiserver CPU per write fit, c·(1 + σ(N−1) + κN(N−1)): " + ser.CostModel.String()
	case ser.CostModelNote != "":
		cost = "apiserver CPU per write fit: none (" + ser.CostModelNote + ")"
	}
	return usl, cost
}

// FormatLost is a count of lost updates as a table shows it: the number,
// or "unknown" when it was not measured (nil).
func FormatLost(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return strconv.FormatInt(*n, 10)
}
