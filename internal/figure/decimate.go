package figure

import "slices"

// maxLinePoints bounds the points drawn per line: a day of 0.1 s steps
// would otherwise make a huge, slow image that shows nothing more.
const maxLinePoints = 4000

// decimate keeps, of every bucket of consecutive points, the first, the
// lowest and the highest (in order), so peaks and dips survive, until at
// most about limit points remain.
func decimate(pts []point, limit int) []point {
	buckets := limit / 3
	if len(pts) <= limit || buckets < 1 {
		return pts
	}
	out := make([]point, 0, 3*buckets+1)
	size := (len(pts) + buckets - 1) / buckets
	for start := 0; start < len(pts); start += size {
		bucket := pts[start:min(start+size, len(pts))]
		lo, hi := 0, 0
		for i, p := range bucket {
			if p.Y < bucket[lo].Y {
				lo = i
			}
			if p.Y > bucket[hi].Y {
				hi = i
			}
		}
		keep := []int{0, lo, hi}
		slices.Sort(keep)
		for k, i := range keep {
			if k == 0 || i != keep[k-1] {
				out = append(out, bucket[i])
			}
		}
	}
	if last := pts[len(pts)-1]; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

// envelope thins the edges of a band, lower and upper (paired by index,
// lower[i].Y <= upper[i].Y, x increasing), to at most about limit points
// each: every bucket of consecutive points becomes a step at its lowest
// lower and highest upper value, from its first x to its last. Thinned so,
// the band still holds every point and its edges never cross, as they
// could if each were decimated alone.
func envelope(lower, upper []point, limit int) (lo, hi []point) {
	buckets := limit / 2
	if len(lower) <= limit || buckets < 1 {
		return lower, upper
	}
	lo, hi = make([]point, 0, 2*buckets), make([]point, 0, 2*buckets)
	size := (len(lower) + buckets - 1) / buckets
	for start := 0; start < len(lower); start += size {
		end := min(start+size, len(lower)) - 1
		bottom, top := lower[start].Y, upper[start].Y
		for i := start + 1; i <= end; i++ {
			bottom, top = min(bottom, lower[i].Y), max(top, upper[i].Y)
		}
		lo = append(lo, point{lower[start].X, bottom}, point{lower[end].X, bottom})
		hi = append(hi, point{upper[start].X, top}, point{upper[end].X, top})
	}
	return lo, hi
}
