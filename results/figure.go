package results

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/words"
)

// Figure is one of a scenario's own figures as data, saved in the Result,
// so that every reader renders, compares and gates it without the
// scenario's code, as clusterloader2 saves a measurement's data items.
type Figure struct {
	// Name is lowerCamelCase ("failoverTime", "rejected"): what a gate
	// threshold and compare call it. Name and Labels are unique in a
	// Result.
	Name string `json:"name"`
	// Labels tell apart the figures of one name (per controller, per
	// fault, per quantile); none for a figure of the whole run. A
	// threshold names one as name{key="value"}.
	Labels map[string]string `json:"labels,omitempty"`
	// Value is in Unit's base: nanoseconds for a duration, a fraction for
	// a percentage, per second for a rate, 1 or 0 for a bool.
	Value float64 `json:"value"`
	// Unit is what Value measures.
	Unit Unit `json:"unit"`
	// Better says which way is an improvement: BetterLower, BetterHigher,
	// or "" when neither is (a setting, a count that only describes).
	Better Better `json:"better,omitempty"`
	// Sum says the figure adds up over the parts of a window (a count of
	// things): merging a run's shards adds it. Other figures (durations,
	// percentiles, ratios) do not add up.
	Sum bool `json:"sum,omitempty"`
	// Help says in one line what the figure is.
	Help string `json:"help"`
}

// Unit is what a figure, or a gate metric, measures: it decides how a
// value is written and which values make sense.
type Unit string

// The units.
const (
	// UnitDuration is a duration in nanoseconds, written "50ms"; 0 or more.
	UnitDuration Unit = "duration"
	// UnitRate is per second, written "100/s"; 0 or more.
	UnitRate Unit = "rate"
	// UnitPercent is a share as a fraction, written "50%"; 0 to 1.
	UnitPercent Unit = "percent"
	// UnitCount is a number of things, written "3"; 0 or more.
	UnitCount Unit = "count"
	// UnitBool is 1 (true) or 0 (false).
	UnitBool Unit = "bool"
)

// Units are the units, in the order a reader lists them.
var Units = []Unit{UnitDuration, UnitRate, UnitPercent, UnitCount, UnitBool}

// Format writes a value of the unit as a threshold or a verdict shows it:
// "50ms", "100.0/s", "12.3%", "true", "3".
func (u Unit) Format(v float64) string {
	switch u {
	case UnitDuration:
		return words.Duration(time.Duration(v))
	case UnitRate:
		return fmt.Sprintf("%.1f/s", v)
	case UnitPercent:
		return words.Percent(v)
	case UnitBool:
		return strconv.FormatBool(v == 1)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Text is the figure's value as a summary shows it: in its unit, a bool
// as yes or no.
func (f Figure) Text() string {
	if f.Unit == UnitBool {
		return map[bool]string{true: "yes", false: "no"}[f.Value == 1]
	}
	return f.Unit.Format(f.Value)
}

// Better is the direction of improvement of a figure.
type Better string

// The directions.
const (
	BetterLower  Better = "lower"
	BetterHigher Better = "higher"
)

// Key is the figure's name with its labels, sorted, as a threshold names
// it: failoverTime{fault="1",victim="candidate-0"}.
func (f Figure) Key() string {
	if len(f.Labels) == 0 {
		return f.Name
	}
	parts := make([]string, 0, len(f.Labels))
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, f.Labels[k]))
	}
	return f.Name + "{" + strings.Join(parts, ",") + "}"
}

// FigureNamed returns the figure whose Key is key, if r holds it.
func (r *Result) FigureNamed(key string) (Figure, bool) {
	i := slices.IndexFunc(r.Figures, func(f Figure) bool { return f.Key() == key })
	if i < 0 {
		return Figure{}, false
	}
	return r.Figures[i], true
}

var (
	figureName = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	labelName  = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)
)

// ValidateFigures checks that each figure is named, labelled and valued as
// Figure says, with no two of one key.
func ValidateFigures(p *field.Path, figures []Figure) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, f := range figures {
		fp := p.Index(i)
		if !figureName.MatchString(f.Name) {
			errs = append(errs, field.Invalid(fp.Child("name"), f.Name, "a figure's name is lowerCamelCase letters and digits"))
		}
		for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
			if !labelName.MatchString(k) {
				errs = append(errs, field.Invalid(fp.Child("labels").Key(k), k, "a label's name is lowerCamelCase letters, digits and _"))
			}
		}
		if key := f.Key(); seen[key] {
			errs = append(errs, field.Duplicate(fp, key))
		} else {
			seen[key] = true
		}
		if !slices.Contains(Units, f.Unit) {
			errs = append(errs, field.NotSupported(fp.Child("unit"), f.Unit, Units))
		}
		if f.Better != "" && f.Better != BetterLower && f.Better != BetterHigher {
			errs = append(errs, field.NotSupported(fp.Child("better"), f.Better, []Better{BetterLower, BetterHigher}))
		}
		most := cmp.Or(map[Unit]float64{UnitPercent: 1, UnitBool: 1, UnitDuration: float64(maxSpan)}[f.Unit], math.MaxFloat64)
		errs = append(errs, checkFloat(fp.Child("value"), f.Value, 0, most)...)
		if f.Unit == UnitBool && f.Value != 0 && f.Value != 1 {
			errs = append(errs, field.Invalid(fp.Child("value"), f.Value, "a bool figure is 1 or 0"))
		}
		if f.Sum && f.Unit != UnitCount {
			errs = append(errs, field.Invalid(fp.Child("sum"), f.Sum, "only a count adds up"))
		}
	}
	return errs
}
