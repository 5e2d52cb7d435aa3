package sweeprun

import (
	"context"
	"errors"
	"io"

	"servesim/internal/interrupt"
	"servesim/internal/limits"
	"servesim/internal/outfile"
	"servesim/internal/plant"
	"servesim/internal/progress"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// Output says how a sweep runs and where its records go.
type Output struct {
	Format string // sweep.FormatJSONL, FormatCSV or FormatTable
	Jobs   int    // runs at a time
	// Resume is a sweep output (or FILE.partial) whose cells are not run
	// again but copied; empty for none; ResumeAuto for what an earlier
	// run of the shard left behind Path.
	Resume string
	// Path is -o: the file the records go to, empty or "-" for stdout. A
	// sweep stopped by a signal keeps what it wrote to a regular file as
	// Path.partial.
	Path string
	// Stderr receives warnings about skipped lines of Resume, about runs
	// --normalize left unchanged and runs --max-sim-time cut short with
	// requests unfinished (the settings they name worded by its Name),
	// exec: children's stderr and, when Progress, the progress bar.
	Stderr   runparams.Warner
	Progress bool
}

// run is a sweep under way: its inputs loaded, its identity known, its
// resumed records read, and SIGINT and SIGTERM taken over (interrupt.Watch)
// until close.
type run struct {
	s       *Sweep
	ctx     context.Context
	out     Output
	signals *interrupt.Watcher
	in      *inputs
	id      identity
	resumed *sweep.RecordIndex
	// written and failed count the records written and the failed runs
	// among them, once write returned; first is the first that failed.
	written, failed int
	first           sweep.FirstFailure
	// unstretched counts the runs --normalize left as they were: their
	// trace already offers less than the target (dilation 1).
	unstretched int
	// cut gathers the runs cut short by --max-sim-time with requests
	// unfinished, for one warning per trace and --normalize.
	cut cutShort
}

// Run runs the sweep: it loads its profiles and traces, reads the records
// of out.Resume, and writes each record as soon as it and the records
// before it are done (Write) through write, which hands the function it is
// given the output (stdout or the -o file out.Path names, as
// outfile.Write does). Signals stop the sweep from the start: the first
// starts no further run, and the runs under way are waited for up to
// interrupt.Grace (a second signal: not at all); Run then returns an
// *interrupt.Stopped. A cancelled ctx ends the runs under way and those
// after them, whose records carry its error. A sweep written whole with
// failed runs returns sweep.FailedRuns.
func (s *Sweep) Run(ctx context.Context, out Output, write func(func(io.Writer) error) error) error {
	r, err := s.start(ctx, out)
	if err != nil {
		return err
	}
	defer r.close()
	err = write(r.write)
	var stop *interrupt.Stopped
	if errors.As(err, &stop) {
		return stop // not "-o FILE: sweep interrupted"
	}
	if err != nil {
		return err
	}
	removeResumed(out)
	return sweep.FailedRuns(r.failed, r.written, r.first, s.failedHint(r.in, r.first))
}

// start loads the sweep's inputs and reads the records of out.Resume.
func (s *Sweep) start(ctx context.Context, out Output) (*run, error) {
	r := &run{s: s, ctx: ctx, out: out, signals: interrupt.Watch(interrupt.Grace)}
	r.in = s.load()
	if r.in.overHeld != nil {
		r.close()
		return nil, r.in.overHeld
	}
	r.id = s.identify(r.in)
	if out.Resume != "" {
		var err error
		if r.resumed, err = s.resume(out, r.id, r.in); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// close gives the signals their default behaviour back and closes the
// resumed records.
func (r *run) close() {
	r.signals.Release()
	if r.resumed != nil {
		r.resumed.Close()
		r.resumed = nil
	}
}

// write runs the cells and writes each record to w as soon as it and the
// records before it are done, in grid order, then the Pareto record. A
// sweep stopped by a signal returns an *interrupt.Stopped, after keeping
// what it wrote as Path.partial (outfile.KeepPartial; w is the writer
// outfile.Write gave it).
func (r *run) write(w io.Writer) error {
	s, out := r.s, r.out
	rw, err := sweep.NewWriter(w, out.Format, s.grid, axisKey, r.id.digest, r.id.cells, r.resumed)
	if err != nil {
		return err
	}
	toRun := s.shard.Len()
	if r.resumed != nil {
		toRun -= len(r.resumed.Refs)
	}
	var bar *progress.Bar
	if out.Progress {
		bar = progress.New(out.Stderr, "sweep", "runs", toRun)
	}
	stop := sweep.Stop{Start: r.signals.Start(), Wait: r.signals.Wait()}
	jobs := out.Jobs
	if atOnce := s.cellsAtOnce(r.in); jobs > atOnce {
		out.Stderr.Warnf("servesim: sweep: running %d runs at a time, not %s %d: their prefix caches together stay within the %d KV blocks (about %s) servesim holds at once\n",
			atOnce, runparams.Setting("jobs"), jobs, plant.MaxLiveKVBlocks, limits.FormatBytes(plant.MaxLiveKVBlocks*plant.KVBlockBytes))
		jobs = atOnce
	}
	err = sweep.Run(s.shard.Without(r.resumed), jobs, stop, func(c sweep.Cell) outcome {
		return s.runCell(r.ctx, r.in, c, out.Stderr)
	}, func(c sweep.Cell, o outcome) error {
		if bar != nil {
			bar.Increment()
		}
		if o.report != nil && o.report.Dilation != nil && *o.report.Dilation == 1 {
			r.unstretched++
		}
		s.addCutShort(&r.cut, c, o.report)
		return rw.Add(s.record(r.in, c, o))
	})
	if bar != nil {
		bar.Finish() // erased, also after a sweep that stopped early
	}
	if r.unstretched > 0 && err == nil {
		out.Stderr.Warnf("servesim: sweep: %s left the arrivals of %d of the %d runs it ran unchanged: their trace already offers less than the target "+
			"(normalization only stretches a trace, as the reference's does; dilation 1)\n", runparams.Setting("normalize"), r.unstretched, toRun)
	}
	stopped := errors.Is(err, sweep.ErrStopped)
	if err == nil || stopped {
		r.cut.warn(out.Stderr)
	}
	if err == nil || stopped {
		err = rw.Finish(!stopped)
	}
	r.written, r.failed, r.first = rw.Written, rw.Failed, rw.FirstFailed
	if err != nil || !stopped {
		return err
	}
	e := &interrupt.Stopped{Signal: r.signals.Signal(), Task: "sweep", Written: r.written, Total: s.shard.Len(), Unit: "runs", Where: "stdout"}
	if out.Path != "" && out.Path != "-" {
		kept := false
		if e.Where, kept, err = outfile.KeepPartial(w, out.Path); err != nil {
			return runparams.Errorf("%s %w", runparams.Setting("output"), err)
		}
		if kept && out.Format == sweep.FormatJSONL {
			e.Next = runparams.Errorf("rerun with %s %s", runparams.Setting("resume"), e.Where)
		}
	}
	return e
}
