package mpc

import (
	"fmt"
	"math"
)

// SetTraceSolve sets the hook called after every successful solve.
func SetTraceSolve(f func(c *Controller, s Server)) { traceSolve = f }

// Explanation is what the chosen plan predicts for the followed requests.
type Explanation struct {
	Now                  float64
	Level                int
	ItemIDs              []int
	ItemMet, ItemTTFT    []float64
	Share                float64
	Needs                []float64
	Arrivals, ArrivalMet float64
	Rate                 float64
	ActiveIDs            []int
	ActiveMet            []bool
}

// Explain reruns the chosen plan, recording its predictions.
func (c *Controller) Explain(s Server) Explanation {
	pr := &c.pr
	n := len(pr.items)
	e := Explanation{Now: s.TimeS(), Level: c.best[0], Rate: pr.rate}
	record, recordTTFT := make([]float64, n), make([]float64, n)
	for i := range record {
		record[i], recordTTFT[i] = math.NaN(), math.NaN()
	}
	o := pr.runRecorded(c, c.best, record, recordTTFT)
	for i := range pr.items {
		e.ItemIDs = append(e.ItemIDs, pr.items[i].id)
	}
	e.ItemMet, e.ItemTTFT = record, recordTTFT
	e.Share, e.Arrivals, e.ArrivalMet = o.share, o.arrivals, o.arrivalsMet
	for i := range s.Active() {
		a := s.ActiveAt(i)
		left := c.learn.remaining(a.Generated)
		if out := c.knownOutput(a.ID); out > 0 {
			left = out - a.Generated
		}
		need, ok := c.need(&a, left, s.TimeS())
		e.ActiveIDs = append(e.ActiveIDs, a.ID)
		e.ActiveMet = append(e.ActiveMet, ok && need <= o.share)
	}
	e.Needs = append(e.Needs, pr.needs...)
	return e
}

// Uniform evaluates the constant plan at level: misses, energy, requests.
func (c *Controller) Uniform(level int) (float64, float64, float64) {
	plan := make([]int, len(c.plan))
	for i := range plan {
		plan[i] = level
	}
	o := c.pr.run(c, plan)
	return o.misses, o.energyJ, o.requests
}

// Levels is the number of levels.
func (c *Controller) Levels() int { return len(c.plant.Levels) }

// Debug describes the problem.
func (c *Controller) Debug() string {
	pr := &c.pr
	return fmt.Sprintf("items=%d lostWork=%.0f active=%.0f decodeLeft=%.0f needs=%d certain=%.0f rate=%.2f meanPrompt=%.0f meanOutput=%.0f stat=%v", len(pr.items), pr.lostWork, pr.active, pr.decodeLeft, len(pr.needs), pr.certainMisses, pr.rate, pr.meanPrompt, pr.meanOutput, pr.stationary)
}

// Best is the chosen plan's first level.
func (c *Controller) Best() []int { return c.best }
