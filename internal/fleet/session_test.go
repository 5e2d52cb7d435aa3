package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionsOf gives request i the session sessions[i] (-1: none).
type sessionsOf []int

// Session implements SessionSource.
func (s sessionsOf) Session(id int) (int, bool) { return s[id], s[id] >= 0 }

// TestSessionKeepsEachSessionOnOneReplica: every request of a session goes
// where its first went, that first where least-outstanding sends it; a
// request without a session goes where least-outstanding sends it; and
// without sessions the router is least-outstanding, request for request.
func TestSessionKeepsEachSessionOnOneReplica(t *testing.T) {
	t.Parallel()
	requests := embeddedTrace(t)[:600]
	sessions := make(sessionsOf, len(requests))
	for i := range sessions {
		sessions[i] = (i * 7) % 40
		if i%9 == 0 {
			sessions[i] = -1
		}
	}
	cfg := defaultFleet(4, "chunked", "max")
	route := func(spec string, s SessionSource) []int {
		r, err := NewRouter(spec, 1)
		require.NoError(t, err)
		cfg.Router, cfg.Sessions = r, s
		res, err := Simulate(requests, cfg)
		require.NoError(t, err)
		return res.Assignment
	}
	least := route(LeastOutstandingName, nil)
	assert.Equal(t, least, route(SessionName, nil), "no sessions: least-outstanding")
	got := route(SessionName, sessions)
	replicaOf := map[int]int{}
	used := map[int]bool{}
	for i, k := range got {
		s := sessions[i]
		if s < 0 {
			continue
		}
		if first, ok := replicaOf[s]; ok {
			assert.Equal(t, first, k, "request %d of session %d", i, s)
			continue
		}
		replicaOf[s] = k
		used[k] = true
	}
	assert.Len(t, replicaOf, 40)
	assert.GreaterOrEqual(t, len(used), 3, "the sessions spread as least-outstanding spreads them")
	assert.NotEqual(t, least, got)
}

func TestSessionRouteAllocatesNothing(t *testing.T) {
	r, err := NewRouter(SessionName, 1)
	require.NoError(t, err)
	sessions := make(sessionsOf, 1000)
	for i := range sessions {
		sessions[i] = i % 50
	}
	require.NoError(t, r.(binder).bind(&Config{Sessions: sessions}))
	states := make([]ReplicaState, 32)
	for i := range sessions {
		r.Route(Arrival{Index: i, ID: i}, states)
	}
	i := 0
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		states[i%32].QueuedRequests++
		r.Route(Arrival{Index: i, ID: i % len(sessions)}, states)
		i++
	}))
	assert.Equal(t, SessionName, r.Name())
	_, err = NewRouter("session:sticky=1", 1)
	assert.EqualError(t, err, `router session "sticky=1": expected no options`)
}
