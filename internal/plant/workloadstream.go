package plant

import (
	"context"
	"errors"

	"servesim/internal/profile"

	"servesim/internal/workload"
)

// A WorkloadStream is a WorkloadSource being read in a goroutine of its
// own, its arrivals normalized if asked and its workload checksum computed
// as it is read: RunStream's reading, for a caller that hands the requests
// on itself (a fleet's router). Next yields the requests checked as
// Simulate checks a workload, and ends with its error.
type WorkloadStream struct {
	pipe    *pipe
	checked checkedStream
	// held is a CheckedWorkload's requests not yet yielded, streamed as
	// they are (pipe is then nil).
	held         []Request
	heldChecksum string
	// Set by the reader; final once Next has returned false.
	sum          workload.Checksum
	loaded       int
	lastArrivalS float64
	dilation     *float64
	// expected and expectedLastS are the request count and the last
	// arrival when a normalization pass told them (else the source's
	// estimate and 0).
	expected      int
	expectedLastS float64
}

// OpenWorkloadStream starts reading src. With normalize, a target
// utilization strictly between zero and one, it first reads src once for
// the dilation factor of NormalizeFleetOfferedLoadInPlace on replicas GPUs
// of profile prof (returning ctx's error soon after ctx is done), then
// streams the dilated arrivals; 0 streams them as read. Close it when done.
func OpenWorkloadStream(ctx context.Context, src WorkloadSource, normalize float64, prof *profile.Profile, replicas int) (*WorkloadStream, error) {
	ws := &WorkloadStream{expected: src.Estimate()}
	if c, ok := src.(CheckedWorkload); ok && normalize == 0 {
		if len(c.Requests) == 0 {
			return nil, errors.New("workload must contain at least one request")
		}
		ws.held, ws.heldChecksum = c.Requests, c.Checksum
		ws.expectedLastS = c.Requests[len(c.Requests)-1].ArrivalTimeS
		return ws, nil
	}
	var z *normalizer
	if normalize != 0 {
		if !(normalize > 0 && normalize < 1) {
			return nil, errors.New("target_utilization must lie strictly between zero and one")
		}
		z = newNormalizer(prof)
		if _, err := src.Read(func(r Request) error {
			z.observe(r)
			if z.n%CancelCheckSteps == 0 {
				return ctx.Err()
			}
			return nil
		}); err != nil {
			return nil, err
		}
		if z.n == 0 {
			return nil, errors.New("workload must contain at least one request")
		}
		factor := z.factor(normalize, replicas)
		ws.dilation = &factor
		ws.expected, ws.expectedLastS = z.n, z.dilate(z.last, factor)
	}
	ws.pipe = newPipe(func(emit func(Request) error) (Workload, error) {
		return src.Read(func(r Request) error {
			if z != nil {
				r.ArrivalTimeS = z.dilate(r.ArrivalTimeS, *ws.dilation)
			}
			ws.sum.Add(r)
			ws.loaded++
			ws.lastArrivalS = r.ArrivalTimeS
			return emit(r)
		})
	})
	ws.checked.stream = ws.pipe
	return ws, nil
}

// Next implements RequestStream.
func (ws *WorkloadStream) Next() (Request, bool) {
	if ws.pipe == nil {
		if len(ws.held) == 0 {
			return Request{}, false
		}
		r := ws.held[0]
		ws.held = ws.held[1:]
		ws.loaded++
		ws.lastArrivalS = r.ArrivalTimeS
		return r, true
	}
	return ws.checked.Next()
}

// Err implements RequestStream.
func (ws *WorkloadStream) Err() error {
	if ws.pipe == nil {
		return nil
	}
	return ws.checked.Err()
}

// Close stops the reader, if it is still running, and waits for it.
func (ws *WorkloadStream) Close() {
	if ws.pipe != nil {
		ws.pipe.Close()
	}
}

// Expected returns the number of requests expected and the arrival of the
// last one, known after a normalization pass (else the source's estimate
// and 0): they size buffers, nothing else.
func (ws *WorkloadStream) Expected() (int, float64) { return ws.expected, ws.expectedLastS }

// Dilation is the normalization's dilation factor, nil without one.
func (ws *WorkloadStream) Dilation() *float64 { return ws.dilation }

// The following are final once Next has returned false without an error.

// Workload is the workload's identity: its Source, SHA256 and Skipped,
// without Requests.
func (ws *WorkloadStream) Workload() Workload {
	if ws.pipe == nil {
		return Workload{}
	}
	return ws.pipe.Workload()
}

// Checksum is the workload checksum of the requests as streamed (a
// CheckedWorkload's as given).
func (ws *WorkloadStream) Checksum() string {
	if ws.pipe == nil {
		return ws.heldChecksum
	}
	return ws.sum.Sum()
}

// Loaded is the number of requests read.
func (ws *WorkloadStream) Loaded() int { return ws.loaded }

// LastArrivalS is the arrival of the last request as streamed, s.
func (ws *WorkloadStream) LastArrivalS() float64 { return ws.lastArrivalS }

// CheckedWorkload is a workload held in memory that has passed Simulate's
// checks (ValidateWorkload), with its workload checksum (empty when no one
// reads it): OpenWorkloadStream yields its requests as they are, without
// a reader goroutine, checks or a checksum to compute, for a caller that
// streams the same checked requests many times (a capacity search).
type CheckedWorkload struct {
	Requests []Request
	Checksum string
}

// Read emits every request in order (a WorkloadSource).
func (c CheckedWorkload) Read(emit func(Request) error) (Workload, error) {
	for _, r := range c.Requests {
		if err := emit(r); err != nil {
			return Workload{}, err
		}
	}
	return Workload{}, nil
}

// Estimate is the number of requests.
func (c CheckedWorkload) Estimate() int { return len(c.Requests) }
