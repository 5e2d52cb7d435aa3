package mpc

import "math"

// rateWindowS is the window over which the arrival rate is measured, s.
const rateWindowS = 60.0

// ratePriorS is added to a rate window shorter than rateWindowS.
const ratePriorS = 10.0

// rateRing is the most arrivals the rate window remembers; with more in the
// window, the rate is measured over the last rateRing arrivals.
const rateRing = 1024

// defaultOutputTokens stands in for the mean output length before any
// request has completed.
const defaultOutputTokens = 64.0

// learner holds what the controller learns online from the requests it has
// seen: the arrival rate, the prompt lengths of the arrivals and the output
// lengths of the completed requests (never of an unfinished one).
type learner struct {
	ring     [rateRing]float64 // arrival times, a circular buffer
	arrivals int               // arrivals seen
	// windowStart is the first arrival within the rate window at the last
	// call of rate.
	windowStart int
	prompts     histogram
	outputs     histogram
	// outputsSeen is outputs.n when the derived tables were last built,
	// and tpotBuilds the number of builds.
	outputsSeen float64
	tpotBuilds  int
	tpot        tpotTable
	// tpotPlain is tpot without the end-to-end objective, when there is
	// one (plainTPOT).
	tpotPlain tpotTable
	// The times to first token of the completed requests that had it in
	// time: sum and count.
	ttftSum, ttftCount float64
}

// arrive records an arrival.
func (l *learner) arrive(timeS float64, promptTokens int) {
	l.ring[l.arrivals%rateRing] = timeS
	l.arrivals++
	l.prompts.add(promptTokens)
}

// complete records a completed request's output length.
func (l *learner) complete(outputTokens int) { l.outputs.add(outputTokens) }

// firstTokenInTime records the time to first token of a completed request
// that had its first token in time.
func (l *learner) firstTokenInTime(ttftS float64) {
	l.ttftSum += ttftS
	l.ttftCount++
}

// decodeBudget is the time an end-to-end objective e2eS leaves a request
// after its first token, for a typical time to first token (the mean of
// those in time: the requests that can still meet every objective; a step
// before any): +Inf without one (e2eS 0).
func (l *learner) decodeBudget(dtS, e2eS float64) float64 {
	if e2eS == 0 {
		return math.Inf(1)
	}
	typical := dtS
	if l.ttftCount > 0 {
		typical = max(dtS, l.ttftSum/l.ttftCount)
	}
	return e2eS - typical
}

// rate is the arrival rate at nowS, requests/s: the arrivals of the last
// rateWindowS seconds over the window (over the time since the first
// arrival early in a run, plus ratePriorS so that a first burst does not
// look like a flood). Calls must come with nowS nondecreasing.
func (l *learner) rate(nowS float64) float64 {
	if l.arrivals == 0 {
		return 0
	}
	first := l.ring[0]
	if l.arrivals > rateRing {
		first = l.ring[l.arrivals%rateRing]
	}
	span := min(rateWindowS, nowS-first)
	if span <= 0 {
		return 0
	}
	// The window's start, nowS-span, never moves back (nowS grows, and so
	// does the oldest arrival remembered): windowStart moves on from the
	// last call.
	l.windowStart = max(l.windowStart, l.arrivals-rateRing)
	for l.windowStart < l.arrivals && l.ring[l.windowStart%rateRing] < nowS-span {
		l.windowStart++
	}
	n := l.arrivals - l.windowStart
	if l.arrivals > rateRing && n == rateRing {
		// More arrivals in the window than remembered.
		span = nowS - first
	}
	if span < rateWindowS {
		span += ratePriorS
	}
	return float64(n) / span
}

// meanOutput is the mean output length of the completed requests.
func (l *learner) meanOutput() float64 {
	if l.outputs.n == 0 {
		return defaultOutputTokens
	}
	return l.outputs.mean()
}

// remaining is the expected number of output tokens still to come for a
// request that has generated g tokens and not completed: E[O - g | O > g]
// over the completed requests' output lengths O.
func (l *learner) remaining(g float64) float64 {
	if l.outputs.n == 0 {
		return max(1, defaultOutputTokens-g)
	}
	count, sum := l.outputs.above(g)
	if count < 0.5 {
		// Longer than anything seen: expect as much again as its mean.
		return max(1, l.outputs.mean())
	}
	return max(1, sum/count-g)
}

// prepare brings the distributions and the tables derived from them up to
// date; dtS, tpotS and e2eS are the step and the TPOT and end-to-end
// objectives (e2eS 0: none), maxActive the most requests decoding at once.
func (l *learner) prepare(dtS, tpotS, e2eS float64, maxActive int) {
	l.prompts.prepare()
	l.outputs.prepare()
	// The TPOT tables follow the output distribution every time it
	// grows fourfold, and the decode budget an end-to-end objective
	// leaves every time it moves by 5% of the objective.
	budget := l.decodeBudget(dtS, e2eS)
	if !l.tpot.built || l.outputs.n >= 4*l.outputsSeen && l.outputs.n > 0 || math.Abs(budget-l.tpot.budgetS) > 0.05*e2eS {
		if e2eS > 0 && (!l.tpotPlain.built || l.outputs.n != l.outputsSeen) {
			l.tpotPlain.build(&l.outputs, dtS, tpotS, math.Inf(1), maxActive)
		}
		l.tpot.build(&l.outputs, dtS, tpotS, budget, maxActive)
		l.outputsSeen = l.outputs.n
		l.tpotBuilds++
	}
}

// plainTPOT is the TPOT table without the end-to-end objective.
func (l *learner) plainTPOT() *tpotTable {
	if l.tpotPlain.built {
		return &l.tpotPlain
	}
	return &l.tpot
}

// tpotGrid is the number of per-request decode shares tabulated per factor
// of two, evenly spaced within it.
const tpotGrid = 4

// The shares tabulated run from 2^tpotMinExp to 2^tpotMaxExp tokens per
// step.
const (
	tpotMinExp = -8
	tpotMaxExp = 12
	tpotPoints = (tpotMaxExp - tpotMinExp) * tpotGrid
)

// tpotTable tabulates the share of requests that meet the TPOT objective
// when each gets x output tokens per step: a request of O tokens produces
// about x in the step of its first token and x per step after it, so its
// TPOT is ceil((O - x) / x) steps over O - 1 tokens (0 when O <= x).
type tpotTable struct {
	met   [tpotPoints + 1]float64
	built bool
	// budgetS is the end-to-end budget after the first token the table
	// was built for (+Inf: none).
	budgetS float64
	// shared[i][j] is the share meeting the objective when a decode
	// throughput of capacity psCapacity(i) tokens per step is shared by
	// the n requests decoding, n geometrically distributed (as in a
	// processor-sharing queue) with mean psMean(j), at most maxActive.
	shared [psCapacityPoints + 1][psMeanPoints + 1]float64
	// alone is build's scratch: the share meeting the objective with n+1
	// requests decoding, at one capacity.
	alone []float64
}

// The grid of tpotTable.shared, in pseudoLog2 coordinates: capacities from
// 2^psMinExp to 2^psMaxExp tokens per step, two points per octave; means
// m with pseudoLog2(m+1) from 0 to psMeanOctaves, two points per octave.
const (
	psMinExp         = -4
	psMaxExp         = 10
	psCapacityPoints = (psMaxExp - psMinExp) * 2
	psMeanOctaves    = 7
	psMeanPoints     = psMeanOctaves * 2
)

// pseudoLog2 is log2 linearized within each octave: exact at powers of two,
// cheap (no logarithm).
func pseudoLog2(x float64) float64 {
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [0.5, 1)
	return float64(exp-1) + 2*frac - 1
}

// pseudoExp2 inverts pseudoLog2.
func pseudoExp2(u float64) float64 {
	whole := math.Floor(u)
	return math.Ldexp(1+u-whole, int(whole))
}

// tpotMet reports whether a request of o output tokens getting x tokens
// per step meets tpotS on steps of dtS, and ends within budgetS of its
// first token (+Inf: no end-to-end objective).
func tpotMet(o, x, dtS, tpotS, budgetS float64) bool {
	if budgetS < 0 {
		return false
	}
	if o <= x || o <= 1 {
		return true
	}
	decodeS := math.Ceil((o-x)/x) * dtS
	return decodeS <= tpotS*(o-1)*(1+1e-9) && decodeS <= budgetS*(1+1e-9)
}

// tpotMetShared is the chance that a request of o output tokens meets
// tpotS when capacity output tokens per step are shared by a
// processor-sharing queue of mean length mean, as tpotTable.shared has it
// for the learned outputs: the request finds n others with probability
// (1-q) q^n, q = mean/(1+mean), n < maxActive, and meets the objective
// (tpotMet) when its share capacity/(n+1) is at least o/(K+1), K the steps
// the objectives (TPOT, and the end-to-end budget budgetS after the first
// token) allow after its first token.
func tpotMetShared(o, capacity, mean, dtS, tpotS, budgetS float64, maxActive int) float64 {
	if budgetS < 0 {
		return 0
	}
	if o <= 1 {
		return 1
	}
	steps := math.Floor(tpotS * (o - 1) * (1 + 1e-9) / dtS)
	steps = math.Min(steps, math.Floor(budgetS*(1+1e-9)/dtS))
	slots := math.Min(math.Floor(capacity*(steps+1)/o*(1+1e-9)), float64(maxActive))
	if slots < 1 {
		return 0
	}
	q := math.Max(0, mean) / (1 + math.Max(0, mean))
	if q >= 1 {
		return slots / float64(maxActive)
	}
	return (1 - math.Pow(q, slots)) / (1 - math.Pow(q, float64(maxActive)))
}

// build tabulates the tables for outputs, with the end-to-end budget
// budgetS after the first token.
func (t *tpotTable) build(outputs *histogram, dtS, tpotS, budgetS float64, maxActive int) {
	t.budgetS = budgetS
	for i := range t.met {
		x := math.Ldexp(1+float64(i%tpotGrid)/tpotGrid, tpotMinExp+i/tpotGrid)
		if outputs.n == 0 {
			t.met[i] = 0
			if tpotMet(defaultOutputTokens, x, dtS, tpotS, budgetS) {
				t.met[i] = 1
			}
			continue
		}
		met := 0.0
		outputs.bins(func(count, value float64) {
			if tpotMet(value, x, dtS, tpotS, budgetS) {
				met += count
			}
		})
		t.met[i] = met / outputs.n
	}
	if len(t.alone) != maxActive {
		t.alone = make([]float64, maxActive)
	}
	alone := t.alone
	for i := range t.shared {
		capacity := pseudoExp2(psMinExp + float64(i)/2)
		for n := range alone {
			alone[n] = t.at(capacity / float64(n+1))
		}
		for j := range t.shared[i] {
			mean := pseudoExp2(float64(j)/2) - 1
			q := mean / (1 + mean)
			met, weight, total := 0.0, 1-q, 0.0
			for _, a := range alone {
				met += weight * a
				total += weight
				weight *= q
				if weight < 1e-5 {
					break
				}
			}
			t.shared[i][j] = met / total
		}
	}
	t.built = true
}

// sharedAt is the share meeting the objective when capacity output tokens
// per step are shared by a processor-sharing queue of mean length mean
// (tpotTable.shared, interpolated).
func (t *tpotTable) sharedAt(capacity, mean float64) float64 {
	if !(capacity > 0) {
		return 0
	}
	u := max(0, min(psCapacityPoints-1e-9, 2*(pseudoLog2(capacity)-psMinExp)))
	v := max(0, min(psMeanPoints-1e-9, 2*pseudoLog2(mean+1)))
	i, j := int(u), int(v)
	a, b := u-float64(i), v-float64(j)
	return (1-a)*((1-b)*t.shared[i][j]+b*t.shared[i][j+1]) + a*((1-b)*t.shared[i+1][j]+b*t.shared[i+1][j+1])
}

// at is the share of requests meeting the TPOT objective at x tokens per
// step, interpolated between grid points.
func (t *tpotTable) at(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [0.5, 1)
	pos := float64((exp-1-tpotMinExp)*tpotGrid) + (frac*2-1)*tpotGrid
	if pos <= 0 {
		return t.met[0]
	}
	if pos >= tpotPoints {
		return t.met[tpotPoints]
	}
	i := int(pos)
	w := pos - float64(i)
	return t.met[i]*(1-w) + t.met[i+1]*w
}
