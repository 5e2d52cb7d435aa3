package fleet

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"servesim/internal/plant"
)

// lossBudget stops a streamed run once it has lost more requests than its
// target attainment allows, when the target can no longer be met: a
// capacity search needs to know only that such a fleet fails. A request
// is lost once its final record misses its objectives, or while it waits
// to be scheduled longer than its TTFT objective; the two sets never
// share a request, so their sum over the replicas is a lower bound of the
// requests the run would lose in all.
//
// Each replica counts its lost requests every lossCheckSteps of its own
// steps (a checkpoint), and once more when it has stepped to its end. The
// decision at a checkpoint is taken once every replica has counted there
// or ended (a replica that ended counts as at its end), from the counts
// at that checkpoint alone: whether a run stops, and at which checkpoint,
// depends on the simulation only, never on how the replicas' goroutines
// were scheduled.
type lossBudget struct {
	target float64
	total  int
	// writers[k] sees replica k's final records (and knows its
	// objectives).
	writers []*sampleWriter
	mu      sync.Mutex
	// counts[k] are replica k's counts at checkpoints decided+0, +1, ...
	counts [][]int
	// final[k] is replica k's count at its end, once ended[k].
	final   []int
	ended   []bool
	stopped atomic.Bool
	// first is the error of the decision that stopped the run.
	first atomic.Pointer[LostError]
}

// lossCheckSteps is how many steps of a replica's pass between its
// checkpoints.
const lossCheckSteps = 1024

// LostError stops a run whose attainment cannot reach Target any more:
// Lost of the Total requests were lost by the checkpoint that decided it.
type LostError struct {
	Lost, Total int
	Target      float64
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%d of %d requests lost: attainment at most %v, below the target %v", e.Lost, e.Total, e.Bound(), e.Target)
}

// Bound is the highest attainment the run could still have reached.
func (e *LostError) Bound() float64 { return float64(e.Total-e.Lost) / float64(e.Total) }

// errLostElsewhere stops a replica when the run was found lost.
var errLostElsewhere = errors.New("fleet: run lost")

// newLossBudget returns the budget of a run of total requests toward
// target, its replicas' records seen by writers, or nil when the target
// or the total is unknown.
func newLossBudget(target float64, total int, writers []*sampleWriter) *lossBudget {
	if !(target > 0 && target <= 1) || total <= 0 {
		return nil
	}
	n := len(writers)
	return &lossBudget{target: target, total: total, writers: writers, counts: make([][]int, n),
		final: make([]int, n), ended: make([]bool, n)}
}

// lost is replica k's count now, its stepper st: the misses its writer
// has seen and the requests st keeps waiting past their TTFT objective.
func (b *lossBudget) lost(k int, st *plant.Stepper) int {
	w := b.writers[k]
	n := w.lost
	if ttftS := w.slo.TTFTSeconds; ttftS > 0 && !math.IsInf(ttftS, 1) {
		n += st.WaitingLongerThan(ttftS)
	}
	return n
}

// check counts replica k's lost requests at step, every lossCheckSteps
// steps, and returns errLostElsewhere once the run is decided lost.
func (b *lossBudget) check(k, step int, st *plant.Stepper) error {
	if b.stopped.Load() {
		return errLostElsewhere
	}
	if step%lossCheckSteps != 0 {
		return nil
	}
	b.mu.Lock()
	b.counts[k] = append(b.counts[k], b.lost(k, st))
	b.decide()
	b.mu.Unlock()
	if b.stopped.Load() {
		return errLostElsewhere
	}
	return nil
}

// end counts replica k's lost requests at its end.
func (b *lossBudget) end(k int, st *plant.Stepper) {
	b.mu.Lock()
	b.final[k], b.ended[k] = b.lost(k, st), true
	b.decide()
	b.mu.Unlock()
}

// decide takes the decisions every replica has counted for, in order,
// until one stops the run; b.mu is held.
func (b *lossBudget) decide() {
	for !b.stopped.Load() {
		pending := false
		for k := range b.counts {
			pending = pending || len(b.counts[k]) > 0
		}
		if !pending {
			return // nothing counted yet, or every replica ended: whole
		}
		sum := 0
		for k := range b.counts {
			switch {
			case len(b.counts[k]) > 0:
				sum += b.counts[k][0]
			case b.ended[k]:
				sum += b.final[k]
			default:
				return // replica k has not reached this checkpoint yet
			}
		}
		if float64(b.total-sum)/float64(b.total) < b.target {
			b.first.Store(&LostError{Lost: sum, Total: b.total, Target: b.target})
			b.stopped.Store(true)
			return
		}
		for k := range b.counts {
			if len(b.counts[k]) > 0 {
				b.counts[k] = b.counts[k][1:]
			}
		}
	}
}
