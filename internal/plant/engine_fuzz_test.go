package plant

import (
	"math"
	"testing"

	"servesim/internal/profile"
)

// fuzzBytes reads small numbers from a fuzzer's bytes, zero once they run
// out.
type fuzzBytes []byte

func (f *fuzzBytes) next(n int) int {
	if len(*f) == 0 {
		return 0
	}
	v := int((*f)[0])
	*f = (*f)[1:]
	return v % n
}

// FuzzEngineInvariants runs random small workloads (up to 12 requests,
// prompts and outputs up to 1000 tokens, some sharing hash ids) on random
// small plants (KV capacity, block size, decode reserve, active limit,
// shared prefix, scheduler, each feature on or off) and checks the
// engine's invariants after every step (every request in exactly one
// place, KV within the capacity, block accounting) and the token balance
// at the end. With the prefix cache, every k-th request may keep its KV
// when it completes (Stepper.KeepKV, as a disaggregated prefill replica's
// do), released a few steps later (ReleaseKeptKV): the block accounting
// holds throughout, and nothing is live once every request completed and
// every kept KV was released.
func FuzzEngineInvariants(f *testing.F) {
	f.Add([]byte{3, 1, 1, 16, 20, 2, 5, 9, 200, 40, 7, 90, 3, 120, 250, 1, 0, 33})
	f.Add([]byte{1, 0, 1, 1, 1, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Add([]byte{11, 3, 0, 64, 255, 8, 0, 1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140})
	f.Add([]byte{7, 2, 1, 0, 3, 1, 1, 2, 100, 100, 100, 100, 1, 1, 1, 1, 2, 2, 2, 2})
	// The prefix cache, every second request keeping its KV three steps.
	f.Add([]byte{5, 2, 2, 16, 30, 40, 3, 20, 0, 60, 2, 2, 0, 1, 1, 0, 60, 3, 2, 0, 1, 1, 1, 40, 2, 2, 0, 1, 2, 0, 60, 1, 2, 1, 1, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		p := NewPlant(profile.Default())
		p.MaxSimulationTimeS = 30
		n := 1 + in.next(12)
		features := in.next(4) // bit 0: preemption, bit 1: prefix cache
		sched := []Scheduler{ChunkedPrefill{}, StaticBatch{}, ContinuousBatch{}}[in.next(3)]
		var eo EngineOptions
		if features&1 != 0 || features == 0 {
			eo.Preemption = PreemptionRecompute
		}
		p.KVCapacityTokens = float64(64 + 32*in.next(128))
		p.DecodeKVReserveTokensPerActive = float64(1 + 8*in.next(64))
		p.MaxActiveRequests = 1 + in.next(8)
		ids := hashIDs{}
		if features&2 != 0 {
			eo.PrefixCache = true
			eo.KVBlockTokens = 1 + in.next(64)
			eo.SharedPrefixTokens = 10 * in.next(60)
			if in.next(2) == 1 {
				eo.HashIDs = ids
			}
		}
		requests := make([]Request, n)
		arrival := 0.0
		for i := range requests {
			arrival += float64(in.next(20)) * 0.05
			requests[i] = Request{ID: i, ArrivalTimeS: arrival, PromptTokens: 1 + 4*in.next(250), OutputTokens: 1 + 4*in.next(250)}
			// Hash ids from a small alphabet, so prefixes repeat.
			for range (requests[i].PromptTokens + HashIDBlockTokens - 1) / HashIDBlockTokens {
				ids[i] = append(ids[i], int64(in.next(3)))
			}
		}
		// Read last, so that older inputs keep their meaning: every
		// keepEvery-th request keeps its KV for hold steps after it
		// completes (0: none).
		keepEvery, hold := in.next(4), in.next(5)
		if err := eo.Validate(p); err != nil {
			return // a block larger than the KV cache
		}
		sim, err := startSimulation(requests, p, sched, MaxClock{}, Options{Summary: true, Engine: eo})
		if err != nil {
			t.Fatal(err)
		}
		st := &Stepper{sim: sim}
		keptSince := map[int]int{} // request -> the step its keeping was seen
		added := 0                 // requests looked at for keeping
		keep := func() {
			// The simulation adds the requests as they arrive: each to keep
			// is marked once added, unless it completed in its first step.
			for ; added < len(sim.engine.reqs); added++ {
				if eo.PrefixCache && keepEvery > 0 && added%keepEvery == 0 && !sim.records[added].Completed() {
					if err := st.KeepKV(added); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		release := func(all bool) {
			for i := range sim.records {
				if !sim.engine.reqs[i].kept {
					continue
				}
				since, seen := keptSince[i]
				if !seen {
					keptSince[i], since = sim.step, sim.step
				}
				if all || sim.step-since >= hold {
					st.ReleaseKeptKV(i)
				}
			}
		}
		for {
			done, err := sim.advance()
			if err != nil {
				t.Fatal(err)
			}
			if err := checkEngine(sim); err != nil {
				t.Fatalf("step %d: %v", sim.step, err)
			}
			keep()
			release(false)
			if sim.engine.cache != nil {
				// The observation is the step's end's, before the release.
				if err := checkBlocks(sim); err != nil {
					t.Fatalf("step %d, after releasing kept KV: %v", sim.step, err)
				}
			}
			if done {
				break
			}
		}
		release(true)
		if c := sim.engine.cache; c != nil && sim.completed == n && c.live != 0 {
			t.Fatalf("every request completed and released: %d blocks live", c.live)
		}
		if math.Abs(st.KeptKV()) > 1e-6 {
			t.Fatalf("%v tokens kept at the end", st.KeptKV())
		}
		if err := checkTokens(sim); err != nil {
			t.Fatal(err)
		}
		res := sim.result("", Options{Summary: true})
		unfinished := 0
		for i := range sim.records {
			if !sim.records[i].Completed() {
				unfinished++
			}
		}
		if res.Metrics.UnfinishedRequestsAtEnd != float64(unfinished) || sim.completed+unfinished != n {
			t.Fatalf("%d completed, %d unfinished, metrics say %v unfinished of %d", sim.completed, unfinished, res.Metrics.UnfinishedRequestsAtEnd, n)
		}
	})
}
