package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"servesim/internal/plant"
)

// streamRun is what a streamed fleet run adds to its engine: the workload
// being read, the samples of its requests, and each replica's way into
// them.
type streamRun struct {
	ws       *plant.WorkloadStream
	expected int // requests expected (the stream's estimate), sizes buffers
	samples  samples
	writers  []*sampleWriter
}

// SimulateStream is SimulateContext for a workload read while it runs
// (plant.OpenWorkloadStream): the router takes the requests in arrival
// order as they are read, and each replica holds only the records of its
// requests in flight, so that memory does not grow with the workload but
// by the 26 bytes a request that the request metrics of the fleet and of
// its replicas need (samples; with Options.Summary, unless a request log,
// the engine features or a controller that sees the server state need the
// records, which the replicas then keep). Config.Options must say
// Summary: the result has no request records (Requests and Assignment are
// nil). The results are SimulateContext's on the workload the stream
// yields, bit for bit, for any Jobs.
//
// A state-free router's replicas each run in a goroutine of their own, on
// the requests the router hands them through a bounded buffer, at most
// Jobs of them stepping at once; a lock-step run reads the next arrivals
// as its grid reaches them.
func SimulateStream(ctx context.Context, ws *plant.WorkloadStream, cfg Config) (*Result, error) {
	if !cfg.Summary {
		return nil, errors.New("a streamed fleet run keeps no request records: it needs Options.Summary")
	}
	specs, router, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	expected, lastArrivalS := ws.Expected()
	e := &engine{
		ctx:          ctx,
		cfg:          cfg,
		specs:        specs,
		router:       router,
		replicas:     make([]Replica, len(specs)),
		sums:         stepSums{scale: powerScale(specs)},
		lastArrivalS: lastArrivalS,
		stream:       &streamRun{ws: ws, expected: expected},
		costs:        newCostHeap(router),
		objectives:   objectivesByGroup(&cfg),
	}
	e.stream.samples.ttftOnly = cfg.TTFTOnly
	if expected > 0 {
		e.stream.samples.grow(expected - 1)
	}
	if cfg.Scaling != nil {
		// Its replicas get their writers as they start.
		return e.runElasticResult()
	}
	for k := range specs {
		e.stream.writers = append(e.stream.writers, newSampleWriter(&e.stream.samples, cfg.Plant.ReportingHorizonS, e.slo(k)))
	}
	e.loss = newLossBudget(cfg.StopBelowAttainment, expected, e.stream.writers)
	res, err := e.run(e.runParallelStream)
	if e.loss != nil {
		if lost := e.loss.first.Load(); lost != nil {
			return nil, lost
		}
	}
	return res, err
}

// errFeedStopped stops the other replicas and the router of a streamed
// parallel run when one of them fails.
var errFeedStopped = errors.New("fleet: run stopped")

// runParallelStream routes the requests as they are read, handing each to
// its replica's feed, while every replica runs in a goroutine of its own
// on its feed. Jobs tokens circulate among the replicas: a replica steps
// only while it holds one, and gives it up while it waits for requests, so
// that at most Jobs step at once and the router never waits forever on a
// replica that cannot step. The replicas add their steps into the fleet's
// sums (one copy whatever Jobs) a run of steps at a time.
func (e *engine) runParallelStream() error {
	n := len(e.specs)
	jobs := e.jobs()
	tokens := make(chan struct{}, jobs)
	for range jobs {
		tokens <- struct{}{}
	}
	e.sums.reserve(e.expectedSteps())
	var sumsMu sync.Mutex
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	feeds := make([]*feed, n)
	size := max(16, min(1024, 1<<16/n))
	for k := range feeds {
		feeds[k] = newFeed(size, tokens, stop, &e.stream.writers[k].queue)
		feeds[k].halt = halt
		feeds[k].steps = stepRun{sums: &e.sums, mu: &sumsMu}
	}
	errs := make([]error, n)
	held := make([]*plant.Stepper, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			if errs[k] = e.runFed(k, feeds[k], held); errs[k] != nil {
				halt()
			}
		})
	}
	routeErr := e.routeStream(feeds)
	if routeErr != nil {
		halt()
	}
	wg.Wait()
	errs = append([]error{routeErr}, errs...)
	failed := slices.ContainsFunc(errs, func(err error) bool { return err != nil })
	finishErr := e.finishFed(held, feeds, failed)
	for _, err := range errs {
		if err != nil && !errors.Is(err, errFeedStopped) {
			return err
		}
	}
	if routeErr != nil {
		return routeErr
	}
	return finishErr
}

// routeStream routes every request of the stream to its replica's feed,
// then ends the feeds.
func (e *engine) routeStream(feeds []*feed) error {
	s := e.stream
	zero := make([]ReplicaState, len(feeds))
	for i := 0; ; i++ {
		r, ok := s.ws.Next()
		if !ok {
			break
		}
		k, err := e.route(i, &r, zero)
		if err != nil {
			return err
		}
		s.samples.grow(i)
		s.samples.route(i, k)
		if err := feeds[k].send(r, i); err != nil {
			return err
		}
		if (i+1)%plant.CancelCheckSteps == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := s.ws.Err(); err != nil {
		return err
	}
	for _, f := range feeds {
		if err := f.end(); err != nil {
			return err
		}
	}
	return nil
}

// runFed simulates replica k on its feed to the end, and leaves its
// Stepper in held[k], for finishFed.
func (e *engine) runFed(k int, f *feed, held []*plant.Stepper) (err error) {
	if !f.acquire() {
		return errFeedStopped
	}
	defer func() {
		if err != nil {
			// Before the token goes to a replica not started yet.
			f.halt()
		}
		f.release()
	}()
	st, err := e.newStepper(k, 0)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			held[k] = st
			return
		}
		// A controller's Close error says why it stopped the run, as
		// plant.Run reports it.
		if cerr := st.Close(); cerr != nil {
			err = fmt.Errorf("replica %d: %w", k, cerr)
		}
	}()
	e.lend(k, st)
	st.Summarize(0, e.stream.writers[k].record) // Feed sizes the run
	running, err := st.Feed(f, e.stream.expected/len(e.specs), e.lastArrivalS)
	if running && err == nil {
		_, err = e.stepToEnd(k, st, &f.steps)
	}
	if e.loss != nil && err == nil {
		e.loss.end(k, st)
	}
	if err == nil {
		err = st.Drain()
	}
	f.steps.flush()
	if err != nil {
		return fmt.Errorf("replica %d: %w", k, err)
	}
	return nil
}

// finishFed ends, one at a time, the runs of the replicas held once they
// have all stepped to the end (their metrics take the samples of their
// requests from the fleet's, which they all write: lend), unless the run
// failed, and closes them (closeAll).
func (e *engine) finishFed(held []*plant.Stepper, feeds []*feed, failed bool) error {
	if !failed {
		for k, st := range held {
			if st != nil {
				e.finish(k, st, nil, feeds[k].count)
			}
		}
	}
	return closeAll(held)
}

// lend makes replica k's Stepper keep none of the samples of its requests
// (plant.Stepper.LendSamples): at Result, it takes them from the fleet's,
// once it has written those still buffered.
func (e *engine) lend(k int, st *plant.Stepper) {
	s := e.stream
	st.LendSamples(func() (ttft, tpot, latency []float64) {
		s.writers[k].flush()
		return s.samples.replicaSamples(k, s.ws.Loaded(), len(s.writers))
	})
}

// routedRequest is a request with its index in the workload.
type routedRequest struct {
	plant.Request
	index int
}

// feedBatches is the number of batches of a feed in circulation: the
// router runs up to feedBatches-1 batches ahead of the replica.
const feedBatches = 4

// feed carries one replica's requests from the router (send, end) to the
// replica's Stepper (a plant.RequestStream) in batches, which circulate
// between the two goroutines so that nothing is allocated per request. The
// replica side also holds the job token its replica steps with, and notes
// the workload index of each request it hands on in queue.
type feed struct {
	full chan []routedRequest // batches sent, in order; closed after the last
	free chan []routedRequest // batches read, for the router to fill again
	stop chan struct{}        // closed when the run stops on an error
	halt func()               // closes stop, once
	// The router's side.
	out []routedRequest
	// The replica's side.
	in     []routedRequest
	next   int
	count  int           // requests handed on
	err    error         // errFeedStopped once stopped
	queue  *fifo[int]    // workload indices of the requests handed on
	tokens chan struct{} // the jobs' tokens
	held   bool          // a token is held
	steps  stepRun       // the replica's steps not added to the fleet's sums yet
}

func newFeed(size int, tokens chan struct{}, stop chan struct{}, queue *fifo[int]) *feed {
	f := &feed{
		full:   make(chan []routedRequest, feedBatches),
		free:   make(chan []routedRequest, feedBatches),
		stop:   stop,
		queue:  queue,
		tokens: tokens,
	}
	for range feedBatches - 1 {
		f.free <- make([]routedRequest, 0, size)
	}
	f.out = make([]routedRequest, 0, size)
	return f
}

// send hands request r, the workload's request i, to the replica.
func (f *feed) send(r plant.Request, i int) error {
	f.out = append(f.out, routedRequest{Request: r, index: i})
	if len(f.out) < cap(f.out) {
		return nil
	}
	if err := f.sendBatch(); err != nil {
		return err
	}
	select {
	case f.out = <-f.free:
		f.out = f.out[:0]
		return nil
	case <-f.stop:
		return errFeedStopped
	}
}

// sendBatch sends the batch being filled.
func (f *feed) sendBatch() error {
	select {
	case f.full <- f.out:
		return nil
	case <-f.stop:
		return errFeedStopped
	}
}

// end sends the last batch and closes the feed.
func (f *feed) end() error {
	if len(f.out) > 0 {
		if err := f.sendBatch(); err != nil {
			return err
		}
	}
	close(f.full)
	return nil
}

// Next implements plant.RequestStream.
func (f *feed) Next() (plant.Request, bool) {
	if f.next == len(f.in) {
		if f.in != nil {
			f.free <- f.in // never blocks: free has room for every batch
			f.in = nil
		}
		batch, ok := f.receive()
		if !ok {
			return plant.Request{}, false
		}
		f.in, f.next = batch, 0
	}
	r := &f.in[f.next]
	f.next++
	f.count++
	f.queue.push(r.index)
	return r.Request, true
}

// receive returns the next batch, or false once the feed is closed or the
// run stopped. With no batch ready, it gives up the job token while it
// waits, so that another replica may step meanwhile.
func (f *feed) receive() ([]routedRequest, bool) {
	select {
	case batch, ok := <-f.full:
		return batch, ok
	default:
	}
	f.release()
	select {
	case batch, ok := <-f.full:
		if !f.acquire() {
			return nil, false
		}
		return batch, ok
	case <-f.stop:
		f.err = errFeedStopped
		return nil, false
	}
}

// Err implements plant.RequestStream.
func (f *feed) Err() error { return f.err }

// acquire takes a job token; false when the run stopped first.
func (f *feed) acquire() bool {
	select {
	case <-f.tokens:
		select {
		case <-f.stop:
			// Stopped while it waited: the token goes back.
			f.tokens <- struct{}{}
			f.err = errFeedStopped
			return false
		default:
		}
		f.held = true
		return true
	case <-f.stop:
		f.err = errFeedStopped
		return false
	}
}

// release gives the job token back.
func (f *feed) release() {
	if f.held {
		f.tokens <- struct{}{}
		f.held = false
	}
}

// stepRunLength is the number of steps a replica adds to the fleet's sums
// at once.
const stepRunLength = 1 << 12

// stepRun is a run of one replica's consecutive steps on their way to the
// fleet's sums, which the replicas share under mu.
type stepRun struct {
	sums   *stepSums
	mu     *sync.Mutex
	first  int // step of power[0]
	power  []int64
	queued []int
}

// add adds the replica's step l, the step after the last one added.
func (r *stepRun) add(step int, l plant.StepLoad) {
	if len(r.power) == 0 {
		r.first = step
		if r.power == nil {
			r.power, r.queued = make([]int64, 0, stepRunLength), make([]int, 0, stepRunLength)
		}
	}
	r.power = append(r.power, r.sums.fixed(l.PowerW))
	r.queued = append(r.queued, l.Queued)
	if len(r.power) == stepRunLength {
		r.flush()
	}
}

// flush adds the steps held to the fleet's sums.
func (r *stepRun) flush() {
	r.mu.Lock()
	for j, power := range r.power {
		r.sums.addFixed(r.first+j, power, r.queued[j])
	}
	r.mu.Unlock()
	r.power, r.queued = r.power[:0], r.queued[:0]
}
