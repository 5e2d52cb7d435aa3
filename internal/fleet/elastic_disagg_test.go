package fleet

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// elasticDisaggFleet is disaggFleet(np, nd) made elastic: each pool scales
// on its own with its autoscaler, from its initial size within [0, most].
func elasticDisaggFleet(np, nd int, prefill, decode Autoscaler, most int, link Link) Config {
	cfg := disaggFleet(max1(np), max1(nd), link)
	cfg.Groups[0].Replicas, cfg.Groups[1].Replicas = np, nd
	cfg.Scaling = &Scaling{Autoscaler: prefill, MaxReplicas: most, InitialReplicas: np,
		IntervalS: 30, ProvisionS: 20, LoadS: 10,
		Groups: []GroupScaling{
			{Autoscaler: prefill, MaxReplicas: most, InitialReplicas: np},
			{Autoscaler: decode, MaxReplicas: most, InitialReplicas: nd},
		}}
	return cfg
}

// following is a schedule autoscaler of rows (start_s,replicas lines).
func following(t *testing.T, rows string) *ScheduleScaler {
	return &ScheduleScaler{Schedule: schedule(t, rows)}
}

// TestStaticElasticDisaggIsTheFixedOne: pools that keep their sizes (the
// static autoscaler per pool) run the elastic engine and give the fixed
// disaggregated fleet bit for bit: replicas, records, routes, transfers and
// the pools' blocks, on every router but prefix-aware (run with the cache
// below), the session router on sessions of five requests, and both
// service models.
func TestStaticElasticDisaggIsTheFixedOne(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)[:500]
	for _, svc := range []plant.ServiceModel{{}, batchedService()} {
		for _, name := range RouterNames {
			if NeedsPrefixCache(name) {
				continue // TestElasticDisaggWithThePrefixCache runs it
			}
			t.Run(svc.Name()+"/"+name, func(t *testing.T) {
				run := func(scaled bool) *Result {
					link := Link{BandwidthGBps: 0.5, LatencyS: 0.02}
					cfg := disaggFleet(2, 3, link)
					if scaled {
						cfg = elasticDisaggFleet(2, 3, Static{}, Static{}, 4, link)
					}
					cfg.Service, cfg.Options.Stride, cfg.Sessions = svc, 7, sessionsByID(5)
					cfg.Router, _ = NewRouter(name, 5)
					cfg.Disaggregation.DecodeRouter, _ = NewRouter(name, 6)
					res, err := Simulate(requests, cfg)
					require.NoError(t, err)
					return res
				}
				want, got := run(false), run(true)
				requireSameElastic(t, want, got)
				require.NotNil(t, got.Scaling)
				assert.Empty(t, got.Scaling.Events)
				assert.Equal(t, want.Disaggregation.DecodeReplica, got.Disaggregation.DecodeReplica)
				w, g := *want.Disaggregation, *got.Disaggregation
				w.Pools, g.Pools = nil, nil
				assert.Equal(t, bits(w), bits(g))
				for pool := range want.Disaggregation.Pools {
					// An elastic pool's duration is the grid's span, not
					// its longest replica's (fleetMetrics): its throughput
					// alone may differ.
					w, g := want.Disaggregation.Pools[pool].Metrics, got.Disaggregation.Pools[pool].Metrics
					w.OutputThroughputTokensPerS, g.OutputThroughputTokensPerS = 0, 0
					assert.Equal(t, bits(w), bits(g), "pool %d", pool)
					assert.Equal(t, want.Disaggregation.Pools[pool].Replicas, got.Disaggregation.Pools[pool].Replicas)
				}
			})
		}
	}
}

// TestElasticDisaggScalesEachPool: each pool follows its own schedule, up
// and down, under load; every request is prefilled once and decoded once
// after its KV arrived, a draining replica is released only once its
// work (its prefills and their KV sent, or the transfers routed to it
// decoded) is done, and the lifecycles and the document's groups count each
// pool's replicas.
func TestElasticDisaggScalesEachPool(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)[:1500]
	for _, svc := range []plant.ServiceModel{{}, batchedService()} {
		t.Run(svc.Name(), func(t *testing.T) {
			prefill := following(t, "0,1\n120,3\n400,1\n")
			decode := following(t, "0,2\n60,4\n300,1\n")
			cfg := elasticDisaggFleet(1, 2, prefill, decode, 4, Link{BandwidthGBps: 1, LatencyS: 0.01})
			cfg.Service = svc
			cfg.Router = LeastOutstanding{}
			cfg.Disaggregation.DecodeRouter = LeastOutstanding{}
			d, res := runDisagg(t, requests, cfg)
			checkDisagg(t, d, res)
			started := map[int]int{}
			for _, l := range res.Scaling.Lifecycles {
				started[l.Group]++
				if !math.IsNaN(l.ReleasedS) && l.Replica >= 0 {
					// Released once its work was done.
					for _, rec := range d.records[l.Replica] {
						assert.LessOrEqual(t, rec.CompletionTimeS, l.ReleasedS+plant.TimeEpsilonS, "replica %d", l.Replica)
					}
					for i := range d.xfers {
						if x := &d.xfers[i]; x.prefill == l.Replica && x.tokens > 0 {
							assert.LessOrEqual(t, x.sentS, l.ReleasedS+plant.TimeEpsilonS, "replica %d released before request %d's KV left", l.Replica, i)
						}
					}
				}
			}
			assert.Equal(t, 3, started[0], "prefill replicas started")
			assert.Equal(t, 4, started[1], "decode replicas started")
			// Each decode replica that joined decoded requests.
			for _, k := range d.members[poolDecode] {
				assert.NotEmpty(t, d.routed[k], "decode replica %d", k)
			}
			doc := newAutoscaleReport(res, true)
			require.Len(t, doc.Groups, 2)
			assert.Equal(t, RolePrefill, doc.Groups[0].Role)
			assert.Equal(t, RoleDecode, doc.Groups[1].Role)
			assert.Equal(t, 3, doc.Groups[0].ReplicasStarted)
			assert.Equal(t, 4, doc.Groups[1].ReplicasStarted)
			assert.InDelta(t, doc.GPUHours, doc.Groups[0].GPUHours+doc.Groups[1].GPUHours, 1e-9)
			assert.InDelta(t, doc.EnergyKWh, doc.Groups[0].EnergyKWh+doc.Groups[1].EnergyKWh, 1e-9)
			// The series counts each pool's ready replicas, their sum the
			// fleet's, also once resampled.
			series := res.Scaling.Series
			require.Len(t, series.GroupReady, 2)
			for _, s := range []ScaleSeries{series, series.Resample(7)} {
				for i := range s.TimeS {
					assert.Equal(t, s.Ready[i], s.GroupReady[0][i]+s.GroupReady[1][i], "sample %d", i)
				}
			}
			assert.Equal(t, 3, slices.Max(series.GroupReady[0]), "the prefill plan's peak")
			assert.Equal(t, 4, slices.Max(series.GroupReady[1]), "the decode plan's peak")
			// The pools' windows and the fleet's judgments agree.
			met := 0
			for _, w := range res.Scaling.Windows {
				if w.Arrivals > 0 {
					met += int(math.Round(w.SLOAttainment * float64(w.Arrivals)))
				}
			}
			assert.Equal(t, res.SLO.RequestsMeetingSLO, met)
		})
	}
}

// observer records the observations its autoscaler is given.
type observer struct {
	Autoscaler
	seen []ScaleObservation
}

func (o *observer) Scale(obs *ScaleObservation) (int, string, error) {
	c := *obs
	c.Replicas = append([]ReplicaLoad(nil), obs.Replicas...)
	o.seen = append(o.seen, c)
	return o.Autoscaler.Scale(obs)
}

// TestElasticDisaggDecodePoolFromNone: a decode pool that starts empty
// holds every first token at the decode router, their KV kept by their
// prefill replicas, until its autoscaler (which sees them waiting) starts a
// replica; once it is ready they move, and every request completes.
func TestElasticDisaggDecodePoolFromNone(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)[:200]
	decode := &observer{Autoscaler: NewQueue(2)}
	cfg := elasticDisaggFleet(1, 0, Static{}, decode, 3, Link{BandwidthGBps: 25})
	d, res := runDisagg(t, requests, cfg)
	checkDisagg(t, d, res)
	var waited bool
	for _, o := range decode.seen {
		assert.Equal(t, RoleDecode, o.Role)
		if o.Ready == 0 && o.RouterWaiting > 0 {
			waited = true
			assert.Equal(t, o.RouterWaiting, o.Waiting)
		}
	}
	assert.True(t, waited, "the decode autoscaler saw first tokens waiting")
	// The first decode replica came after its cold start: the first
	// transfers waited for it.
	coldS := cfg.Scaling.ProvisionS + cfg.Scaling.LoadS
	assert.GreaterOrEqual(t, res.Disaggregation.TransferWaitMaxS, coldS-cfg.Scaling.IntervalS)
	assert.Zero(t, res.Disaggregation.TransfersUnfinished)
	assert.Equal(t, 1.0, res.Metrics.CompletedFraction)
}

// TestElasticDisaggWithThePrefixCache: prefix-aware routing over an
// elastic prefill pool keeps its caches' hits, and the run's invariants
// hold.
func TestElasticDisaggWithThePrefixCache(t *testing.T) {
	t.Parallel()
	w := sharedPromptWorkload(3, 400, 6, 2, 4)
	cfg := elasticDisaggFleet(1, 1, following(t, "0,1\n30,3\n"), following(t, "0,1\n60,2\n"), 4, Link{BandwidthGBps: 2, LatencyS: 0.01})
	cfg.Engine = plant.EngineOptions{PrefixCache: true, HashIDs: w}
	var err error
	cfg.Router, err = NewRouter(PrefixAwareName, 1)
	require.NoError(t, err)
	d, res := runDisagg(t, w.requests, cfg)
	checkDisagg(t, d, res)
	for _, k := range d.members[poolDecode] {
		assert.Nil(t, res.Replicas[k].Result.Engine, "decode replica %d has no prefix cache", k)
	}
	var reports []*plant.EngineReport
	for _, k := range d.members[poolPrefill] {
		reports = append(reports, res.Replicas[k].Result.Engine)
	}
	rep := plant.SumEngineReports(reports)
	require.NotNil(t, rep)
	assert.Greater(t, rep.PrefixCacheHitRate, 0.1)
}
