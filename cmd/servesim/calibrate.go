package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"servesim/internal/calibrate"
	"servesim/internal/cards"
	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/plantflag"
	"servesim/internal/profile"
	"servesim/internal/runparams"
)

// calibrateOptions are the parsed flags of `servesim calibrate`: the
// measured runs and power logs, the server they are replayed on, what to
// fit, and what to write.
type calibrateOptions struct {
	// Bench are the runs to fit, HoldOut the runs only reported.
	Bench, HoldOut []string
	PowerLogs      []string
	// ProfilePath is a profile CSV or bundle folder; empty for the
	// embedded proxy.
	ProfilePath string
	// Fit names the card parameters to fit.
	Fit []string
	// Seeds is how many arrival draws a finite-rate run is replayed with.
	Seeds int
	// Service holds --gpu, --model and the engine's limits (the batched
	// model's flags of simulate, without --service-model).
	Service runparams.Service
	// Plant holds the plant flags (--power-limit, ...).
	Plant plant.Plant
	// OutGPU and OutProfile are the fitted card's file and the fitted
	// profile's CSV (its manifest beside it); empty for none.
	OutGPU, OutProfile string
	// BundleRaw, BundleTelemetry and BundleMetadata are a measured run's
	// raw rows, telemetry and metadata, written as a measured bundle into
	// the folder BundleOut (all four or none; with them nothing is fitted).
	BundleRaw, BundleTelemetry, BundleMetadata, BundleOut string
	// Format is "json" or "table".
	Format string
	Output outputOptions
	Plot   plotOptions
	// kvGiven says that --kv-capacity was given (set by check).
	kvGiven bool
	// flags are the parsed flags (set by check), for the line that says
	// what to run next.
	flags *pflag.FlagSet
}

// newCalibrateCmd builds `servesim calibrate`. runF replaces the run for
// tests of flag parsing; nil runs the calibration.
func newCalibrateCmd(s *streams, runF func(*calibrateOptions) error) *cobra.Command {
	opts := &calibrateOptions{Plant: plant.NewPlant(nil), Format: "json"}
	cmd := &cobra.Command{
		Use:     "calibrate --bench FILE... [flags] | --bundle-raw RAW.csv --bundle-telemetry TEL.csv --bundle-metadata META.json --bundle-out DIR",
		Short:   "Fit the batched model's GPU card (and the profile's powers) to your own vllm bench serve runs",
		Long:    help("calibrate"),
		Example: help("calibrate.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(cmd *cobra.Command, _ []string) error { return opts.check(cmd) },
			runF, func(_ context.Context, o *calibrateOptions) error { return runCalibrate(s, o) }),
	}
	f := cmd.Flags()
	f.Var(fileArray{&opts.Bench}, "bench", "a `FILE` of vllm bench serve --save-result (or servesim bench --save-result) to fit on; repeat for more runs (at least one)")
	f.Var(fileArray{&opts.HoldOut}, "holdout", "a bench `FILE` replayed with the fitted card and reported, not fitted; repeatable")
	f.Var(fileArray{&opts.PowerLogs}, "power-log", "an nvidia-smi power log `FILE` kept while runs ran ("+calibrate.PowerLogQuery+"); repeatable: fits the powers per clock level and the thermal constants")
	f.StringVar(&opts.ProfilePath, "profile", "", "profile CSV, or a bundle folder holding l4_profile.csv: its clock levels and powers (default: the embedded engineering proxy)")
	cliflag.AddList(cmd, &opts.Fit, "fit", slices.Clone(calibrate.ParamNames), "card parameters",
		"the GPU card parameters to fit: "+strings.Join(calibrate.ParamNames, ", "))
	f.IntVar(&opts.Seeds, "seeds", 3, "arrival draws a run at a finite request rate is replayed with (its metrics are their mean)")
	addBatchedFlags(cmd, &opts.Service)
	plantflag.AddPlant(cmd, &opts.Plant)
	f.StringVar(&opts.OutGPU, "out-gpu", "", "also write the fitted card to this GPU card `FILE` (JSON), which --gpu FILE reads")
	f.StringVar(&opts.OutProfile, "out-profile", "", "with --power-log: also write the profile with the fitted powers to this CSV `FILE`, its manifest beside it as FILE with .json")
	f.StringVar(&opts.BundleRaw, "bundle-raw", "", "write a measured bundle: the profiler's raw rows `FILE` (l4_profile_raw.csv's schema), with --bundle-telemetry, --bundle-metadata and --bundle-out")
	f.StringVar(&opts.BundleTelemetry, "bundle-telemetry", "", "the measured run's 100 ms GPU telemetry `FILE` (l4_telemetry.csv's schema), for --bundle-out")
	f.StringVar(&opts.BundleMetadata, "bundle-metadata", "", "the measured run's metadata `FILE` (JSON: see the help), for --bundle-out")
	f.StringVar(&opts.BundleOut, "bundle-out", "", "write the measured bundle (aggregate tables, raw rows, telemetry, manifest with SHA-256 digests) into this new `FOLDER`, validated as validate-profile does")
	cliflag.AddChoice(cmd, &opts.Format, "format", "json", "output format: json or table", "json", "table")
	addOutputFlag(cmd, &opts.Output)
	addPlotFlag(cmd, &opts.Plot)
	return cmd
}

// fileArray is a repeatable flag of file names: each occurrence adds one
// name as it is, commas and all (a path is any string).
type fileArray struct{ files *[]string }

// Set adds a file.
func (v fileArray) Set(s string) error { *v.files = append(*v.files, s); return nil }

// String returns the files given, comma-separated; nothing for none.
func (v fileArray) String() string {
	if v.files == nil {
		return ""
	}
	return strings.Join(*v.files, ",")
}

// Items returns the files given (cliflag.Itemizer).
func (v fileArray) Items() []string { return *v.files }

// Type names the value's kind: each occurrence is a string.
func (v fileArray) Type() string { return "string" }

// addBatchedFlags binds the batched model's flags of simulate (--gpu,
// --model, --max-num-seqs, --max-num-batched-tokens,
// --gpu-memory-utilization: plantflag.AddService) to o, without
// --service-model: calibrate fits the batched model only.
func addBatchedFlags(cmd *cobra.Command, o *runparams.Service) {
	all := &cobra.Command{}
	plantflag.AddService(all, o)
	o.Kind = plant.ServiceBatched
	all.Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Name {
		case "service-model":
			return
		case "gpu":
			f.Usage = "the GPU card the fit starts from (the fit changes only the --fit parameters): " + strings.Join(cards.GPUNames(), ", ") + ", or a card file (JSON)"
		case "model":
			f.Usage = "the model card of the runs: " + strings.Join(cards.ModelNames(), ", ") + ", or a card file (JSON)"
		default:
			f.Usage = "the served engine's " + strings.TrimPrefix(f.Usage, "with --service-model batched: ")
		}
		cmd.Flags().AddFlag(f)
	})
}

// check rejects flag values that cannot mean anything (usage errors).
// The files are read, and the plant checked, when the command runs.
func (o *calibrateOptions) check(cmd *cobra.Command) error {
	o.flags = cmd.Flags()
	o.kvGiven = o.flags.Changed("kv-capacity")
	if bundle, err := o.checkBundle(); bundle || err != nil {
		return err
	}
	if len(o.Bench) == 0 {
		return usageErrorf("--bench: expected at least one result file of vllm bench serve --save-result to fit on")
	}
	if o.OutProfile != "" && len(o.PowerLogs) == 0 {
		return usageErrorf("--out-profile %s: needs --power-log: the profile's powers are fitted from power logs", o.OutProfile)
	}
	if o.OutProfile != "" && !strings.EqualFold(filepath.Ext(o.OutProfile), ".csv") {
		return usageErrorf("--out-profile %q: expected a .csv file (its manifest goes beside it as .json)", o.OutProfile)
	}
	if err := checkFitNames(o.Fit); err != nil {
		return err
	}
	if o.Seeds < 1 {
		return usageErrorf("--seeds %d: expected %s", o.Seeds, flagExpectations["seeds"])
	}
	if err := o.checkFiles(); err != nil {
		return err
	}
	if err := o.Service.Check(cmd.Flags().Changed); err != nil {
		return err
	}
	return o.Plot.check()
}

// bundleFlags are the flags of a bundle written, all given or none.
var bundleFlags = []string{"bundle-raw", "bundle-telemetry", "bundle-metadata", "bundle-out"}

// checkBundle reports whether the flags ask for a bundle to be written:
// all of bundleFlags, with no flag of a fit but -o. Some of them only is a
// usage error.
func (o *calibrateOptions) checkBundle() (bool, error) {
	var given, missing []string
	for _, name := range bundleFlags {
		if o.flags.Changed(name) {
			given = append(given, "--"+name)
		} else {
			missing = append(missing, "--"+name)
		}
	}
	if len(given) == 0 {
		return false, nil
	}
	if len(missing) > 0 {
		return true, usageErrorf("%s: needs %s too: a bundle is written from --bundle-raw, --bundle-telemetry and --bundle-metadata into --bundle-out",
			strings.Join(given, ", "), strings.Join(missing, ", "))
	}
	var other error
	o.flags.Visit(func(f *pflag.Flag) {
		if other == nil && f.Name != "output" && !slices.Contains(bundleFlags, f.Name) {
			other = usageErrorf("--%s: not with --bundle-out: writing a bundle fits nothing (run calibrate twice)", f.Name)
		}
	})
	return true, other
}

// checkFitNames accepts a list of distinct card parameters.
func checkFitNames(names []string) error {
	if len(names) == 0 {
		return usageErrorf("--fit: expected one or more of %s", strings.Join(calibrate.ParamNames, ", "))
	}
	for i, name := range names {
		if !slices.Contains(calibrate.ParamNames, name) {
			return usageErrorf("--fit %q: expected %s", name, cliflag.OrList(calibrate.ParamNames))
		}
		if slices.Contains(names[:i], name) {
			return usageErrorf("--fit %q: listed twice", name)
		}
	}
	return nil
}

// checkFiles refuses a run given twice (to fit and to hold out, or twice
// to one) and outputs that would overwrite one another.
func (o *calibrateOptions) checkFiles() error {
	seen := map[string]string{}
	for _, in := range []struct {
		flag  string
		paths []string
	}{{"--bench", o.Bench}, {"--holdout", o.HoldOut}} {
		for _, path := range in.paths {
			if first, ok := seen[filepath.Clean(path)]; ok {
				return usageErrorf("%s %s: given to %s already", in.flag, path, first)
			}
			seen[filepath.Clean(path)] = in.flag
		}
	}
	outputs := map[string]string{}
	manifest := ""
	if o.OutProfile != "" {
		manifest = strings.TrimSuffix(o.OutProfile, filepath.Ext(o.OutProfile)) + ".json"
	}
	for _, out := range []struct{ flag, path string }{
		{"-o", o.Output.Path}, {"--plot", o.Plot.Path}, {"--out-gpu", o.OutGPU}, {"--out-profile", o.OutProfile},
		{"--out-profile's manifest", manifest},
	} {
		if out.path == "" || out.path == "-" {
			continue
		}
		if first, ok := outputs[filepath.Clean(out.path)]; ok {
			return usageErrorf("%s %s: %s writes that file already", out.flag, out.path, first)
		}
		outputs[filepath.Clean(out.path)] = out.flag
	}
	return nil
}

// setup is the server the flags describe: the profile, the plant under
// it, the cards and the engine's limits. Its errors are bad input.
func (o *calibrateOptions) setup() (*calibrate.Setup, string, error) {
	prof, profilePath := profile.Default(), profile.EmbeddedPath
	if o.ProfilePath != "" {
		profilePath = profile.ResolvePath(o.ProfilePath)
		var err error
		if prof, err = profile.Load(profilePath); err != nil {
			return nil, "", err
		}
	}
	p := o.Plant
	p.Profile = prof
	if err := o.Service.Resolve(&p); err != nil {
		return nil, "", err
	}
	if err := p.Validate(); err != nil {
		return nil, "", fmt.Errorf("plant: %w", runparams.FieldNamed(err))
	}
	svc := o.Service.Model()
	seeds := make([]uint64, o.Seeds)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	return &calibrate.Setup{
		Profile: prof, Plant: p, KVCapacityGiven: o.kvGiven, GPU: svc.GPU, Model: svc.Model,
		MaxNumSeqs: o.Service.MaxNumSeqs, MaxNumBatchedTokens: o.Service.MaxNumBatchedTokens,
		GPUMemoryUtilization: o.Service.GPUMemoryUtilization, Seeds: seeds,
	}, profilePath, nil
}

// runCalibrate fits the card (and the powers), writes the figure, the
// card and profile files and the report, and says on stderr what to run
// next.
func runCalibrate(s *streams, o *calibrateOptions) error {
	if o.BundleOut != "" {
		return runCalibrateBundle(s, o)
	}
	setup, profilePath, err := o.setup()
	if err != nil {
		return err
	}
	manifestPath := ""
	if o.OutProfile != "" {
		if manifestPath, err = calibrate.ProfileManifestPath(o.OutProfile); err != nil {
			return fmt.Errorf("--out-profile %w", err)
		}
	}
	in := calibrate.Inputs{Bench: o.Bench, HeldOut: o.HoldOut, PowerLogs: o.PowerLogs, Setup: setup, Free: o.Fit,
		ProfilePath: profilePath, Version: resolvedVersion()}
	rep, prov, err := in.Calibrate()
	if err != nil {
		return err
	}
	// The figure, the card, the profile and its manifest and the result
	// appear together or not at all (outputSet): each file is staged, and
	// all are renamed into place once the result, written last (it may go
	// to stdout, which cannot be taken back), is written.
	set := newOutputSet(s)
	defer set.abandon(nil) // a panic leaves no temporary file behind
	if err := o.Plot.stage(set, rep.Figure()); err != nil {
		return err
	}
	if o.OutGPU != "" {
		card, err := rep.GPUCard()
		if err != nil {
			return set.abandon(internalError(err))
		}
		if err := set.target("--out-gpu", o.OutGPU, chunksWriter([][]byte{card})); err != nil {
			return err
		}
	}
	if o.OutProfile != "" {
		csvData, manifestData, err := rep.ProfileFiles(setup)
		if err != nil {
			return set.abandon(internalError(err))
		}
		if err := set.target("--out-profile", o.OutProfile, chunksWriter([][]byte{csvData})); err != nil {
			return err
		}
		if err := set.target("--out-profile", manifestPath, chunksWriter([][]byte{manifestData})); err != nil {
			return err
		}
	}
	if o.OutGPU != "" {
		set.notes = append(set.notes, "servesim: simulate with "+o.nextFlags(rep))
	}
	return set.finish(o.Output, o.Format, rep.Document(prov), rep.Table)
}

// runCalibrateBundle writes the measured bundle of --bundle-raw,
// --bundle-telemetry and --bundle-metadata into --bundle-out and prints
// what it wrote.
func runCalibrateBundle(s *streams, o *calibrateOptions) error {
	in, err := profile.ReadBundleInput(o.BundleRaw, o.BundleTelemetry, o.BundleMetadata)
	if err != nil {
		return err
	}
	b, err := profile.BuildBundle(in)
	if err != nil {
		return err
	}
	if err := b.Write(o.BundleOut); err != nil {
		return err
	}
	return writeJSON(s, o.Output, b.Document(o.BundleOut))
}

// nextFlags are the flags of a simulation on the fitted card: the card
// file, the model, the engine's limits and the plant flags given here,
// the profile (the one written, else the one given) and the fitted
// thermal constants (in place of any given).
func (o *calibrateOptions) nextFlags(rep *calibrate.Report) string {
	args := []string{"--service-model", "batched", "--gpu", shellWord(o.OutGPU), "--model", shellWord(o.Service.ModelCard)}
	names := []string{"max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization"}
	for _, pp := range runparams.Params {
		names = append(names, pp.Name)
	}
	thermal := rep.ThermalFlags()
	for _, name := range names {
		if thermal != "" && (name == "thermal-tau" || name == "thermal-resistance" || name == "ambient") {
			continue
		}
		if f := o.flags.Lookup(name); f != nil && f.Changed {
			args = append(args, "--"+name, shellWord(f.Value.String()))
		}
	}
	if o.OutProfile != "" {
		args = append(args, "--profile", shellWord(o.OutProfile))
	} else if o.ProfilePath != "" {
		args = append(args, "--profile", shellWord(o.ProfilePath))
	}
	if thermal != "" {
		args = append(args, thermal)
	}
	return strings.Join(args, " ")
}

// shellWord is s as one word of a POSIX shell: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+=,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
