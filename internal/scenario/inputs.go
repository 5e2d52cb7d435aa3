package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"

	"servesim/internal/trace"
	"servesim/internal/workload"
)

// Inputs are what the scenarios command replays: the synthetic agent trace
// (Requests, Seed, RPS) or, with TracePath, a trace file read by package
// trace, whose first SharedPrefixTokens context tokens are the shared
// prefix; and the built-in engine profiles or, with ProfilesPath, a JSON
// list of them. Either path may be "-", standard input (Stdin).
type Inputs struct {
	Requests           int
	Seed               *big.Int
	RPS                float64
	TracePath          string
	Trace              trace.Options
	SharedPrefixTokens int
	ProfilesPath       string
	Stdin              io.Reader
}

// Check rejects inputs and SLOs that cannot mean anything; given says
// which flags were given. Its errors name the flag.
func (in Inputs) Check(opt BenchmarkOptions, given func(flag string) bool) error {
	if in.TracePath != "" {
		for _, name := range []string{"requests", "seed", "rps"} {
			if given(name) {
				return fmt.Errorf("--%s shapes the synthetic agent trace: it cannot be combined with --trace", name)
			}
		}
	} else if given("shared-prefix-tokens") {
		return errors.New("--shared-prefix-tokens applies to a replayed trace: use it with --trace")
	}
	positiveFinite := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
	switch {
	case in.TracePath == "-" && in.ProfilesPath == "-":
		return errors.New("--trace and --profiles cannot both read stdin")
	case in.Requests < 1:
		return fmt.Errorf("--requests %d: expected at least 1", in.Requests)
	case in.Requests > MaxAgentRequests:
		return fmt.Errorf("--requests %d: more than the limit of %d requests of the synthetic agent trace", in.Requests, MaxAgentRequests)
	case !positiveFinite(in.RPS):
		return fmt.Errorf("--rps %v: expected a positive, finite rate", in.RPS)
	case !positiveFinite(opt.TTFTSLOMilliseconds):
		return fmt.Errorf("--ttft-slo-ms %v: expected a positive, finite time", opt.TTFTSLOMilliseconds)
	case !positiveFinite(opt.TPOTSLOMilliseconds):
		return fmt.Errorf("--tpot-slo-ms %v: expected a positive, finite time", opt.TPOTSLOMilliseconds)
	case in.SharedPrefixTokens < 0:
		return fmt.Errorf("--shared-prefix-tokens %d: expected 0 or more", in.SharedPrefixTokens)
	}
	return nil
}

// Report replays the inputs' trace against their profiles under opt; a
// replayed trace file names the workload.
func (in Inputs) Report(opt BenchmarkOptions) (Report, error) {
	requests, err := in.requests(&opt)
	if err != nil {
		return Report{}, err
	}
	profiles := BuiltinProfiles()
	if in.ProfilesPath != "" {
		r, name, err := in.open(in.ProfilesPath, "profiles")
		if err != nil {
			return Report{}, err
		}
		profiles, err = ParseProfiles(r, name)
		r.Close()
		if err != nil {
			return Report{}, err
		}
	}
	return BuildReport(requests, profiles, opt)
}

// requests returns the replayed trace (read by the trace loader, so it has
// the arrivals simulate sees), or the synthetic agent trace, and sets the
// workload name accordingly.
func (in Inputs) requests(opt *BenchmarkOptions) ([]WorkloadRequest, error) {
	if in.TracePath == "" {
		return BuildAgentTrace(in.Requests, in.Seed, in.RPS)
	}
	r, name, err := in.open(in.TracePath, "trace")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	opt.WorkloadName = filepath.Base(name)
	w, err := trace.Load(r, name, workload.NoElapsedLimit, in.Trace)
	if err != nil {
		return nil, err
	}
	return FromPlantTrace(w.Requests, in.SharedPrefixTokens)
}

// open opens path ("-": Stdin) and returns what messages call it; its
// error names what (trace, profiles) and the path, and why in words.
func (in Inputs) open(path, what string) (io.ReadCloser, string, error) {
	if path == "-" {
		return io.NopCloser(in.Stdin), "stdin", nil
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the message names the path already
		}
		return nil, path, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return f, path, nil
}
