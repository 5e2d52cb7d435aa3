package scenario

import (
	"fmt"
	"strconv"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
)

// Figure draws, per engine profile, goodput beside throughput, SLO
// attainment (on a fixed 0-100% axis, so engines and runs compare at a
// glance), and TTFT p50 and p99 (in ms or s by their range) (scenarios
// --plot).
func (r Report) Figure() figure.Figure {
	n := len(r.ScenarioComparisons)
	engines := make([]string, n)
	goodput, throughput := make([]float64, n), make([]float64, n)
	attainment := make([]float64, n)
	p50, p99 := make([]float64, n), make([]float64, n) // seconds
	workload := ""
	for i, s := range r.ScenarioComparisons {
		engines[i] = s.Engine
		goodput[i], throughput[i] = s.SLOGoodputRPS, s.RequestThroughputRPS
		attainment[i] = 100 * s.SLOAttainmentRatio
		p50[i], p99[i] = s.TTFTP50MS/1000, s.TTFTP99MS/1000
		workload = s.Workload
	}
	ttft := figure.DurationUnit(p50, p99)
	return figure.Figure{
		Title: fmt.Sprintf("scenarios: %s, %d requests, SLO TTFT <= %s ms and TPOT <= %s ms",
			workload, r.TraceRequests, strconv.FormatFloat(r.SLOTargets.TTFTSLOMilliseconds, 'g', -1, 64),
			strconv.FormatFloat(r.SLOTargets.TPOTSLOMilliseconds, 'g', -1, 64)),
		Width:  14 * vg.Inch,
		Height: 5 * vg.Inch,
		Columns: []figure.Column{
			{Panels: []*figure.Panel{figure.Bars("goodput under the SLO", "requests/s", engines,
				[]figure.BarGroup{{Name: "SLO goodput", Values: goodput}, {Name: "throughput", Values: throughput}})}},
			{Panels: []*figure.Panel{figure.Bars("SLO attainment", "% of requests meeting both SLOs", engines,
				[]figure.BarGroup{{Name: "attainment", Values: attainment}}).WithYRange(0, 100)}},
			{Panels: []*figure.Panel{figure.Bars("time to first token", "TTFT ("+ttft.Name+")", engines,
				[]figure.BarGroup{{Name: "p50", Values: ttft.Of(p50)}, {Name: "p99", Values: ttft.Of(p99)}})}},
		},
	}
}
