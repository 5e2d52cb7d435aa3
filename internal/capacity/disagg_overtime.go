package capacity

import (
	"context"
	"errors"

	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// DisaggWindow is one window of a disaggregated plan: the fewest prefill
// and decode replicas together meeting the target on the window's
// requests alone (the least energy among splits of as many). Its
// PlanWindow's replicas are their sum (0 for a window without
// requests; for a window no split searched serves, the split of best
// attainment, meets_target false), its attainment, p99_ttft_s and
// energy_kwh the split's, its simulations the splits the window's search
// used (the static study's evaluations: the same for any jobs).
type DisaggWindow struct {
	PlanWindow
	PrefillReplicas int `json:"prefill_replicas"` // prefill_replicas: the prefill pool's size
	DecodeReplicas  int `json:"decode_replicas"`  // decode_replicas: the decode pool's size
}

// DisaggPlan is a disaggregated capacity study over time: per window of
// the trace, the fewest prefill and decode replicas meeting the target on
// that window's requests alone.
type DisaggPlan struct {
	WindowS float64        `json:"window_s"` // window_s: the windows' length, s
	Windows []DisaggWindow `json:"windows"`  // windows: in time order
	// peak_prefill_replicas, peak_decode_replicas, peak_replicas: the
	// largest prefill pool, decode pool and sum of the two of the plan
	// (maybe of different windows).
	PeakPrefillReplicas int `json:"peak_prefill_replicas"`
	PeakDecodeReplicas  int `json:"peak_decode_replicas"`
	PeakReplicas        int `json:"peak_replicas"`
	// unreachable_windows: windows where no split searched meets the
	// target.
	UnreachableWindows int `json:"unreachable_windows"`
	// prefill_replica_hours, decode_replica_hours: each pool's replicas
	// times window_s, summed over the windows, / 3600; replica_hours:
	// their sum.
	PrefillReplicaHours float64 `json:"prefill_replica_hours"`
	DecodeReplicaHours  float64 `json:"decode_replica_hours"`
	ReplicaHours        float64 `json:"replica_hours"`
	// energy_kwh: the windows' energy at their splits, summed.
	EnergyKWh float64 `json:"energy_kwh"`
}

// RunDisaggOverTime is RunOverTime's study of c (its plan
// of the mixed fleet) with, for each window with requests, the
// disaggregated study of that window's requests alone, after the
// window's search: RunDisagg of the pools (DisaggUnit) over link,
// with the window's study (c's router, first controller, SLO, target and
// largest pool), each pool bounded, while no split meets the target, by
// the window's mixed answer as a study of the window alone bounds it
// (twice its replicas, at least 4). A window without requests needs no
// replica in either pool.
//
// Windows no size of the mixed fleet serves come with the plans as an
// *UnreachableWindowsError; else windows no split serves do, as one with
// Disaggregated set. Another error of a window ends the study with that
// of the earliest window.
func RunDisaggOverTime(ctx context.Context, requests []plant.Request, c Capacity, pools []fleet.Group, link fleet.Link, windowS float64, jobs int, progress func()) (*Plan, *DisaggPlan, error) {
	pools, err := DisaggUnit(pools)
	if err != nil {
		return nil, nil, err
	}
	windows, err := SplitWindows(requests, windowS)
	if err != nil {
		return nil, nil, err
	}
	dplan := &DisaggPlan{WindowS: windowS, Windows: make([]DisaggWindow, len(windows))}
	for k, w := range windows {
		dplan.Windows[k] = DisaggWindow{PlanWindow: emptyWindow(k, w)}
	}
	plan, err := runOverTime(ctx, requests, c, windowS, jobs, progress, func(ctx context.Context, k int, requests []plant.Request, c Capacity, mixed *Report) error {
		d := DisaggStudy{Capacity: c, Link: link, DecodeCap: disaggCap(mixed)}
		d.Unit = pools
		report, err := RunDisagg(ctx, requests, d)
		var unreachable *DisaggUnreachableError
		if err != nil && !errors.As(err, &unreachable) {
			return err
		}
		e, ok := report.Answer()
		if !ok {
			e = unreachable.Best
		}
		row := &dplan.Windows[k]
		row.PrefillReplicas, row.DecodeReplicas, row.Replicas, row.MeetsTarget = e.PrefillReplicas, e.DecodeReplicas, e.Replicas, ok
		row.Attainment, row.P99TTFTS, row.EnergyKWh = e.Attainment, e.P99TTFTS, e.EnergyKWh
		row.Simulations = len(report.Evaluations)
		return nil
	})
	var mixedUnreachable *UnreachableWindowsError
	if err != nil && !errors.As(err, &mixedUnreachable) {
		return nil, nil, err
	}
	prefill, decode := 0, 0
	for _, w := range dplan.Windows {
		dplan.PeakPrefillReplicas = max(dplan.PeakPrefillReplicas, w.PrefillReplicas)
		dplan.PeakDecodeReplicas = max(dplan.PeakDecodeReplicas, w.DecodeReplicas)
		dplan.PeakReplicas = max(dplan.PeakReplicas, w.Replicas)
		prefill += w.PrefillReplicas
		decode += w.DecodeReplicas
		dplan.EnergyKWh += w.EnergyKWh
		if !w.MeetsTarget {
			dplan.UnreachableWindows++
		}
	}
	dplan.PrefillReplicaHours, dplan.DecodeReplicaHours = replicaHours(prefill, windowS), replicaHours(decode, windowS)
	dplan.ReplicaHours = replicaHours(prefill+decode, windowS)
	if err == nil && dplan.UnreachableWindows > 0 {
		err = &UnreachableWindowsError{Windows: dplan.UnreachableWindows, Of: len(dplan.Windows), Target: c.Search.Target, Disaggregated: true}
	}
	return plan, dplan, err
}

// Schedules returns the plan as two schedules, the prefill pool's and the
// decode pool's: per window, its start in seconds from the first arrival
// and each pool's replicas.
func (p *DisaggPlan) Schedules() (startS []float64, prefill, decode []int) {
	for _, w := range p.Windows {
		startS = append(startS, w.StartS)
		prefill = append(prefill, w.PrefillReplicas)
		decode = append(decode, w.DecodeReplicas)
	}
	return startS, prefill, decode
}

// ScheduleCSVs are the plan's schedule files, the prefill pool's and the
// decode pool's, each as Plan.ScheduleCSV writes one: what a
// fleet file's prefill and decode groups read with "autoscale":
// "schedule:FILE" or "oracle:FILE".
func (p *DisaggPlan) ScheduleCSVs() (prefill, decode []byte) {
	startS, pre, dec := p.Schedules()
	return scheduleCSV(startS, pre), scheduleCSV(startS, dec)
}
