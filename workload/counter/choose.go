package counter

import (
	"math"
	"math/rand/v2"
)

// chooser picks the object an operation hits, as an index in [0, objects).
// Each writer has its own chooser over its own *rand.Rand, so choosing takes
// no lock; a chooser is not safe for concurrent use.
type chooser interface {
	next() int
}

// newChooser returns writer's chooser for s (defaulted and validated):
// fixed groups when s.WritersPerObject > 0, else s.Distribution.
func newChooser(s *Settings, writer int, r *rand.Rand) chooser {
	m := s.Objects
	switch {
	case m <= 1:
		return fixedChooser(0)
	case s.WritersPerObject > 0:
		// Writers 0..K-1 share object 0, K..2K-1 object 1, and so on,
		// wrapping round when there are more groups than objects.
		return fixedChooser((writer / s.WritersPerObject) % m)
	}
	switch s.Distribution {
	case DistZipf:
		// P(k) is proportional to (1+k)^-s: object 0 is the hottest.
		return zipfChooser{rand.NewZipf(r, s.ZipfExponent, 1, uint64(m-1))}
	case DistHotspot:
		hot := int(math.Round(s.HotFraction * float64(m)))
		hot = min(max(hot, 1), m)
		if hot == m {
			return uniformChooser{r: r, n: m}
		}
		return hotspotChooser{r: r, hot: hot, cold: m - hot, share: s.HotShare}
	default:
		return uniformChooser{r: r, n: m}
	}
}

// fixedChooser always picks the same object.
type fixedChooser int

func (c fixedChooser) next() int { return int(c) }

// uniformChooser picks every object with the same probability.
type uniformChooser struct {
	r *rand.Rand
	n int
}

func (c uniformChooser) next() int { return c.r.IntN(c.n) }

// zipfChooser picks object k with probability proportional to (1+k)^-s.
type zipfChooser struct{ z *rand.Zipf }

func (c zipfChooser) next() int { return int(c.z.Uint64()) }

// hotspotChooser sends share of the operations to the first hot objects,
// uniformly, and the rest to the cold ones, uniformly.
type hotspotChooser struct {
	r         *rand.Rand
	hot, cold int
	share     float64
}

func (c hotspotChooser) next() int {
	if c.r.Float64() < c.share {
		return c.r.IntN(c.hot)
	}
	return c.hot + c.r.IntN(c.cold)
}
