package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"servesim/internal/interrupt"
	"servesim/internal/jsonout"
	"servesim/internal/outfile"
	"servesim/internal/progress"
	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// ShardFlags spread a study over processes: --shard evaluates a share of
// the search's doubling sizes, --evaluations hands such evaluations to the
// search.
type ShardFlags struct {
	Shard       string   // --shard: I/N, auto, or "" for a whole study
	Evaluations []string // --evaluations: files or glob patterns
	I, N        int      // the shard, once checked
}

// Check checks the shard flags against the output format (a shard writes
// JSON Lines records) and parses --shard; getenv reads a job array's
// variables for --shard auto.
func (f *ShardFlags) Check(format string, getenv func(string) string) error {
	if f.Shard != "" && len(f.Evaluations) > 0 {
		return runparams.Errorf("%s evaluates sizes for a later run and %s feeds that run's search: give one of them", runparams.Setting("shard"), evaluationsSetting)
	}
	if slices.Contains(f.Evaluations, "") {
		return runparams.Errorf("%s: expected files or glob patterns, got an empty name", evaluationsSetting)
	}
	if f.Shard == "" {
		return nil
	}
	if format != "json" {
		return runparams.Errorf("%s writes JSON Lines records: %s %s does not apply", runparams.Setting("shard"), runparams.Setting("format"), format)
	}
	var err error
	f.I, f.N, err = sweep.ParseShardFlag(f.Shard, getenv)
	return err
}

// shardOutcome is the evaluation of one cell of a shard.
type shardOutcome struct {
	eval Evaluation
	err  error
}

// RunShard evaluates the sizes of the study's grid that shard i of n
// holds, largest first, and writes each one's record as it finishes (in
// that order) through write, which hands the function it is given the
// output (stdout or the -o file path names, as outfile.Write does). SIGINT
// or SIGTERM starts no further size and keeps the records written
// (path.partial for a regular file), as a sweep does, and RunShard returns
// an *interrupt.Stopped. With resume (ResumeAuto), the sizes whose records
// an earlier run of the shard left at path or path.partial are copied in
// their places rather than simulated.
func (s *Study) RunShard(ctx context.Context, i, n int, path, resume string, p Progress, write func(func(io.Writer) error) error) error {
	signals := interrupt.Watch(interrupt.Grace)
	defer signals.Release()
	grid, err := s.Grid(s.workload.Requests, s.workload.SHA256, s.version)
	if err != nil {
		return err
	}
	evaluator, err := s.SizeEvaluator(s.workload.Requests)
	if err != nil {
		return err
	}
	cells := grid.Shard(i, n)
	if len(cells) == 0 {
		fmt.Fprintf(p.Stderr, "servesim: warning: capacity shard %d/%d: the grid has %d sizes (1 to %d replicas), so this shard has none to evaluate\n",
			i, n, len(grid.Sizes), grid.Sizes[len(grid.Sizes)-1])
	}
	var known map[int][]byte
	if resume == ResumeAuto {
		known = shardResume(grid, cells, path, p.Stderr)
	}
	var bar *progress.Bar
	if p.Bar {
		bar = progress.New(p.Stderr, "capacity shard", "sizes", len(cells)-len(known))
	}
	toRun := func(yield func(sweep.Cell) bool) {
		for _, cell := range cells {
			if _, ok := known[cell]; ok {
				continue
			}
			if !yield(sweep.Cell{Index: cell}) {
				return
			}
		}
	}
	written := 0
	err = write(func(out io.Writer) error {
		var line []byte
		// next is the place in cells of the next record to write: the
		// records resumed before a size simulated are copied first.
		next := 0
		copyKnown := func(upTo int) error {
			for ; next < len(cells) && cells[next] != upTo; next++ {
				if rec, ok := known[cells[next]]; ok {
					if _, err := out.Write(rec); err != nil {
						return err
					}
					written++
				}
			}
			return nil
		}
		stop := sweep.Stop{Start: signals.Start(), Wait: signals.Wait()}
		err := sweep.Run(toRun, evaluator.Jobs, stop, func(c sweep.Cell) shardOutcome {
			e, err := evaluator.Evaluate(ctx, grid.Sizes[c.Index])
			return shardOutcome{e, err}
		}, func(c sweep.Cell, r shardOutcome) error {
			if r.err != nil {
				return r.err
			}
			if err := copyKnown(c.Index); err != nil {
				return err
			}
			next++
			var err error
			if line, err = jsonout.AppendLine(line[:0], grid.Record(c.Index, r.eval)); err != nil {
				return fmt.Errorf("encoding a record: %w", err)
			}
			if _, err := out.Write(line); err != nil {
				return err
			}
			written++
			if bar != nil {
				bar.Increment()
			}
			return nil
		})
		if bar != nil {
			bar.Finish()
		}
		if err == nil || errors.Is(err, sweep.ErrStopped) {
			if cerr := copyKnown(-1); cerr != nil {
				err = cerr
			}
		}
		if !errors.Is(err, sweep.ErrStopped) {
			return err
		}
		e := &interrupt.Stopped{Signal: signals.Signal(), Task: "capacity shard", Written: written, Total: len(cells), Unit: "sizes", Where: "stdout"}
		if path != "" && path != "-" {
			kept := false
			if e.Where, kept, err = outfile.KeepPartial(out, path); err != nil {
				return runparams.Errorf("%s %w", runparams.Setting("output"), err)
			}
			if kept {
				e.Next = runparams.Errorf("%s takes it as it is", evaluationsSetting)
			}
		}
		return e
	})
	var stop *interrupt.Stopped
	if errors.As(err, &stop) {
		return stop // not "-o FILE: capacity shard interrupted"
	}
	if err == nil && resume == ResumeAuto {
		removePartial(path, p.Stderr)
	}
	return err
}
