package fleet

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"servesim/internal/plant"
)

// Options of the prefix-aware router, as --router takes them:
// prefix-aware:weight=W,index=approximate|exact.
const (
	PrefixWeightOption = "weight"
	PrefixIndexOption  = "index"
	// ApproximateIndex is the router's own index of what it sent where
	// (the default); ExactIndex reads the replicas' caches.
	ApproximateIndex = "approximate"
	ExactIndex       = "exact"
)

// ApproximateChunkTokens is the chunk of prompt the approximate index keys
// by (prefixIndex): a prefix held in part is counted down to a multiple of
// it (or of the block size, when larger), and the index holds a key per
// chunk, 1/16 of the caches' blocks at the default block size.
const ApproximateChunkTokens = 256

// DefaultPrefixWeight is the prefix-aware router's weight unless
// weight=W says otherwise: a prompt found wholly cached is worth four
// outstanding requests. On a shared-system-prompt workload it keeps
// nearly all of the hit rate of larger weights (README, "Prefix-aware
// routing") without piling a popular prefix onto one replica.
const DefaultPrefixWeight = 4.0

// PrefixAware routes each request to the replica where the share of its
// prompt found cached, weighed against the replica's load, makes it
// cheapest, as vLLM production-stack's prefixaware router, llm-d's prefix
// cache scorers and Dynamo's KV router do. The cost of replica k is
//
//	cost_k = QueuedRequests_k + ActiveDecodes_k - Weight * hit_k / PromptTokens
//
// its queued and running requests (least-outstanding's load) less Weight
// times the share of the request's prompt it holds cached: hit_k tokens,
// whole blocks of EngineOptions.BlockTokens, the leading run of the
// prompt's shared blocks (plant.EngineOptions.AppendPrefixKeys, keyed by
// the trace's hash ids or the shared-prefix rule) as the replica's own
// cache would match them. The lowest cost wins, the lowest index on a
// tie. Weight is the number of outstanding requests a wholly cached prompt
// is worth, as llm-d weighs its prefix scorer's share against its queue
// scorer: 0 is least-outstanding, and so is any weight on prompts no
// replica holds (independent prompts route exactly as least-outstanding
// does); a larger weight keeps a prefix on its replica through a longer
// queue.
//
// What the router knows of the caches is its Index: by default
// (ApproximateIndex) its own record of the prompts it sent to each
// replica, by chunks of ApproximateChunkTokens (prefixIndex), as a router
// without KV events keeps it; with
// ExactIndex the replicas' caches as they are at the request's arrival
// (plant.PrefixCache), as llm-d's precise scorer reads them from the
// replicas' KV events.
//
// A route costs O(replicas) (the load of each, as least-outstanding) plus
// the prompt's shared blocks (its keys), and with the approximate index
// one probe per index entry of the prompt's chunk keys held by a replica
// that holds the chunks before it, with the exact index one probe per
// replica and per block it holds.
type PrefixAware struct {
	Weight float64
	Index  string // ApproximateIndex or ExactIndex
	// engine are the replicas' engine options (bind): the block size, the
	// shared prefix and the requests' hash ids.
	engine plant.EngineOptions
	bound  bool
	keys   []plant.PrefixKey // the routed request's
	index  *prefixIndex      // with ApproximateIndex
}

// NewPrefixAware returns a prefix-aware router: weight (finite, 0 or
// more) and index (ApproximateIndex or ExactIndex, "" for the first).
func NewPrefixAware(weight float64, index string) (*PrefixAware, error) {
	if math.IsNaN(weight) || math.IsInf(weight, 0) || weight < 0 {
		return nil, &RouterError{Router: PrefixAwareName, Option: PrefixWeightOption, Value: strconv.FormatFloat(weight, 'g', -1, 64), Expected: "a finite number, 0 or more"}
	}
	switch index {
	case "":
		index = ApproximateIndex
	case ApproximateIndex, ExactIndex:
	default:
		return nil, &RouterError{Router: PrefixAwareName, Option: PrefixIndexOption, Value: strconv.Quote(index), Expected: ApproximateIndex + " or " + ExactIndex}
	}
	return &PrefixAware{Weight: weight, Index: index}, nil
}

// parsePrefixAware reads prefix-aware's options, "weight=W,index=I" (each
// at most once, in any order).
func parsePrefixAware(options string) (*PrefixAware, error) {
	weight, index := DefaultPrefixWeight, ""
	seen := map[string]bool{}
	for term := range strings.SplitSeq(options, ",") {
		name, value, ok := strings.Cut(term, "=")
		if !ok || name == "" {
			return nil, &RouterError{Router: PrefixAwareName, Option: strconv.Quote(term), Expected: "options as name=value: weight=W, index=approximate|exact"}
		}
		if seen[name] {
			return nil, &RouterError{Router: PrefixAwareName, Option: name, Value: strconv.Quote(value), Expected: "it once"}
		}
		seen[name] = true
		switch name {
		case PrefixWeightOption:
			w, err := strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return nil, &RouterError{Router: PrefixAwareName, Option: name, Value: strconv.Quote(value), Expected: "a finite number, 0 or more"}
			}
			weight = w
		case PrefixIndexOption:
			index = value
		default:
			return nil, &RouterError{Router: PrefixAwareName, Option: strconv.Quote(name), Expected: "weight or index"}
		}
	}
	return NewPrefixAware(weight, index)
}

// Name implements Router: prefix-aware, with its options when they are
// not the defaults.
func (r *PrefixAware) Name() string {
	var opts []string
	if r.Weight != DefaultPrefixWeight {
		opts = append(opts, PrefixWeightOption+"="+strconv.FormatFloat(r.Weight, 'g', -1, 64))
	}
	if r.Index != ApproximateIndex {
		opts = append(opts, PrefixIndexOption+"="+r.Index)
	}
	if len(opts) == 0 {
		return PrefixAwareName
	}
	return PrefixAwareName + ":" + strings.Join(opts, ",")
}

// errNoPrefixCache is the prefix-aware router's refusal of replicas
// without the prefix cache.
var errNoPrefixCache = errors.New("router prefix-aware needs the prefix cache (--prefix-cache): without it no replica keeps a prompt's prefix")

// bind implements binder: the router keys prompts as the replicas' caches
// of engine options o do.
func (r *PrefixAware) bind(cfg *Config) error {
	if !cfg.Engine.PrefixCache {
		return errNoPrefixCache
	}
	r.engine, r.bound = cfg.Engine, true
	if r.Index == ApproximateIndex {
		r.index = newPrefixIndex(ApproximateChunkTokens / cfg.Engine.BlockTokens())
	}
	return nil
}

// Route implements Router.
func (r *PrefixAware) Route(req Arrival, replicas []ReplicaState) int {
	if !r.bound {
		panic("fleet: prefix-aware router used outside a fleet run")
	}
	var ids []int64
	if r.engine.HashIDs != nil {
		ids = r.engine.HashIDs.HashIDs(req.ID)
	}
	r.keys = r.engine.AppendPrefixKeys(r.keys[:0], req.PromptTokens, ids)
	share := float64(r.engine.BlockTokens()) / float64(req.PromptTokens)
	if r.index != nil {
		r.index.bind(replicas)
		r.index.match(r.keys)
	}
	best, bestCost := 0, math.Inf(1)
	for k := range replicas {
		s := &replicas[k]
		var hit int
		if r.index != nil {
			hit = r.index.hitAt(k)
		} else {
			hit = s.Prefix.Match(r.keys)
		}
		if c := float64(s.QueuedRequests+s.ActiveDecodes) - r.Weight*share*float64(hit); c < bestCost {
			best, bestCost = k, c
		}
	}
	if r.index != nil {
		r.index.record(best)
	}
	return best
}

// binder is implemented by a router that needs the run's configuration
// before its first route: the fleet calls bind once, when the run starts,
// and fails the run with its error.
type binder interface {
	bind(cfg *Config) error
}

// RouterError is a router spec that cannot be used: an option it does not
// take, or a value it cannot take.
type RouterError struct {
	Router   string // the router's name
	Option   string // the option, quoted when unknown; empty for the router itself
	Value    string // the value as given (quoted where text), if any
	Expected string // what was expected
}

// Error names the router, the option and its value, and what was
// expected.
func (e *RouterError) Error() string {
	what := "router " + e.Router
	if e.Option != "" {
		what += ": " + e.Option
	}
	if e.Value != "" {
		what += " " + e.Value
	}
	return fmt.Sprintf("%s: expected %s", what, e.Expected)
}
