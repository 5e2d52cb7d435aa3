package fleet

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"servesim/internal/plant"
)

// Disaggregated prefill and decode (DistServe, Splitwise, vLLM's
// disaggregated prefill, Dynamo, llm-d): a fleet whose groups have the
// role "prefill" or "decode" serves each request on two replicas. The
// fleet's router sends it, at its arrival, to a prefill replica (seeing
// the prefill pool's states), which prefills it and produces its first
// token, as vLLM's prefill instance does (the request runs there with one
// output token). Its KV cache (plant.PrefilledKVTokens of its prompt, times
// the link's bytes per token) then moves to a decode replica, chosen at
// that moment by the decode router (seeing the decode pool's states), over
// the prefill replica's link, and the request decodes its other tokens
// there once the KV has arrived (plant.Stepper.AddPrefilled). A request of
// one output token ends at the prefill replica and moves nothing.
//
// The link (Link): each prefill replica has one link of BandwidthGBps to
// the decode pool, its NIC, as each GPU of a disaggregated vLLM or Dynamo
// deployment sends its KV through its own RDMA NIC; its transfers share it
// by processor sharing (n transfers in flight each move at 1/n of the
// bandwidth, simulated exactly between the events within a step), and each
// arrives LatencyS after its last byte left. Links of different prefill
// replicas do not interfere (no switch or decode-side NIC limit).
//
// KV room: a transfer starts only when its decode replica has room for its
// KV and a reserve for the tokens its requests will add (see
// startTransfers). The room (plant.Stepper.FreeKV) counts the running
// requests, the KV that arrived and waits for a running slot, and the
// transfers under way to it, reserved from their start. Until then the
// transfer waits, in the order the requests were routed to that replica,
// and the prefill replica keeps the request's KV, counted against its own
// capacity (plant.Stepper.HoldKV), until the last byte has left. A prefill
// replica holds a finished request's KV from the end of the step in which
// its first token came.
//
// Timing on the grid: each step routes the step's arrivals to the prefill
// pool, steps the prefill replicas, takes their first tokens, routes them to
// the decode pool, starts the transfers that have room (at their first
// token, or at the step's start when they waited), moves the links to the
// step's end, hands the KV that arrived to the decode replicas, and steps
// those. A request's fleet record has its arrival, prefill start and first
// token from the prefill replica and its completion from the decode
// replica: TTFT counts to the first token, TPOT includes the wait for the
// KV before the second.

// The prefix cache (plant.EngineOptions.PrefixCache): the prefill pool's
// replicas keep their caches, as a mixed fleet's do: a request's prefill
// looks up its prompt's prefix (the trace's hash ids or the shared-prefix
// rule) in its prefill replica's cache and prefills only the rest, and the
// fleet's router, prefix-aware included, chooses among the prefill
// replicas by what they hold. The transfer still moves the whole prompt's
// KV (a decode replica has none of it), and the decode replica receives
// it whole, as without the cache: the decode pool keeps no prefix cache
// (poolOptions), so the decode router of prefix-aware is least-outstanding
// (what it is on prompts no replica holds). A request to move keeps its
// blocks at its prefill replica until its KV has been sent
// (plant.Stepper.KeepKV): its prefix stays live, not evictable, and its KV
// stays in the replica's occupancy meanwhile. The fleet's engine block
// (hit rate, cached tokens) is therefore the prefill pool's. Under the
// reference service model, preemption stays refused: it prefills a
// preempted request again where it decodes, and a decode replica, taking
// each request's KV whole, holds no prefill state to do it with.

// Roles of a fleet file group ("role").
const (
	RoleMixed   = "mixed"
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// RoleNames are the roles a group may have, the default first.
var RoleNames = []string{RoleMixed, RolePrefill, RoleDecode}

// Link defaults: the link of one L4-class server's 200 Gb/s NIC, and no
// latency beyond the bytes' time.
const (
	DefaultKVTransferBandwidthGBps = 25.0
	DefaultKVTransferLatencyS      = 0.0
)

// DefaultKVBytesPerToken is the KV bytes per token a transfer moves under
// the reference service model, which has no model card: the batched
// model's default model card's (Qwen2.5-7B-Instruct: 28 layers, 4 KV heads
// of 128 in bf16, K and V: 57,344 bytes).
const DefaultKVBytesPerToken = 57344.0

// Link is the KV transfer link of a disaggregated fleet (see above).
type Link struct {
	// BandwidthGBps is each prefill replica's link, GB/s (1e9 bytes per
	// second): positive; +Inf moves the bytes in no time.
	BandwidthGBps float64
	// LatencyS is the time from a transfer's last byte leaving to its KV
	// being at the decode replica, s: finite and nonnegative.
	LatencyS float64
	// KVBytesPerToken is the KV size of one token, bytes: 0 takes the
	// batched service model's model card, or DefaultKVBytesPerToken under
	// the reference's.
	KVBytesPerToken float64
}

// Disaggregation is the setting of a disaggregated fleet's transfers.
type Disaggregation struct {
	Link
	// DecodeRouter chooses each request's decode replica; nil means
	// round-robin. Give every run its own instance.
	DecodeRouter Router
}

// Field names of the link, as errors name them (the flags' names).
const (
	FieldKVTransferBandwidth = "--kv-transfer-bandwidth"
	FieldKVTransferLatency   = "--kv-transfer-latency"
)

// LinkError is a bad link setting: its field (flag name) and why.
type LinkError struct {
	Field string
	Value float64
	Why   string
}

func (e *LinkError) Error() string { return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Why) }

// Validate checks the link.
func (l Link) Validate() error {
	switch {
	case !(l.BandwidthGBps > 0):
		return &LinkError{Field: FieldKVTransferBandwidth, Value: l.BandwidthGBps, Why: "expected a positive bandwidth in GB/s"}
	case !(l.LatencyS >= 0) || math.IsInf(l.LatencyS, 1):
		return &LinkError{Field: FieldKVTransferLatency, Value: l.LatencyS, Why: "expected a finite nonnegative latency in seconds"}
	case !(l.KVBytesPerToken >= 0) || math.IsInf(l.KVBytesPerToken, 1):
		return errors.New("KV bytes per token: expected a finite nonnegative number")
	}
	return nil
}

// bytesPerToken is the KV size of a token under service model svc.
func (l Link) bytesPerToken(svc plant.ServiceModel) float64 {
	switch {
	case l.KVBytesPerToken > 0:
		return l.KVBytesPerToken
	case svc.Batched():
		return svc.Model.KVBytesPerToken()
	}
	return DefaultKVBytesPerToken
}

// poolOptions are the plant options of a replica of group g under the
// fleet's options opt: a decode replica runs without the prefix cache (it
// takes each request's KV whole), keeping the batched model's preemption.
func poolOptions(g Group, opt plant.Options) plant.Options {
	if g.Role == RoleDecode {
		opt.Engine = plant.EngineOptions{Preemption: opt.Engine.Preemption}
	}
	return opt
}

// ParseRole checks a group's role ("" is mixed).
func ParseRole(s string) (string, error) {
	if s == "" {
		return RoleMixed, nil
	}
	if !slices.Contains(RoleNames, s) {
		return "", fmt.Errorf("%q: expected %s", s, strings.Join(RoleNames, ", "))
	}
	return s, nil
}

// Disaggregated reports whether any group has the role prefill or decode.
func Disaggregated(groups []Group) bool {
	for _, g := range groups {
		if g.Role == RolePrefill || g.Role == RoleDecode {
			return true
		}
	}
	return false
}

// CheckRoles checks the roles of a disaggregated fleet's groups: each is
// prefill or decode, and there is at least one of each.
func CheckRoles(groups []Group) error {
	var prefill, decode bool
	for i, g := range groups {
		switch g.Role {
		case RolePrefill:
			prefill = true
		case RoleDecode:
			decode = true
		default:
			return fmt.Errorf("%s: role %q: a disaggregated fleet's groups are each prefill or decode", groupName(i, g), RoleMixed)
		}
	}
	switch {
	case !prefill:
		return errors.New("a disaggregated fleet has no group of role \"prefill\": expected at least one prefill and one decode group")
	case !decode:
		return errors.New("a disaggregated fleet has no group of role \"decode\": expected at least one prefill and one decode group")
	}
	return nil
}
