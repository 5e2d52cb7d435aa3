package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/fleet"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/progress"
	"servesim/internal/sweep"
)

// capacityShardOptions are the flags that spread a capacity study over
// processes: --shard evaluates a share of the search's doubling sizes,
// --evaluations hands such evaluations to the search.
type capacityShardOptions struct {
	Shard       string   // --shard: I/N, auto, or "" for a whole study
	Evaluations []string // --evaluations: files or glob patterns

	shardI, shardN int // the shard, once checked
}

// addCapacityShardFlags defines --shard and --evaluations on cmd.
func addCapacityShardFlags(cmd *cobra.Command, o *capacityShardOptions) {
	f := cmd.Flags()
	f.StringVar(&o.Shard, "shard", "", "evaluate only shard `I/N` of the search's doubling sizes (auto: from a Slurm job array or Kubernetes Indexed Job), one JSON Lines record per size")
	cliflag.AddList(cmd, &o.Evaluations, "evaluations", nil, "files", "take the sizes the records of these capacity --shard outputs hold (files or glob patterns) as simulated")
	_ = cmd.MarkFlagFilename("evaluations")
}

// checkShard checks the shard flags against the output format.
func (o *capacityShardOptions) checkShard(format string) error {
	if o.Shard != "" && len(o.Evaluations) > 0 {
		return usageErrorf("--shard evaluates sizes for a later run and --evaluations feeds that run's search: give one of them")
	}
	for _, name := range o.Evaluations {
		if name == "" {
			return usageErrorf("--evaluations: expected files or glob patterns, got an empty name")
		}
	}
	if o.Shard == "" {
		return nil
	}
	if format != "json" {
		return usageErrorf("--shard writes JSON Lines records: --format %s does not apply", format)
	}
	var err error
	if o.Shard == "auto" {
		o.shardI, o.shardN, err = sweep.ShardFromEnv(os.Getenv)
	} else {
		o.shardI, o.shardN, err = sweep.ParseShard(o.Shard)
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// capacityShardInterrupted ends a shard stopped by a signal: exit 128 +
// the signal's number, as for a sweep.
type capacityShardInterrupted struct{ interruptedError }

// Error reads "capacity shard interrupted: 1 of 3 sizes written to
// cap-1.jsonl.partial; --evaluations takes it as it is".
func (e capacityShardInterrupted) Error() string {
	msg := fmt.Sprintf("capacity shard interrupted: %d of %d sizes written to %s", e.written, e.total, e.where)
	if e.resumable {
		msg += "; --evaluations takes it as it is"
	}
	return msg
}

// shardOutcome is the evaluation of one cell of a shard.
type shardOutcome struct {
	eval fleet.Evaluation
	err  error
}

// runCapacityShard evaluates the cells of the study's grid that shard
// I of N holds, largest first, and writes each one's record as it
// finishes (in that order), to stdout or -o. SIGINT or SIGTERM starts no
// further size and keeps the records written (FILE.partial with -o), as a
// sweep does.
func runCapacityShard(ctx context.Context, s *streams, o *capacityOptions, study fleet.Capacity, workload plant.Workload) error {
	interrupt := watchSignals(sweepGrace)
	defer interrupt.release()
	grid, err := study.Grid(workload.Requests, workload.SHA256, resolvedVersion())
	if err != nil {
		return err
	}
	evaluator, err := study.SizeEvaluator(workload.Requests)
	if err != nil {
		return err
	}
	cells := grid.Shard(o.shardI, o.shardN)
	if len(cells) == 0 {
		fmt.Fprintf(s.Err, "servesim: warning: capacity shard %d/%d: the grid has %d sizes (1 to %d replicas), so this shard has none to evaluate\n",
			o.shardI, o.shardN, len(grid.Sizes), grid.Sizes[len(grid.Sizes)-1])
	}
	var bar *progress.Bar
	if s.ErrIsTerminal && !o.Quiet {
		bar = progress.New(s.Err, "capacity shard", "sizes", len(cells))
	}
	toRun := func(yield func(sweep.Cell) bool) {
		for _, cell := range cells {
			if !yield(sweep.Cell{Index: cell}) {
				return
			}
		}
	}
	written := 0
	err = writeResult(s, o.Output, func(out io.Writer) error {
		var line []byte
		err := sweep.Run(toRun, evaluator.Jobs, interrupt.stop(), func(c sweep.Cell) shardOutcome {
			e, err := evaluator.Evaluate(ctx, grid.Sizes[c.Index])
			return shardOutcome{e, err}
		}, func(c sweep.Cell, r shardOutcome) error {
			if r.err != nil {
				return r.err
			}
			var err error
			if line, err = jsonout.AppendLine(line[:0], grid.Record(c.Index, r.eval)); err != nil {
				return internalError{fmt.Errorf("encoding a record: %w", err)}
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
		if !errors.Is(err, sweep.ErrStopped) {
			return err
		}
		sig, _ := interrupt.signal().(syscall.Signal)
		stop := capacityShardInterrupted{interruptedError{sig: sig, written: written, total: len(cells), where: "stdout"}}
		if o.Output.Path != "" && o.Output.Path != "-" {
			if stop.where, stop.resumable, err = keepPartial(out, o.Output.Path); err != nil {
				return err
			}
		}
		return stop
	})
	var stop capacityShardInterrupted
	if errors.As(err, &stop) {
		return stop // not "-o FILE: capacity shard interrupted"
	}
	return err
}

// useEvaluations reads the records --evaluations names into the study's
// search, and counts the fleets the study then simulates. The summary it
// returns prints, unless --quiet, one stderr line saying how many of the
// sizes the search used came from the files; nil without --evaluations.
func (o *capacityOptions) useEvaluations(s *streams, study *fleet.Capacity, workload plant.Workload) (summary func(*fleet.CapacityReport), err error) {
	if len(o.Evaluations) == 0 {
		return nil, nil
	}
	names, err := expandEvaluations(o.Evaluations)
	if err != nil {
		return nil, err
	}
	grid, err := study.Grid(workload.Requests, workload.SHA256, resolvedVersion())
	if err != nil {
		return nil, err
	}
	known, err := grid.ReadEvaluations(names, s.Err)
	if err != nil {
		return nil, inputError{fmt.Errorf("--evaluations %w", err)}
	}
	study.Search.Known = known.Evaluations
	var simulated atomic.Int64
	study.Simulated = func(int, string) { simulated.Add(1) }
	return func(report *fleet.CapacityReport) {
		if o.Quiet || report == nil {
			return
		}
		read := 0
		for _, e := range report.Evaluations {
			for _, k := range known.Evaluations {
				if k.Replicas == e.Replicas {
					read++
				}
			}
		}
		fmt.Fprintf(s.Err, "servesim: capacity: %d of the %d sizes the search used came from --evaluations (%s in %s); %s simulated\n",
			read, len(report.Evaluations), count(known.Records, "record"), count(len(names), "file"), count(int(simulated.Load()), "fleet"))
	}, nil
}

// expandEvaluations turns the --evaluations names into files: a name
// holding *, ? or [ that is not itself a file is a glob pattern (servesim
// expands it, for containers without a shell), which must match a file.
func expandEvaluations(names []string) ([]string, error) {
	var files []string
	for _, name := range names {
		if !strings.ContainsAny(name, "*?[") {
			files = append(files, name)
			continue
		}
		if _, err := os.Stat(name); err == nil {
			files = append(files, name)
			continue
		}
		matches, err := filepath.Glob(name)
		if err != nil {
			return nil, usageErrorf("--evaluations %q: not a glob pattern (%v)", name, err)
		}
		if len(matches) == 0 {
			return nil, inputError{fmt.Errorf("--evaluations %s: no file matches", name)}
		}
		files = append(files, matches...)
	}
	return files, nil
}

// count is "1 file", "2 files".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
