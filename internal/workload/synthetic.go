package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// SyntheticTrace describes a seeded synthetic arrival trace: bursty
// arrivals and lognormal prompt and output lengths. CodeTraceLike
// configures it to resemble the Azure LLM inference trace 2023 (code):
// about 2.57 requests per second arriving in bursts, lognormal prompt and
// output lengths with the code trace's medians (about 1100 and 16 tokens)
// and spreads, clamped to its ranges; a model of that trace, not a sample
// of it. plant.DefaultTraceConfig is the embedded default trace.
//
// Arrivals: a burst holds a geometric number of requests (mean
// MeanBurstSize) spaced by exponential gaps of mean BurstGapS; the next
// burst starts an exponential pause after the previous one ends, with the
// mean pause MeanBurstSize/MeanRequestsPerS - (MeanBurstSize-1)*BurstGapS
// that makes the long-run rate MeanRequestsPerS. Token counts:
// round(exp(N(LogMean, LogSigma))) clamped to [Min, Max]. The random source
// is SplitMix64 seeded with Seed, with uniforms (u>>11)/2^53, exponentials
// -log(1-u) and normals by Box-Muller, so a trace depends only on its
// configuration.
type SyntheticTrace struct {
	Seed             uint64          // SplitMix64 seed
	DurationS        float64         // arrivals fall in [0, DurationS)
	Start            time.Time       // wall-clock time of arrival 0, for the CSV TIMESTAMP column
	MeanRequestsPerS float64         // long-run arrival rate, requests/s
	MeanBurstSize    float64         // mean requests per burst
	BurstGapS        float64         // mean gap between arrivals within a burst, s
	Prompt           LogNormalTokens // prompt length distribution, tokens
	Output           LogNormalTokens // output length distribution, tokens
	// Diurnal, when not nil, shapes the rate over the day and the week;
	// nil keeps it flat (the trace of a configuration without it is
	// unchanged, draw for draw).
	Diurnal *Diurnal
}

// Diurnal is the shape of a synthetic trace's rate over the day and the
// week, as serving traffic follows its users' hours: at time t the rate is
// MeanRequestsPerS x norm x (1 + Amplitude cos(2 pi (hour(t) - PeakHour) /
// 24)), times WeekendFactor on Saturdays and Sundays, with hour(t) and the
// day of the week read from Start + t (UTC) and norm = 7 / (5 + 2
// WeekendFactor), so that a whole week keeps MeanRequestsPerS. Bursts
// start by thinning: candidates at the peak rate, each kept with
// probability rate(t) / peak rate (Lewis and Shedler), and keep their
// shape. The published week-long Azure traces swing by a few times between
// night and day (DynamoLLM, HPCA 2025, Figure 2); this is a model of such a
// week, not a sample of one.
type Diurnal struct {
	Amplitude     float64 // in [0, 1): the peak hour's rate is 1 + Amplitude times the day's mean, the trough's 1 - Amplitude
	PeakHour      float64 // hour of the day of the peak, in [0, 24)
	WeekendFactor float64 // in (0, 1]: a weekend day's rate over a weekday's
}

// norm makes a week's mean multiplier 1.
func (d *Diurnal) norm() float64 { return 7 / (5 + 2*d.WeekendFactor) }

// Peak is the largest rate over the mean: the peak hour of a weekday.
func (d *Diurnal) Peak() float64 { return d.norm() * (1 + d.Amplitude) }

// multiplier is the rate at atS seconds after start over the mean rate.
func (d *Diurnal) multiplier(start time.Time, atS float64) float64 {
	clock := start.Sub(start.Truncate(24*time.Hour)).Seconds() + atS // seconds since start's midnight (UTC)
	day := math.Floor(clock / 86400)
	hour := (clock - day*86400) / 3600
	m := d.norm() * (1 + d.Amplitude*math.Cos(2*math.Pi*(hour-d.PeakHour)/24))
	switch (int(start.Weekday()) + int(day)) % 7 {
	case int(time.Saturday), int(time.Sunday):
		m *= d.WeekendFactor
	}
	return m
}

// Check says what is wrong with a shape: an amplitude outside [0, 1), a
// peak hour outside [0, 24) or a weekend factor outside (0, 1].
func (d *Diurnal) Check() error {
	switch {
	case !(d.Amplitude >= 0 && d.Amplitude < 1):
		return fmt.Errorf("diurnal amplitude %v: expected a number in [0, 1)", d.Amplitude)
	case !(d.PeakHour >= 0 && d.PeakHour < 24):
		return fmt.Errorf("peak hour %v: expected an hour in [0, 24)", d.PeakHour)
	case !(d.WeekendFactor > 0 && d.WeekendFactor <= 1):
		return fmt.Errorf("weekend factor %v: expected a number in (0, 1]", d.WeekendFactor)
	}
	return nil
}

// LogNormalTokens is a clamped lognormal token-count distribution.
type LogNormalTokens struct {
	LogMean, LogSigma float64 // mean and standard deviation of the natural log of the token count
	Min, Max          int     // inclusive clamp bounds, tokens
}

// CodeTraceLike returns the configuration resembling the Azure 2023 code
// trace, for durationS seconds of arrivals.
func CodeTraceLike(seed uint64, durationS float64) SyntheticTrace {
	return SyntheticTrace{
		Seed:             seed,
		DurationS:        durationS,
		Start:            time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		MeanRequestsPerS: 2.57,
		MeanBurstSize:    3,
		BurstGapS:        0.04,
		Prompt:           LogNormalTokens{LogMean: 7.0, LogSigma: 1.36, Min: 3, Max: 7437},
		Output:           LogNormalTokens{LogMean: 2.79, LogSigma: 1.0, Min: 1, Max: 1899},
	}
}

// WeekRequests is the size of the Azure 2024 week-long conversation trace,
// which WeekTraceLike matches: 27.3 million requests in a week.
const WeekRequests = 27_300_000

// WeekTraceLike returns the configuration of a synthetic week the size of
// the Azure 2024 conversation trace: CodeTraceLike at WeekRequests a week
// (45 requests a second) for seven days, with the gaps within a burst
// shortened to 10 ms so that bursts still pause between them. It stands in
// for the week-long traces, which are too large to ship, in benchmarks of
// memory and speed; write it with WriteCSV2024.
func WeekTraceLike(seed uint64) SyntheticTrace {
	const week = 7 * 24 * 3600.0
	c := CodeTraceLike(seed, week)
	c.Start = time.Date(2024, 5, 10, 0, 0, 0, 0, time.UTC)
	c.MeanRequestsPerS = WeekRequests / week
	c.BurstGapS = 0.01
	return c
}

// splitMix64 is a small, fully specified random source.
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uniform is in [0, 1).
func (s *splitMix64) uniform() float64 { return float64(s.next()>>11) / (1 << 53) }

func (s *splitMix64) exponential(mean float64) float64 { return -math.Log(1-s.uniform()) * mean }

func (s *splitMix64) normal() float64 {
	u1 := 1 - s.uniform() // (0, 1]
	u2 := s.uniform()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

func (d LogNormalTokens) draw(s *splitMix64) int {
	v := math.Round(math.Exp(d.LogMean + d.LogSigma*s.normal()))
	return int(min(max(v, float64(d.Min)), float64(d.Max)))
}

// Each calls yield with the arrival time in whole microseconds since Start
// and the token counts of every request, in arrival order, until yield
// returns false.
func (c SyntheticTrace) Each(yield func(arrivalMicros int64, prompt, output int) bool) {
	rng := splitMix64{state: c.Seed}
	rate, peak := c.MeanRequestsPerS, 1.0
	if c.Diurnal != nil {
		peak = c.Diurnal.Peak()
		rate *= peak // candidates at the peak rate, thinned below
	}
	meanPause := c.MeanBurstSize/rate - (c.MeanBurstSize-1)*c.BurstGapS
	continueP := 1 - 1/c.MeanBurstSize // geometric: P(another request in the burst)
	last := int64(0)
	burst := 0.0
	for {
		burst += rng.exponential(meanPause)
		if c.Diurnal != nil && burst < c.DurationS && rng.uniform()*peak >= c.Diurnal.multiplier(c.Start, burst) {
			continue // a candidate the hour's rate does not keep
		}
		at := burst
		for first := true; first || rng.uniform() < continueP; first = false {
			if !first {
				at += rng.exponential(c.BurstGapS)
			}
			if at >= c.DurationS {
				return
			}
			micros := max(int64(math.Round(at*1e6)), last)
			last = micros
			if !yield(micros, c.Prompt.draw(&rng), c.Output.draw(&rng)) {
				return
			}
		}
		burst = at
	}
}

// Requests returns the trace as a workload (IDs from 0, arrival times in
// seconds since the first request, as LoadWorkload would give).
func (c SyntheticTrace) Requests() []Request {
	var out []Request
	first := int64(-1)
	c.Each(func(at int64, prompt, output int) bool {
		if first < 0 {
			first = at
		}
		out = append(out, Request{ID: len(out), ArrivalTimeS: float64(at-first) / 1e6, PromptTokens: prompt, OutputTokens: output})
		return true
	})
	return out
}

// WriteCSV writes the trace in the Azure format: a header, then
// TIMESTAMP,ContextTokens,GeneratedTokens rows with seven fractional
// digits and CRLF line ends.
func (c SyntheticTrace) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "TIMESTAMP,ContextTokens,GeneratedTokens\r\n")
	c.Each(func(at int64, prompt, output int) bool {
		sec, micros := bits.Div64(0, uint64(at), 1e6)
		stamp := c.Start.Add(time.Duration(sec) * time.Second)
		fmt.Fprintf(bw, "%s.%06d0,%d,%d\r\n", stamp.Format(time.DateTime), micros, prompt, output)
		return true
	})
	return bw.Flush()
}

// WriteCSV2024 writes the trace in the Azure 2024 week-long form: a header,
// then TIMESTAMP,ContextTokens,GeneratedTokens rows whose times have a UTC
// offset and six fractional digits ("2024-05-10 00:00:00.009930+00:00"),
// with LF line ends.
func (c SyntheticTrace) WriteCSV2024(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	line := make([]byte, 0, 64)
	c.Each(func(at int64, prompt, output int) bool {
		sec, micros := bits.Div64(0, uint64(at), 1e6)
		stamp := c.Start.Add(time.Duration(sec) * time.Second)
		line = stamp.AppendFormat(line[:0], time.DateTime)
		line = append(line, '.')
		line = appendPadded(line, int(micros), 6)
		line = append(line, "+00:00,"...)
		line = strconv.AppendInt(line, int64(prompt), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(output), 10)
		line = append(line, '\n')
		bw.Write(line)
		return true
	})
	return bw.Flush()
}

// appendPadded appends n, nonnegative, with at least width digits.
func appendPadded(b []byte, n, width int) []byte {
	digits := strconv.AppendInt(nil, int64(n), 10)
	for range width - len(digits) {
		b = append(b, '0')
	}
	return append(b, digits...)
}
