package benchload

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// defaults are vLLM's defaults of the workload and load flags.
func defaults() Options {
	return Options{
		DatasetName: DatasetRandom, NumPrompts: DefaultNumPrompts, RandomInputLen: DefaultRandomInputLen,
		RandomOutputLen: DefaultRandomOutputLen, CustomOutputLen: DefaultCustomOutputLen,
		RequestRate: math.Inf(1), Burstiness: DefaultBurstiness,
	}
}

func TestCheckRefusesWhatVLLMRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"unknown dataset", func(o *Options) { o.DatasetName = "sonnet" }, `--dataset-name "sonnet": expected random, sharegpt or custom`},
		{"random with a path", func(o *Options) { o.DatasetPath = "x.json" }, `--dataset-path "x.json": cannot be used with --dataset-name random`},
		{"sharegpt without a path", func(o *Options) { o.DatasetName = DatasetShareGPT }, "--dataset-name sharegpt: needs --dataset-path"},
		{"custom not jsonl", func(o *Options) { o.DatasetName, o.DatasetPath = DatasetCustom, "a.json" }, `--dataset-path "a.json": expected a .jsonl file`},
		{"no prompts", func(o *Options) { o.NumPrompts = 0 }, "--num-prompts 0: expected a whole number from 1 to 10000000"},
		{"zero rate", func(o *Options) { o.RequestRate = 0 }, "--request-rate 0: expected a positive number"},
		{"NaN rate", func(o *Options) { o.RequestRate = math.NaN() }, "--request-rate NaN: expected a positive number"},
		{"zero burstiness", func(o *Options) { o.Burstiness = 0 }, "--burstiness 0: expected a positive number"},
		{"range ratio 1", func(o *Options) { o.RandomRangeRatio = 1 }, "--random-range-ratio 1: expected a number in [0, 1)"},
		{"negative range ratio", func(o *Options) { o.RandomRangeRatio = -0.1 }, "--random-range-ratio -0.1: expected a number in [0, 1)"},
		{"empty prompts", func(o *Options) { o.RandomInputLen = 0 }, "--random-input-len 0: too small"},
		{"prompts rounded to nothing", func(o *Options) { o.RandomInputLen, o.RandomRangeRatio = 1, 0.5 }, "the shortest prompt has 0 tokens"},
		{"negative input", func(o *Options) { o.RandomInputLen = -1 }, "--random-input-len -1: expected a whole number of tokens, 0 or more"},
		{"no output", func(o *Options) { o.RandomOutputLen = 0 }, "--random-output-len 0: expected a whole number of tokens of at least 1"},
		{"negative prefix", func(o *Options) { o.RandomPrefixLen = -1 }, "--random-prefix-len -1"},
		{"custom output", func(o *Options) { o.DatasetName, o.DatasetPath, o.CustomOutputLen = DatasetCustom, "a.jsonl", 0 }, "--custom-output-len 0"},
		{"sharegpt output", func(o *Options) { o.DatasetName, o.DatasetPath, o.ShareGPTOutputLen = DatasetShareGPT, "a.json", -1 }, "--sharegpt-output-len -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaults()
			tt.modify(&o)
			err := o.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	o := defaults()
	assert.NoError(t, o.Check(), "vLLM's defaults")
	o.RandomInputLen, o.RandomPrefixLen = 0, 5
	assert.NoError(t, o.Check(), "a prefix alone makes a prompt")
}

func TestRandomLengthsStayInTheirRangeWithThePrefix(t *testing.T) {
	t.Parallel()
	o := defaults()
	o.NumPrompts, o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio, o.RandomPrefixLen = 5000, 100, 10, 0.25, 7
	w, err := Generate(o)
	require.NoError(t, err)
	require.Len(t, w.Requests, 5000)
	seenIn, seenOut := map[int]bool{}, map[int]bool{}
	for i, r := range w.Requests {
		assert.Equal(t, i, r.ID)
		assert.GreaterOrEqual(t, r.PromptTokens, 7+75)
		assert.LessOrEqual(t, r.PromptTokens, 7+125)
		assert.GreaterOrEqual(t, r.OutputTokens, 7) // floor(10*0.75)
		assert.LessOrEqual(t, r.OutputTokens, 13)   // ceil(10*1.25)
		assert.NoError(t, r.Validate())
		seenIn[r.PromptTokens], seenOut[r.OutputTokens] = true, true
	}
	assert.Len(t, seenIn, 51, "every input length of the interval drawn")
	assert.Len(t, seenOut, 7, "every output length of the interval drawn")

	o.RandomRangeRatio = 0
	w, err = Generate(o)
	require.NoError(t, err)
	for _, r := range w.Requests {
		require.Equal(t, workload.Request{ID: r.ID, PromptTokens: 107, OutputTokens: 10}, r, "exact lengths, all at time 0")
	}
}

func TestSeedsReproduceAndDiffer(t *testing.T) {
	t.Parallel()
	o := defaults()
	o.NumPrompts, o.RandomRangeRatio, o.RequestRate = 200, 0.5, 10
	a, err := Generate(o)
	require.NoError(t, err)
	b, err := Generate(o)
	require.NoError(t, err)
	assert.Equal(t, a, b, "one seed, one workload")
	assert.Equal(t, "bench:random", a.Source)
	assert.Len(t, a.SHA256, 64)
	o.Seed = 1
	c, err := Generate(o)
	require.NoError(t, err)
	assert.NotEqual(t, a.Requests, c.Requests)
	assert.NotEqual(t, a.SHA256, c.SHA256)
	o.Seed, o.RequestRate = 0, 20
	d, err := Generate(o)
	require.NoError(t, err)
	for i := range a.Requests {
		assert.Equal(t, a.Requests[i].PromptTokens, d.Requests[i].PromptTokens, "the rate draws from its own stream")
	}
	assert.NotEqual(t, a.SHA256, d.SHA256)
}

func TestArrivals(t *testing.T) {
	t.Parallel()
	rng := func() *rand.Rand { return rand.New(rand.NewPCG(3, 4)) }
	assert.Equal(t, make([]float64, 5), Arrivals(5, math.Inf(1), 1, rng()), "rate inf: all at 0")
	assert.Equal(t, []float64{0.5, 1, 1.5, 2}, Arrivals(4, 2, math.Inf(1), rng()), "infinite burstiness: evenly spaced")

	const n, rate = 10_000, 8.0
	for _, tt := range []struct {
		burstiness float64
		cv         float64 // of a gamma of shape b: 1/sqrt(b)
	}{{1, 1}, {0.25, 2}, {4, 0.5}} {
		at := Arrivals(n, rate, tt.burstiness, rng())
		require.Len(t, at, n)
		assert.InDelta(t, n/rate, at[n-1], 1e-9, "the last request at n/rate")
		gaps := make([]float64, n)
		previous := 0.0
		for i, a := range at {
			require.GreaterOrEqual(t, a, previous, "sorted")
			gaps[i], previous = a-previous, a
		}
		mean, sd := meanSD(gaps)
		assert.InEpsilon(t, 1/rate, mean, 0.05, "burstiness %v: mean rate", tt.burstiness)
		assert.InEpsilon(t, tt.cv, sd/mean, 0.08, "burstiness %v: CV of the inter-arrivals", tt.burstiness)
	}
}

// meanSD are the mean and the population standard deviation of xs.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

func TestShareGPTWorkload(t *testing.T) {
	t.Parallel()
	o := defaults()
	o.DatasetName, o.DatasetPath, o.NumPrompts = DatasetShareGPT, filepath.Join("testdata", "sharegpt.json"), 5
	w, err := Generate(o)
	require.NoError(t, err)
	assert.Equal(t, "bench:sharegpt", w.Source)
	require.Len(t, w.Requests, 5, "oversampled from the two that pass")
	for _, r := range w.Requests {
		ok := (r.PromptTokens == 13 && r.OutputTokens == 23) || (r.PromptTokens == 11 && r.OutputTokens == 20)
		assert.True(t, ok, "%+v is one of the two conversations that pass", r)
	}
	o.ShareGPTOutputLen = 3
	w, err = Generate(o)
	require.NoError(t, err)
	for _, r := range w.Requests {
		assert.Equal(t, 3, r.OutputTokens)
	}
	data, err := os.ReadFile(o.DatasetPath)
	require.NoError(t, err)
	other := filepath.Join(t.TempDir(), "sharegpt.json")
	require.NoError(t, os.WriteFile(other, append(data, ' '), 0o644))
	o.DatasetPath = other
	w2, err := Generate(o)
	require.NoError(t, err)
	assert.Equal(t, w.Requests, w2.Requests)
	assert.NotEqual(t, w.SHA256, w2.SHA256, "the file's bytes are part of the identity")
}

func TestCustomWorkload(t *testing.T) {
	t.Parallel()
	o := defaults()
	o.DatasetName, o.DatasetPath, o.NumPrompts = DatasetCustom, filepath.Join("testdata", "custom.jsonl"), 3
	w, err := Generate(o)
	require.NoError(t, err)
	got := map[workload.Request]bool{}
	for _, r := range w.Requests {
		got[workload.Request{PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens}] = true
	}
	assert.Equal(t, map[workload.Request]bool{
		{PromptTokens: 8, OutputTokens: 256}: true, // no output_tokens: --custom-output-len
		{PromptTokens: 12, OutputTokens: 64}: true,
		{PromptTokens: 900, OutputTokens: 7}: true,
	}, got, "every line once")
}

func TestDatasetFileErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	o := defaults()
	o.DatasetName, o.DatasetPath = DatasetCustom, filepath.Join(t.TempDir(), "missing.jsonl")
	_, err := Generate(o)
	require.Error(t, err)
	assert.Regexp(t, `^dataset .*missing.jsonl: no such file or directory$`, err.Error())
}
