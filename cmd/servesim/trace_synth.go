package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/trace"
	"servesim/internal/workload"
)

// traceSynthOptions are the flags of `servesim trace synth`.
type traceSynthOptions struct {
	Days          float64
	RatePerS      float64
	Seed          uint64
	Amplitude     float64
	PeakHour      float64
	WeekendFactor float64
	Start         string // a date (2006-01-02) or an RFC 3339 time
	Format        string // azure2024, azure or mooncake
	// SharedPrompts and SharedPromptTokens open every prompt with one of
	// that many shared prompts of that many tokens (mooncake only).
	SharedPrompts      int
	SharedPromptTokens int
	Output             outputOptions
}

// Formats trace synth writes.
const (
	synthAzure2024 = "azure2024" // the 2024 week-long form: +00:00 offsets, six digits, LF
	synthAzure     = "azure"     // the 2023 form: seven digits, CRLF
	synthMooncake  = "mooncake"  // Mooncake JSON Lines, with the prompts' hash ids
)

// defaultSynthRate is the synthetic week's rate: the Azure 2024
// conversation week's 27.3 million requests over seven days.
const defaultSynthRate = workload.WeekRequests / (7 * 86400.0)

func newTraceSynthCmd(s *streams, runF func(*traceSynthOptions) error) *cobra.Command {
	opts := &traceSynthOptions{}
	cmd := &cobra.Command{
		Use:     "synth [flags]",
		Short:   "Write a synthetic code-like trace with a diurnal and weekly rate",
		Long:    help("trace-synth"),
		Example: help("trace-synth.example"),
		Args:    cobra.NoArgs,
		RunE: checkThenRun(opts, func(*cobra.Command, []string) error {
			_, err := opts.config()
			if err != nil {
				return usageError(err)
			}
			return nil
		}, runF, func(_ context.Context, o *traceSynthOptions) error { return runTraceSynth(s, o) }),
	}
	f := cmd.Flags()
	f.Float64Var(&opts.Days, "days", 7, "length of the trace in `DAYS`")
	f.Float64Var(&opts.RatePerS, "rate", defaultSynthRate, "mean arrival rate over the trace in `REQUESTS` per second (default: the Azure 2024 conversation week's, 27.3 million a week)")
	f.Uint64Var(&opts.Seed, "seed", 1, "random seed: the same flags and seed write the same bytes")
	f.Float64Var(&opts.Amplitude, "diurnal", 0.5, "daily swing `A` in [0, 1): the peak hour's rate is 1+A times the day's mean, the trough's 1-A (0: flat)")
	f.Float64Var(&opts.PeakHour, "peak-hour", 14, "hour of the day (UTC) of the peak rate, in [0, 24)")
	f.Float64Var(&opts.WeekendFactor, "weekend", 0.7, "a Saturday's or Sunday's rate over a weekday's, in (0, 1]")
	f.StringVar(&opts.Start, "start", "2024-05-10", "wall-clock time of the first instant: a date (UTC midnight) or an RFC 3339 time")
	cliflag.AddChoice(cmd, &opts.Format, "format", synthAzure2024, "format written: azure2024 (the week-long traces' form), azure (the 2023 form) or mooncake (JSON Lines with the prompts' hash ids, held in memory while written)", synthAzure2024, synthAzure, synthMooncake)
	f.IntVar(&opts.SharedPrompts, "shared-prompts", 0, "open every prompt with one of `N` shared prompts (system prompts), chosen at random, before its own tokens; their 512-token blocks share hash ids (needs --format mooncake)")
	f.IntVar(&opts.SharedPromptTokens, "shared-prompt-tokens", 2048, "length of each shared prompt in `TOKENS` (with --shared-prompts)")
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// config is the synthetic trace the flags describe: the code trace's
// bursts and token lengths (workload.CodeTraceLike) at --rate, with bursts
// 10 ms apart within (as the synthetic week's), shaped by the diurnal flags.
// Its errors name the flag.
func (o *traceSynthOptions) config() (workload.SyntheticTrace, error) {
	start, err := parseSynthStart(o.Start)
	if err != nil {
		return workload.SyntheticTrace{}, err
	}
	switch {
	case !(o.Days > 0) || math.IsInf(o.Days, 0):
		return workload.SyntheticTrace{}, fmt.Errorf("--days %v: expected a positive number of days", o.Days)
	case !(o.RatePerS > 0) || math.IsInf(o.RatePerS, 0):
		return workload.SyntheticTrace{}, fmt.Errorf("--rate %v: expected a positive number of requests per second", o.RatePerS)
	}
	if expected := o.Days * 86400 * o.RatePerS; expected > workload.MaxHeldRequests {
		return workload.SyntheticTrace{}, fmt.Errorf("--days %v x --rate %.6g = %.3g requests: more than the %d servesim reads from one trace", o.Days, o.RatePerS, expected, workload.MaxHeldRequests)
	}
	c := workload.CodeTraceLike(o.Seed, o.Days*86400)
	c.Start, c.MeanRequestsPerS, c.BurstGapS = start, o.RatePerS, 0.01
	d := &workload.Diurnal{Amplitude: o.Amplitude, PeakHour: o.PeakHour, WeekendFactor: o.WeekendFactor}
	if err := d.Check(); err != nil {
		return workload.SyntheticTrace{}, fmt.Errorf("--diurnal, --peak-hour or --weekend: %w", err)
	}
	if o.Amplitude > 0 || o.WeekendFactor < 1 {
		c.Diurnal = d
	}
	if o.SharedPrompts != 0 && o.Format != synthMooncake {
		return workload.SyntheticTrace{}, fmt.Errorf("--shared-prompts %d: the shared prompts are hash ids, which only --format mooncake writes", o.SharedPrompts)
	}
	if err := o.shared().Check(); err != nil {
		return workload.SyntheticTrace{}, fmt.Errorf("--shared-prompts or --shared-prompt-tokens: %w", err)
	}
	peak := o.RatePerS
	if c.Diurnal != nil {
		peak *= c.Diurnal.Peak()
	}
	if c.MeanBurstSize/peak <= (c.MeanBurstSize-1)*c.BurstGapS {
		return workload.SyntheticTrace{}, fmt.Errorf("--rate %v: its peak, %.4g requests per second, leaves no pause between bursts of 3 requests 10 ms apart: expected at most %.4g at the peak",
			o.RatePerS, peak, c.MeanBurstSize/((c.MeanBurstSize-1)*c.BurstGapS))
	}
	return c, nil
}

// shared is the shared prompts of --shared-prompts and
// --shared-prompt-tokens.
func (o *traceSynthOptions) shared() trace.SharedPrompts {
	return trace.SharedPrompts{Prompts: o.SharedPrompts, Tokens: o.SharedPromptTokens}
}

// parseSynthStart reads --start: a date, or an RFC 3339 time.
func parseSynthStart(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("--start %q: expected a date (2024-05-10) or an RFC 3339 time (2024-05-10T08:00:00Z)", s)
}

func runTraceSynth(s *streams, o *traceSynthOptions) error {
	c, err := o.config()
	if err != nil {
		return usageError(err)
	}
	return writeResult(s, o.Output, func(w io.Writer) error {
		switch o.Format {
		case synthAzure:
			return c.WriteCSV(w)
		case synthMooncake:
			t, err := trace.Synthesize(c, o.shared())
			if err != nil {
				return err
			}
			return trace.WriteMooncake(w, t)
		}
		return c.WriteCSV2024(w)
	})
}
