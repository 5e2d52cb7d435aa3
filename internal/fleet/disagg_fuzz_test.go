package fleet

import (
	"math"
	"math/rand/v2"
	"testing"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// FuzzDisaggregated runs small random workloads on small random
// disaggregated fleets (1 to 3 replicas per pool, either service model,
// any built-in router, links from instant to slow, a KV cache from ample
// to a few prompts) and checks what always holds (checkDisagg): every
// request prefilled once and, with more than one token, decoded once, after
// its KV arrived; the KV bytes the sum over the requests moved; nothing
// held at the end.
func FuzzDisaggregated(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(0), uint8(0), false, uint8(0), uint8(0))
	f.Add(uint64(2), uint8(12), uint8(2), uint8(1), true, uint8(1), uint8(1))
	f.Add(uint64(3), uint8(9), uint8(1), uint8(2), false, uint8(2), uint8(1))
	f.Add(uint64(4), uint8(16), uint8(0), uint8(2), true, uint8(3), uint8(0))
	gpu, _ := cards.BuiltinGPU("L4")
	model, _ := cards.BuiltinModel(cards.DefaultModel)
	routers := []string{RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName}
	links := []Link{{BandwidthGBps: math.Inf(1)}, {BandwidthGBps: 25}, {BandwidthGBps: 0.2, LatencyS: 0.03}, {BandwidthGBps: 0.01}}
	f.Fuzz(func(t *testing.T, seed uint64, n, np, nd uint8, batched bool, link, kv uint8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		requests := make([]plant.Request, 1+int(n)%16)
		at := 0.0
		for i := range requests {
			at += math.Round(rng.ExpFloat64()*0.2*1e6) / 1e6
			requests[i] = plant.Request{ID: i, ArrivalTimeS: at, PromptTokens: 1 + rng.IntN(600), OutputTokens: 1 + rng.IntN(40)}
		}
		cfg := disaggFleet(1+int(np)%3, 1+int(nd)%3, links[int(link)%len(links)])
		cfg.Plant.MaxSimulationTimeS = 36_000
		if kv%2 == 1 {
			// Room for a few prompts: transfers and prefills wait.
			cfg.Plant.KVCapacityTokens = 2048
			cfg.Plant.DecodeKVReserveTokensPerActive = 64
		}
		if batched {
			cfg.Service = plant.NewBatchedService(gpu, model)
		}
		name := routers[int(seed%uint64(len(routers)))]
		cfg.Router, _ = NewRouter(name, seed)
		cfg.Disaggregation.DecodeRouter, _ = NewRouter(name, seed+1)
		d, res := runDisagg(t, requests, cfg)
		checkDisagg(t, d, res)
	})
}
