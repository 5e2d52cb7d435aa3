package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"servesim/internal/limits"
	"servesim/internal/numeric"
	"servesim/internal/pycompat"
)

// MaxBenchFileBytes is the largest bench file ReadRun reads: a run of
// thousands of requests with their inter-token latencies and generated
// texts stays far below it.
const MaxBenchFileBytes = 256 * limits.MiB

// ReadRun reads a `vllm bench serve --save-result` file, at most
// MaxBenchFileBytes (256 MiB; a larger one is refused with an error saying
// so), and parses it with ParseRun.
func ReadRun(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, fmt.Errorf("bench file %s: %v", path, err)
	}
	defer f.Close()
	data, err := limits.ReadAll(f, MaxBenchFileBytes)
	if err != nil {
		return nil, fmt.Errorf("bench file %s: %s", path, limits.OneLine(err.Error()))
	}
	return ParseRun(path, data)
}

// ParseRun parses the result file of `vllm bench serve --save-result`
// (data, read from file, which every error names first, on one line:
// `bench file run.json: key "ttfts": expected a list of numbers`).
//
// Versions: the files of vLLM v0.6 (benchmarks/benchmark_serving.py)
// through v0.11 (`vllm bench serve`, vllm/benchmarks/serve.py), and those
// servesim writes (`servesim bench --save-result`, internal/vllmbench).
// Older files lack burstiness (read as 1.0, vLLM's default) and
// max_concurrency (read as none); a null max_concurrency is none too.
// vLLM writes the per-request lists only with --save-detailed in the
// versions that have that flag; a file without them is refused. A file
// of several results appended by --append-result is refused, and so is a
// ramp-up run (ramp_up_strategy: its rate is not constant).
//
// Keys read: date, model_id (strings when present), num_prompts,
// request_rate (a number or the string "inf", required), burstiness,
// max_concurrency, duration (required), completed and failed, and the
// per-request lists input_lens and output_lens (integers), ttfts and
// latencies (s), itls (a list of lists, s) and errors (strings, "" for
// success); backend, tokenizer_id, generated_texts, the statistics and
// any metadata are not read. vLLM writes no latencies: a request's
// latency is then its TTFT plus the sum of its inter-token latencies (as
// vLLM measured it: from the request's start to its last chunk), so a
// file needs latencies or itls.
//
// A request failed when its errors entry is non-empty, or when its
// latency is 0 and its output_lens entry is 0 (how a file without an
// errors list, such as servesim's, marks a failure). In a vLLM file such a
// request with an empty error is ambiguous: an empty completion (vLLM
// counted it completed) or a failure with an empty reason; the file's
// completed count decides, the first ones counting as completed. A failed
// request keeps its input and output tokens, its TTFT and latency are 0.
//
// Checks: the per-request lists all have the same length, which is
// completed + failed when the file has failed, else num_prompts when it
// has that; completed, when present, is the number of requests that did
// not fail; input_lens entries are positive integers, output_lens
// entries non-negative ones; times are finite and non-negative; a
// completed request's TTFT is at most its latency; the duration is
// positive when a request completed.
func ParseRun(file string, data []byte) (*Run, error) {
	return (&benchParser{file: file}).parse(data)
}

// Measured is the run's measured Metrics (MeanPowerW and EnergyPerTokenJ
// nil), computed as vLLM computes its summary but over the completed
// requests that produced a token (an empty completion, whose TTFT vLLM
// records as 0, is not what a replay can simulate): the mean and numpy's linear 99th percentile of the TTFT; the
// mean TPOT as vLLM's mean_tpot_ms, over the requests of more than one
// output token, each (latency - TTFT) / (output tokens - 1); the output
// throughput, the completed requests' output tokens over the duration.
// A statistic of no values is 0 (vLLM's `values or 0`), and so is the
// throughput of a zero duration.
func (r *Run) Measured() Metrics {
	ttfts := make([]float64, 0, len(r.Requests))
	var tpots []float64
	output := 0
	for _, q := range r.Requests {
		if q.Failed || q.OutputTokens == 0 {
			continue
		}
		ttfts = append(ttfts, q.TTFTS)
		output += q.OutputTokens
		if q.OutputTokens > 1 {
			tpots = append(tpots, (q.LatencyS-q.TTFTS)/float64(q.OutputTokens-1))
		}
	}
	var m Metrics
	if len(ttfts) > 0 {
		m.MeanTTFTS = numeric.Mean(ttfts)
		m.P99TTFTS = numeric.PercentileLinear(ttfts, 99)
	}
	if len(tpots) > 0 {
		m.MeanTPOTS = numeric.Mean(tpots)
	}
	if r.DurationS > 0 {
		m.OutputThroughput = float64(output) / r.DurationS
	}
	return m
}

// benchParser parses one bench file; its errors name the file.
type benchParser struct {
	file string
	obj  *pycompat.Object
}

// errorf is an error of the file: "bench file F: " and the message.
func (p *benchParser) errorf(format string, args ...any) error {
	return errors.New(limits.OneLine("bench file " + p.file + ": " + fmt.Sprintf(format, args...)))
}

// describe is a short description of a decoded JSON value for a message.
func describe(v any) string {
	switch x := v.(type) {
	case []any:
		return "a list"
	case *pycompat.Object:
		return "an object"
	case string:
		return limits.Quote(x)
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	}
	return limits.Quote(pycompat.ReprOf(v))
}

// parse is ParseRun's work.
func (p *benchParser) parse(data []byte) (*Run, error) {
	v, err := pycompat.ParseJSON(data)
	if err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "extra data") {
			msg += " (results appended by --append-result? expected one result)"
		}
		return nil, p.errorf("not JSON: %s", msg)
	}
	obj, ok := v.(*pycompat.Object)
	if !ok {
		return nil, p.errorf("not a vllm bench serve result (expected a JSON object, got %s)", describe(v))
	}
	p.obj = obj
	if _, ok := obj.Get("input_lens"); !ok {
		if _, ok := obj.Get("duration"); ok {
			return nil, p.errorf(`no "input_lens": expected the per-request lists (vllm bench serve writes them with --save-detailed)`)
		}
		return nil, p.errorf(`not a vllm bench serve result (no "input_lens")`)
	}
	if _, ok := obj.Get("ramp_up_strategy"); ok {
		return nil, p.errorf(`key "ramp_up_strategy": a ramp-up run: expected a run at one request rate`)
	}
	run := &Run{File: p.file, Burstiness: 1}
	if run.Date, err = p.str("date"); err != nil {
		return nil, err
	}
	if run.ModelID, err = p.str("model_id"); err != nil {
		return nil, err
	}
	if err := p.config(run); err != nil {
		return nil, err
	}
	if err := p.requests(run); err != nil {
		return nil, err
	}
	return run, nil
}

// str is key's string value; "" when absent.
func (p *benchParser) str(key string) (string, error) {
	v, ok := p.obj.Get(key)
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", p.errorf("key %q: expected a string, got %s", key, describe(v))
	}
	return s, nil
}

// number is a decoded JSON number as a float (ints and floats; not bools).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case pycompat.JSONInt:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case float64:
		return x, true
	}
	return 0, false
}

// integer is a decoded JSON integer (or integral float) that fits an int.
func integer(v any) (int, bool) {
	switch x := v.(type) {
	case pycompat.JSONInt:
		n, err := strconv.Atoi(string(x))
		return n, err == nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x), true
		}
	}
	return 0, false
}

// intKey is key's integer value, at least lowest; present is false when
// the key is absent (or null, when nullOK).
func (p *benchParser) intKey(key string, lowest int, nullOK bool, expected string) (n int, present bool, err error) {
	v, ok := p.obj.Get(key)
	if !ok || (nullOK && v == nil) {
		return 0, false, nil
	}
	n, ok = integer(v)
	if !ok || n < lowest {
		return 0, false, p.errorf("key %q: expected %s, got %s", key, expected, describe(v))
	}
	return n, true, nil
}

// config reads the run's configuration keys and duration.
func (p *benchParser) config(run *Run) error {
	v, ok := p.obj.Get("request_rate")
	if !ok {
		return p.errorf(`no "request_rate": expected a number of requests/s or "inf"`)
	}
	if s, isStr := v.(string); isStr && s == "inf" {
		run.RequestRate = math.Inf(1)
	} else if r, isNum := number(v); isNum && r > 0 && !math.IsNaN(r) {
		run.RequestRate = r
	} else {
		return p.errorf(`key "request_rate": expected a positive number of requests/s or "inf", got %s`, describe(v))
	}
	if v, ok := p.obj.Get("burstiness"); ok {
		b, isNum := number(v)
		if !isNum || !(b > 0) {
			return p.errorf(`key "burstiness": expected a positive number, got %s`, describe(v))
		}
		run.Burstiness = b
	}
	var err error
	if run.MaxConcurrency, _, err = p.intKey("max_concurrency", 1, true, "a positive integer or null"); err != nil {
		return err
	}
	v, ok = p.obj.Get("duration")
	if !ok {
		return p.errorf(`no "duration": expected the benchmark's duration, s`)
	}
	d, isNum := number(v)
	if !isNum || !(d >= 0) || math.IsInf(d, 1) {
		return p.errorf(`key "duration": expected a non-negative number of seconds, got %s`, describe(v))
	}
	run.DurationS = d
	return nil
}

// list is key's list; present is false when the key is absent.
func (p *benchParser) list(key, expected string, required bool) (items []any, present bool, err error) {
	v, ok := p.obj.Get(key)
	if !ok {
		if required {
			return nil, false, p.errorf("no %q: expected %s", key, expected)
		}
		return nil, false, nil
	}
	items, ok = v.([]any)
	if !ok {
		return nil, false, p.errorf("key %q: expected %s, got %s", key, expected, describe(v))
	}
	return items, true, nil
}

// ints reads key's list of integers of at least lowest.
func (p *benchParser) ints(key string, lowest int, expected string) ([]int, error) {
	items, _, err := p.list(key, expected, true)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(items))
	for i, v := range items {
		n, ok := integer(v)
		if !ok || n < lowest {
			return nil, p.errorf("key %q: entry %d is %s: expected %s", key, i, describe(v), expected)
		}
		out[i] = n
	}
	return out, nil
}

// seconds is a time of a per-request list: a finite non-negative number.
func seconds(v any) (float64, bool) {
	x, ok := number(v)
	return x, ok && x >= 0 && !math.IsInf(x, 1)
}

// floats reads key's list of times, s; nil when absent and not required.
func (p *benchParser) floats(key string, required bool) ([]float64, bool, error) {
	const expected = "a list of non-negative numbers (s)"
	items, present, err := p.list(key, expected, required)
	if err != nil || !present {
		return nil, present, err
	}
	out := make([]float64, len(items))
	for i, v := range items {
		x, ok := seconds(v)
		if !ok {
			return nil, false, p.errorf("key %q: entry %d is %s: expected %s", key, i, describe(v), expected)
		}
		out[i] = x
	}
	return out, true, nil
}

// itlSums reads itls, a list of each request's inter-token latencies, as
// each request's sum of them.
func (p *benchParser) itlSums() ([]float64, bool, error) {
	const expected = "a list of lists of non-negative numbers (s)"
	items, present, err := p.list("itls", expected, false)
	if err != nil || !present {
		return nil, present, err
	}
	sums := make([]float64, len(items))
	for i, v := range items {
		gaps, ok := v.([]any)
		if !ok {
			return nil, false, p.errorf(`key "itls": entry %d is %s: expected %s`, i, describe(v), expected)
		}
		for j, g := range gaps {
			x, ok := seconds(g)
			if !ok {
				return nil, false, p.errorf(`key "itls": entry %d, item %d is %s: expected %s`, i, j, describe(g), expected)
			}
			sums[i] += x
		}
	}
	return sums, true, nil
}

// errorsList reads errors, a list of strings ("" for success).
func (p *benchParser) errorsList() ([]string, bool, error) {
	const expected = `a list of strings ("" for success)`
	items, present, err := p.list("errors", expected, false)
	if err != nil || !present {
		return nil, present, err
	}
	out := make([]string, len(items))
	for i, v := range items {
		s, ok := v.(string)
		if !ok {
			return nil, false, p.errorf(`key "errors": entry %d is %s: expected %s`, i, describe(v), expected)
		}
		out[i] = s
	}
	return out, true, nil
}

// requests reads the per-request lists into run.Requests and checks them
// against one another and against the counts.
func (p *benchParser) requests(run *Run) error {
	inputs, err := p.ints("input_lens", 1, "a list of positive integers (prompt tokens)")
	if err != nil {
		return err
	}
	outputs, err := p.ints("output_lens", 0, "a list of non-negative integers (output tokens)")
	if err != nil {
		return err
	}
	ttfts, _, err := p.floats("ttfts", true)
	if err != nil {
		return err
	}
	latencies, hasLatencies, err := p.floats("latencies", false)
	if err != nil {
		return err
	}
	itlSums, hasITLs, err := p.itlSums()
	if err != nil {
		return err
	}
	errs, hasErrors, err := p.errorsList()
	if err != nil {
		return err
	}
	if !hasLatencies && !hasITLs {
		return p.errorf(`no "latencies" or "itls": expected one of them to give each request's latency`)
	}
	n := len(inputs)
	for _, l := range []struct {
		key     string
		n       int
		present bool
	}{
		{"output_lens", len(outputs), true}, {"ttfts", len(ttfts), true}, {"latencies", len(latencies), hasLatencies},
		{"itls", len(itlSums), hasITLs}, {"errors", len(errs), hasErrors},
	} {
		if l.present && l.n != n {
			return p.errorf(`key %q has %d entries, "input_lens" %d`, l.key, l.n, n)
		}
	}
	if err := p.checkCount(n); err != nil {
		return err
	}

	// Requests of no output and no latency with an empty error: as many
	// completed, in order, as the completed count says beyond the others.
	want, present, err := p.intKey("completed", 0, false, "a non-negative integer")
	if err != nil {
		return err
	}
	emptyCompletions := 0
	if hasErrors && present {
		clear := 0
		for i := range n {
			if errs[i] == "" && !(outputs[i] == 0 && p.latencyOf(i, hasLatencies, latencies, ttfts, itlSums) == 0) {
				clear++
			}
		}
		emptyCompletions = max(0, want-clear)
	}
	run.Requests = make([]Request, n)
	completed := 0
	for i := range n {
		latency, latencyKey := 0.0, "latencies"
		if hasLatencies {
			latency = latencies[i]
		} else {
			latency, latencyKey = ttfts[i]+itlSums[i], "itls"
			if math.IsInf(latency, 1) {
				return p.errorf(`key "itls": entry %d: the TTFT and inter-token latencies add up past the float range: expected seconds`, i)
			}
		}
		q := Request{InputTokens: inputs[i], OutputTokens: outputs[i]}
		q.Failed = (hasErrors && errs[i] != "") || (latency == 0 && outputs[i] == 0)
		if q.Failed && hasErrors && errs[i] == "" && emptyCompletions > 0 {
			q.Failed = false // an empty completion
			emptyCompletions--
		}
		if !q.Failed {
			if ttfts[i] > latency {
				return p.errorf(`key "ttfts": entry %d is %s, more than the request's latency %s (from %q): expected a TTFT at most the latency`,
					i, pycompat.FloatRepr(ttfts[i]), pycompat.FloatRepr(latency), latencyKey)
			}
			q.TTFTS, q.LatencyS = ttfts[i], latency
			completed++
		}
		run.Requests[i] = q
	}
	if present && want != completed {
		return p.errorf(`key "completed" is %d, but %d requests completed (a request failed when its "errors" entry is non-empty, or its latency and "output_lens" entry are 0)`,
			want, completed)
	}
	if completed > 0 && run.DurationS == 0 {
		return p.errorf(`key "duration": 0 with %d completed requests: expected a positive number of seconds`, completed)
	}
	return nil
}

// checkCount checks the lists' length n against completed + failed when
// the file has failed, else against num_prompts when it has that.
func (p *benchParser) checkCount(n int) error {
	numPrompts, hasPrompts, err := p.intKey("num_prompts", 0, false, "a non-negative integer")
	if err != nil {
		return err
	}
	failed, hasFailed, err := p.intKey("failed", 0, false, "a non-negative integer")
	if err != nil {
		return err
	}
	if hasFailed {
		completed, hasCompleted, err := p.intKey("completed", 0, false, "a non-negative integer")
		if err != nil {
			return err
		}
		if !hasCompleted {
			return p.errorf(`key "failed" without "completed": expected both`)
		}
		if completed > n || failed != n-completed {
			return p.errorf(`key "input_lens" has %d entries, "completed" + "failed" %d + %d`, n, completed, failed)
		}
		return nil
	}
	if hasPrompts && numPrompts != n {
		return p.errorf(`key "input_lens" has %d entries, "num_prompts" %d`, n, numPrompts)
	}
	return nil
}

// latencyOf is request i's latency: its latencies entry, else its TTFT
// plus its inter-token latencies.
func (p *benchParser) latencyOf(i int, hasLatencies bool, latencies, ttfts, itlSums []float64) float64 {
	if hasLatencies {
		return latencies[i]
	}
	return ttfts[i] + itlSums[i]
}
