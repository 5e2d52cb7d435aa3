package fleet

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"servesim/internal/plant"
)

// lossBudget stops a streamed run once it has lost more requests than its
// target attainment allows, when the target can no longer be met: a
// capacity search needs to know only that such a fleet fails. A request
// is lost once its final record misses its objectives, or while it waits
// to be scheduled longer than its TTFT objective; the two sets never
// share a request, so their sum, over the replicas, is a lower bound of
// the requests the run would lose in all. Each replica checks every
// lossCheckSteps steps, from its own goroutine.
type lossBudget struct {
	target float64
	total  int
	// lost[k] is replica k's count at its last check.
	lost    []atomic.Int64
	stopped atomic.Bool
	// first is the error of the check that stopped the run.
	first atomic.Pointer[LostError]
}

// lossCheckSteps is how often a replica counts its lost requests.
const lossCheckSteps = 1024

// LostError stops a run whose attainment cannot reach Target any more:
// Lost of the Total requests are lost already.
type LostError struct {
	Lost, Total int
	Target      float64
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%d of %d requests lost: attainment at most %v, below the target %v", e.Lost, e.Total, e.Bound(), e.Target)
}

// Bound is the highest attainment the run could still have reached.
func (e *LostError) Bound() float64 { return float64(e.Total-e.Lost) / float64(e.Total) }

// errLostElsewhere stops a replica when another found the run lost.
var errLostElsewhere = errors.New("fleet: run lost")

// newLossBudget returns the budget of a run of total requests on replicas
// toward target, or nil when either is unknown.
func newLossBudget(target float64, total, replicas int) *lossBudget {
	if !(target > 0 && target <= 1) || total <= 0 {
		return nil
	}
	return &lossBudget{target: target, total: total, lost: make([]atomic.Int64, replicas)}
}

// check counts replica k's lost requests at its step: the misses its
// writer has seen and the requests st has kept waiting past ttftS; it
// returns a *LostError when the run can no longer meet the target.
func (b *lossBudget) check(k, step int, st *plant.Stepper, w *sampleWriter, ttftS float64) error {
	if step%lossCheckSteps != 0 {
		return nil
	}
	if b.stopped.Load() {
		return errLostElsewhere
	}
	lost := w.lost
	if ttftS > 0 && !math.IsInf(ttftS, 1) {
		lost += st.WaitingLongerThan(ttftS)
	}
	b.lost[k].Store(int64(lost))
	sum := 0
	for i := range b.lost {
		sum += int(b.lost[i].Load())
	}
	if float64(b.total-sum)/float64(b.total) < b.target {
		err := &LostError{Lost: sum, Total: b.total, Target: b.target}
		if b.first.CompareAndSwap(nil, err) {
			b.stopped.Store(true)
		}
		return err
	}
	return nil
}
