package capacity

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/cards"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

func TestDoublingSizesAreTheSearchsDoubling(t *testing.T) {
	assert.Equal(t, []int{1}, doublingSizes(1))
	assert.Equal(t, []int{1, 2}, doublingSizes(2))
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 100}, doublingSizes(100))
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, doublingSizes(1024))
	// An unreachable target makes the search double through every size
	// of the grid, and through nothing else.
	for maxSize := 1; maxSize <= 300; maxSize++ {
		s := &synthetic{attainment: func(int) float64 { return 0 }}
		res, err := search(t, s, SearchSettings{Target: 1, MaxReplicas: maxSize, Jobs: 1})
		var unreachable *UnreachableError
		require.ErrorAs(t, err, &unreachable)
		assert.Equal(t, doublingSizes(maxSize), sizesOf(res.Evaluations), "max %d", maxSize)
	}
}

func TestShardDealsTheCellsOutLargestFirst(t *testing.T) {
	g := Grid{Sizes: doublingSizes(1024)} // 11 cells
	assert.Equal(t, []int{10, 6, 2}, g.Shard(1, 4), "1024, 64 and 4 replicas")
	assert.Equal(t, []int{9, 5, 1}, g.Shard(2, 4))
	assert.Equal(t, []int{8, 4, 0}, g.Shard(3, 4))
	assert.Equal(t, []int{7, 3}, g.Shard(4, 4))
	assert.Equal(t, []int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, g.Shard(1, 1))
	assert.Empty(t, g.Shard(12, 16), "a shard beyond the cells")
	for cells := 1; cells <= 13; cells++ {
		g := Grid{Sizes: make([]int, cells)}
		for n := 1; n <= 16; n++ {
			var all []int
			for i := 1; i <= n; i++ {
				shard := g.Shard(i, n)
				assert.True(t, slices.IsSortedFunc(shard, func(a, b int) int { return b - a }), "largest first")
				all = append(all, shard...)
			}
			slices.Sort(all)
			want := make([]int, cells)
			for k := range want {
				want[k] = k
			}
			assert.Equal(t, want, all, "%d cells in %d shards: each once", cells, n)
		}
	}
}

// gridStudy is a study of a fleet file of two groups, every field of
// Capacity that an evaluation depends on set.
func gridStudy() Capacity {
	strict := *profile.Default()
	strict.ProfileCSVSHA256 = "strict"
	return Capacity{
		Plant: plant.NewPlant(nil),
		Unit: []fleet.Group{
			{Name: "a", Replicas: 1, Profile: profile.Default(), ProfilePath: "a.csv", Scheduler: "chunked"},
			{Name: "b", Replicas: 2, Profile: &strict, ProfilePath: "b.csv", Scheduler: "static", Controller: "min"},
		},
		Router: fleet.RandomName, RouterSeed: 7, Controllers: []string{"max", "reactive"},
		SLO:    plant.SLO{TTFTSeconds: 5, TPOTSeconds: 0.1, E2ESeconds: 60},
		Search: SearchSettings{Target: 0.9, MaxReplicas: 100, Jobs: 2},
	}
}

// TestGridDigestCoversWhatAnEvaluationDependsOn changes one thing at a time:
// what an evaluation depends on changes the digest, the rest does not.
// Every field of Capacity, plant.Plant and fleet.Group must be listed, so that a
// new one is either part of the digest or said not to matter.
func TestGridDigestCoversWhatAnEvaluationDependsOn(t *testing.T) {
	requests := firstMinutes(t)
	digest := func(c Capacity, requests []plant.Request, trace, version string) string {
		g, err := c.Grid(requests, trace, version)
		require.NoError(t, err)
		return g.Digest
	}
	base := digest(gridStudy(), requests, "trace", "v1")
	assert.Len(t, base, 64)
	assert.Equal(t, base, digest(gridStudy(), slices.Clone(requests), "trace", "v1"), "a function of the values")

	changes := map[string]bool{} // field name: changes the digest
	check := func(field string, changed bool, change func(c *Capacity)) {
		t.Helper()
		c := gridStudy()
		change(&c)
		assert.Equal(t, changed, digest(c, requests, "trace", "v1") != base, "%s", field)
		changes[field] = changed
	}
	check("Plant.Profile", false, func(c *Capacity) { c.Plant.Profile = profile.Default() }) // each group's replaces it
	for i := range reflect.TypeFor[plant.Plant]().NumField() {
		f := reflect.TypeFor[plant.Plant]().Field(i)
		if f.Name == "Profile" {
			continue
		}
		check("Plant."+f.Name, true, func(c *Capacity) {
			v := reflect.ValueOf(&c.Plant).Elem().Field(i)
			switch v.Kind() {
			case reflect.Float64:
				v.SetFloat(v.Float() * 1.5)
			case reflect.Int:
				v.SetInt(v.Int() + 1)
			default:
				t.Fatalf("plant.Plant.%s: a %s; make this test change it", f.Name, v.Kind())
			}
		})
	}
	check("Unit.Name", true, func(c *Capacity) { c.Unit[0].Name = "c" })
	check("Unit.Replicas", true, func(c *Capacity) { c.Unit[1].Replicas = 3 })
	check("Unit.Profile", true, func(c *Capacity) { c.Unit[1].Profile = profile.Default() })
	check("Unit.ProfilePath", false, func(c *Capacity) { c.Unit[0].ProfilePath = "/mnt/a.csv" })
	check("Unit.Scheduler", true, func(c *Capacity) { c.Unit[0].Scheduler = "continuous" })
	check("Unit.Controller", true, func(c *Capacity) { c.Unit[1].Controller = "max" })
	check("Unit.Role", true, func(c *Capacity) { c.Unit[0].Role = fleet.RolePrefill })
	check("Unit.Role mixed", false, func(c *Capacity) { c.Unit[0].Role = fleet.RoleMixed }) // the default
	check("Router", true, func(c *Capacity) { c.Router = fleet.RoundRobinName })
	check("RouterSeed", true, func(c *Capacity) { c.RouterSeed = 8 })
	// Sessions matter to the session router alone.
	check("Sessions", false, func(c *Capacity) { c.Sessions = make(sessionList, len(requests)) })
	sessions := func(s fleet.SessionSource) string {
		c := gridStudy()
		c.Router, c.Sessions = fleet.SessionName, s
		return digest(c, requests, "trace", "v1")
	}
	none, one := make(sessionList, len(requests)), make(sessionList, len(requests))
	for i := range none {
		none[i], one[i] = -1, 0
	}
	assert.NotEqual(t, sessions(none), sessions(one), "the session router's sessions")
	assert.Equal(t, sessions(one), sessions(slices.Clone(one)))
	assert.NotEqual(t, sessions(nil), sessions(one))
	check("Controllers", true, func(c *Capacity) { c.Controllers = []string{"reactive", "max"} })
	check("Controllers[1:]", false, func(c *Capacity) { c.Controllers = []string{"max", "min", "reactive"} })
	check("SLO.TTFTSeconds", true, func(c *Capacity) { c.SLO.TTFTSeconds = 4 })
	check("SLO.TPOTSeconds", true, func(c *Capacity) { c.SLO.TPOTSeconds = 0.2 })
	check("SLO.E2ESeconds", true, func(c *Capacity) { c.SLO.E2ESeconds = 0 })
	check("Engine.PrefixCache", true, func(c *Capacity) { c.Engine.PrefixCache = true })
	check("Engine.KVBlockTokens", true, func(c *Capacity) { c.Engine.KVBlockTokens = 32 })
	check("Engine.KVBlockTokens 0", false, func(c *Capacity) { c.Engine.KVBlockTokens = plant.DefaultKVBlockTokens }) // the default
	check("Engine.SharedPrefixTokens", true, func(c *Capacity) { c.Engine.SharedPrefixTokens = 64 })
	check("Engine.Preemption", true, func(c *Capacity) { c.Engine.Preemption = plant.PreemptionRecompute })
	check("Engine.Preemption none", false, func(c *Capacity) { c.Engine.Preemption = plant.PreemptionNone }) // the default
	check("Engine.HashIDs", true, func(c *Capacity) { c.Engine.HashIDs = hashIDs{} })
	batched := func(c *Capacity) {
		gpu, _ := cards.BuiltinGPU(cards.DefaultGPU)
		model, _ := cards.BuiltinModel(cards.DefaultModel)
		c.Service = plant.NewBatchedService(gpu, model)
	}
	check("Service", true, batched)
	check("Service.Kind reference", false, func(c *Capacity) { c.Service.Kind = plant.ServiceReference }) // the default, as before
	check("Service.MaxNumSeqs", true, func(c *Capacity) { batched(c); c.Service.MaxNumSeqs = 8 })
	check("Search.MaxReplicas", true, func(c *Capacity) { c.Search.MaxReplicas = 128 })
	check("Search.Target", false, func(c *Capacity) { c.Search.Target = 0.99 })
	check("Search.Jobs", false, func(c *Capacity) { c.Search.Jobs = 1 })
	check("Search.Used", false, func(c *Capacity) { c.Search.Used = func(Evaluation) {} })
	check("Search.Known", false, func(c *Capacity) { c.Search.Known = []Evaluation{{Replicas: 1}} })
	check("Progress", false, func(c *Capacity) { c.Progress = func() {} })
	check("Simulated", false, func(c *Capacity) { c.Simulated = func(int, string) {} })
	// A fleet stopped early fails as its whole run does: records of either serve either.
	check("StopWhenLost", false, func(c *Capacity) { c.StopWhenLost = true })
	// An exec: child's patience decides whether an evaluation fails, not its result.
	check("ControllerOptions", false, func(c *Capacity) { c.ControllerOptions = plant.ControllerOptions{ExecTimeout: time.Second} })

	prefixes := map[reflect.Type]string{reflect.TypeFor[Capacity](): "", reflect.TypeFor[fleet.Group](): "Unit.",
		reflect.TypeFor[SearchSettings](): "Search.", reflect.TypeFor[plant.SLO](): "SLO.", reflect.TypeFor[plant.EngineOptions](): "Engine."}
	for typ, prefix := range prefixes {
		for i := range typ.NumField() {
			name := prefix + typ.Field(i).Name
			if slices.Contains([]string{"Search", "SLO", "Unit", "Plant", "Engine"}, name) {
				continue
			}
			_, listed := changes[name]
			assert.True(t, listed, "%s is new: put it in Grid's digest if an evaluation depends on it, and in this test", name)
		}
	}

	// The inputs: the trace's bytes, the requests as loaded, the version.
	assert.NotEqual(t, base, digest(gridStudy(), requests, "other trace", "v1"))
	assert.NotEqual(t, base, digest(gridStudy(), requests, "trace", "v2"))
	assert.NotEqual(t, base, digest(gridStudy(), requests[:len(requests)-1], "trace", "v1"), "--max-elapsed")
	for _, change := range []func(r *plant.Request){
		func(r *plant.Request) { r.ID++ },
		func(r *plant.Request) { r.ArrivalTimeS = math.Nextafter(r.ArrivalTimeS, math.Inf(1)) },
		func(r *plant.Request) { r.PromptTokens++ },
		func(r *plant.Request) { r.OutputTokens++ },
	} {
		other := slices.Clone(requests)
		change(&other[len(other)-1])
		assert.NotEqual(t, base, digest(gridStudy(), other, "trace", "v1"))
	}

	// The hash ids, request by request.
	withIDs := func(ids hashIDs) string {
		c := gridStudy()
		c.Engine.HashIDs = ids
		return digest(c, requests, "trace", "v1")
	}
	withHashIDs := withIDs(hashIDs{requests[3].ID: {1, 2}})
	assert.NotEqual(t, withHashIDs, withIDs(hashIDs{requests[3].ID: {1, 3}}))
	assert.NotEqual(t, withHashIDs, withIDs(hashIDs{requests[4].ID: {1, 2}}))
	assert.NotEqual(t, withHashIDs, withIDs(hashIDs{requests[3].ID: {1, 2, 0}}))
	assert.Equal(t, withHashIDs, withIDs(hashIDs{requests[3].ID: {1, 2}, -1: {7}}), "a request that is not there")

	_, err := (&Capacity{}).Grid(requests, "trace", "v1")
	assert.ErrorContains(t, err, "no controller")
}

// hashIDs is a plant.HashIDSource from a map.
type hashIDs map[int][]int64

func (h hashIDs) HashIDs(requestID int) []int64 { return h[requestID] }

func TestSearchTakesKnownEvaluations(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	for trial := range 300 {
		maxSize := 1 + rng.IntN(200)
		values := make([]float64, maxSize+2)
		for n := range values {
			values[n] = rng.Float64()
		}
		attainment := func(n int) float64 { return values[n] }
		target := rng.Float64()
		jobs := 1 + rng.IntN(4)
		plain := &synthetic{attainment: attainment}
		want, wantErr := search(t, plain, SearchSettings{Target: target, MaxReplicas: maxSize, Jobs: jobs})

		// Some of the grid known beforehand, as the evaluator gives them;
		// meets_target is not trusted.
		var known []Evaluation
		for _, size := range doublingSizes(maxSize) {
			if rng.IntN(3) > 0 {
				e, err := (&synthetic{attainment: attainment}).evaluate(context.Background(), size)
				require.NoError(t, err)
				e.Replicas, e.MeetsTarget = size, rng.IntN(2) == 0
				known = append(known, e)
			}
		}
		cached := &synthetic{attainment: attainment}
		got, gotErr := search(t, cached, SearchSettings{Target: target, MaxReplicas: maxSize, Jobs: jobs, Known: known})
		assert.Equal(t, want, got, "trial %d", trial)
		assert.Equal(t, wantErr, gotErr, "trial %d", trial)
		for _, size := range cached.calls {
			assert.False(t, slices.ContainsFunc(known, func(e Evaluation) bool { return e.Replicas == size }),
				"trial %d: %d replicas evaluated again", trial, size)
		}
	}
}

// shardRecords evaluates the cells of the study's grid as n shards would
// and returns their records, shard by shard.
func shardRecords(t *testing.T, c Capacity, requests []plant.Request, n int) (Grid, [][]EvaluationRecord) {
	t.Helper()
	grid, err := c.Grid(requests, "trace", "test")
	require.NoError(t, err)
	ev, err := c.SizeEvaluator(requests)
	require.NoError(t, err)
	shards := make([][]EvaluationRecord, n)
	for i := range n {
		for _, cell := range grid.Shard(i+1, n) {
			e, err := ev.Evaluate(context.Background(), grid.Sizes[cell])
			require.NoError(t, err)
			shards[i] = append(shards[i], grid.Record(cell, e))
		}
	}
	return grid, shards
}

func TestRunWithTheGridKnownSimulatesTheRestOnly(t *testing.T) {
	requests := firstMinutes(t)
	for _, router := range []string{fleet.RoundRobinName, fleet.LeastOutstandingName} {
		study := proxyStudy(0.89, "max", "reactive")
		study.Router = router
		study.Search.MaxReplicas = 16
		want, err := Run(context.Background(), requests, study)
		require.NoError(t, err)

		grid, shards := shardRecords(t, study, requests, 3)
		var known []Evaluation
		for _, shard := range shards {
			for _, r := range shard {
				known = append(known, r.Evaluation())
			}
		}
		var mu sync.Mutex
		simulated := map[string][]int{} // by controller
		cached := study
		cached.Search.Known = known
		cached.Simulated = func(size int, controller string) {
			mu.Lock()
			defer mu.Unlock()
			simulated[controller] = append(simulated[controller], size)
		}
		got, err := Run(context.Background(), requests, cached)
		require.NoError(t, err)
		assert.Equal(t, want, got, router)

		var beyond []int // the sizes the search used that are not in the grid
		for _, e := range want.Evaluations {
			if !slices.Contains(grid.Sizes, e.Replicas) {
				beyond = append(beyond, e.Replicas)
			}
		}
		require.NotEmpty(t, beyond, "%s: the study bisects", router)
		for _, size := range simulated["max"] {
			assert.NotContains(t, grid.Sizes, size, "%s: a size of the grid simulated again", router)
		}
		for _, size := range beyond {
			assert.Contains(t, simulated["max"], size, router)
		}
		if router == fleet.RoundRobinName { // one size at a time: nothing speculative
			slices.Sort(simulated["max"])
			assert.Equal(t, beyond, simulated["max"])
		}
		assert.Equal(t, []int{*want.Replicas}, simulated["reactive"], "%s: the other controller at the answer", router)
	}
}

func TestSizeEvaluatorRejectsWhatRunRejects(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.9)
	_, err := study.SizeEvaluator(requests)
	assert.ErrorContains(t, err, "no controller")
	study = proxyStudy(0.9, "max")
	study.Router = "nearest"
	_, err = study.SizeEvaluator(requests)
	assert.ErrorContains(t, err, `unknown router "nearest"`)
	study = proxyStudy(0.9, "max")
	ev, err := study.SizeEvaluator(requests)
	require.NoError(t, err)
	assert.Equal(t, 1, ev.Jobs, "round-robin: one size at a time, its replicas in parallel")
	study.Router = fleet.LeastTokensName
	ev, err = study.SizeEvaluator(requests)
	require.NoError(t, err)
	assert.Equal(t, 2, ev.Jobs, "a lock-step router: sizes in parallel")
	_, err = ev.Evaluate(context.Background(), 0)
	assert.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
}

// sessionList gives request i the session s[i] (-1: none).
type sessionList []int

// Session returns request id's session, if it has one.
func (s sessionList) Session(id int) (int, bool) { return s[id], s[id] >= 0 }
