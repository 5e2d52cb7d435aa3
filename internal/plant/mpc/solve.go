package mpc

import (
	"math"
	"slices"
	"time"
)

// maxItems is the most queued requests a solve follows one by one; those
// behind them are counted as misses (they wait behind maxItems prompts).
const maxItems = 256

// attainmentGap is how far, without an attainment target, a plan's
// predicted attainment over the horizon may fall short of the highest
// level's plan's: its predicted misses may exceed the reference's by this
// share of the requests the horizon judges (goal 1's resolution, 0.2
// points). A share of the requests of the first period alone (0.1%, as
// before) kept every level below the most expensive ones on cases where
// the model's miss tails are pessimistic: conv/proxy/moderate/relaxed spent
// 5.9% more than the clairvoyant bound at equal attainment, 2.2% now.
const attainmentGap = 0.002

// tolerance is, with an attainment target, the share of the requests a
// solve decides for (in the system or arriving in its first period) by
// which its predicted misses may exceed those of the highest level's plan
// before the run's slack is added.
const tolerance = 0.001

// slackSpent is the share of the slack a run has built up over its
// attainment target that a solve may spend; slackMargin is the share of
// the requests completed kept in reserve (congestion makes the misses of a
// slower plan come in bursts the model does not foresee), at most a
// quarter of the misses the target allows.
const (
	slackSpent  = 0.05
	slackMargin = 0.01
)

// crowdedShare is the share of the plant's most decoding requests from
// which a solve keeps the highest level's plan (when it is feasible)
// without searching. So crowded, every plan's new requests miss their TPOT
// within the horizon and the misses stop telling plans apart, while a
// slower period prolongs a congestion that outlasts the horizon: on the
// conversation trace's first 900 s at 0.85 of the proxy's capacity (SLOs
// 5 s and 0.1 s) mpc ended at 0.1745 against max's 0.5332 without it,
// 0.4026 with it (0.2963 from 75%). From 60% the goal table is byte for
// byte the same; from 50% and below it changes, its verdicts not.
const crowdedShare = 0.6

// crowdedLeast is the fewest decoding requests that are crowded: on a
// plant of few slots (--max-active 1 to 26) a share of them is a small
// batch, where the model still tells the clocks apart.
const crowdedLeast = 16

// refinedPeriods is the number of leading periods whose level the search
// refines one at a time after choosing the best constant plan.
const refinedPeriods = 1

// build fills the problem of a solve at the current step of period.
func (c *Controller) build(s Server, period int) {
	pr := &c.pr
	now := s.TimeS()
	dt := c.plant.TimeStepS
	if first := max(float64(period+1)*c.set.PeriodS-now, dt); first != pr.firstS {
		// Only the first block changes from solve to solve.
		pr.firstS = first
		pr.horizonS = first + pr.afterFirstS
		b := &pr.blocks[0]
		b.spanS, b.decay = first, math.Exp(-first/c.plant.ThermalTauS)
		b.restS, b.restDecay = pr.horizonS, math.Exp(-pr.horizonS/c.plant.ThermalTauS)
	}
	pr.temperatureC = s.TemperatureC()
	pr.kvTokens = s.KVTokens()
	pr.certainMisses = 0

	// The queue: requests that can no longer get their first token in
	// time are at its head (it is in arrival order).
	queued := s.Queued()
	lo, hi := 0, queued
	for lo < hi {
		mid := (lo + hi) / 2
		if s.QueuedAt(mid).ArrivalS+c.firstTokenS < now+dt-1e-9 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	last := min(queued, lo+maxItems)
	pr.certainMisses += float64(lo + queued - last)
	pr.items = pr.items[:0]
	work := 0.0
	for i := lo; i < last; i++ {
		q := s.QueuedAt(i)
		work += q.PrefillLeft
		var it *item
		pr.items, it = extend(pr.items)
		it.arrivalS, it.deadlineS = q.ArrivalS-now, q.ArrivalS+c.firstTokenS-now
		it.work, it.prompt, it.output = work, float64(q.Prompt), c.knownOutput(q.ID)
	}
	behind := float64(queued-last) * c.learn.prompts.mean()
	pr.lostWork = max(0, s.QueuedPromptTokens()-work-behind)

	// The decoding requests: how much each still has to generate, and the
	// share of the decode throughput it needs to meet its objectives.
	active := s.Active()
	pr.active = float64(active)
	pr.few = pr.few[:0]
	if active <= maxFew {
		pr.few = pr.fewBuf[:active]
	}
	pr.decodeLeft = 0
	pr.needs = pr.needs[:0]
	pr.activeBuf = s.AppendActive(pr.activeBuf[:0])
	for i := range pr.activeBuf {
		a := &pr.activeBuf[i]
		g := a.Generated
		left := c.learn.remaining(g)
		if out := c.knownOutput(a.ID); out > 0 {
			left = out - g
		}
		pr.decodeLeft += left
		if i < len(pr.few) {
			pr.few[i] = fewActive{generated: g, left: c.knownOutput(a.ID) - g}
		}
		need, ok := c.need(a, left, now)
		if !ok {
			pr.certainMisses++
			continue
		}
		pr.needs = append(pr.needs, need)
	}
	slices.Sort(pr.needs)

	for i := range pr.alone {
		pr.alone[i] = -1
	}
	pr.firstPrefillWaitS = 0
	if c.plant.Scheduler == Chunked && active > 0 && s.StepIndex()%2 == 1 {
		pr.firstPrefillWaitS = dt
	}
	pr.tpot = &c.learn.tpot
	pr.tpotPlain = c.learn.plainTPOT()
	pr.dual = c.slo.E2ES > 0 && c.set.Attainment == 0 && !c.clairvoyant
	pr.prompts = &c.learn.prompts
	pr.forgetEmptyTTFT()
	pr.outputs = &c.learn.outputs
	pr.meanPrompt = max(1, c.learn.prompts.mean())
	pr.meanOutput = c.learn.meanOutput()
	pr.rate = 0
	if c.clairvoyant {
		c.addFuture(now)
	} else {
		pr.rate = c.learn.rate(now)
	}
	pr.inflow = pr.rate * pr.meanPrompt
	pr.arrived = 0
	for pr.arrived < len(pr.items) && pr.items[pr.arrived].arrivalS <= 0 {
		pr.arrived++
	}
	c.stationaries()
}

// layBlocks lays out the horizon in blocks of 1, 1, 2, 4, 8, ... periods
// (one for each refined period, then doubling) with the span of each but
// the first, whose span (from the solve to the end of its period) build
// sets at each solve.
func (pr *problem) layBlocks(set Settings, thermalTauS float64) {
	pr.blocks = pr.blocks[:0]
	size := 1
	for k := 0; k < set.Horizon; k += size {
		if k >= refinedPeriods+1 {
			size = min(2*size, set.Horizon-k)
		}
		pr.blocks = append(pr.blocks, block{first: k, spanS: float64(size) * set.PeriodS})
	}
	rest := 0.0
	for k := len(pr.blocks) - 1; k >= 1; k-- {
		b := &pr.blocks[k]
		b.decay = math.Exp(-b.spanS / thermalTauS)
		rest += b.spanS
		b.restS, b.restDecay = rest, math.Exp(-rest/thermalTauS)
	}
	pr.afterFirstS = rest
}

// need returns the output tokens per step decoding request a needs from
// now on to meet the TPOT (and end-to-end) objective with left tokens to
// go, or false when it cannot meet them any more.
func (c *Controller) need(a *Active, left, now float64) (float64, bool) {
	dt := c.plant.TimeStepS
	elapsed := 0.0 // since its first token
	if !math.IsNaN(a.FirstTokenS) {
		if a.FirstTokenS-a.ArrivalS > c.slo.TTFTS {
			return 0, false
		}
		elapsed = now - a.FirstTokenS
	} else if now+dt-a.ArrivalS > c.firstTokenS {
		return 0, false
	}
	output := a.Generated + left
	need := 0.0
	if output > 1 {
		steps := math.Floor((c.slo.TPOTS*(output-1)-elapsed)/dt + 1e-9)
		if steps < 1 {
			return 0, false
		}
		need = left / steps
	}
	if c.slo.E2ES > 0 {
		steps := math.Floor((a.ArrivalS+c.slo.E2ES-now)/dt + 1e-9)
		if steps < 1 {
			return 0, false
		}
		need = max(need, left/steps)
	}
	return need, true
}

// knownOutput is a request's output length if the controller is
// clairvoyant, else 0.
func (c *Controller) knownOutput(id int) float64 {
	if !c.clairvoyant {
		return 0
	}
	return float64(c.outputs[id])
}

// addFuture appends the requests arriving within the horizon to a
// clairvoyant solve's items.
func (c *Controller) addFuture(now float64) {
	pr := &c.pr
	span := pr.horizonS
	i, _ := slices.BinarySearchFunc(c.future, now+TimeEpsilonS, func(r Request, t float64) int {
		if r.ArrivalS <= t {
			return -1
		}
		return 1
	})
	work := 0.0
	if n := len(pr.items); n > 0 {
		work = pr.items[n-1].work
	}
	for ; i < len(c.future) && c.future[i].ArrivalS < now+span; i++ {
		r := &c.future[i]
		work += float64(r.Prompt)
		var it *item
		pr.items, it = extend(pr.items)
		it.arrivalS, it.deadlineS = r.ArrivalS-now, r.ArrivalS+c.firstTokenS-now
		it.work, it.prompt, it.output = work, float64(r.Prompt), float64(r.Output)
	}
}

// stationaries computes each level's stationary outcome under the
// predicted arrivals, unless they changed little since the last time.
func (c *Controller) stationaries() {
	pr := &c.pr
	st := &c.stat
	if st.valid && math.Abs(pr.rate-st.rate) <= 0.05*st.rate && c.learn.prompts.n < st.prompts*9/8 && c.learn.tpotBuilds == st.tables {
		return
	}
	st.rate, st.prompts, st.tables, st.valid = pr.rate, c.learn.prompts.n, c.learn.tpotBuilds, true
	p := &c.plant
	dt := p.TimeStepS
	meanSquare := c.learn.prompts.sumOfSquares() / max(c.learn.prompts.n, 1)
	for i := range pr.stationary {
		pl := &c.levels.cool[i]
		s := &pr.stationary[i]
		if pr.rate == 0 {
			*s = stationary{powerW: c.idleMinW, temperatureC: p.AmbientC + p.ThermalRCPerW*c.idleMinW}
			continue
		}
		// A prefill step serves a chunk and decodes in the rest of the
		// step; the other steps decode. The chunked scheduler alternates
		// while requests decode (with probability rho, the decode load).
		stepsPerRequest := pr.meanPrompt/pl.chunk + 0.5
		prefillSteps := pr.rate * stepsPerRequest * dt
		capacity := (1-prefillSteps)*pl.decodeRate + prefillSteps*max(0, dt-pl.chunkTimeS)/dt*pl.leftDecodeRate
		decodeLoad := pr.rate * pr.meanOutput / max(capacity, 1e-9)
		s.powerW = c.idleMinW + pr.rate*(pr.meanPrompt*pl.prefillJ+pr.meanOutput*pl.decodeJ)
		if prefillSteps >= 1 || decodeLoad >= 1 {
			// Overloaded: the queue grows and every arrival misses.
			s.missShare, s.missSharePlain = 1, 1
			s.spare, s.growth = 0, max(prefillSteps, decodeLoad)-1
			s.powerW = max(s.powerW, max(pl.prefillPowerW, pl.decodePowerW))
		} else {
			alone := 1.0
			if p.Scheduler == Chunked {
				alone = 1 - decodeLoad
			}
			prefillLoad := min(0.95, pr.rate*stepsPerRequest*(alone*dt+(1-alone)*2*dt))
			ahead := meanSquare / (2 * pr.meanPrompt) / (1 - prefillLoad)
			ttftAt := func(cycle float64) float64 {
				return (1-prefillLoad)*pr.ttftMet(pl, 0, cycle) + prefillLoad*pr.ttftMet(pl, ahead, cycle)
			}
			ttft := alone*ttftAt(dt) + (1-alone)*ttftAt(2*dt)
			// Processor sharing: an arrival finds n decoding with
			// probability (1-rho) rho^n.
			tpot := pr.tpot.sharedAt(capacity*dt, decodeLoad/(1-decodeLoad))
			s.missShare = 1 - ttft*tpot
			s.missSharePlain = s.missShare
			if pr.dual {
				s.missSharePlain = 1 - ttft*pr.tpotPlain.sharedAt(capacity*dt, decodeLoad/(1-decodeLoad))
			}
			s.decodeLeft = decodeLoad / (1 - decodeLoad) * pr.meanOutput
			s.spare, s.growth = (1-decodeLoad)*capacity, 0
		}
		s.temperatureC = p.AmbientC + p.ThermalRCPerW*s.powerW
	}
}

// searchState is what a search keeps from one evaluation to the next.
type searchState struct {
	start  time.Time // of the solve, with a deadline
	states int       // model states expanded so far
	// A feasible plan's misses are within target, and it leaves at most
	// leftoverS of work at the end of the horizon.
	target, leftoverS float64
	targetPlain       float64 // the target of the misses without the end-to-end objective (problem.dual)
	bestEnergy        float64 // of the cheapest feasible plan so far (c.best)
}

// eval follows plan into o, counting its states; false when the budget or
// the deadline has run out.
func (c *Controller) eval(plan []int, o *outcome) bool {
	c.pr.run(c, plan, o)
	sr := &c.sr
	sr.states += o.states
	if sr.states > c.set.Budget {
		return false
	}
	return c.set.DeadlineS <= 0 || time.Since(sr.start).Seconds() <= c.set.DeadlineS
}

// feasible reports whether an outcome is within the target, the thermal
// limit and the leftover work allowed.
func (c *Controller) feasible(o *outcome) bool {
	return o.misses <= c.sr.target+1e-9 && (!c.pr.dual || o.missesPlain <= c.sr.targetPlain+1e-9) && o.peakTempC < c.plant.ThermalLimitC &&
		o.leftoverS <= c.sr.leftoverS
}

// consider keeps plan as the best when it is feasible and cheaper.
func (c *Controller) consider(o *outcome, plan []int) {
	if c.feasible(o) && o.energyJ < c.sr.bestEnergy {
		c.sr.bestEnergy = o.energyJ
		copy(c.best, plan)
	}
}

// uniformPlan is the outcome of the constant plan of the i-th allowed
// level, evaluated (and considered) once per solve.
func (c *Controller) uniformPlan(i int) (*outcome, bool) {
	u := &c.uniform[i]
	if u.valid {
		return &u.outcome, true
	}
	fill(c.plan, c.levels.list[i])
	ok := c.eval(c.plan, &u.outcome)
	c.consider(&u.outcome, c.plan)
	u.valid = true
	return &u.outcome, ok
}

// fill sets every period of plan to level.
func fill(plan []int, level int) {
	for k := range plan {
		plan[k] = level
	}
}

// search finds the cheapest plan whose predicted misses are within the
// target: the highest level's plan sets the target, every constant plan is
// tried, then the levels of the first periods are refined one at a time.
// It reports false when the budget or the deadline ran out or no plan was
// feasible.
func (c *Controller) search(start time.Time) bool {
	sr := &c.sr
	sr.start, sr.states = start, 0
	ref, ok := c.referencePlan()
	if !ok {
		return false
	}
	c.setTargets(ref)
	c.consider(ref, c.plan)
	if c.pr.active >= max(crowdedShare*float64(c.plant.MaxActive), crowdedLeast) && c.feasible(ref) {
		return true // the highest level's plan, as crowdedShare says
	}
	if !c.constantPlans() || math.IsInf(sr.bestEnergy, 1) {
		return false
	}
	return c.refineFirstPeriods()
}

// referencePlan evaluates the reference plan, which holds the highest
// level, in c.plan, and forgets the last solve's constant plans. It
// reports false when the budget or the deadline ran out.
func (c *Controller) referencePlan() (*outcome, bool) {
	fill(c.plan, c.levels.top)
	// Evaluated in its constant plan's slot: copied there, the outcome's
	// wide loads would stall on the stores just made (see extend).
	for i := range c.uniform {
		c.uniform[i].valid = false
	}
	topPlan := &c.uniform[len(c.levels.list)-1]
	ref := &topPlan.outcome
	if !c.eval(c.plan, ref) {
		return ref, false
	}
	topPlan.valid = true
	return ref, true
}

// setTargets sets the search's targets from the reference plan's outcome
// and clears the best plan's energy.
func (c *Controller) setTargets(ref *outcome) {
	sr := &c.sr
	// The plan chosen must do as well as the reference plan within a
	// tolerance...
	target := ref.misses + attainmentGap*ref.requests
	sr.targetPlain = ref.missesPlain + attainmentGap*ref.requests
	if a := c.set.Attainment; a > 0 {
		// ... or, with an attainment target, within a tolerance of the
		// requests its first period decides for (in the system and
		// arriving in that period), and it may miss more as far as the
		// run is ahead of the target by more than slackMargin: a share
		// slackSpent of the misses a share 1-A of the requests completed
		// allows, less those they had and those already certain in the
		// system.
		inSystem := ref.requests - c.predictedArrivals()
		target = ref.misses + tolerance*(inSystem+c.pr.rate*c.pr.blocks[0].spanS)
		margin := min(slackMargin, (1-a)/4)
		slack := (1-a-margin)*float64(c.seenCompleted) - float64(c.completedMisses) - c.pr.certainMisses
		target += slackSpent * max(0, slack)
	}
	// A plan may leave at most a step's worth of work more than the
	// reference at the end of the horizon: a queue that outgrows the
	// horizon would otherwise look free, and solve after solve the
	// backlog would drift up.
	sr.target, sr.leftoverS = target, ref.leftoverS+c.plant.TimeStepS
	sr.bestEnergy = math.Inf(1)
}

// constantPlans tries the constant plans: the lowest feasible level
// (lowestFeasible), then the levels above it while energy falls. Each
// constant plan is evaluated once. It reports false when the budget or the
// deadline ran out.
func (c *Controller) constantPlans() bool {
	lo, ok := c.lowestFeasible()
	if !ok {
		return false
	}
	c.lastUniform = lo
	previous := math.Inf(1)
	for i := lo; i < len(c.levels.list)-1; i++ {
		o, ok := c.uniformPlan(i)
		if !ok {
			return false
		}
		if !c.feasible(o) || o.energyJ >= previous {
			break
		}
		previous = o.energyJ
	}
	return true
}

// lowestFeasible is the index of the lowest level whose constant plan is
// feasible (misses grow as the level falls), searched from the last
// solve's constant level down while feasible or up until feasible (the
// highest if none is). It reports false when the budget or the deadline
// ran out.
func (c *Controller) lowestFeasible() (int, bool) {
	top := len(c.levels.list) - 1
	lo := min(c.lastUniform, top)
	o, ok := c.uniformPlan(lo)
	if !ok {
		return lo, false
	}
	if c.feasible(o) {
		for lo > 0 {
			o, ok := c.uniformPlan(lo - 1)
			if !ok {
				return lo, false
			}
			if !c.feasible(o) {
				break
			}
			lo--
		}
		return lo, true
	}
	for lo < top {
		lo++
		o, ok := c.uniformPlan(lo)
		if !ok {
			return lo, false
		}
		if c.feasible(o) {
			break
		}
	}
	return lo, true
}

// refineFirstPeriods refines the best plan's first periods, one at a time:
// lower while feasible and cheaper, then higher while cheaper (a faster
// start may allow a slower rest). With nothing queued at the solve, a
// faster start only serves the decoding requests sooner, at the energy per
// token of a level the constant plans found dearer: never cheaper in the
// goal table's runs (none of about 7,000 such solves), so it is not tried.
// It reports false when the budget or the deadline ran out.
func (c *Controller) refineFirstPeriods() bool {
	sr := &c.sr
	levels := c.levels.list
	steps := []int{-1, 1}
	if len(c.pr.items) == 0 && c.pr.lostWork <= 1e-6 {
		steps = steps[:1]
	}
	for k := range min(refinedPeriods, len(c.plan)) {
		copy(c.plan, c.best)
		base := slices.Index(levels, c.plan[k])
		for _, step := range steps {
			previous := sr.bestEnergy
			for i := base + step; i >= 0 && i < len(levels); i += step {
				c.plan[k] = levels[i]
				var o outcome
				if !c.eval(c.plan, &o) {
					return false
				}
				c.consider(&o, c.plan)
				if !c.feasible(&o) && step < 0 || o.energyJ >= previous {
					break
				}
				previous = o.energyJ
			}
			c.plan[k] = levels[base]
		}
	}
	return true
}

// predictedArrivals is the number of arrivals a solve predicts over its
// horizon.
func (c *Controller) predictedArrivals() float64 {
	pr := &c.pr
	if c.clairvoyant {
		return float64(len(pr.items) - pr.arrived)
	}
	return pr.rate * pr.horizonS
}
