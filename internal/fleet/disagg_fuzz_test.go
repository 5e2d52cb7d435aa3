package fleet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// FuzzDisaggregated runs small random workloads on small random
// disaggregated fleets (1 to 3 replicas per pool, either service model,
// any built-in router, links from instant to slow, a KV cache from ample
// to a few prompts, the prefix cache off or on with hash ids drawn from a
// few shared prefixes or a shared prefix of every prompt) and checks what
// always holds (checkDisagg): every request prefilled once and, with more
// than one token, decoded once, after its KV arrived; the KV bytes the sum
// over the requests moved; nothing held or kept at the end.
func FuzzDisaggregated(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(0), uint8(0), false, uint8(0), uint8(0))
	f.Add(uint64(2), uint8(12), uint8(2), uint8(1), true, uint8(1), uint8(1))
	f.Add(uint64(3), uint8(9), uint8(1), uint8(2), false, uint8(2), uint8(1))
	f.Add(uint64(4), uint8(16), uint8(0), uint8(2), true, uint8(3), uint8(0))
	gpu, _ := cards.BuiltinGPU("L4")
	model, _ := cards.BuiltinModel(cards.DefaultModel)
	f.Add(uint64(5), uint8(14), uint8(2), uint8(1), false, uint8(2), uint8(3))
	f.Add(uint64(6), uint8(15), uint8(1), uint8(0), true, uint8(1), uint8(4))
	routers := []string{RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName, PrefixAwareName, PrefixAwareName + ":index=exact"}
	links := []Link{{BandwidthGBps: math.Inf(1)}, {BandwidthGBps: 25}, {BandwidthGBps: 0.2, LatencyS: 0.03}, {BandwidthGBps: 0.01}}
	f.Fuzz(func(t *testing.T, seed uint64, n, np, nd uint8, batched bool, link, kv uint8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w := &promptWorkload{requests: make([]plant.Request, 1+int(n)%16)}
		requests := w.requests
		at := 0.0
		for i := range requests {
			at += math.Round(rng.ExpFloat64()*0.2*1e6) / 1e6
			requests[i] = plant.Request{ID: i, ArrivalTimeS: at, PromptTokens: 1 + rng.IntN(1200), OutputTokens: 1 + rng.IntN(40)}
			// Its first hash id one of three shared prefixes, the others
			// its own.
			ids := []int64{int64(rng.IntN(3))}
			for len(ids)*plant.HashIDBlockTokens < requests[i].PromptTokens {
				ids = append(ids, int64(1000*(i+1)+len(ids)))
			}
			w.ids = append(w.ids, ids)
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
		// kv/2 mod 3: no prefix cache, hash ids, or a shared prefix.
		switch kv / 2 % 3 {
		case 1:
			cfg.Engine = plant.EngineOptions{PrefixCache: true, HashIDs: w}
		case 2:
			cfg.Engine = plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 300}
		}
		if cfg.Engine.PrefixCache && kv%2 == 1 {
			cfg.Plant.KVCapacityTokens = 2048 + 1024 // a prompt's blocks and the reserve
		}
		choices := routers[:4]
		if cfg.Engine.PrefixCache {
			choices = routers
		}
		name := choices[int(seed%uint64(len(choices)))]
		cfg.Router, _ = NewRouter(name, seed)
		cfg.Disaggregation.DecodeRouter, _ = NewRouter(name, seed+1)
		d, res := runDisagg(t, requests, cfg)
		checkDisagg(t, d, res)
	})
}

// FuzzElasticDisaggregated runs small random workloads on elastic
// disaggregated fleets whose pools each follow a random schedule (0 to 3
// replicas, changing at two random times, at least one at the end, with a
// random cold start) and checks what always holds (checkDisagg): every
// request served once, never decoded before its KV arrived, no replica
// released with KV held or kept.
func FuzzElasticDisaggregated(f *testing.F) {
	f.Add(uint64(1), uint8(8), uint16(0x0121), uint16(0x0312), false, uint8(0))
	f.Add(uint64(2), uint8(15), uint16(0x0301), uint16(0x0103), true, uint8(1))
	f.Add(uint64(3), uint8(12), uint16(0x0010), uint16(0x0230), false, uint8(2))
	routers := []string{RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName}
	links := []Link{{BandwidthGBps: math.Inf(1)}, {BandwidthGBps: 0.2, LatencyS: 0.03}, {BandwidthGBps: 0.01}}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, prefill, decode uint16, batched bool, link uint8) {
		rng := rand.New(rand.NewPCG(seed, 11))
		requests := make([]plant.Request, 1+int(n)%16)
		at := 0.0
		for i := range requests {
			at += math.Round(rng.ExpFloat64()*3*1e6) / 1e6
			requests[i] = plant.Request{ID: i, ArrivalTimeS: at, PromptTokens: 1 + rng.IntN(1200), OutputTokens: 1 + rng.IntN(40)}
		}
		// A pool's schedule: three counts (nibbles, 0 to 3, the last at
		// least 1) from 0 s and two random times.
		rows := func(counts uint16) string {
			t1 := 1 + rng.IntN(30)
			t2 := t1 + 1 + rng.IntN(30)
			return fmt.Sprintf("0,%d\n%d,%d\n%d,%d\n", counts&3, t1, counts>>4&3, t2, 1+int(counts>>8)%3)
		}
		p, d := following(t, rows(prefill)), following(t, rows(decode))
		np, nd := int(prefill&3), int(decode&3)
		cfg := elasticDisaggFleet(np, nd, p, d, 3, links[int(link)%len(links)])
		cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = float64(rng.IntN(10)), float64(rng.IntN(10))
		cfg.Scaling.IntervalS = float64(1 + rng.IntN(15))
		cfg.Plant.MaxSimulationTimeS = 36_000
		if batched {
			cfg.Service = batchedService()
		}
		name := routers[int(seed%uint64(len(routers)))]
		cfg.Router, _ = NewRouter(name, seed)
		cfg.Disaggregation.DecodeRouter, _ = NewRouter(name, seed+1)
		pools, res := runDisagg(t, requests, cfg)
		checkDisagg(t, pools, res)
	})
}
