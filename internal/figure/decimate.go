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
