package plant

// Resample returns the trajectory as a run with the given stride would have
// sampled it: steps 0, stride, 2*stride, ... and always the last step. t
// must hold every step (a run with stride 1).
func (t *Trajectory) Resample(stride int) Trajectory {
	stride = max(1, stride)
	var out Trajectory
	out.Stride = stride
	n := t.Len()
	out.reserve(n/stride + 2)
	for i := range n {
		if t.StepIndex[i]%stride == 0 || i == n-1 {
			s := t.sample(i)
			out.append(&s)
		}
	}
	return out
}

// Thinned returns r as Simulate would have returned it with
// Options{Stride: stride, Summary: summary}. r must come from a run that kept
// every step (stride 1, no summary): a caller that needs the full trajectory
// (to draw it) and a thinned document runs the plant once.
func (r *Result) Thinned(stride int, summary bool) *Result {
	out := *r
	if summary {
		out.Trajectory = Trajectory{}
		out.Requests = nil
		out.PlannedClockMHz = nil
		out.PlannedClockStartTimeS = nil
		return &out
	}
	out.Trajectory = r.Trajectory.Resample(stride)
	out.PlannedClockMHz = make([][]float64, out.Trajectory.Len())
	out.PlannedClockStartTimeS = make([]*float64, out.Trajectory.Len())
	return &out
}
