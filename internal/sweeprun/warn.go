package sweeprun

import (
	"cmp"
	"fmt"
	"slices"

	"servesim/internal/plant"
	"servesim/internal/runparams"
	"servesim/internal/simrun"
	"servesim/internal/sweep"
)

// maxListedCutRanges bounds the ranges of cells a warning of runs cut
// short by --max-sim-time lists; the others are counted.
const maxListedCutRanges = 10

// axisMaxSimTime is the axis of --max-sim-time.
const axisMaxSimTime = "max-sim-time"

// cutKey is what the runs of one warning of runs cut short share: their
// trace and --normalize (and --max-sim-time, when an axis of the sweep,
// else empty), as the grid writes them, and their --max-sim-time, which
// the warning names.
type cutKey struct {
	trace, normalize, maxSimTime string
	maxSimTimeS                  float64
}

// label is the settings of k, worded by name: "--trace a.csv --normalize
// 0.5".
func (k cutKey) label(name func(runparams.Setting) string) string {
	label := runparams.Format(name, "%s %s %s %s", runparams.Setting("trace"), k.trace, runparams.Setting("normalize"), k.normalize)
	if k.maxSimTime != "" {
		label += runparams.Format(name, " %s %s", runparams.Setting("max-sim-time"), k.maxSimTime)
	}
	return label
}

// cutGroup is the runs of one cutKey a sweep ran, and those of them whose
// arrivals ran past --max-sim-time with requests unfinished.
type cutGroup struct {
	key   cutKey
	first int // the first cell of the group: groups are warned of in its order
	runs  int // the runs of the group that ran
	cut   []sweep.CellRange
	// maxUnfinished and minUnfinished are the most and fewest requests a
	// cut run left unfinished, of requests; last is the latest last
	// arrival of a cut run (after --normalize).
	maxUnfinished, minUnfinished float64
	requests                     int
	last                         float64
}

// cutShort gathers, by trace, --normalize and --max-sim-time, the runs
// whose arrivals (after --normalize, which dilates them) ran past
// --max-sim-time with requests unfinished, as simulate warns of one
// (simrun.PastMaxSimTime): a sweep says so in one line per group, not per
// cell, so that a sweep of a thousand cells stays readable.
type cutShort struct {
	groups map[cutKey]*cutGroup
}

// addCutShort counts in cs the run of cell c, whose report is rep (nil:
// the run failed, and is not counted).
func (s *Sweep) addCutShort(cs *cutShort, c sweep.Cell, rep *plant.Report) {
	if rep == nil {
		return
	}
	key := cutKey{trace: s.grid.Text(c, sweep.AxisTrace), normalize: s.grid.Text(c, sweep.AxisNormalize), maxSimTimeS: rep.Plant.MaxSimulationTimeS}
	if s.grid.Has(axisMaxSimTime) {
		key.maxSimTime = s.grid.Text(c, axisMaxSimTime)
	}
	if cs.groups == nil {
		cs.groups = map[cutKey]*cutGroup{}
	}
	g := cs.groups[key]
	if g == nil {
		g = &cutGroup{key: key, first: c.Index}
		cs.groups[key] = g
	}
	g.runs++
	unfinished := rep.Summary.UnfinishedRequestsAtEnd
	if simrun.PastMaxSimTime(nil, rep.LastArrivalS, key.maxSimTimeS, unfinished) == "" {
		return
	}
	if len(g.cut) == 0 {
		g.minUnfinished = unfinished
	}
	g.cut = sweep.AddCells(g.cut, c.Index, c.Index)
	g.maxUnfinished, g.minUnfinished = max(g.maxUnfinished, unfinished), min(g.minUnfinished, unfinished)
	g.requests = max(g.requests, rep.Provenance.RequestsLoaded)
	g.last = max(g.last, rep.LastArrivalS)
}

// warn writes one line on w for each group with runs cut short, in the
// order of their first cells: its label, how many requests
// could not complete in how many of the group's runs (which cells), and
// why, with the --max-sim-time that covers the latest arrivals
// (simrun.PastMaxSimTime).
func (cs *cutShort) warn(w runparams.Warner) {
	var groups []*cutGroup
	for _, g := range cs.groups {
		if len(g.cut) > 0 {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b *cutGroup) int { return cmp.Compare(a.first, b.first) })
	for _, g := range groups {
		count := fmt.Sprintf("%.0f", g.maxUnfinished)
		if g.minUnfinished != g.maxUnfinished {
			count = fmt.Sprintf("%.0f to %.0f", g.minUnfinished, g.maxUnfinished)
		}
		n, cells := sweep.CountCells(g.cut), "cells "
		if n == 1 {
			cells = "cell "
		}
		cells += sweep.FormatRanges(g.cut, maxListedCutRanges)
		var runs string
		switch {
		case g.runs == 1:
			runs = fmt.Sprintf("its run (%s)", cells)
		case n == g.runs:
			runs = fmt.Sprintf("each of its %d runs (%s)", n, cells)
		default:
			runs = fmt.Sprintf("%d of its %d runs (%s)", n, g.runs, cells)
		}
		w.Warnf("servesim: sweep: %s: %s of %d requests could not complete in %s: %s\n",
			g.key.label(w.Name), count, g.requests, runs, simrun.PastMaxSimTime(w.Name, g.last, g.key.maxSimTimeS, g.maxUnfinished))
	}
}
