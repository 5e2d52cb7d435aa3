package main

import (
	"fmt"
	"strconv"

	"gonum.org/v1/plot/vg"

	"servesim/internal/figure"
	"servesim/internal/scenario"
)

// scenariosFigure draws, per engine profile, goodput beside throughput, SLO
// attainment, and TTFT p50 and p99.
func scenariosFigure(r scenario.Report) figure.Figure {
	n := len(r.ScenarioComparisons)
	engines := make([]string, n)
	goodput, throughput := make([]float64, n), make([]float64, n)
	attainment := make([]float64, n)
	p50, p99 := make([]float64, n), make([]float64, n)
	workload := ""
	for i, s := range r.ScenarioComparisons {
		engines[i] = s.Engine
		goodput[i], throughput[i] = s.SLOGoodputRPS, s.RequestThroughputRPS
		attainment[i] = 100 * s.SLOAttainmentRatio
		p50[i], p99[i] = s.TTFTP50MS, s.TTFTP99MS
		workload = s.Workload
	}
	return figure.Figure{
		Title: fmt.Sprintf("scenarios: %s, %d requests, SLO TTFT <= %s ms and TPOT <= %s ms",
			workload, r.TraceRequests, strconv.FormatFloat(r.SLOTargets.TTFTSLOMS, 'g', -1, 64),
			strconv.FormatFloat(r.SLOTargets.TPOTSLOMS, 'g', -1, 64)),
		Width:  14 * vg.Inch,
		Height: 5 * vg.Inch,
		Columns: []figure.Column{
			{Panels: []*figure.Panel{figure.Bars("goodput under the SLO", "requests/s", engines,
				[]figure.BarGroup{{Name: "SLO goodput", Values: goodput}, {Name: "throughput", Values: throughput}})}},
			{Panels: []*figure.Panel{figure.Bars("SLO attainment", "% of requests meeting both SLOs", engines,
				[]figure.BarGroup{{Name: "attainment", Values: attainment}})}},
			{Panels: []*figure.Panel{figure.Bars("time to first token", "ms", engines,
				[]figure.BarGroup{{Name: "p50", Values: p50}, {Name: "p99", Values: p99}})}},
		},
	}
}
