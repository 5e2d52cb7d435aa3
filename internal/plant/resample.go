package plant

// Resample returns the trajectory as a run with the given stride would have
// sampled it: steps 0, stride, 2*stride, ... and always the last step. t
// must hold every step (a run with stride 1).
func (t *Trajectory) Resample(stride int) Trajectory {
	out, _ := t.resample(stride, nil)
	return out
}

// resample is Resample that also keeps every sample i for which keep(i)
// holds (nil keeps none); it returns the indices of the kept samples too.
func (t *Trajectory) resample(stride int, keep func(i int) bool) (Trajectory, []int) {
	stride = max(1, stride)
	var out Trajectory
	out.Stride = stride
	n := t.Len()
	out.reserve(n/stride + 2)
	var kept []int
	for i := range n {
		if t.StepIndex[i]%stride == 0 || i == n-1 || (keep != nil && keep(i)) {
			s := t.sample(i)
			out.append(&s)
			kept = append(kept, i)
		}
	}
	return out, kept
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
		out.PlanDtS = nil
		return &out
	}
	if r.PlanDtS == nil {
		out.Trajectory = r.Trajectory.Resample(stride)
		out.PlannedClockMHz = make([][]float64, out.Trajectory.Len())
		out.PlannedClockStartTimeS = make([]*float64, out.Trajectory.Len())
		return &out
	}
	// A planner's steps holding a plan are all kept.
	trajectory, kept := r.Trajectory.resample(stride, func(i int) bool { return r.PlannedClockStartTimeS[i] != nil })
	out.Trajectory = trajectory
	out.PlannedClockMHz = make([][]float64, len(kept))
	out.PlannedClockStartTimeS = make([]*float64, len(kept))
	for j, i := range kept {
		out.PlannedClockMHz[j] = r.PlannedClockMHz[i]
		out.PlannedClockStartTimeS[j] = r.PlannedClockStartTimeS[i]
	}
	return &out
}
