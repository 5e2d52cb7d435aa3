package trace

import (
	"fmt"
	"math"
	"strconv"

	"servesim/internal/numeric"
	"servesim/internal/texttable"
)

// Stats describes a loaded trace: what `servesim trace stats` prints.
// Undefined values (a rate over a zero span, the variation of no gap or of
// gaps of mean zero) are NaN, which JSON writes as null.
type Stats struct {
	TracePath   string `json:"trace_path"`   // where the trace was read from, or "stdin"
	TraceSHA256 string `json:"trace_sha256"` // SHA-256 hex of the bytes read
	Format      Format `json:"format"`       // the format read, detected or forced
	Requests    int    `json:"requests"`     // requests kept
	// SpanS is the last arrival after the first, seconds.
	SpanS float64 `json:"span_s"`
	// MeanRatePerS is 1 / the mean inter-arrival time: (requests - 1) / span.
	MeanRatePerS float64 `json:"mean_rate_per_s"`
	// PeakRate1sPerS and PeakRate60sPerS are the most arrivals in any
	// window [t, t+W) of W = 1 s and 60 s, divided by W.
	PeakRate1sPerS  float64 `json:"peak_rate_1s_per_s"`
	PeakRate60sPerS float64 `json:"peak_rate_60s_per_s"`
	// InterarrivalCV is the coefficient of variation of the inter-arrival
	// times: their standard deviation (np.std, ddof 0) over their mean.
	InterarrivalCV float64 `json:"interarrival_cv"`
	// PromptTokens and OutputTokens are the token counts' percentiles.
	PromptTokens TokenStats `json:"prompt_tokens"`
	OutputTokens TokenStats `json:"output_tokens"`
	// RequestsSkipped counts the rows skipped by reason ({} when none).
	RequestsSkipped map[string]int `json:"requests_skipped"`
}

// TokenStats are percentiles of a token count over the requests: numpy's
// linear percentile, and the largest.
type TokenStats struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max int     `json:"max"`
}

// Rate windows of Stats, microseconds.
const (
	window1s  = 1_000_000
	window60s = 60_000_000
)

// ComputeStats computes the statistics of t.
func ComputeStats(t *Trace) Stats {
	requests := t.Requests
	n := len(requests)
	s := Stats{
		TracePath: t.Source, TraceSHA256: t.SHA256, Format: t.Format, Requests: n,
		MeanRatePerS: math.NaN(), InterarrivalCV: math.NaN(),
		PeakRate1sPerS: math.NaN(), PeakRate60sPerS: math.NaN(),
		PromptTokens:    tokenStats(n, func(i int) int { return requests[i].PromptTokens }),
		OutputTokens:    tokenStats(n, func(i int) int { return requests[i].OutputTokens }),
		RequestsSkipped: map[string]int{},
	}
	for reason, count := range t.Skipped {
		s.RequestsSkipped[reason] = count
	}
	if n == 0 {
		return s
	}
	arrival := func(i int) int64 { return requests[i].ArrivalMicroseconds() }
	span := arrival(n-1) - arrival(0)
	s.SpanS = float64(span) / 1e6
	if span > 0 {
		s.MeanRatePerS = float64(n-1) / s.SpanS
	}
	s.PeakRate1sPerS = float64(peakCount(n, arrival, window1s)) / (window1s / 1e6)
	s.PeakRate60sPerS = float64(peakCount(n, arrival, window60s)) / (window60s / 1e6)
	if n > 1 {
		// The one array of a row's size besides the requests: 8 bytes a
		// request (the README's peak of trace stats).
		gaps := make([]float64, n-1)
		for i := range gaps {
			gaps[i] = float64(arrival(i+1)-arrival(i)) / 1e6
		}
		if mean := numeric.Mean(gaps); mean > 0 {
			for i, g := range gaps {
				gaps[i] = (g - mean) * (g - mean)
			}
			s.InterarrivalCV = math.Sqrt(numeric.Mean(gaps)) / mean
		}
	}
	return s
}

// peakCount is the most of the n sorted arrivals arrival(i) in any window
// [t, t+w).
func peakCount(n int, arrival func(int) int64, w int64) int {
	best, lo := 0, 0
	for hi := range n {
		t := arrival(hi)
		for arrival(lo) <= t-w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// tokenStats are the percentiles of the n counts count(i).
func tokenStats(n int, count func(int) int) TokenStats {
	if n == 0 {
		return TokenStats{P50: math.NaN(), P90: math.NaN(), P99: math.NaN()}
	}
	values := make([]float64, n)
	largest := 0
	for i := range values {
		c := count(i)
		values[i] = float64(c)
		largest = max(largest, c)
	}
	return TokenStats{
		P50: numeric.PercentileLinearSelect(values, 50),
		P90: numeric.PercentileLinearSelect(values, 90),
		P99: numeric.PercentileLinearSelect(values, 99),
		Max: largest,
	}
}

// Table writes the statistics as a two-column table for terminals.
func (s *Stats) Table() string {
	t := texttable.Table{Columns: []texttable.Column{{Header: "trace", Text: true}, {Header: s.TracePath, Text: true}}}
	t.AddRow("format", string(s.Format))
	t.AddRow("requests", strconv.Itoa(s.Requests))
	t.AddRow("span (s)", texttable.Fixed(s.SpanS, 3))
	t.AddRow("mean rate (1/s)", significant(s.MeanRatePerS))
	t.AddRow("peak rate, 1 s window (1/s)", significant(s.PeakRate1sPerS))
	t.AddRow("peak rate, 60 s window (1/s)", significant(s.PeakRate60sPerS))
	t.AddRow("inter-arrival CV", significant(s.InterarrivalCV))
	for _, tok := range []struct {
		name  string
		stats TokenStats
	}{{"prompt tokens", s.PromptTokens}, {"output tokens", s.OutputTokens}} {
		t.AddRow(tok.name+" p50 / p90 / p99 / max", fmt.Sprintf("%s / %s / %s / %d",
			texttable.Fixed(tok.stats.P50, 1), texttable.Fixed(tok.stats.P90, 1), texttable.Fixed(tok.stats.P99, 1), tok.stats.Max))
	}
	skipped := "none"
	if len(s.RequestsSkipped) > 0 {
		skipped = skippedList(s.RequestsSkipped)
	}
	t.AddRow("rows skipped", skipped)
	return t.String()
}

// significant writes x with four significant digits; "-" when undefined.
func significant(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}
