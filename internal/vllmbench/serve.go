package vllmbench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/fleet"
	"servesim/internal/jsonout"
	"servesim/internal/numeric"
	"servesim/internal/plant"
	"servesim/internal/pycompat"
)

// This file is what `vllm bench serve` prints and saves beyond the keys of
// Result (vllm/benchmarks/serve.py, v0.11: calculate_metrics, benchmark,
// process_one_metric, check_goodput_args, main's result_json and file
// name). Its statistics are computed as vLLM computes them from the
// per-request values of a Result: a request's TPOT is (latency - TTFT) /
// (output tokens - 1), its inter-token latencies are that TPOT output
// tokens - 1 times (the fluid plant's tokens come at one rate; see the
// package doc), statistics of no values are 0 (numpy's `values or 0`).

// MetricNames are the metrics of --percentile-metrics in the order vLLM
// prints them.
var MetricNames = []string{"ttft", "tpot", "itl", "e2el"}

// goodputNames are the metrics --goodput may set (check_goodput_args).
var goodputNames = []string{"ttft", "tpot", "e2el"}

// metricTitles are each metric's short name and section title in the
// printed block (process_one_metric's arguments).
var metricTitles = map[string][2]string{
	"ttft": {"TTFT", "Time to First Token"},
	"tpot": {"TPOT", "Time per Output Token (excl. 1st token)"},
	"itl":  {"ITL", "Inter-token Latency"},
	"e2el": {"E2EL", "End-to-end Latency"},
}

// DefaultPercentileMetrics and DefaultMetricPercentiles are vLLM's defaults
// of --percentile-metrics (for a generative model) and
// --metric-percentiles.
const (
	DefaultPercentileMetrics = "ttft,tpot,itl"
	DefaultMetricPercentiles = "99"
)

// p99Only is the percentile list of Result's statistics.
var p99Only = []float64{99}

// Goodput are the service level objectives of --goodput by metric name
// (ttft, tpot, e2el), in ms; empty when none was given.
type Goodput map[string]float64

// ParseGoodput reads --goodput's KEY:VALUE pairs as vLLM's parse_goodput
// and check_goodput_args do: exactly one colon, VALUE a Python float of
// at least 0 (NaN refused too), KEY ttft, tpot or e2el; a later pair of a
// key replaces an earlier one. Errors name the flag and the pair.
func ParseGoodput(pairs []string) (Goodput, error) {
	g := Goodput{}
	for _, pair := range pairs {
		name, value, ok := strings.Cut(pair, ":")
		v, err := pycompat.Float(value)
		if !ok || strings.Contains(value, ":") || err != nil {
			return nil, fmt.Errorf("--goodput %q: expected a KEY:VALUE pair, KEY ttft, tpot or e2el and VALUE a number of ms", pair)
		}
		if !slices.Contains(goodputNames, name) {
			return nil, fmt.Errorf("--goodput %q: unknown metric %q: expected ttft, tpot or e2el", pair, name)
		}
		if !(v >= 0) {
			return nil, fmt.Errorf("--goodput %q: expected a nonnegative number of ms", pair)
		}
		g[name] = v
	}
	return g, nil
}

// ParsePercentileMetrics reads --percentile-metrics, a comma-separated
// list of ttft, tpot, itl and e2el (spaces around a name dropped). vLLM
// ignores a name it does not know; servesim refuses it.
func ParsePercentileMetrics(s string) ([]string, error) {
	var names []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(MetricNames, name) {
			return nil, fmt.Errorf("--percentile-metrics %q: unknown metric %q: expected a comma-separated list of ttft, tpot, itl, e2el", s, name)
		}
		names = append(names, name)
	}
	return names, nil
}

// ParseMetricPercentiles reads --metric-percentiles, a comma-separated
// list of Python floats in [0, 100] (np.percentile refuses others).
func ParseMetricPercentiles(s string) ([]float64, error) {
	var ps []float64
	for item := range strings.SplitSeq(s, ",") {
		p, err := pycompat.Float(item)
		if err != nil || !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("--metric-percentiles %q: %q: expected a comma-separated list of percentiles in [0, 100]", s, item)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// percentileWord is how vLLM names percentile p in a label and a key:
// str(int(p)) for a whole number, else str(p).
func percentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.FormatFloat(p, 'f', 0, 64)
	}
	return pycompat.FloatRepr(p)
}

// ServeOptions are the flags of `vllm bench serve` that shape its report.
type ServeOptions struct {
	// Metrics are the metrics whose sections are printed (and whose
	// chosen percentiles are saved), of MetricNames.
	Metrics []string
	// Percentiles are the percentiles of each selected metric.
	Percentiles []float64
	// Goodput are the objectives of the goodput; empty for none.
	Goodput Goodput
	// MaxConcurrency is --max-concurrency; 0 when not given.
	MaxConcurrency int
	// RequestRate is --request-rate, requests per second: a finite one
	// prints the row "Request rate configured (RPS):" (vLLM v0.10.2 and
	// later); +Inf (vLLM's default) or 0 prints none.
	RequestRate float64
}

// Stats are one metric's statistics, ms.
type Stats struct {
	Mean, Median, Std float64
	// Percentiles are at the percentiles asked for, in their order.
	Percentiles []float64
}

// Serve is a run as `vllm bench serve` reports it: Result with the
// goodput of --goodput, the peak output token throughput and concurrency,
// and each metric's statistics at the chosen percentiles.
type Serve struct {
	*Result
	Options ServeOptions
	// RequestGoodput is the requests meeting every objective of
	// Options.Goodput per second of the duration (0 when nothing
	// completed); meaningless without objectives.
	RequestGoodput float64
	// MaxOutputTokensPerS is the most output tokens in one second of the
	// run (one-second buckets from the first arrival of a completed
	// request, as vLLM's max_output_tokens_per_s).
	MaxOutputTokensPerS float64
	// MaxConcurrentRequests is the most completed requests active in one
	// such second (vLLM's max_concurrent_requests).
	MaxConcurrentRequests int
	// Stats are each metric's statistics, by name, at Options.Percentiles
	// and the 99th percentile after them (Result's key).
	Stats map[string]Stats
}

// ServeOf is the report under o of a run's document that kept its
// request records: a *plant.Report's or a *fleet.Report's (what
// simrun.Result.Document returns).
func ServeOf(doc any, o ServeOptions) (*Serve, error) {
	var records []plant.RequestRecord
	switch d := doc.(type) {
	case *plant.Report:
		var err error
		if records, err = plantRecords(&d.Result); err != nil {
			return nil, err
		}
	case *fleet.Report:
		records = d.Result.Requests
	default:
		return nil, fmt.Errorf("vllm-bench: no request records in a %T", doc)
	}
	// The goodput of Result (by the SLO flags) is not vLLM's: Serve's
	// is by o.Goodput.
	s := newServe(Compute(records, func(int) plant.SLO { return plant.SLO{} }), o)
	s.MaxOutputTokensPerS, s.MaxConcurrentRequests = peaks(records)
	return s, nil
}

// newServe computes the report of r under o but for the peaks.
func newServe(r *Result, o ServeOptions) *Serve {
	s := &Serve{Result: r, Options: o, Stats: map[string]Stats{}}
	n := len(r.OutputLens)
	ttft, tpot, e2el := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	itl, itlCounts := make([]float64, 0, n), make([]int, 0, n)
	good := 0
	for i, out := range r.OutputLens {
		if out == 0 { // unfinished
			continue
		}
		t, latency, perToken := r.TTFTs[i], r.Latencies[i], 0.0 // 0: vLLM's TPOT of a single token, for goodput
		if out > 1 {
			perToken = (latency - t) / float64(out-1)
			tpot = append(tpot, perToken)
			itl = append(itl, perToken)
			itlCounts = append(itlCounts, out-1)
		}
		ttft, e2el = append(ttft, t), append(e2el, latency)
		if o.Goodput.met(map[string]float64{"ttft": t, "tpot": perToken, "e2el": latency}) {
			good++
		}
	}
	if r.DurationS > 0 {
		s.RequestGoodput = float64(good) / r.DurationS
	}
	ps := append(slices.Clone(o.Percentiles), 99)
	s.Stats["ttft"] = summaryMs(ttft, ps)
	s.Stats["tpot"] = summaryMs(tpot, ps)
	s.Stats["itl"] = repeatedSummaryMs(numeric.NewRepeated(itl, itlCounts), ps)
	s.Stats["e2el"] = summaryMs(e2el, ps)
	return s
}

// met reports whether a request of the given metrics, s, meets every
// objective of g (an objective in ms at least the value).
func (g Goodput) met(values map[string]float64) bool {
	for name, objective := range g {
		if !(objective/1000 >= values[name]) {
			return false
		}
	}
	return true
}

// peaks are vLLM's max_output_tokens_per_s and max_concurrent_requests
// (calculate_metrics) of records: over the completed requests, one-second
// buckets from the earliest arrival (when the request was sent) to the
// latest completion (ceil, plus one); each request's tokens at its first
// token and then one TPOT apart, each counted in its bucket. The peak
// concurrency is exact, as newer vLLM computes it: the most requests
// between their arrival and their completion at any instant (a request
// sent at a completion does not overlap it). vLLM 0.11's buckets counted a
// request active in every second it touched, so a closed loop of N showed
// peaks above N.
func peaks(records []plant.RequestRecord) (maxTokens float64, maxConcurrent int) {
	minStart, maxEnd, found := 0.0, 0.0, false
	for i := range records {
		r := &records[i]
		if !r.Completed() {
			continue
		}
		if !found || r.ArrivalTimeS < minStart {
			minStart = r.ArrivalTimeS
		}
		if end := r.ArrivalTimeS + r.LatencyS(); !found || end > maxEnd {
			maxEnd = end
		}
		found = true
	}
	if !found {
		return 0, 0
	}
	buckets := int(math.Ceil(maxEnd-minStart)) + 1
	tokens := make([]int, buckets)
	type event struct {
		timeS float64
		delta int
	}
	events := make([]event, 0, 2*len(records))
	count := func(t float64) {
		if b := int(t - minStart); b >= 0 && b < buckets {
			tokens[b]++
		}
	}
	for i := range records {
		r := &records[i]
		if !r.Completed() {
			continue
		}
		start, latency, ttft := r.ArrivalTimeS, r.LatencyS(), r.TTFTS()
		t := start + ttft
		count(t)
		if r.OutputTokens > 1 {
			step := (latency - ttft) / float64(r.OutputTokens-1)
			for range r.OutputTokens - 1 {
				t += step
				count(t)
			}
		}
		events = append(events, event{start, 1}, event{r.CompletionTimeS, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.timeS != b.timeS {
			return cmp.Compare(a.timeS, b.timeS)
		}
		return cmp.Compare(a.delta, b.delta) // completions first
	})
	active := 0
	for _, e := range events {
		active += e.delta
		maxConcurrent = max(maxConcurrent, active)
	}
	return float64(slices.Max(tokens)), maxConcurrent
}

// summaryMs are vLLM's mean, median, standard deviation and percentiles ps
// (numpy's linear ones) of values in seconds, each times 1000; zeros for
// no values (numpy's statistics of `values or 0`). It sorts values.
func summaryMs(values []float64, ps []float64) Stats {
	s := Stats{Percentiles: make([]float64, len(ps))}
	n := len(values)
	if n == 0 {
		return s
	}
	mean, std := numeric.Mean(values), numeric.Std(values) // sums in request order, as numpy's
	slices.Sort(values)
	median := values[n/2] // np.median: the middle value, or the mean of the middle two
	if n%2 == 0 {
		median = (values[n/2-1] + values[n/2]) / 2
	}
	s.Mean, s.Median, s.Std = mean*1000, median*1000, std*1000
	for k, p := range ps {
		s.Percentiles[k] = numeric.PercentileLinearSorted(values, p) * 1000
	}
	return s
}

// repeatedSummaryMs is summaryMs of a sample of repeated values.
func repeatedSummaryMs(r numeric.Repeated, ps []float64) Stats {
	s := Stats{Percentiles: make([]float64, len(ps))}
	if r.Len() == 0 {
		return s
	}
	s.Mean, s.Median, s.Std = r.Mean()*1000, r.Median()*1000, r.Std()*1000
	for k, p := range ps {
		s.Percentiles[k] = r.PercentileLinear(p) * 1000
	}
	return s
}

// Text is the block `vllm bench serve` prints at the end of a run, with
// vLLM's labels and widths ("{:<40} {:<10}"), the configured request rate
// at a finite Options.RequestRate, and its sections for the metrics of
// Options.Metrics in vLLM's order.
func (s *Serve) Text() string {
	var b strings.Builder
	b.WriteString(centered(" Serving Benchmark Result ", "=") + "\n")
	line := func(label, value string) { fmt.Fprintf(&b, "%-40s %-10s\n", label, value) }
	line("Successful requests:", strconv.Itoa(s.Completed))
	if s.Options.MaxConcurrency > 0 {
		line("Maximum request concurrency:", strconv.Itoa(s.Options.MaxConcurrency))
	}
	if r := s.Options.RequestRate; r > 0 && !math.IsInf(r, 1) {
		line("Request rate configured (RPS):", fixed2(r))
	}
	line("Benchmark duration (s):", fixed2(s.DurationS))
	line("Total input tokens:", strconv.Itoa(s.TotalInputTokens))
	line("Total generated tokens:", strconv.Itoa(s.TotalOutputTokens))
	line("Request throughput (req/s):", fixed2(s.RequestThroughput))
	if len(s.Options.Goodput) > 0 {
		line("Request goodput (req/s):", fixed2(s.RequestGoodput))
	}
	line("Output token throughput (tok/s):", fixed2(s.OutputThroughput))
	line("Peak output token throughput (tok/s):", fixed2(s.MaxOutputTokensPerS))
	line("Peak concurrent requests:", fixed2(float64(s.MaxConcurrentRequests)))
	line("Total Token throughput (tok/s):", fixed2(s.TotalTokenThroughput))
	for _, name := range MetricNames {
		if !slices.Contains(s.Options.Metrics, name) {
			continue
		}
		short, title := metricTitles[name][0], metricTitles[name][1]
		st := s.Stats[name]
		b.WriteString(centered(title, "-") + "\n")
		line("Mean "+short+" (ms):", fixed2(st.Mean))
		line("Median "+short+" (ms):", fixed2(st.Median))
		for k, p := range s.Options.Percentiles {
			line("P"+percentileWord(p)+" "+short+" (ms):", fixed2(st.Percentiles[k]))
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	return b.String()
}

// centered is Python's "{s:{c}^50}": s centred in 50 characters of fill,
// the odd one on the right.
func centered(s, fill string) string {
	pad := max(0, 50-len(s))
	return strings.Repeat(fill, pad/2) + s + strings.Repeat(fill, pad-pad/2)
}

// fixed2 is Python's format(x, ".2f").
func fixed2(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return pycompat.FloatRepr(x)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// SaveConfig is the configuration `vllm bench serve --save-result` writes
// before the results.
type SaveConfig struct {
	Date        string // date: the run's local time, %Y%m%d-%H%M%S
	Backend     string // backend (also the file name's label)
	ModelID     string // model_id
	TokenizerID string // tokenizer_id
	NumPrompts  int    // num_prompts
	RequestRate float64
	Burstiness  float64
	// MaxConcurrency is max_concurrency; 0 writes null (not given).
	MaxConcurrency int
}

// FileName is vLLM's default result file name:
// {backend}-{request_rate}qps[-concurrency{N}]-{model}-{date}.json, the
// rate as Python writes a float ("inf", "5.0"), the model the last part
// of the model id's path.
func (c SaveConfig) FileName() string {
	concurrency := ""
	if c.MaxConcurrency > 0 {
		concurrency = fmt.Sprintf("-concurrency%d", c.MaxConcurrency)
	}
	model := c.ModelID[strings.LastIndex(c.ModelID, "/")+1:]
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", c.Backend, pycompat.FloatRepr(c.RequestRate), concurrency, model, c.Date)
}

// Document is the result file of `vllm bench serve --save-result`: the
// configuration keys of c, then Result's keys in its order with the
// statistics of s (request_goodput null without --goodput, as vLLM),
// max_output_tokens_per_s and max_concurrent_requests, and for each
// metric mean, median and std and its percentiles: the chosen ones of a
// selected metric (vLLM's p{P}_{metric}_ms), and p99 (Result's key) for
// every metric.
func (s *Serve) Document(c SaveConfig) jsonout.Object {
	var rate any = c.RequestRate
	if math.IsInf(c.RequestRate, 1) {
		rate = "inf"
	}
	var concurrency, goodput any
	if c.MaxConcurrency > 0 {
		concurrency = c.MaxConcurrency
	}
	if len(s.Options.Goodput) > 0 {
		goodput = s.RequestGoodput
	}
	doc := jsonout.Object{
		{Key: "date", Value: c.Date},
		{Key: "backend", Value: c.Backend},
		{Key: "model_id", Value: c.ModelID},
		{Key: "tokenizer_id", Value: c.TokenizerID},
		{Key: "num_prompts", Value: c.NumPrompts},
		{Key: "request_rate", Value: rate},
		{Key: "burstiness", Value: c.Burstiness},
		{Key: "max_concurrency", Value: concurrency},
		{Key: "duration", Value: s.DurationS},
		{Key: "completed", Value: s.Completed},
		{Key: "failed", Value: s.Failed},
		{Key: "total_input_tokens", Value: s.TotalInputTokens},
		{Key: "total_output_tokens", Value: s.TotalOutputTokens},
		{Key: "request_throughput", Value: s.RequestThroughput},
		{Key: "request_goodput", Value: goodput},
		{Key: "output_throughput", Value: s.OutputThroughput},
		{Key: "total_token_throughput", Value: s.TotalTokenThroughput},
		{Key: "input_lens", Value: s.InputLens},
		{Key: "output_lens", Value: s.OutputLens},
		{Key: "ttfts", Value: s.TTFTs},
		{Key: "latencies", Value: s.Latencies},
		{Key: "max_output_tokens_per_s", Value: s.MaxOutputTokensPerS},
		{Key: "max_concurrent_requests", Value: s.MaxConcurrentRequests},
	}
	for _, name := range MetricNames {
		st := s.Stats[name]
		doc = append(doc,
			jsonout.Member{Key: "mean_" + name + "_ms", Value: st.Mean},
			jsonout.Member{Key: "median_" + name + "_ms", Value: st.Median},
			jsonout.Member{Key: "std_" + name + "_ms", Value: st.Std})
		written := map[string]bool{}
		for k, p := range append(slices.Clone(s.Options.Percentiles), 99) {
			key := "p" + percentileWord(p) + "_" + name + "_ms"
			last := k == len(s.Options.Percentiles)
			if written[key] || (!last && !slices.Contains(s.Options.Metrics, name)) {
				continue
			}
			written[key] = true
			doc = append(doc, jsonout.Member{Key: key, Value: st.Percentiles[k]})
		}
	}
	return doc
}
