package fleet

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// disaggFleet is a fleet of np prefill and nd decode replicas of the
// default profile, continuous batching at the maximum clock.
func disaggFleet(np, nd int, link Link) Config {
	prof := profile.Default()
	return Config{
		Plant: plant.NewPlant(nil),
		Groups: []Group{
			{Name: "p", Replicas: np, Profile: prof, Scheduler: "continuous", Controller: "max", Role: RolePrefill},
			{Name: "d", Replicas: nd, Profile: prof, Scheduler: "continuous", Controller: "max", Role: RoleDecode},
		},
		Disaggregation: &Disaggregation{Link: link},
	}
}

// runDisagg runs a disaggregated fleet, fixed or elastic (cfg.Scaling), as
// Simulate does and returns its pools, whose replicas' records and
// transfers the checks read.
func runDisagg(t testing.TB, requests []plant.Request, cfg Config) (*disaggPools, *Result) {
	t.Helper()
	require.NoError(t, plant.ValidateWorkload(requests))
	specs, router, err := prepare(cfg)
	require.NoError(t, err)
	e := newEngine(context.Background(), requests, cfg, specs, router)
	if cfg.Scaling != nil {
		el, res, err := e.elasticResult()
		require.NoError(t, err)
		return el.pools, res
	}
	d, err := e.newDisaggRun()
	require.NoError(t, err)
	require.NoError(t, d.run())
	res := e.result()
	res.Disaggregation = d.report(res)
	return d.disaggPools, res
}

// checkDisagg checks what holds of every disaggregated run that ends with
// every request served: each request is prefilled once and decoded once
// (once its KV has arrived, never before), the KV bytes are the sum over
// the requests moved, and no KV is left held anywhere.
func checkDisagg(t testing.TB, d *disaggPools, res *Result) {
	t.Helper()
	requests := d.e.requests
	svc := d.e.cfg.Service
	prefilled := make([]int, len(requests))
	decoded := make([]int, len(requests))
	wantBytes, moved := 0.0, 0
	for k, st := range d.steppers {
		if st != nil { // an elastic fleet's replica released early has none
			assert.Zero(t, st.HeldKV(), "replica %d holds KV at the end", k)
			assert.InDelta(t, 0, st.KeptKV(), 1e-6, "replica %d keeps KV at the end", k)
		}
		for local, rec := range d.records[k] {
			i := d.routed[k][local]
			if d.role[k] == poolPrefill {
				prefilled[i]++
				assert.Equal(t, 1, rec.OutputTokens)
				continue
			}
			decoded[i]++
			x := &d.xfers[i]
			assert.Equal(t, k, x.decode)
			assert.Equal(t, x.arriveS, rec.ArrivalTimeS, "request %d", i)
			assert.GreaterOrEqual(t, x.arriveS, x.sentS)
			assert.GreaterOrEqual(t, x.sentS, x.startS)
			assert.GreaterOrEqual(t, x.startS, x.readyS)
			// It joins the running requests (its decode starts) no
			// earlier than its KV arrives.
			assert.GreaterOrEqual(t, rec.PrefillStartS, x.arriveS-plant.TimeEpsilonS, "request %d decodes before its KV arrives", i)
			assert.Greater(t, rec.CompletionTimeS, rec.PrefillStartS)
		}
	}
	for i, r := range requests {
		assert.Equal(t, 1, prefilled[i], "request %d prefilled", i)
		rec := res.Requests[i]
		assert.False(t, math.IsNaN(rec.CompletionTimeS), "request %d unfinished", i)
		assert.Equal(t, r.OutputTokens, rec.OutputTokens)
		assert.Equal(t, r.ArrivalTimeS, rec.ArrivalTimeS)
		assert.GreaterOrEqual(t, rec.CompletionTimeS, rec.FirstTokenTimeS)
		if r.OutputTokens == 1 {
			assert.Zero(t, decoded[i], "request %d of one token decoded", i)
			assert.Equal(t, -1, res.Disaggregation.DecodeReplica[i])
			continue
		}
		assert.Equal(t, 1, decoded[i], "request %d decoded", i)
		wantBytes += plant.PrefilledKVTokens(svc, r.PromptTokens) * d.bytesPerToken
		moved++
		assert.Equal(t, d.xfers[i].decode, res.Disaggregation.DecodeReplica[i])
		assert.Greater(t, rec.CompletionTimeS, d.xfers[i].arriveS)
	}
	dr := res.Disaggregation
	assert.Equal(t, moved, dr.Transfers)
	assert.Zero(t, dr.TransfersUnfinished)
	assert.Equal(t, wantBytes, dr.KVBytesTransferred)
	// The fleet's energy is the pools' sum.
	assert.InDelta(t, dr.Pools[0].Metrics.EnergyJ+dr.Pools[1].Metrics.EnergyJ, res.Metrics.EnergyJ, 1e-9*res.Metrics.EnergyJ)
}

// TestDisaggHandComputed: one prefill and one decode replica of the default
// profile (950 prompt tokens and 24 decode tokens per 0.1 s step at the
// maximum clock) under the reference model, on cases computed by hand.
// A prompt of 100 is prefilled in step 0 and its first token comes at the
// step's end (0.1 s); its KV (101 tokens, 5,791,744 bytes) moves; the
// decode replica takes it at the first step starting at or after its
// arrival and decodes 24 tokens a step shared by its requests.
func TestDisaggHandComputed(t *testing.T) {
	const kvBytes = 101 * DefaultKVBytesPerToken
	// A link on which one transfer of the KV takes 0.15 s.
	slow := kvBytes / 0.15 / 1e9
	req := func(id int, prompt, output int) plant.Request {
		return plant.Request{ID: id, PromptTokens: prompt, OutputTokens: output}
	}
	cases := []struct {
		name      string
		np        int
		link      Link
		kvTokens  float64 // the plant's KV capacity (0: default), with a negligible decode reserve
		requests  []plant.Request
		firstS    []float64 // first tokens
		arriveS   []float64 // KV arrivals (NaN: none)
		completeS []float64
		heldBackS float64 // the largest wait for room
	}{
		{name: "instant link", np: 1, link: Link{BandwidthGBps: math.Inf(1)},
			requests: []plant.Request{req(0, 100, 11)},
			firstS:   []float64{0.1}, arriveS: []float64{0.1}, completeS: []float64{0.2}},
		{name: "huge bandwidth, no latency", np: 1, link: Link{BandwidthGBps: 1e12},
			requests: []plant.Request{req(0, 100, 11)},
			firstS:   []float64{0.1}, arriveS: []float64{0.1}, completeS: []float64{0.2}},
		{name: "one output token moves nothing", np: 1, link: Link{BandwidthGBps: math.Inf(1)},
			requests: []plant.Request{req(0, 100, 1)},
			firstS:   []float64{0.1}, arriveS: []float64{math.NaN()}, completeS: []float64{0.1}},
		{name: "latency", np: 1, link: Link{BandwidthGBps: math.Inf(1), LatencyS: 0.25},
			requests: []plant.Request{req(0, 100, 11)},
			// Arrives at 0.35: taken at the step of 0.4.
			firstS: []float64{0.1}, arriveS: []float64{0.35}, completeS: []float64{0.5}},
		{name: "bandwidth", np: 1, link: Link{BandwidthGBps: slow},
			requests: []plant.Request{req(0, 100, 11)},
			firstS:   []float64{0.1}, arriveS: []float64{0.25}, completeS: []float64{0.4}},
		{name: "two transfers share one link", np: 1, link: Link{BandwidthGBps: slow},
			requests: []plant.Request{req(0, 100, 11), req(1, 100, 11)},
			// Each at half the bandwidth: both sent at 0.1 + 0.3; then 12
			// tokens each in the step of 0.4.
			firstS: []float64{0.1, 0.1}, arriveS: []float64{0.4, 0.4}, completeS: []float64{0.5, 0.5}},
		{name: "two prefill replicas, two links", np: 2, link: Link{BandwidthGBps: slow},
			requests: []plant.Request{req(0, 100, 11), req(1, 100, 11)},
			firstS:   []float64{0.1, 0.1}, arriveS: []float64{0.25, 0.25}, completeS: []float64{0.4, 0.4}},
		{name: "a decode replica without room holds the transfer back", np: 1, link: Link{BandwidthGBps: math.Inf(1)},
			kvTokens: 150,
			// Request 0 fills the prefill replica's KV: request 1 gets 50
			// prompt tokens in step 0, the rest once request 0's KV has
			// left (0.1): its first token at 0.2. Request 0 decodes 24
			// tokens in step 1, 6 in step 2 (0.3), holding 125 of 150
			// tokens until then: request 1's KV waits from 0.2 to 0.3,
			// then decodes in the step of 0.3.
			requests: []plant.Request{req(0, 100, 31), req(1, 100, 11)},
			firstS:   []float64{0.1, 0.2}, arriveS: []float64{0.1, 0.3}, completeS: []float64{0.3, 0.4}, heldBackS: 0.1},
		{name: "the prefill replica keeps the KV until it is sent", np: 1, link: Link{BandwidthGBps: kvBytes / 0.25 / 1e9},
			kvTokens: 150,
			// Request 0's KV leaves at 0.35: until then request 1's prompt
			// has no room (50 of 150 tokens held by it, 101 by request 0);
			// it is prefilled in the step of 0.4, its first token at 0.5.
			// Request 0 decodes in the steps of 0.4 and 0.5: request 1's
			// KV waits for room until 0.6, moves for 0.25 s and decodes in
			// the step of 0.9.
			requests: []plant.Request{req(0, 100, 31), req(1, 100, 11)},
			firstS:   []float64{0.1, 0.5}, arriveS: []float64{0.35, 0.85}, completeS: []float64{0.6, 1.0}, heldBackS: 0.1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := disaggFleet(c.np, 1, c.link)
			if c.kvTokens > 0 {
				cfg.Plant.KVCapacityTokens = c.kvTokens
				cfg.Plant.DecodeKVReserveTokensPerActive = 1e-9
			}
			d, res := runDisagg(t, c.requests, cfg)
			checkDisagg(t, d, res)
			for i := range c.requests {
				rec := res.Requests[i]
				assert.InDelta(t, c.firstS[i], rec.FirstTokenTimeS, 1e-9, "request %d first token", i)
				assert.InDelta(t, c.completeS[i], rec.CompletionTimeS, 1e-9, "request %d completion", i)
				if math.IsNaN(c.arriveS[i]) {
					assert.Zero(t, d.xfers[i].tokens)
					continue
				}
				assert.InDelta(t, c.arriveS[i], d.xfers[i].arriveS, 1e-9, "request %d KV arrival", i)
			}
			if c.heldBackS > 0 {
				assert.InDelta(t, c.heldBackS, res.Disaggregation.HeldBackMaxS, 1e-9)
			}
		})
	}
}

// TestDisaggBatchedInstantLinkIsOneGPU: under the batched model a lone
// request's iterations do not depend on where they run, so with an instant
// link its prefill on one replica and decode on another take exactly the
// times of the single-GPU run: the decode replica starts its first decode
// iteration where the GPU would have.
func TestDisaggBatchedInstantLinkIsOneGPU(t *testing.T) {
	gpu, ok := cards.BuiltinGPU("L4")
	require.True(t, ok)
	model, ok := cards.BuiltinModel(cards.DefaultModel)
	require.True(t, ok)
	svc := plant.NewBatchedService(gpu, model)
	for _, r := range []plant.Request{
		{ID: 0, ArrivalTimeS: 0, PromptTokens: 3000, OutputTokens: 40},
		{ID: 0, ArrivalTimeS: 0.37, PromptTokens: 17, OutputTokens: 2},
		{ID: 0, ArrivalTimeS: 1.25, PromptTokens: 800, OutputTokens: 300},
	} {
		cfg := disaggFleet(1, 1, Link{BandwidthGBps: math.Inf(1)})
		cfg.Service = svc
		d, res := runDisagg(t, []plant.Request{r}, cfg)
		checkDisagg(t, d, res)
		p := cfg.Plant
		p.Profile = profile.Default()
		want, err := plant.Simulate([]plant.Request{r}, p, plant.ContinuousBatch{}, plant.MaxClock{}, plant.Options{Service: svc})
		require.NoError(t, err)
		got := res.Requests[0]
		assert.Equal(t, want.Requests[0].FirstTokenTimeS, got.FirstTokenTimeS)
		assert.InDelta(t, want.Requests[0].CompletionTimeS, got.CompletionTimeS, 1e-12)
		assert.Equal(t, model.KVBytesPerToken()*float64(r.PromptTokens), res.Disaggregation.KVBytesTransferred)
	}
}

// TestDisaggDefaultKVBytesPerToken: the reference model's default is the
// default model card's size.
func TestDisaggDefaultKVBytesPerToken(t *testing.T) {
	model, ok := cards.BuiltinModel(cards.DefaultModel)
	require.True(t, ok)
	assert.Equal(t, model.KVBytesPerToken(), DefaultKVBytesPerToken)
}

// TestDisaggServesEveryRequestOnce: the embedded trace on fleets of a few
// shapes, both service models, every router, slow and fast links.
func TestDisaggServesEveryRequestOnce(t *testing.T) {
	requests := embeddedTrace(t)
	gpu, _ := cards.BuiltinGPU("L4")
	model, _ := cards.BuiltinModel(cards.DefaultModel)
	for _, batched := range []bool{false, true} {
		for _, name := range []string{RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName} {
			for _, shape := range []struct {
				np, nd int
				link   Link
			}{{1, 1, Link{BandwidthGBps: 25}}, {2, 3, Link{BandwidthGBps: 0.5, LatencyS: 0.02}}, {3, 1, Link{BandwidthGBps: math.Inf(1)}}} {
				cfg := disaggFleet(shape.np, shape.nd, shape.link)
				if batched {
					cfg.Service = plant.NewBatchedService(gpu, model)
				}
				var err error
				cfg.Router, err = NewRouter(name, 3)
				require.NoError(t, err)
				cfg.Disaggregation.DecodeRouter, err = NewRouter(name, 4)
				require.NoError(t, err)
				d, res := runDisagg(t, requests, cfg)
				checkDisagg(t, d, res)
				if t.Failed() {
					t.Fatalf("batched %v, router %s, shape %+v", batched, name, shape)
				}
			}
		}
	}
}

// TestDisaggResultFromSimulate: Simulate dispatches a fleet with roles to
// the disaggregated run, whose records carry their decode replica.
func TestDisaggResultFromSimulate(t *testing.T) {
	requests := embeddedTrace(t)[:50]
	res, err := Simulate(requests, disaggFleet(1, 2, Link{BandwidthGBps: 10}))
	require.NoError(t, err)
	require.NotNil(t, res.Disaggregation)
	records := res.Records()
	for i, rec := range records {
		assert.Zero(t, rec.Replica, "request %d routed to the prefill replica", i)
		if requests[i].OutputTokens > 1 {
			require.NotNil(t, rec.DecodeReplica)
			assert.Contains(t, []int{1, 2}, *rec.DecodeReplica)
		}
	}
	assert.Equal(t, "prefill", res.Disaggregation.Pools[0].Role)
	assert.Equal(t, []int{1, 2}, res.Disaggregation.Pools[1].Replicas)
}

// TestDisaggRejects: the settings a disaggregated fleet refuses, each named.
func TestDisaggRejects(t *testing.T) {
	requests := embeddedTrace(t)[:5]
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no decode group", func(c *Config) { c.Groups = c.Groups[:1] }, `no group of role "decode"`},
		{"no prefill group", func(c *Config) { c.Groups = c.Groups[1:] }, `no group of role "prefill"`},
		{"a mixed group", func(c *Config) {
			c.Groups = append(c.Groups, Group{Name: "m", Replicas: 1, Profile: profile.Default(), Scheduler: "continuous", Controller: "max"})
		}, `group 2 ("m"): role "mixed": a disaggregated fleet's groups are each prefill or decode`},
		{"zero bandwidth", func(c *Config) { c.Disaggregation.BandwidthGBps = 0 }, "--kv-transfer-bandwidth 0: expected a positive bandwidth"},
		{"NaN bandwidth", func(c *Config) { c.Disaggregation.BandwidthGBps = math.NaN() }, "--kv-transfer-bandwidth NaN"},
		{"negative latency", func(c *Config) { c.Disaggregation.LatencyS = -1 }, "--kv-transfer-latency -1: expected a finite nonnegative latency"},
		{"the reference model's preemption", func(c *Config) { c.Engine.Preemption = plant.PreemptionRecompute }, "under the reference service model runs without preemption"},
		{"closed loop", func(c *Config) { c.MaxConcurrency = 4 }, "--max-concurrency"},
		{"autoscaling the pools together", func(c *Config) {
			c.Scaling = &Scaling{Autoscaler: Static{}, MaxReplicas: 2, InitialReplicas: 1, IntervalS: 30}
		}, "an elastic fleet of 2 groups scales each on its own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := disaggFleet(1, 1, Link{BandwidthGBps: 1})
			c.edit(&cfg)
			_, err := Simulate(requests, cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// sessionsByID gives request i the session i mod n.
type sessionsByID int

func (n sessionsByID) Session(id int) (int, bool) { return id % int(n), true }

// TestDisaggSessionRouterInBothPools: a session router keeps a session on
// one prefill replica and, bound to the same sessions, on one decode
// replica.
func TestDisaggSessionRouterInBothPools(t *testing.T) {
	requests := embeddedTrace(t)[:120]
	cfg := disaggFleet(3, 3, Link{BandwidthGBps: 25})
	cfg.Sessions = sessionsByID(5)
	var err error
	cfg.Router, err = NewRouter(SessionName, 1)
	require.NoError(t, err)
	cfg.Disaggregation.DecodeRouter, err = NewRouter(SessionName, 2)
	require.NoError(t, err)
	d, res := runDisagg(t, requests, cfg)
	checkDisagg(t, d, res)
	prefill, decode := map[int]int{}, map[int]int{}
	for i, r := range requests {
		s := r.ID % 5
		if k, ok := prefill[s]; ok {
			assert.Equal(t, k, res.Assignment[i], "session %d's prefill replica", s)
		}
		prefill[s] = res.Assignment[i]
		if r.OutputTokens < 2 {
			continue
		}
		if k, ok := decode[s]; ok {
			assert.Equal(t, k, res.Disaggregation.DecodeReplica[i], "session %d's decode replica", s)
		}
		decode[s] = res.Disaggregation.DecodeReplica[i]
	}
}

// TestDisaggRunEndsAtMaxSimulationTime: a run cut short leaves transfers
// unfinished (counted, their requests unfinished) and routes the requests
// arriving after it, every one with a record.
func TestDisaggRunEndsAtMaxSimulationTime(t *testing.T) {
	requests := []plant.Request{
		{ID: 0, ArrivalTimeS: 0, PromptTokens: 100, OutputTokens: 11},
		{ID: 1, ArrivalTimeS: 0.05, PromptTokens: 100, OutputTokens: 11},
		{ID: 2, ArrivalTimeS: 5, PromptTokens: 100, OutputTokens: 11},
	}
	cfg := disaggFleet(1, 1, Link{BandwidthGBps: 0.01}) // 0.58 s a transfer
	cfg.Plant.MaxSimulationTimeS = 0.35
	res, err := Simulate(requests, cfg)
	require.NoError(t, err)
	d := res.Disaggregation
	assert.Equal(t, 2, d.TransfersUnfinished)
	assert.Zero(t, d.Transfers)
	assert.Zero(t, d.KVBytesTransferred)
	assert.True(t, math.IsNaN(d.TransferWaitMeanS))
	assert.Zero(t, res.Metrics.CompletedFraction)
	assert.Equal(t, []int{0, 0, 0}, res.Assignment, "the late request routed too")
	for i, rec := range res.Requests {
		assert.Equal(t, requests[i].ID, rec.RequestID)
		assert.True(t, math.IsNaN(rec.CompletionTimeS))
	}
	assert.Equal(t, 3, res.Replicas[0].RequestsRouted)
	assert.Zero(t, res.Replicas[1].RequestsRouted)
}

// TestDisaggRunStopsWhenCanceled: a disaggregated run returns its
// context's error once it is done.
func TestDisaggRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := SimulateContext(ctx, embeddedTrace(t), disaggFleet(1, 1, Link{BandwidthGBps: 25}))
	require.ErrorIs(t, err, context.Canceled)
}
