package fleet

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"servesim/internal/plant"
)

// Arrival is what a router knows of an arriving request: never its output
// length.
type Arrival struct {
	Index        int     // position in arrival order, 0-based
	ID           int     // request_id
	ArrivalTimeS float64 // arrival, s since the fleet's first arrival
	PromptTokens int     // prompt length, tokens
}

// ReplicaState is what a load balancer sees of one replica (plant.Load):
// its queue, active decodes, KV occupancy, queued prompt tokens,
// temperature and clock.
type ReplicaState = plant.Load

// A Router assigns each arriving request to a replica. The fleet calls
// Route once per request, in arrival order; it returns an index into
// replicas (one state per replica, in replica order). A Router may keep
// state between calls (a counter, a random generator): give every run its
// own instance.
//
// The states are those at the start of the request's arrival step, the
// state the replica's own scheduler observes, except that the requests
// routed earlier in the same step already count (a replica's queue
// includes them). Requests arriving after the run's MaxSimulationTimeS are
// routed on the states at the end of the run.
type Router interface {
	Name() string
	Route(req Arrival, replicas []ReplicaState) int
}

// StateFree is implemented by a Router whose choices never depend on the
// replica states. When StateFree returns true the fleet routes every
// request up front, passing zero states, and simulates the replicas
// independently and in parallel.
type StateFree interface {
	StateFree() bool
}

// IsStateFree reports whether r declares itself state-free: a fleet then
// simulates its replicas in parallel.
func IsStateFree(r Router) bool {
	s, ok := r.(StateFree)
	return ok && s.StateFree()
}

// Built-in router names, as --router takes them.
const (
	RoundRobinName       = "round-robin"
	RandomName           = "random"
	LeastOutstandingName = "least-outstanding"
	LeastTokensName      = "least-tokens"
	PrefixAwareName      = "prefix-aware"
	SessionName          = "session"
)

// RouterNames lists the built-in routers.
var RouterNames = []string{RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName, PrefixAwareName, SessionName}

// DefaultRouterSeed seeds the random router when no seed is given.
const DefaultRouterSeed = 1

// NewRouter returns a new built-in router from its spec, a name with its
// options after a colon: round-robin, random (seeded by seed),
// least-outstanding, least-tokens, prefix-aware[:weight=W,index=I]
// (PrefixAware) or session (Session). An unknown name is an error naming the routers; a bad
// option a *RouterError.
func NewRouter(spec string, seed uint64) (Router, error) {
	name, options, hasOptions := strings.Cut(spec, ":")
	switch name {
	case RoundRobinName, RandomName, LeastOutstandingName, LeastTokensName, SessionName:
		if hasOptions {
			return nil, &RouterError{Router: name, Value: strconv.Quote(options), Expected: "no options"}
		}
	}
	switch name {
	case RoundRobinName:
		return &RoundRobin{}, nil
	case RandomName:
		return NewRandom(seed), nil
	case LeastOutstandingName:
		return LeastOutstanding{}, nil
	case LeastTokensName:
		return LeastTokens{}, nil
	case SessionName:
		return &Session{}, nil
	case PrefixAwareName:
		if !hasOptions {
			return NewPrefixAware(DefaultPrefixWeight, ApproximateIndex)
		}
		return parsePrefixAware(options)
	}
	return nil, fmt.Errorf("unknown router %q: expected %s", spec, strings.Join(RouterNames, ", "))
}

// NeedsPrefixCache reports whether the router of spec scores replicas by
// the prompt prefixes they hold (prefix-aware), which needs the prefix
// cache on.
func NeedsPrefixCache(spec string) bool {
	name, _, _ := strings.Cut(spec, ":")
	return name == PrefixAwareName
}

// RoundRobin sends request i (in arrival order) to replica i mod N.
type RoundRobin struct{}

// Name implements Router.
func (*RoundRobin) Name() string { return RoundRobinName }

// Route implements Router.
func (*RoundRobin) Route(req Arrival, replicas []ReplicaState) int { return req.Index % len(replicas) }

// StateFree implements StateFree.
func (*RoundRobin) StateFree() bool { return true }

// Random sends each request to a replica drawn uniformly from a PCG
// generator seeded by Seed: the same seed gives the same assignment.
type Random struct {
	rng *rand.Rand
}

// NewRandom returns a random router seeded by seed.
func NewRandom(seed uint64) *Random {
	return &Random{rng: rand.New(rand.NewPCG(seed, 0))}
}

// Name implements Router.
func (*Random) Name() string { return RandomName }

// Route implements Router.
func (r *Random) Route(_ Arrival, replicas []ReplicaState) int { return r.rng.IntN(len(replicas)) }

// StateFree implements StateFree.
func (*Random) StateFree() bool { return true }

// LeastOutstanding sends each request to the replica with the fewest
// queued plus decoding requests (the lowest index on a tie).
type LeastOutstanding struct{}

// Name implements Router.
func (LeastOutstanding) Name() string { return LeastOutstandingName }

// Route implements Router.
func (r LeastOutstanding) Route(_ Arrival, replicas []ReplicaState) int {
	return argmin(replicas, r.Cost)
}

// Cost implements CostRouter: the queued plus decoding requests.
func (LeastOutstanding) Cost(s *ReplicaState) float64 {
	return float64(s.QueuedRequests + s.ActiveDecodes)
}

// LeastTokens sends each request to the replica with the fewest prompt
// tokens still to prefill plus KV-cache tokens (the lowest index on a tie).
type LeastTokens struct{}

// Name implements Router.
func (LeastTokens) Name() string { return LeastTokensName }

// Route implements Router.
func (r LeastTokens) Route(_ Arrival, replicas []ReplicaState) int { return argmin(replicas, r.Cost) }

// Cost implements CostRouter: the prompt tokens still to prefill plus the
// KV-cache tokens.
func (LeastTokens) Cost(s *ReplicaState) float64 { return s.QueuedPromptTokens + s.KVTokens }

// argmin is the first index of the smallest cost.
func argmin(replicas []ReplicaState, cost func(*ReplicaState) float64) int {
	best, bestCost := 0, cost(&replicas[0])
	for i := 1; i < len(replicas); i++ {
		if c := cost(&replicas[i]); c < bestCost {
			best, bestCost = i, c
		}
	}
	return best
}
