// Package resultstest helps the tests of what writes and reads results:
// it checks a result.json's percentiles the way an outside reader would,
// with an HdrHistogram decoder of its own, and simulates runs through the
// real recorder. Import it from tests only.
package resultstest

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// Histogram is a decoded HdrHistogram: its counts in index order and the
// layout that maps an index to its values.
type Histogram struct {
	Counts []int64
	// unit is log2 of the lowest discernible value; halfMag is log2 of
	// half the sub-bucket count.
	unit, halfMag int
}

// Decode reads base64 of HdrHistogram's compressed V2 encoding: a cookie
// and a length, then zlib of (cookie, payload length, normalizing offset,
// significant digits, lowest and highest trackable values, conversion
// ratio, counts as ZigZag LEB128 where a negative number is a run of
// zeros). "" is an empty histogram.
func Decode(s string) (*Histogram, error) {
	if s == "" {
		return &Histogram{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	if len(raw) < 8 || binary.BigEndian.Uint32(raw)&^0xf0 != 0x1c849304 {
		return nil, errors.New("not a compressed V2 histogram")
	}
	n := binary.BigEndian.Uint32(raw[4:])
	if int64(n) > int64(len(raw)-8) {
		return nil, errors.New("compressed length beyond the data")
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	const header = 40
	if len(body) < header || binary.BigEndian.Uint32(body)&^0xf0 != 0x1c849303 {
		return nil, errors.New("not a V2 histogram inside")
	}
	payload := int(binary.BigEndian.Uint32(body[4:]))
	digits := int(binary.BigEndian.Uint32(body[12:]))
	lowest := int64(binary.BigEndian.Uint64(body[16:]))
	if payload > len(body)-header || digits < 0 || digits > 5 || lowest < 1 {
		return nil, fmt.Errorf("bad header: payload %d, %d digits, lowest %d", payload, digits, lowest)
	}
	// 2*10^digits values need single-unit resolution: the sub-bucket count
	// is the power of two at or above that.
	single := int64(2)
	for range digits {
		single *= 10
	}
	h := &Histogram{unit: bits.Len64(uint64(lowest)) - 1, halfMag: bits.Len64(uint64(single-1)) - 1}
	counts := body[header : header+payload]
	for len(counts) > 0 {
		var u uint64
		i := 0
		for {
			if i == len(counts) {
				return nil, errors.New("truncated count")
			}
			b := counts[i]
			i++
			if i == 9 {
				u |= uint64(b) << 56 // the ninth byte has 8 bits
				break
			}
			u |= uint64(b&0x7f) << (7 * (i - 1))
			if b&0x80 == 0 {
				break
			}
		}
		counts = counts[i:]
		v := int64(u>>1) ^ -int64(u&1)
		if v < 0 {
			h.Counts = append(h.Counts, make([]int64, -v)...)
		} else {
			h.Counts = append(h.Counts, v)
		}
	}
	return h, nil
}

// highest is the highest value of index i's bucket.
func (h *Histogram) highest(i int) int64 {
	half := 1 << h.halfMag
	bucket, sub := i>>h.halfMag-1, i&(half-1)+half
	if bucket < 0 {
		bucket, sub = 0, sub-half
	}
	shift := bucket + h.unit
	return int64(sub)<<shift + 1<<shift - 1
}

// Total is the number of values recorded.
func (h *Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// NearestRank is the value at which the share perMille/1000 of the values
// is first reached: the smallest recorded value with at least that share
// at or below it, as its bucket's highest value (0 when empty).
func (h *Histogram) NearestRank(perMille int64) int64 {
	rank := (perMille*h.Total() + 999) / 1000 // ceil, exactly
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if c > 0 && seen >= rank {
			return h.highest(i)
		}
	}
	return 0
}

// document is what the check reads of a result.json.
type document struct {
	Summary struct {
		Ops        int64    `json:"ops"`
		Latency    latency  `json:"latency"`
		RawLatency *latency `json:"rawLatency"`
	} `json:"summary"`
	Measurements struct {
		Histograms map[string]string `json:"histograms"`
	} `json:"measurements"`
	Series []struct {
		At        time.Duration `json:"at"`
		P50       time.Duration `json:"p50"`
		P99       time.Duration `json:"p99"`
		Histogram string        `json:"histogram"`
	} `json:"series"`
}

type latency struct {
	P50  time.Duration `json:"p50"`
	P90  time.Duration `json:"p90"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p999"`
	Max  time.Duration `json:"max"`
}

// CheckPercentiles recomputes a result.json's summary and series
// percentiles from its stored histograms, and says where they differ
// from the reported figures.
func CheckPercentiles(resultJSON []byte) error {
	var d document
	if err := json.Unmarshal(resultJSON, &d); err != nil {
		return fmt.Errorf("reading the result: %w", err)
	}
	var errs []error
	check := func(what string, enc string, perMille []int64, reported []time.Duration) {
		h, err := Decode(enc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			return
		}
		for i, pm := range perMille {
			want := time.Duration(h.NearestRank(pm)) * time.Microsecond
			if reported[i] != want {
				errs = append(errs, fmt.Errorf("%s p%g: reported %s, nearest rank of %d values %s", what, float64(pm)/10, reported[i], h.Total(), want))
			}
		}
	}
	standard := []int64{500, 900, 990, 999, 1000}
	for _, l := range []struct {
		name string
		l    *latency
	}{{"op", &d.Summary.Latency}, {"op-raw", d.Summary.RawLatency}} {
		enc, ok := d.Measurements.Histograms[l.name]
		if !ok || l.l == nil {
			if ok != (l.l != nil) {
				errs = append(errs, fmt.Errorf("histogram %s stored %v, its summary present %v", l.name, ok, l.l != nil))
			}
			continue
		}
		if h, err := Decode(enc); err == nil && h.Total() != d.Summary.Ops {
			errs = append(errs, fmt.Errorf("histogram %s holds %d values, the summary %d ops", l.name, h.Total(), d.Summary.Ops))
		}
		check("summary "+l.name, enc, standard, []time.Duration{l.l.P50, l.l.P90, l.l.P99, l.l.P999, l.l.Max})
	}
	for _, p := range d.Series {
		if p.Histogram != "" {
			check(fmt.Sprintf("series point at %s", p.At), p.Histogram, []int64{500, 990}, []time.Duration{p.P50, p.P99})
		}
	}
	return errors.Join(errs...)
}
