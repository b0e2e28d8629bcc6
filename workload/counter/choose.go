package counter

import (
	"math"
	"math/rand/v2"
)

// newChooser returns writer's chooser for s (defaulted and validated): it
// picks the object an operation hits, as an index in [0, objects), by
// fixed groups when s.WritersPerObject > 0, else by s.Distribution. Each
// writer has its own chooser over its own *rand.Rand, so choosing takes no
// lock; a chooser is not safe for concurrent use.
func newChooser(s *Settings, writer int, r *rand.Rand) func() int {
	m := s.Objects
	fixed := func(obj int) func() int { return func() int { return obj } }
	switch {
	case m <= 1:
		return fixed(0)
	case s.WritersPerObject > 0:
		// Writers 0..K-1 share object 0, K..2K-1 object 1, and so on,
		// wrapping round when there are more groups than objects.
		return fixed((writer / s.WritersPerObject) % m)
	}
	uniform := func() int { return r.IntN(m) }
	switch s.Distribution {
	case DistZipf:
		// P(k) is proportional to (1+k)^-s: object 0 is the hottest.
		z := rand.NewZipf(r, s.ZipfExponent, 1, uint64(m-1))
		return func() int { return int(z.Uint64()) }
	case DistHotspot:
		hot := min(max(int(math.Round(s.HotFraction*float64(m))), 1), m)
		if hot == m {
			return uniform
		}
		// share of the operations go to the first hot objects, uniformly,
		// the rest to the cold ones, uniformly.
		share := s.HotShare
		return func() int {
			if r.Float64() < share {
				return r.IntN(hot)
			}
			return hot + r.IntN(m-hot)
		}
	default:
		return uniform
	}
}
