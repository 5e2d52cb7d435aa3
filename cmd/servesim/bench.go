package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"servesim/internal/benchload"
	"servesim/internal/cards"
	"servesim/internal/jsonout"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/simrun"
	"servesim/internal/vllmbench"
)

// benchOptions are the parsed flags of `servesim bench`: the simulated
// server's (simulate's), the workload and load of `vllm bench serve`, and
// what to report and save.
type benchOptions struct {
	simrun.Config
	Load benchload.Options
	// IgnoreEOS is accepted for vLLM's command lines: outputs always run
	// to their length.
	IgnoreEOS bool
	// SaveDetailed is accepted for vLLM's command lines: the saved file
	// always holds the per-request lists.
	SaveDetailed      bool
	Goodput           []string // --goodput KEY:VALUE pairs (and the arguments after them)
	PercentileMetrics string
	MetricPercentiles string
	SaveResult        bool
	ResultDir         string
	ResultFilename    string
	Output            outputOptions
	// Report is what check parsed of --percentile-metrics,
	// --metric-percentiles, --goodput, --max-concurrency and
	// --request-rate.
	Report vllmbench.ServeOptions
}

// newBenchCmd builds `servesim bench`. runF replaces the run for tests of
// flag parsing; nil runs the benchmark.
func newBenchCmd(s *streams, runF func(*benchOptions) error) *cobra.Command {
	opts := &benchOptions{Config: simrun.Config{Plant: plant.NewPlant(nil), Stride: 1, Summary: true, Requests: true}}
	cmd := &cobra.Command{
		Use:     "bench [flags]",
		Short:   "Run vllm bench serve's workload and load against the simulated server",
		Long:    help("bench"),
		Example: help("bench.example"),
		Args:    cobra.ArbitraryArgs, // more --goodput pairs, as vLLM's nargs="+"
		RunE: checkThenRun(opts, opts.check, runF,
			func(ctx context.Context, o *benchOptions) error { return runBench(ctx, s, o) }),
	}
	f := cmd.Flags()
	l := &opts.Load
	f.StringVar(&l.DatasetName, "dataset-name", benchload.DatasetRandom, "the requests: random (lengths around --random-input-len and --random-output-len), sharegpt (the conversations of --dataset-path) or custom (the JSON Lines of --dataset-path)")
	f.StringVar(&l.DatasetPath, "dataset-path", "", "the ShareGPT JSON file or custom .jsonl `FILE` (not with random)")
	f.IntVar(&l.NumPrompts, "num-prompts", benchload.DefaultNumPrompts, "number of requests")
	f.Int64Var(&l.Seed, "seed", 0, "seed of the random draws (lengths, shuffles, arrivals)")
	f.IntVar(&l.RandomInputLen, "random-input-len", benchload.DefaultRandomInputLen, "random: prompt tokens per request (before --random-prefix-len)")
	f.IntVar(&l.RandomOutputLen, "random-output-len", benchload.DefaultRandomOutputLen, "random: output tokens per request")
	f.Float64Var(&l.RandomRangeRatio, "random-range-ratio", 0, "random: lengths uniform in [len*(1-R), len*(1+R)], 0 <= R < 1")
	f.IntVar(&l.RandomPrefixLen, "random-prefix-len", 0, "random: tokens of a prefix added to every prompt")
	f.IntVar(&l.CustomOutputLen, "custom-output-len", benchload.DefaultCustomOutputLen, "custom: output tokens of a line without \"output_tokens\"")
	f.IntVar(&l.ShareGPTOutputLen, "sharegpt-output-len", 0, "sharegpt: output tokens of every request (default: each completion's)")
	f.Float64Var(&l.RequestRate, "request-rate", math.Inf(1), "requests per second; inf sends every request at time 0")
	f.Float64Var(&l.Burstiness, "burstiness", benchload.DefaultBurstiness, "gamma shape of the inter-arrival times: 1 is Poisson, below 1 burstier, above 1 more even")
	f.IntVar(&opts.MaxConcurrency, "max-concurrency", 0, "at most `N` requests outstanding: a closed loop (default: none, an open loop)")
	f.StringSliceVar(&opts.Goodput, "goodput", nil, "service level objectives of the goodput as `KEY:VALUE` pairs, KEY ttft, tpot or e2el and VALUE in ms (pairs may follow as arguments, as vLLM's)")
	f.StringVar(&opts.PercentileMetrics, "percentile-metrics", vllmbench.DefaultPercentileMetrics, "comma-separated metrics to report: ttft, tpot, itl, e2el")
	f.StringVar(&opts.MetricPercentiles, "metric-percentiles", vllmbench.DefaultMetricPercentiles, "comma-separated percentiles of each reported metric")
	f.BoolVar(&opts.SaveResult, "save-result", false, "also save vllm bench serve's result JSON (atomically)")
	f.StringVar(&opts.ResultDir, "result-dir", "", "folder of --save-result (created; default: the current one)")
	f.StringVar(&opts.ResultFilename, "result-filename", "", "file name of --save-result (default: servesim-{request_rate}qps[-concurrency{N}]-{model}-{date}.json)")
	f.BoolVar(&opts.IgnoreEOS, "ignore-eos", false, "accepted for vLLM's command lines: simulated outputs always run to their length")
	f.BoolVar(&opts.SaveDetailed, "save-detailed", false, "accepted for vLLM's command lines: the file of --save-result always holds the per-request lists")
	f.StringVar(&opts.ProfilePath, "profile", "", "profile CSV, or a bundle folder holding l4_profile.csv (default: the embedded engineering proxy)")
	f.StringVar(&opts.Scheduler, "scheduler", "chunked", "static, continuous or chunked")
	f.StringVar(&opts.Controller, "controller", "max", "clock controller, as simulate's --controller")
	plantflag.AddExecTimeout(cmd, &opts.ExecTimeoutS)
	plantflag.AddPlant(cmd, &opts.Plant)
	plantflag.AddSLO(cmd, &opts.SLO)
	plantflag.AddEngine(cmd, &opts.Engine)
	plantflag.AddService(cmd, &opts.Service)
	plantflag.AddMaxSteps(cmd, &opts.MaxSteps)
	addFleetFlags(cmd, &opts.Fleet)
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// check rejects flag values that cannot mean anything (usage errors):
// the workload's and load's as vLLM refuses them, the report's, and the
// simulated server's as simulate checks them.
func (o *benchOptions) check(cmd *cobra.Command, args []string) error {
	changed := cmd.Flags().Changed
	if len(args) > 0 && !changed("goodput") {
		return fmt.Errorf("unexpected argument %q: bench takes flags only (arguments may only follow --goodput)", args[0])
	}
	o.MaxElapsedS = plant.NoElapsedLimit
	if err := o.Load.Check(); err != nil {
		return err
	}
	if changed("max-concurrency") && o.MaxConcurrency < 1 {
		return fmt.Errorf("--max-concurrency %d: expected a whole number of at least 1", o.MaxConcurrency)
	}
	var err error
	if o.Report.Goodput, err = vllmbench.ParseGoodput(append(o.Goodput, args...)); err != nil {
		return err
	}
	if o.Report.Metrics, err = vllmbench.ParsePercentileMetrics(o.PercentileMetrics); err != nil {
		return err
	}
	if o.Report.Percentiles, err = vllmbench.ParseMetricPercentiles(o.MetricPercentiles); err != nil {
		return err
	}
	o.Report.MaxConcurrency, o.Report.RequestRate = o.MaxConcurrency, o.Load.RequestRate
	if err := plantflag.CheckSLO(cmd, &o.SLO); err != nil {
		return err
	}
	if err := o.Config.Check(); err != nil {
		return err
	}
	if err := o.Engine.Check(cmd.Flags().Changed, o.Plant); err != nil {
		return err
	}
	if err := o.Service.Check(cmd.Flags().Changed); err != nil {
		return err
	}
	if err := o.CheckWork(); err != nil {
		return err
	}
	if err := o.Fleet.Check(false, changed("router") || changed("router-seed")); err != nil {
		return err
	}
	return o.CheckRouter()
}

// runBench generates the workload, simulates it and prints vLLM's result
// block (and saves the result JSON with --save-result). Requests
// unfinished at --max-sim-time are failed ones: one stderr line says how
// many, and the exit is still 0, as vLLM's with failed requests.
func runBench(ctx context.Context, s *streams, o *benchOptions) error {
	workload, err := benchload.Generate(o.Load)
	if err != nil {
		return err
	}
	model := ""
	if o.SaveResult {
		if model, err = o.modelID(); err != nil {
			return err
		}
	}
	o.Workload, o.Stdin, o.Stderr, o.Version = &workload, s.In, flagWarner(s.Err), resolvedVersion()
	res, err := simrun.Run(ctx, o.Config)
	if err != nil {
		return err
	}
	report, err := vllmbench.ServeOf(res.Document(), o.Report)
	if err != nil {
		return internalError(err)
	}
	// The saved result and the result block appear together or not at
	// all (outputSet): the saved file is staged, and renamed into place
	// once the block, written last (it may go to stdout, which cannot be
	// taken back), is written.
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	if o.SaveResult {
		if err := o.save(set, report, model, time.Now()); err != nil {
			return err
		}
	}
	if err := set.result(o.Output, chunksWriter([][]byte{[]byte(report.Text())})); err != nil {
		return err
	}
	if err := set.commit(); err != nil {
		return err
	}
	if report.Failed > 0 {
		fmt.Fprintf(s.Err, "servesim: %d of %d requests failed: unfinished when the simulation stopped at --max-sim-time %g s (raise --max-sim-time to let them finish)\n",
			report.Failed, report.Completed+report.Failed, o.Plant.MaxSimulationTimeS)
	}
	return nil
}

// modelID is the model_id (and tokenizer_id) of the saved file:
// "servesim-proxy" under the reference model; under the batched model the
// --model value as given for a built-in card (its name or Hugging Face
// id, as vLLM's --model), and a card file's name (its "name", by default
// the file's base name), not its path.
func (o *benchOptions) modelID() (string, error) {
	if o.Service.Kind != plant.ServiceBatched {
		return "servesim-proxy", nil
	}
	if _, ok := cards.BuiltinModel(o.Service.ModelCard); ok {
		return o.Service.ModelCard, nil
	}
	m, err := cards.ResolveModel(o.Service.ModelCard)
	if err != nil {
		return "", err
	}
	return m.Name, nil
}

// save stages the result JSON of model in set, to
// --result-dir/--result-filename (vLLM's name by default), creating the
// folder. The folders it creates are removed again (when still empty)
// if set does not commit.
func (o *benchOptions) save(set *outputSet, report *vllmbench.Serve, model string, now time.Time) error {
	cfg := vllmbench.SaveConfig{
		Date: now.Format("20060102-150405"), Backend: "servesim", ModelID: model, TokenizerID: model,
		NumPrompts: o.Load.NumPrompts, RequestRate: o.Load.RequestRate, Burstiness: o.Load.Burstiness,
		MaxConcurrency: o.MaxConcurrency,
	}
	name := cfg.FileName()
	if o.ResultFilename != "" {
		name = o.ResultFilename
	}
	chunks, err := jsonout.Chunks(report.Document(cfg))
	if err != nil {
		return set.abandon(internalError(err))
	}
	if o.ResultDir != "" {
		made, err := mkdirAll(o.ResultDir)
		if err != nil {
			return set.abandon(resultDirError(o.ResultDir, err))
		}
		set.made = append(set.made, made...)
		name = filepath.Join(o.ResultDir, name)
	}
	return set.target("--save-result", name, chunksWriter(chunks))
}

// mkdirAll makes dir and the folders on its way, as os.MkdirAll does, and
// returns the ones it made, the deepest last.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	made := make([]string, 0, len(missing))
	for i := len(missing) - 1; i >= 0; i-- {
		made = append(made, missing[i])
	}
	return made, nil
}

// resultDirError says in one line why --result-dir dir could not be made
// (err is os.MkdirAll's): it, or a folder on its way, is a file (a
// regular one, a device, a FIFO, ...), or the folder it goes in is not
// writable.
func resultDirError(dir string, err error) error {
	at := dir // the path MkdirAll failed on
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		at, err = pathErr.Path, pathErr.Err
	}
	switch {
	case errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist):
		if at == dir {
			return fmt.Errorf("--result-dir %s: not a folder", dir)
		}
		return fmt.Errorf("--result-dir %s: %s is not a folder", dir, at)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("--result-dir %s: folder %s is not writable", dir, filepath.Dir(at))
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("--result-dir %s: folder %s is on a read-only file system", dir, filepath.Dir(at))
	}
	return fmt.Errorf("--result-dir %s: cannot create folder %s: %w", dir, at, err)
}
