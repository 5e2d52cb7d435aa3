// Package capacity is servesim's capacity study: how many replicas of a
// unit fleet serve a workload within its SLOs, and at that size which
// clock controller spends the least energy.
//
// The search (capacity.go: Search, the bracket and bisection over
// sizes) simulates fleets with package fleet and judges each run (Judge);
// Run runs a study (Capacity) to a Report, and
// Document is what `servesim capacity` writes. A study over time
// (RunOverTime) sizes each window of the trace, its plan a
// schedule an autoscaler replays (PlanSchedule); a disaggregated study
// (RunDisagg) searches the prefill and decode pools' split, and
// over time (RunDisaggOverTime) each window's, a schedule per
// pool (DisaggPlan.ScheduleCSVs). The
// sizes a search may ask for form a grid (Grid) that shards
// evaluate ahead of it, written as records (EvaluationRecord) a later
// search reads back.
//
// Study is the study as the command's settings give it (Config): the unit
// fleet (one replica of a profile, or the groups of a fleet file), the
// trace, and either the whole search (Run), fed the records of earlier
// shards (evaluations), or one shard's share of the grid's sizes written
// as records while they finish (RunShard), resumed from what an earlier
// run of the shard left (ResumeAuto). Like the other run packages it is
// headless: a bad setting is a *runparams.FieldError naming the setting
// bare, and its warnings name settings through a runparams.Warner.
package capacity
