package counter

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// draw returns how often each object was picked in n draws.
func draw(t *testing.T, s *Settings, writer, n int) []float64 {
	t.Helper()
	c := newChooser(s, writer, rand.New(rand.NewPCG(1, uint64(writer))))
	freq := make([]float64, s.Objects)
	for range n {
		k := c()
		if k < 0 || k >= s.Objects {
			t.Fatalf("picked object %d, outside [0, %d)", k, s.Objects)
		}
		freq[k]++
	}
	for i := range freq {
		freq[i] /= float64(n)
	}
	return freq
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestUniformChooserIsFlat(t *testing.T) {
	s := &Settings{Objects: 10, Distribution: DistUniform}
	for i, f := range draw(t, s, 0, 200_000) {
		if !within(f, 0.1, 0.005) {
			t.Errorf("object %d picked %.4f of the time, want 0.1 ± 0.005", i, f)
		}
	}
}

func TestZipfChooserFollowsPowerLaw(t *testing.T) {
	for _, exp := range []float64{1.1, 1.5, 2} {
		t.Run("s="+strconv.FormatFloat(exp, 'g', -1, 64), func(t *testing.T) {
			const m = 50
			s := &Settings{Objects: m, Distribution: DistZipf, ZipfExponent: exp}
			freq := draw(t, s, 3, 400_000)
			// P(k) = (1+k)^-s / sum over j of (1+j)^-s.
			var norm float64
			for k := range m {
				norm += math.Pow(float64(1+k), -exp)
			}
			for k := range 5 {
				want := math.Pow(float64(1+k), -exp) / norm
				if !within(freq[k], want, 0.05*want+0.002) {
					t.Errorf("object %d picked %.4f of the time, want %.4f (zipf s=%g)", k, freq[k], want, exp)
				}
			}
			for k := 1; k < m; k++ {
				if freq[k] > freq[0] {
					t.Errorf("object %d (%.4f) hotter than object 0 (%.4f)", k, freq[k], freq[0])
				}
			}
		})
	}
}

func TestHotspotChooserSendsHotShareToHotObjects(t *testing.T) {
	tests := []struct {
		name         string
		objects      int
		fraction     float64
		share        float64
		wantHot      int
		wantHotShare float64
	}{
		{"10% get 90%", 20, 0.1, 0.9, 2, 0.9},
		{"half get 60%", 10, 0.5, 0.6, 5, 0.6},
		{"at least one hot", 4, 0.01, 0.8, 1, 0.8},
		{"all hot is uniform", 3, 0.99, 0.9, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Settings{Objects: tt.objects, Distribution: DistHotspot, HotFraction: tt.fraction, HotShare: tt.share}
			freq := draw(t, s, 1, 200_000)
			var hot float64
			for _, f := range freq[:tt.wantHot] {
				hot += f
			}
			if !within(hot, tt.wantHotShare, 0.01) {
				t.Errorf("hot objects got %.4f of the traffic, want %.2f", hot, tt.wantHotShare)
			}
			// Uniform within each group.
			for i, f := range freq {
				want := tt.wantHotShare / float64(tt.wantHot)
				if i >= tt.wantHot {
					want = (1 - tt.wantHotShare) / float64(tt.objects-tt.wantHot)
				}
				if !within(f, want, 0.1*want+0.002) {
					t.Errorf("object %d got %.4f, want %.4f", i, f, want)
				}
			}
		})
	}
}

func TestFixedGroupsPinWritersToObjects(t *testing.T) {
	tests := []struct {
		name             string
		writersPerObject int
		objects          int
		want             []int // object of writers 0, 1, ...
	}{
		{"pairs", 2, 3, []int{0, 0, 1, 1, 2, 2}},
		{"wrap round", 2, 2, []int{0, 0, 1, 1, 0, 0}},
		{"one each", 1, 4, []int{0, 1, 2, 3}},
		{"one object", 3, 1, []int{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Settings{Objects: tt.objects, WritersPerObject: tt.writersPerObject, Distribution: DistUniform}
			for w, want := range tt.want {
				c := newChooser(s, w, rand.New(rand.NewPCG(1, 2)))
				for range 10 {
					if got := c(); got != want {
						t.Fatalf("writer %d picked object %d, want always %d", w, got, want)
					}
				}
			}
		})
	}
}

func TestChoosersAreIndependentPerWriter(t *testing.T) {
	s := &Settings{Objects: 1000, Distribution: DistZipf, ZipfExponent: 1.1}
	a := newChooser(s, 0, rand.New(rand.NewPCG(7, 1)))
	b := newChooser(s, 1, rand.New(rand.NewPCG(7, 2)))
	same := 0
	for range 1000 {
		if a() == b() {
			same++
		}
	}
	if same > 500 {
		t.Errorf("two writers picked the same object %d times in 1000: their streams look shared", same)
	}
}
