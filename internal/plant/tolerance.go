package plant

import "servesim/internal/workload"

// The reference's tolerances. The reference (../shared/reference,
// seed003_plant.py) writes each as a bare 1e-12; servesim names them by
// what they compare, with the same value, so that every comparison, and
// so every output byte, is the reference's.
const (
	// TimeEpsilonS is the step grid's time tolerance, seconds: a time
	// within it of a step's start counts as that step's (an arrival is
	// admitted when ArrivalTimeS <= step start + TimeEpsilonS), the grid
	// runs while its time is at most MaxSimulationTimeS + TimeEpsilonS, a
	// trace keeps rows at most maxElapsedS + TimeEpsilonS after its first,
	// a step belongs to control period floor((time + TimeEpsilonS) /
	// period), and a duration of at most TimeEpsilonS within a step is
	// none.
	//
	// Why 1e-12 s: the reference uses it in each of these places
	// (seed003_plant.py: simulate's loop `time_s <= maximum_simulation_time_s
	// + 1e-12` and `arrival_time_s <= time_s + 1e-12`, lines 1613-1616;
	// `remaining_time > 1e-12` and `decode_service_time > 1e-12`, lines
	// 1673 and 1689-1693; SampleAndHoldClockController,
	// line 1275; the trace reader, line 1130), and parity needs the same
	// comparisons. The grid's times are sums of TimeStepS steps, as the
	// reference forms them, so a time on a step boundary (0.8 s) may fall
	// just past the summed grid time (0.7999999999999999 s): the tolerance
	// keeps it in its step. It covers that rounding only early in a run:
	// the summed 0.1 s grid is first more than 1e-12 s from k/10 at step
	// 929 (92.9 s), by 2.2e-9 s after an hour and 1.6e-4 s after 10^7
	// steps, and from 16,384 s on the tolerance is below half the spacing
	// of doubles, so t + TimeEpsilonS rounds to t. There servesim
	// agrees with the reference because it sums the grid the same way, not
	// because of the tolerance. It is far below any real time difference:
	// the Azure traces' times are whole microseconds (1e-6 s) and a step
	// is 0.1 s, so it never joins two distinct arrivals or two steps.
	TimeEpsilonS = workload.TimeEpsilonS

	// TokenEpsilon is the work tolerance, tokens: a step, a round of the
	// prefill or decode loop or a decode increment that served at most
	// TokenEpsilon tokens served none (the reference's `served <= 1e-12`,
	// `progress <= 1e-12` and `decode_increment <= 1e-12`,
	// seed003_plant.py lines 1393, 1444, 1489 and 1689-1710). Token counts
	// are sums of rates times durations; a fluid remainder of 1e-12 token
	// is rounding, not work.
	TokenEpsilon = 1e-12

	// RateFloorTokensPerS is the least rate, tokens per second, that a
	// service time divides by: served / max(rate, RateFloorTokensPerS), so
	// a zero rate yields a finite time (seed003_plant.py lines 1671, 1687
	// and 1709).
	RateFloorTokensPerS = 1e-12

	// PowerEpsilonW is the power tolerance, watts: a clock level whose
	// power exceeds a limit by at most PowerEpsilonW is within it
	// (seed003_plant.py line 1352, the synthetic profile's power
	// governor).
	PowerEpsilonW = 1e-12
)
