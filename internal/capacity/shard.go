package capacity

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"

	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// Grid is the part of a capacity search that no evaluation decides
// and so can run ahead of it, spread over many processes: the doubling
// sizes 1, 2, 4, ... the search tries first. Which sizes the bisection
// then needs, and the controller comparison at the answer, depend on the
// evaluations, so they are not in the grid.
type Grid struct {
	// Sizes are the grid's cells: the powers of two below the largest size
	// searched, then that size (1, 2, 4, ..., 512, 1024 for 1024; 1, 2,
	// ..., 64, 100 for 100). Cell k is Sizes[k].
	Sizes []int
	// Digest (grid_sha256) is the SHA-256, in hex, of everything an
	// evaluation of a size depends on and of the sizes: see Grid.
	Digest string
}

// doublingSizes are the sizes Search doubles through up to
// maxSize: 1, 2, 4, ... below it, then maxSize.
func doublingSizes(maxSize int) []int {
	var sizes []int
	for size := 1; size < maxSize; size *= 2 {
		sizes = append(sizes, size)
	}
	return append(sizes, maxSize)
}

// Grid returns the grid of the study on requests, read from a trace whose
// bytes have the SHA-256 traceSHA256, by servesim version. Its digest
// covers the version, the trace's SHA-256 and the requests as loaded
// (their IDs, arrival times and token counts, so --max-elapsed and the
// trace options count), the plant parameters, the unit fleet (each group's
// name, replicas, scheduler, controller and profile by the SHA-256 of its
// CSV and manifest, not by path: shards may read them from other
// folders), the router and its seed, the search controller (the first of
// Controllers), the SLOs, the engine options (the requests' hash ids by
// their SHA-256) and the sizes (so the largest size searched). It
// leaves out what no evaluation depends on: the target attainment, the
// other controllers, the jobs, and the paths; one grid's evaluations serve
// a study of any target.
func (c *Capacity) Grid(requests []plant.Request, traceSHA256, version string) (Grid, error) {
	if len(c.Controllers) == 0 {
		return Grid{}, errors.New("capacity: no controller given")
	}
	type group struct {
		Name             string `json:"name"`
		Replicas         int    `json:"replicas"`
		ProfileCSVSHA256 string `json:"profile_csv_sha256"`
		ManifestSHA256   string `json:"manifest_sha256"`
		Scheduler        string `json:"scheduler"`
		Controller       string `json:"controller"`
		// Role is a disaggregated pool's (left out for a mixed group:
		// the digests of mixed studies are as they were).
		Role string `json:"role,omitempty"`
	}
	unit := make([]group, len(c.Unit))
	for i, g := range c.Unit {
		unit[i] = group{Name: g.Name, Replicas: g.Replicas, Scheduler: g.Scheduler, Controller: g.Controller}
		if g.Role != fleet.RoleMixed {
			unit[i].Role = g.Role
		}
		if g.Profile != nil {
			unit[i].ProfileCSVSHA256, unit[i].ManifestSHA256 = g.Profile.ProfileCSVSHA256, g.Profile.ManifestSHA256
		}
	}
	router := c.Router
	if r, err := fleet.NewRouter(c.Router, c.RouterSeed); err == nil {
		router = r.Name()
	}
	type objectives struct {
		TTFTS float64 `json:"ttft_slo_s"`
		TPOTS float64 `json:"tpot_slo_s"`
		E2ES  float64 `json:"e2e_slo_s"`
	}
	sizes := doublingSizes(c.maxSize())
	identity := struct {
		Version          string      `json:"servesim_version"`
		TraceSHA256      string      `json:"trace_sha256"`
		RequestsSHA256   string      `json:"requests_sha256"`
		Plant            plant.Plant `json:"plant"`
		Unit             []group     `json:"unit"`
		Router           string      `json:"router"`
		RouterSeed       uint64      `json:"router_seed"`
		SearchController string      `json:"search_controller"`
		SLO              objectives  `json:"slo"`
		Engine           engineID    `json:"engine"`
		Sizes            []int       `json:"sizes"`
		// Service is the batched model, absent under the reference's
		// (whose identities stay as they were).
		Service *plant.ServiceModel `json:"service,omitempty"`
		// SessionsSHA256 is the requests' sessions of the session
		// router; absent with any other router.
		SessionsSHA256 string `json:"sessions_sha256,omitempty"`
	}{
		Version: version, TraceSHA256: traceSHA256, RequestsSHA256: requestsDigest(requests),
		Plant: c.Plant, Unit: unit, Router: router, RouterSeed: c.RouterSeed, SearchController: c.Controllers[0],
		SLO: objectives{c.SLO.TTFTSeconds, c.SLO.TPOTSeconds, c.SLO.E2ESeconds}, Sizes: sizes,
		Engine: engineIdentity(c.Engine, requests),
	}
	if c.Service.Batched() {
		identity.Service = &c.Service
	}
	if router == fleet.SessionName {
		identity.SessionsSHA256 = sessionsDigest(c.Sessions, requests)
	}
	data, err := json.Marshal(identity)
	if err != nil {
		return Grid{}, err // a plant value that is not a number: Validate refuses it first
	}
	sum := sha256.Sum256(data)
	return Grid{Sizes: sizes, Digest: hex.EncodeToString(sum[:])}, nil
}

// engineID is the identity of the engine options: the block size and the
// preemption policy as they take effect, and the requests' hash ids by
// their SHA-256 (empty without).
type engineID struct {
	PrefixCache        bool   `json:"prefix_cache"`
	KVBlockTokens      int    `json:"kv_block_tokens"`
	SharedPrefixTokens int    `json:"shared_prefix_tokens"`
	Preemption         string `json:"preemption"`
	HashIDsSHA256      string `json:"hash_ids_sha256"`
}

// engineIdentity is the identity of the engine options o for requests.
func engineIdentity(o plant.EngineOptions, requests []plant.Request) engineID {
	e := engineID{PrefixCache: o.PrefixCache, KVBlockTokens: o.BlockTokens(), SharedPrefixTokens: o.SharedPrefixTokens,
		Preemption: string(o.Preemption)}
	if e.Preemption == "" {
		e.Preemption = string(plant.PreemptionNone)
	}
	if o.HashIDs != nil {
		h := sha256.New()
		var buf [8]byte
		word := func(x uint64) {
			binary.LittleEndian.PutUint64(buf[:], x)
			h.Write(buf[:])
		}
		for _, r := range requests {
			ids := o.HashIDs.HashIDs(r.ID)
			word(uint64(len(ids)))
			for _, id := range ids {
				word(uint64(id))
			}
		}
		e.HashIDsSHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return e
}

// sessionsDigest is the SHA-256, in hex, of the requests' sessions: for
// each, in order, its session plus one (0 for none) as a little-endian
// 64-bit word; empty for no source.
func sessionsDigest(sessions fleet.SessionSource, requests []plant.Request) string {
	if sessions == nil {
		return ""
	}
	h := sha256.New()
	var buf [8]byte
	for _, r := range requests {
		var word uint64
		if s, ok := sessions.Session(r.ID); ok {
			word = uint64(s) + 1
		}
		binary.LittleEndian.PutUint64(buf[:], word)
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// requestsDigest is the SHA-256, in hex, of what a simulation reads of the
// requests: each one's ID, arrival time (its float64 bits), prompt and
// output tokens, in order, as little-endian 64-bit words.
func requestsDigest(requests []plant.Request) string {
	h := sha256.New()
	var buf [4 * 8]byte
	for _, r := range requests {
		binary.LittleEndian.PutUint64(buf[0:], uint64(r.ID))
		binary.LittleEndian.PutUint64(buf[8:], math.Float64bits(r.ArrivalTimeS))
		binary.LittleEndian.PutUint64(buf[16:], uint64(r.PromptTokens))
		binary.LittleEndian.PutUint64(buf[24:], uint64(r.OutputTokens))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Shard returns the cells that shard i of n (1 <= i <= n) evaluates,
// largest size first. The cells are dealt out largest first, one to each
// shard in turn: shard 1 gets the largest size, shard 2 the next, ...,
// shard n the n-th, shard 1 the (n+1)-th, and so on. A simulation costs
// about its replicas times the trace's duration, so a contiguous slice
// would give the last shard the largest sizes; dealt out, the shard with
// the largest size holds little else (at most 1/2^n more, by that
// measure). A shard beyond the grid's cells gets none.
func (g Grid) Shard(i, n int) []int {
	var cells []int
	for k := len(g.Sizes) - i; k >= 0; k -= n {
		cells = append(cells, k)
	}
	return cells
}

// SizeEvaluator simulates sizes of a study's grid outside a search, as a
// capacity shard does.
type SizeEvaluator struct {
	// Jobs is the number of sizes to simulate at once: 1 with a
	// state-free router, whose fleets simulate their replicas in
	// parallel instead (Capacity.Search.Jobs at once).
	Jobs int
	run  *capacityRun
}

// SizeEvaluator checks the study and the requests (sorted by arrival,
// unique IDs) as Run does and returns its evaluator of single
// sizes.
func (c *Capacity) SizeEvaluator(requests []plant.Request) (*SizeEvaluator, error) {
	run, err := c.prepare(requests)
	if err != nil {
		return nil, err
	}
	return &SizeEvaluator{Jobs: run.sizeJobs, run: run}, nil
}

// Evaluate simulates the fleet of the given size with the search
// controller and judges it, as the search would; its MeetsTarget is left
// false (a grid's evaluations do not depend on the target). It may be
// called concurrently; it ends early with ctx's error once ctx is done.
func (e *SizeEvaluator) Evaluate(ctx context.Context, size int) (Evaluation, error) {
	return e.run.evaluate(ctx, size, e.run.c.Controllers[0])
}
