// Package benchload generates the workload of `servesim bench` as vLLM's
// `vllm bench serve` (v0.11: vllm/benchmarks/datasets.py and serve.py)
// builds its requests from its flags: prompt and output lengths from a
// dataset (random, ShareGPT or a custom JSON Lines file) and arrival times
// from the request rate and burstiness (get_request).
//
// What differs from vLLM, and why:
//
//   - Random draws come from Go's math/rand/v2 PCG seeded from --seed
//     (one stream for the dataset, one for the arrivals), not numpy's
//     generators: the same seed gives the same workload here, but not
//     vLLM's.
//   - There is no tokenizer: a text's tokens are estimated as
//     ceil(UTF-8 bytes / 4) (EstimateTokens), no special tokens are added
//     (vLLM subtracts the tokenizer's from --random-input-len) and a
//     custom prompt's chat template is not counted. A custom line may give
//     its prompt's tokens itself ("prompt_tokens").
//   - A random prompt is lengths only: its prefix and body tokens, whose
//     text vLLM decodes and re-encodes (which can shift its length by a
//     token or two), are not made.
//   - Requests are a workload.Workload: arrival times in seconds from the
//     benchmark's start, as get_request's cumulative delays.
package benchload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"servesim/internal/limits"
	"servesim/internal/pycompat"
	"servesim/internal/workload"
)

// Dataset names of --dataset-name.
const (
	DatasetRandom   = "random"
	DatasetShareGPT = "sharegpt"
	DatasetCustom   = "custom"
)

// DatasetNames are the datasets servesim generates, in help order.
var DatasetNames = []string{DatasetRandom, DatasetShareGPT, DatasetCustom}

// vLLM's defaults (add_dataset_parser, add_cli_args).
const (
	DefaultNumPrompts      = 1000
	DefaultRandomInputLen  = 1024
	DefaultRandomOutputLen = 128
	DefaultCustomOutputLen = 256
	DefaultBurstiness      = 1.0
)

// MaxNumPrompts caps --num-prompts: a workload is held whole in memory.
const MaxNumPrompts = 10_000_000

// MaxDatasetBytes caps a dataset file read whole.
const MaxDatasetBytes = 4 * limits.GiB

// PCG streams of the two random sources (seeded with --seed).
const (
	streamDataset  = 0x62656e63686c6431 // lengths, shuffles and oversampling
	streamArrivals = 0x62656e63686c6432 // inter-arrival delays
)

// Options are the workload and load flags of `vllm bench serve`.
type Options struct {
	DatasetName string // random, sharegpt or custom
	DatasetPath string // the ShareGPT JSON or custom JSON Lines file; empty for random
	NumPrompts  int
	Seed        int64
	// RandomInputLen, RandomOutputLen, RandomRangeRatio and
	// RandomPrefixLen shape the random dataset: lengths uniform over the
	// whole numbers in [len*(1-r), len*(1+r)] (floor, ceil; an output of
	// at least 1), the prefix's tokens added to every prompt.
	RandomInputLen   int
	RandomOutputLen  int
	RandomRangeRatio float64
	RandomPrefixLen  int
	// CustomOutputLen is the output of a custom line without
	// "output_tokens".
	CustomOutputLen int
	// ShareGPTOutputLen, when positive, replaces every ShareGPT
	// completion's length (and lifts the filter's minimum on it).
	ShareGPTOutputLen int
	// RequestRate is requests per second (+Inf: every request at 0);
	// Burstiness the gamma shape of the inter-arrival delays (1: Poisson).
	RequestRate float64
	Burstiness  float64
}

// Check refuses what vLLM refuses (its argparse errors, datasets' and
// get_request's ValueErrors and assertions) and a few values vLLM lets
// through to nonsense (negative lengths, an output below 1): every error
// names its flag.
func (o *Options) Check() error {
	if !slices.Contains(DatasetNames, o.DatasetName) {
		return fmt.Errorf("--dataset-name %q: expected random, sharegpt or custom", o.DatasetName)
	}
	switch {
	case o.DatasetName == DatasetRandom && o.DatasetPath != "":
		return fmt.Errorf("--dataset-path %q: cannot be used with --dataset-name random (give --dataset-name sharegpt or custom)", o.DatasetPath)
	case o.DatasetName != DatasetRandom && o.DatasetPath == "":
		return fmt.Errorf("--dataset-name %s: needs --dataset-path", o.DatasetName)
	case o.DatasetName == DatasetCustom && !strings.HasSuffix(o.DatasetPath, ".jsonl"):
		return fmt.Errorf("--dataset-path %q: expected a .jsonl file for --dataset-name custom (JSON Lines)", o.DatasetPath)
	case o.NumPrompts < 1 || o.NumPrompts > MaxNumPrompts:
		return fmt.Errorf("--num-prompts %d: expected a whole number from 1 to %d", o.NumPrompts, MaxNumPrompts)
	case !(o.RequestRate > 0):
		return fmt.Errorf("--request-rate %v: expected a positive number of requests per second, or inf", o.RequestRate)
	case !(o.Burstiness > 0):
		return fmt.Errorf("--burstiness %v: expected a positive number (1: Poisson arrivals)", o.Burstiness)
	}
	switch o.DatasetName {
	case DatasetRandom:
		return o.checkRandom()
	case DatasetCustom:
		if o.CustomOutputLen < 1 {
			return fmt.Errorf("--custom-output-len %d: expected a whole number of at least 1", o.CustomOutputLen)
		}
	case DatasetShareGPT:
		if o.ShareGPTOutputLen < 0 {
			return fmt.Errorf("--sharegpt-output-len %d: expected a whole number of at least 1 (0: each completion's)", o.ShareGPTOutputLen)
		}
	}
	return nil
}

// checkRandom checks the random dataset's flags as RandomDataset.sample
// does, and refuses negative lengths.
func (o *Options) checkRandom() error {
	switch {
	case !(o.RandomRangeRatio >= 0 && o.RandomRangeRatio < 1):
		return fmt.Errorf("--random-range-ratio %v: expected a number in [0, 1)", o.RandomRangeRatio)
	case o.RandomInputLen < 0:
		return fmt.Errorf("--random-input-len %d: expected a whole number of tokens, 0 or more", o.RandomInputLen)
	case o.RandomOutputLen < 1:
		return fmt.Errorf("--random-output-len %d: expected a whole number of tokens of at least 1", o.RandomOutputLen)
	case o.RandomPrefixLen < 0:
		return fmt.Errorf("--random-prefix-len %d: expected a whole number of tokens, 0 or more", o.RandomPrefixLen)
	}
	if low, _ := lengthRange(o.RandomInputLen, o.RandomRangeRatio); o.RandomPrefixLen+low < 1 {
		return fmt.Errorf("--random-input-len %d: too small: with --random-range-ratio %v and --random-prefix-len %d the shortest prompt has %d tokens (expected at least 1)",
			o.RandomInputLen, o.RandomRangeRatio, o.RandomPrefixLen, o.RandomPrefixLen+low)
	}
	return nil
}

// lengthRange is RandomDataset's sampling interval of a length n:
// [floor(n*(1-r)), ceil(n*(1+r))].
func lengthRange(n int, r float64) (low, high int) {
	return int(math.Floor(float64(n) * (1 - r))), int(math.Ceil(float64(n) * (1 + r)))
}

// Source is the workload's source label: "bench:" and the dataset name.
func (o *Options) Source() string { return "bench:" + o.DatasetName }

// Generate builds the workload of o (checked): requests in arrival order,
// IDs 0 to NumPrompts-1, its Source "bench:DATASET" and its SHA256 that
// of a canonical description of the options (with a dataset file's own
// SHA-256). A dataset file that cannot be read or parsed is an error
// naming the file (and the line).
func Generate(o Options) (workload.Workload, error) {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), streamDataset))
	var samples []Sample
	dataHash := ""
	if o.DatasetName == DatasetRandom {
		samples = o.randomSamples(rng)
	} else {
		data, err := readDataset(o.DatasetPath)
		if err != nil {
			return workload.Workload{}, err
		}
		sum := sha256.Sum256(data)
		dataHash = hex.EncodeToString(sum[:])
		if samples, err = o.fileSamples(data, rng); err != nil {
			return workload.Workload{}, err
		}
	}
	arrivals := Arrivals(len(samples), o.RequestRate, o.Burstiness, rand.New(rand.NewPCG(uint64(o.Seed), streamArrivals)))
	requests := make([]workload.Request, len(samples))
	for i, s := range samples {
		requests[i] = workload.Request{ID: i, ArrivalTimeS: arrivals[i], PromptTokens: s.PromptTokens, OutputTokens: s.OutputTokens}
	}
	sum := sha256.Sum256([]byte(o.describe(dataHash)))
	return workload.Workload{Requests: requests, Source: o.Source(), SHA256: hex.EncodeToString(sum[:])}, nil
}

// readDataset reads a dataset file whole (at most MaxDatasetBytes).
func readDataset(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	data, err := limits.ReadAll(f, MaxDatasetBytes)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, unwrapPath(err))
	}
	return data, nil
}

// unwrapPath drops an *os.PathError's operation and path (the message
// names the file already).
func unwrapPath(err error) error {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// describe is the canonical description of the workload o generates: one
// "flag=value" line per option that shapes it, floats as Python writes
// them, and the dataset file's SHA-256.
func (o *Options) describe(dataHash string) string {
	lines := []string{
		"servesim bench workload 1",
		"dataset-name=" + o.DatasetName,
		fmt.Sprintf("num-prompts=%d", o.NumPrompts),
		fmt.Sprintf("seed=%d", o.Seed),
		"request-rate=" + pycompat.FloatRepr(o.RequestRate),
		"burstiness=" + pycompat.FloatRepr(o.Burstiness),
	}
	switch o.DatasetName {
	case DatasetRandom:
		lines = append(lines, fmt.Sprintf("random-input-len=%d", o.RandomInputLen), fmt.Sprintf("random-output-len=%d", o.RandomOutputLen),
			"random-range-ratio="+pycompat.FloatRepr(o.RandomRangeRatio), fmt.Sprintf("random-prefix-len=%d", o.RandomPrefixLen))
	case DatasetShareGPT:
		lines = append(lines, fmt.Sprintf("sharegpt-output-len=%d", o.ShareGPTOutputLen), "dataset-sha256="+dataHash)
	case DatasetCustom:
		lines = append(lines, fmt.Sprintf("custom-output-len=%d", o.CustomOutputLen), "dataset-sha256="+dataHash)
	}
	return strings.Join(lines, "\n") + "\n"
}

// Sample is one request's lengths.
type Sample struct {
	PromptTokens int
	OutputTokens int
}

// randomSamples are RandomDataset's lengths: every input length drawn
// first, then every output length, uniform over their intervals; the
// prefix added to each prompt.
func (o *Options) randomSamples(rng *rand.Rand) []Sample {
	inLow, inHigh := lengthRange(o.RandomInputLen, o.RandomRangeRatio)
	outLow, outHigh := lengthRange(o.RandomOutputLen, o.RandomRangeRatio)
	outLow, outHigh = max(outLow, 1), max(outHigh, 1)
	samples := make([]Sample, o.NumPrompts)
	for i := range samples {
		samples[i].PromptTokens = o.RandomPrefixLen + inLow + rng.IntN(inHigh-inLow+1)
	}
	for i := range samples {
		samples[i].OutputTokens = outLow + rng.IntN(outHigh-outLow+1)
	}
	return samples
}

// fileSamples are the samples of a ShareGPT or custom dataset file's
// bytes: its entries shuffled, taken in that order while they pass the
// dataset's rule, NumPrompts of them, oversampled (drawn again at random
// from those taken) when too few pass.
func (o *Options) fileSamples(data []byte, rng *rand.Rand) ([]Sample, error) {
	var entries []Sample
	keep := func(Sample) bool { return true }
	switch o.DatasetName {
	case DatasetShareGPT:
		conversations, err := ReadShareGPT(o.DatasetPath, data)
		if err != nil {
			return nil, err
		}
		entries = conversations
		if o.ShareGPTOutputLen > 0 {
			for i := range entries {
				entries[i].OutputTokens = o.ShareGPTOutputLen
			}
		}
		keep = func(s Sample) bool { return ValidSequence(s, o.ShareGPTOutputLen > 0) }
	case DatasetCustom:
		lines, err := ReadCustom(o.DatasetPath, data)
		if err != nil {
			return nil, err
		}
		entries = lines
		for i := range entries {
			if entries[i].OutputTokens == 0 {
				entries[i].OutputTokens = o.CustomOutputLen
			}
		}
	}
	rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	samples := make([]Sample, 0, o.NumPrompts)
	for _, e := range entries {
		if len(samples) == o.NumPrompts {
			break
		}
		if keep(e) {
			samples = append(samples, e)
		}
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("dataset %s: no entry passes the %s rules (see servesim bench --help)", o.DatasetPath, o.DatasetName)
	}
	for taken := len(samples); len(samples) < o.NumPrompts; {
		samples = append(samples, samples[rng.IntN(taken)])
	}
	return samples, nil
}

// ValidSequence is vLLM's is_valid_sequence with its defaults: a prompt
// of at least 4 tokens and at most 1024, an output of at least 4 (unless
// fixedOutput: --sharegpt-output-len replaced it), and at most 2048
// tokens in all.
func ValidSequence(s Sample, fixedOutput bool) bool {
	const minLen, maxPrompt, maxTotal = 4, 1024, 2048
	return s.PromptTokens >= minLen && (fixedOutput || s.OutputTokens >= minLen) &&
		s.PromptTokens <= maxPrompt && s.PromptTokens+s.OutputTokens <= maxTotal
}

// EstimateTokens is servesim's token count of a text, having no
// tokenizer: ceil(UTF-8 bytes / 4), about what English text averages.
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

// Arrivals are get_request's send times of n requests at rate requests
// per second with burstiness b: every request at 0 for an infinite rate;
// otherwise the cumulative sum of delays drawn from a gamma distribution
// of shape b and mean 1/rate (exponential for b = 1; each exactly 1/rate
// for an infinite b), scaled so that the last is at n/rate (vLLM's
// normalization of the total delay).
func Arrivals(n int, rate, b float64, rng *rand.Rand) []float64 {
	at := make([]float64, n)
	if math.IsInf(rate, 1) || n == 0 {
		return at
	}
	sum := 0.0
	for i := range at {
		if math.IsInf(b, 1) {
			sum += 1 / rate
		} else {
			sum += gamma(rng, b) / (rate * b)
		}
		at[i] = sum
	}
	if last := at[n-1]; last != 0 {
		factor := float64(n) / rate / last
		for i := range at {
			at[i] *= factor
		}
	}
	return at
}

// gamma draws from the gamma distribution of the given shape and scale 1
// (Marsaglia and Tsang's method; a shape below 1 boosted by U^(1/shape)).
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape == 1 {
		return rng.ExpFloat64()
	}
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
