package fleet

import "slices"

// SessionSource gives the session of a request by its ID: a number from 0
// (sessions numbered densely, as trace.Trace numbers a CSV log's session
// column) and true, or false for a request without one.
type SessionSource interface {
	Session(requestID int) (int, bool)
}

// Session sends every request of a session (a conversation) to the
// replica its session's first request went to, where the earlier turns'
// KV is, as vLLM production-stack's session router and llm-d's
// session-affinity scorer do; a session's first request, and a request
// without a session, goes where least-outstanding sends it. The sessions
// are Config.Sessions (a trace whose requests carry one); without any,
// Session is least-outstanding. A route costs O(replicas) for a first
// request, O(1) for the others.
//
// A session's replica is its position among the states the router is
// handed: in an elastic fleet, whose ready replicas change as it scales, a
// session follows the position, not the replica, after a scale event
// (the router of a real fleet rehashes its sessions then too), and a
// position past the ready replicas routes the session anew.
type Session struct {
	sessions SessionSource
	// replica[s] is session s's replica plus one, 0 before its first
	// request.
	replica []int32
}

// Name implements Router.
func (*Session) Name() string { return SessionName }

// bind implements binder: the sessions are those of cfg.
func (r *Session) bind(cfg *Config) error {
	r.sessions = cfg.Sessions
	return nil
}

// Route implements Router.
func (r *Session) Route(req Arrival, replicas []ReplicaState) int {
	if r.sessions == nil {
		return LeastOutstanding{}.Route(req, replicas)
	}
	s, ok := r.sessions.Session(req.ID)
	if !ok {
		return LeastOutstanding{}.Route(req, replicas)
	}
	if s >= len(r.replica) {
		r.replica = slices.Grow(r.replica, s+1-len(r.replica))[:s+1]
	}
	if k := int(r.replica[s]) - 1; k >= 0 && k < len(replicas) {
		return k
	}
	k := LeastOutstanding{}.Route(req, replicas)
	r.replica[s] = int32(k + 1)
	return k
}
