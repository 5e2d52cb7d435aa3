package plant

import (
	"context"
	"fmt"
)

// RunStream is Run for a workload read while it is simulated, with the same
// report. The requests are read in a goroutine of their own, so that
// reading, parsing and the workload checksum overlap with the simulation,
// and are added to the run as they arrive: with Options.Summary (and no
// request log), the memory of a run is that of the requests in flight plus
// 24 bytes per request (the latencies its percentiles need), whatever the
// length of the trace. With Config.Normalize the workload is read twice:
// first for the dilation factor, then to simulate it.
//
// A request that fails the workload checks (see Simulate), or a read error,
// ends the run with that error, maybe after some steps. Config's
// NormalizeInPlace is irrelevant here. A Clairvoyant controller, which
// needs the whole workload before the first step, cannot run here.
func RunStream(src WorkloadSource, cfg Config) (*Report, error) {
	return RunStreamContext(context.Background(), src, cfg)
}

// RunStreamContext is RunStream that stops, returning ctx's error, soon
// after ctx is done: within CancelCheckSteps steps of the run, or of the
// requests of the normalization pass.
func RunStreamContext(ctx context.Context, src WorkloadSource, cfg Config) (rep *Report, err error) {
	defer closeController(cfg.Controller, &rep, &err)
	if _, ok := cfg.Controller.(Clairvoyant); ok {
		return nil, fmt.Errorf("clock controller %s needs the whole workload in advance, which a workload read while it runs does not give", cfg.Controller.Name())
	}
	ws, err := OpenWorkloadStream(ctx, src, cfg.Normalize, cfg.Plant.Profile, 1)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	opt := cfg.Options
	expected, expectedLastS := ws.Expected()
	sim, err := newSimulation(cfg.Plant, cfg.Scheduler, cfg.Controller, opt, windowCapacity(opt, cfg.Controller, expected))
	if err != nil {
		return nil, err
	}
	if err := sim.feed(ws, opt, expected, expectedLastS); err != nil {
		return nil, err
	}
	if err := sim.runToEnd(ctx); err != nil {
		return nil, err
	}
	// The reader has returned: its checksum, count and last arrival are
	// final.
	rep = newReport(sim.result(ws.Checksum(), opt), ws.Dilation(), ws.Workload(), ws.Loaded(), cfg)
	rep.LastArrivalS = ws.LastArrivalS()
	return rep, nil
}
