package fleet

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"servesim/internal/plant"
)

// Defaults of an elastic fleet, from what operators report.
const (
	// DefaultProvisionS is a replica's provisioning time, s: a cloud GPU
	// VM or node comes up in 60 to 120 s and its GPU driver initializes in
	// 20 to 40 s more (systemoverflow.com, "Cold start problem: model
	// loading and predictive warming strategies"; the issue's 3 to 10
	// minutes of cold start in all, preproom.ai "inference GPU
	// autoscaler").
	DefaultProvisionS = 150.0
	// DefaultLoadS is a replica's loading time, s: the container image
	// pull (30 to 90 s for GPU images) and the weights loaded into GPU
	// memory (100 to 300 s for models of several GB; a 10 GB model takes
	// 180 s and more), warm-up (CUDA graph capture) included (same
	// sources). With DefaultProvisionS, a cold start of 5 minutes.
	DefaultLoadS = 150.0
	// ColdStartProvisionShare is the share of --cold-start that is
	// provisioning; the rest is loading (DefaultProvisionS over the
	// default cold start).
	ColdStartProvisionShare = DefaultProvisionS / (DefaultProvisionS + DefaultLoadS)
	// DefaultScaleIntervalS is how often the autoscaler acts, s: KEDA's
	// default pollingInterval (keda.sh, "Scaling Deployments"; Azure
	// Container Apps documents the same default for its KEDA scaler).
	DefaultScaleIntervalS = 30.0
	// DefaultMinReplicas is the least replicas an autoscaler keeps: the
	// HorizontalPodAutoscaler's default minReplicas (1); --min-replicas 0
	// scales to zero, as KEDA's minReplicaCount 0 does.
	DefaultMinReplicas = 1
	// DefaultMaxReplicas is the most replicas an autoscaler asks for:
	// KEDA's default maxReplicaCount (keda.sh, "Scaling Deployments").
	DefaultMaxReplicas = 100
	// DefaultScaleUpWindowS and DefaultScaleDownWindowS are the
	// HorizontalPodAutoscaler's default stabilization windows, s
	// (kubernetes.io, "Horizontal Pod Autoscaling", behavior: scaleUp 0 s,
	// scaleDown 300 s; KEP-853).
	DefaultScaleUpWindowS   = 0.0
	DefaultScaleDownWindowS = 300.0
	// DefaultScaleUpPods and DefaultScaleUpPercent are the
	// HorizontalPodAutoscaler's default scale-up policies: at most 4 pods
	// or 100% more (the larger, selectPolicy Max) per 15 s period
	// (kubernetes.io, "Horizontal Pod Autoscaling", default behavior); a
	// decision may add that much to the count it scales.
	DefaultScaleUpPods    = 4
	DefaultScaleUpPercent = 100.0
	// DefaultTolerance is the HorizontalPodAutoscaler's tolerance: no
	// scaling while the metric is within 10% of its target
	// (kubernetes.io, "Horizontal Pod Autoscaling", algorithm details).
	DefaultTolerance = 0.1
	// MetricsWindowS is the window of the rates and the SLO attainment a
	// metrics pipeline shows an autoscaler, s: Prometheus' rate() over a
	// minute, the usual scrape-based query.
	MetricsWindowS = 60.0
	// DefaultGPUCostPerHour is the price of a replica's billed hour, $: an
	// AWS g6.xlarge (one NVIDIA L4, the embedded profile's GPU) on demand
	// in us-east-1 (aws.amazon.com/ec2/pricing/on-demand, $0.8048).
	DefaultGPUCostPerHour = 0.8048
	// DefaultEnergyPricePerKWh is the price of a kWh, $: about the US
	// average retail price of electricity to commercial customers in 2024
	// (U.S. EIA, Electric Power Monthly, table 5.3: 12.7 to 13 cents).
	DefaultEnergyPricePerKWh = 0.13
	// MaxReplicaStarts bounds the replicas an elastic run starts in all.
	MaxReplicaStarts = 1 << 16
)

// Autoscaler names, as --autoscale takes them.
const (
	StaticName      = "static"
	QueueName       = "queue"
	UtilizationName = "utilization"
	ScheduleName    = "schedule"
	OracleName      = "oracle"
	ExecName        = "exec"
)

// AutoscalerNames lists the built-in autoscalers, with their arguments.
var AutoscalerNames = []string{StaticName, QueueName + ":target=N", UtilizationName + ":target=U", ScheduleName + ":FILE", OracleName + "[:window=S,attainment=A]", OracleName + ":FILE", ExecName + ":COMMAND"}

// The plain oracle's defaults: hourly windows, and the attainment target
// capacity's --attainment defaults to.
const (
	DefaultOracleWindowS    = 3600
	DefaultOracleAttainment = 0.99
)

// ScaleObservation is what a metrics pipeline shows an autoscaler at a
// scaling decision: replica counts by lifecycle phase, the ready replicas'
// queues and KV caches, the arrival rate and the SLO attainment over the
// last MetricsWindowS. It never holds a request's output length.
type ScaleObservation struct {
	TimeS        float64 `json:"time_s"`       // time_s: the decision's time, s since the first arrival
	Requested    int     `json:"requested"`    // requested: the replica count asked for last
	Provisioning int     `json:"provisioning"` // provisioning: replicas whose node is coming up
	Loading      int     `json:"loading"`      // loading: replicas loading weights
	Ready        int     `json:"ready"`        // ready: routable replicas
	Draining     int     `json:"draining"`     // draining: replicas finishing their requests
	// RouterWaiting is the requests that arrived while no replica was
	// ready and wait at the router.
	RouterWaiting int `json:"router_waiting"`
	// Waiting is the requests waiting for prefill at the ready and
	// draining replicas plus RouterWaiting; Running those decoding.
	Waiting int `json:"waiting"`
	Running int `json:"running"`
	// KVUsage is the mean KV-cache occupancy of the ready replicas, a
	// fraction of their capacity (0 with none ready).
	KVUsage float64 `json:"kv_usage"`
	// ArrivalRatePerS is the arrivals over the last WindowS, per s.
	ArrivalRatePerS float64 `json:"arrival_rate_per_s"`
	// SLOAttainment is the share of the requests completed in the last
	// WindowS that met their objectives; nil (null) when none completed.
	SLOAttainment *float64 `json:"slo_attainment"`
	WindowS       float64  `json:"window_s"` // window_s: the window of the rate and the attainment
	// MaxActiveRequests is a replica's capacity of running requests
	// (plant.Plant.MaxActiveRequests).
	MaxActiveRequests int `json:"max_active_requests"`
	MinReplicas       int `json:"min_replicas"` // min_replicas: the least count the fleet keeps
	MaxReplicas       int `json:"max_replicas"` // max_replicas: the most it starts
	// Replicas are the ready replicas' loads, in replica order.
	Replicas []ReplicaLoad `json:"replicas"`
	// Role is, in a disaggregated fleet, the pool the observed group
	// belongs to (prefill or decode; left out otherwise). The counts
	// above are then the pool's: a decode replica's waiting requests
	// include the KV transfers routed to it and not arrived, and the
	// decode pool's RouterWaiting the first tokens waiting for a ready
	// decode replica.
	Role string `json:"role,omitempty"`
}

// ReplicaLoad is one ready replica as a metrics pipeline sees it.
type ReplicaLoad struct {
	Replica  int     `json:"replica"`   // replica: its number in the run
	Waiting  int     `json:"waiting"`   // waiting: requests queued for prefill
	Running  int     `json:"running"`   // running: requests decoding
	KVTokens float64 `json:"kv_tokens"` // kv_tokens: KV-cache occupancy, tokens
}

// An Autoscaler decides, every scale interval, how many replicas an
// elastic fleet should have. The fleet clamps the answer to its minimum and
// maximum and starts or drains replicas to follow it. reason says why, for
// the scale events. Give every run its own instance.
type Autoscaler interface {
	Name() string
	Scale(obs *ScaleObservation) (replicas int, reason string, err error)
}

// Planned is implemented by an autoscaler that knows the count it wants at
// the start (a schedule): the fleet starts that many replicas ready at 0.
type Planned interface {
	// InitialReplicas is the count to have ready at 0; leadS is the cold
	// start plus the scale interval.
	InitialReplicas(leadS float64) int
}

// Static keeps the fleet at its initial size: today's fleet.
type Static struct{}

// Name implements Autoscaler.
func (Static) Name() string { return StaticName }

// Scale implements Autoscaler: the count asked for last.
func (Static) Scale(obs *ScaleObservation) (int, string, error) { return obs.Requested, "", nil }

// Stabilized is the HorizontalPodAutoscaler's way from a metric to a
// count: a recommendation of ceil(metric sum / target) (none while the
// per-replica metric is within Tolerance of the target), stabilized over
// windows (kubernetes.io, "Horizontal Pod Autoscaling"): a scale-up takes
// the least recommendation of the last UpWindowS, a scale-down the
// greatest of the last DownWindowS; a scale-up is bounded by the scale-up
// policies (UpPods, UpPercent).
type Stabilized struct {
	Target      float64
	UpWindowS   float64
	DownWindowS float64
	Tolerance   float64
	// UpPods and UpPercent bound a scale-up: to at most the larger of
	// UpPods more and UpPercent% more than the count asked for last.
	UpPods       int
	UpPercent    float64
	history      []recommendation
	name, metric string
	sum          func(*ScaleObservation) float64
}

// recommendation is one past recommendation of a Stabilized autoscaler.
type recommendation struct {
	timeS    float64
	replicas int
}

// NewQueue returns KEDA's scaler on the waiting requests (vLLM's
// num_requests_waiting summed over the ready replicas, plus those waiting
// at the router): target waiting requests per ready replica.
func NewQueue(target float64) *Stabilized {
	return &Stabilized{Target: target, UpWindowS: DefaultScaleUpWindowS, DownWindowS: DefaultScaleDownWindowS,
		Tolerance: DefaultTolerance, UpPods: DefaultScaleUpPods, UpPercent: DefaultScaleUpPercent, name: QueueName, metric: "waiting",
		sum: func(o *ScaleObservation) float64 { return float64(o.Waiting) }}
}

// NewUtilization returns a scaler on the running and waiting requests over
// the ready replicas' capacity (MaxActiveRequests each): target utilization
// U per ready replica.
func NewUtilization(target float64) *Stabilized {
	return &Stabilized{Target: target, UpWindowS: DefaultScaleUpWindowS, DownWindowS: DefaultScaleDownWindowS,
		Tolerance: DefaultTolerance, UpPods: DefaultScaleUpPods, UpPercent: DefaultScaleUpPercent, name: UtilizationName, metric: "running+waiting over capacity",
		sum: func(o *ScaleObservation) float64 {
			return float64(o.Running+o.Waiting) / float64(max(1, o.MaxActiveRequests))
		}}
}

// Name implements Autoscaler.
func (s *Stabilized) Name() string {
	return fmt.Sprintf("%s:target=%s,up=%s,down=%s,tolerance=%s,uppods=%d,uppercent=%s", s.name, fmtG(s.Target), fmtG(s.UpWindowS),
		fmtG(s.DownWindowS), fmtG(s.Tolerance), s.UpPods, fmtG(s.UpPercent))
}

// Scale implements Autoscaler.
func (s *Stabilized) Scale(obs *ScaleObservation) (int, string, error) {
	sum := s.sum(obs)
	current := obs.Requested
	rec := current
	why := ""
	switch {
	case obs.Ready > 0 && math.Abs(sum/float64(obs.Ready)/s.Target-1) <= s.Tolerance:
		why = "within tolerance"
	default:
		rec = int(math.Ceil(sum/s.Target - 1e-9))
	}
	now := obs.TimeS
	s.history = append(s.history, recommendation{now, rec})
	up, down := rec, rec
	kept := s.history[:0]
	for _, h := range s.history {
		if h.timeS < now-max(s.UpWindowS, s.DownWindowS)-1e-9 {
			continue
		}
		kept = append(kept, h)
		if h.timeS >= now-s.UpWindowS-1e-9 {
			up = min(up, h.replicas)
		}
		if h.timeS >= now-s.DownWindowS-1e-9 {
			down = max(down, h.replicas)
		}
	}
	s.history = kept
	out := current
	if out < up {
		out = up
	}
	if out > down {
		out = down
	}
	if limit := max(current+s.UpPods, int(math.Floor(float64(current)*(1+s.UpPercent/100)+1e-9))); out > limit {
		out = limit
	}
	if why == "" {
		why = fmt.Sprintf("%s %s over %d ready, target %s each: %d", s.metric, fmtG(roundSig(sum)), obs.Ready, fmtG(s.Target), rec)
		if out != rec {
			why += fmt.Sprintf(", stabilized to %d", out)
		}
	}
	return out, why, nil
}

// seed records the initial count as a recommendation at 0, so that a
// scale-down waits its window from the start.
func (s *Stabilized) seed(replicas int) {
	s.history = append(s.history[:0], recommendation{0, replicas})
}

// roundSig rounds x to 4 significant digits for a reason.
func roundSig(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return v
}

// fmtG formats x as %g does, shortest.
func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// newPlannedOracle is the plain oracle of spec: its options (args,
// window=S and attainment=A) and the schedule o.Plan makes of them.
func newPlannedOracle(spec, args string, o AutoscaleOptions) (Autoscaler, error) {
	fail := func(option string, err error) (Autoscaler, error) {
		return nil, &OptionError{Spec: spec, Option: option, Err: err}
	}
	windowS, attainment := float64(DefaultOracleWindowS), DefaultOracleAttainment
	if args != "" {
		option, err := numericOptions(args, "expected KEY=VALUE (or oracle:FILE, a plan capacity --out-plan wrote)", func(key, value string, x float64) error {
			switch key {
			case "window":
				if !(x > 0) {
					return fmt.Errorf("%s: expected a window of more than 0 s", value)
				}
				windowS = x
			case "attainment":
				if !(x > 0 && x <= 1) {
					return fmt.Errorf("%s: expected an attainment target above 0, at most 1", value)
				}
				attainment = x
			default:
				return errors.New("unknown option: expected window or attainment")
			}
			return nil
		})
		if err != nil {
			return fail(option, err)
		}
	}
	if o.Plan == nil {
		return fail("", errors.New("the plain oracle plans on the trace: give oracle:FILE here"))
	}
	s, err := o.Plan(windowS, attainment)
	if err != nil {
		return nil, err
	}
	return &ScheduleScaler{Schedule: s, Oracle: true, LeadS: o.LeadS}, nil
}

// ScheduleScaler asks for the count its schedule gives each window: a
// replica count per time window (from a forecast, or the plan capacity
// --over-time makes). With Lead (an oracle), it asks at each decision for
// the most any window within Lead seconds needs, so that replicas
// started then are ready when their window starts.
type ScheduleScaler struct {
	Schedule *Schedule
	Oracle   bool
	// LeadS is the cold start plus the scale interval (an oracle's).
	LeadS float64
}

// Name implements Autoscaler.
func (s *ScheduleScaler) Name() string {
	if s.Oracle {
		return OracleName + ":" + s.Schedule.Path
	}
	return ScheduleName + ":" + s.Schedule.Path
}

// Scale implements Autoscaler.
func (s *ScheduleScaler) Scale(obs *ScaleObservation) (int, string, error) {
	if !s.Oracle {
		i := s.Schedule.window(obs.TimeS)
		return s.Schedule.Replicas[i], fmt.Sprintf("schedule line %d", s.Schedule.Lines[i]), nil
	}
	n, i := s.Schedule.most(obs.TimeS, obs.TimeS+s.LeadS)
	return n, fmt.Sprintf("oracle: schedule line %d within %s s", s.Schedule.Lines[i], fmtG(s.LeadS)), nil
}

// InitialReplicas implements Planned.
func (s *ScheduleScaler) InitialReplicas(leadS float64) int {
	if !s.Oracle {
		return s.Schedule.Replicas[0]
	}
	n, _ := s.Schedule.most(0, leadS)
	return n
}

// AutoscaleOptions are what NewAutoscaler needs besides the spec.
type AutoscaleOptions struct {
	// ReadSchedule reads a schedule file (ReadSchedule).
	ReadSchedule func(path string) (*Schedule, error)
	// LeadS is the cold start plus the scale interval, for an oracle.
	LeadS float64
	// IntervalS is the scale interval, which an exec: autoscaler's errors
	// name decisions by.
	IntervalS float64
	// Exec are an exec: autoscaler's timeout and the stderr of its child,
	// as the clock controllers' (--exec-timeout).
	Exec plant.ControllerOptions
	// Plan makes the plain oracle's schedule: the smallest fleet that
	// meets the attainment target in each window of windowS of the
	// workload (a capacity study over time plans it); nil where no workload is at hand.
	Plan func(windowS, attainment float64) (*Schedule, error)
}

// OptionError is a bad --autoscale value: it names the option.
type OptionError struct {
	Spec   string
	Option string // the option at fault, empty for the policy name
	Err    error
}

func (e *OptionError) Error() string {
	if e.Option == "" {
		return fmt.Sprintf("--autoscale %q: %v", e.Spec, e.Err)
	}
	return fmt.Sprintf("--autoscale %q: option %s: %v", e.Spec, e.Option, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// ParseAutoscaler checks spec's policy name and options without reading a
// file: static, queue:target=N[,up=S][,down=S][,tolerance=F],
// utilization:target=U[,...], schedule:FILE, oracle:FILE or the plain
// oracle[:window=S,attainment=A]. Errors are
// *OptionError.
func ParseAutoscaler(spec string) error {
	none := func() (*Schedule, error) {
		return &Schedule{Starts: []float64{0}, Replicas: []int{0}, Lines: []int{2}}, nil
	}
	_, err := newAutoscaler(spec, AutoscaleOptions{
		ReadSchedule: func(string) (*Schedule, error) { return none() },
		Plan:         func(float64, float64) (*Schedule, error) { return none() },
	})
	return err
}

// IsPlannedOracle reports whether spec is the plain oracle, which plans
// on the workload itself (AutoscaleOptions.Plan).
func IsPlannedOracle(spec string) bool {
	name, args, _ := strings.Cut(spec, ":")
	return name == OracleName && (args == "" || strings.Contains(args, "="))
}

// NewAutoscaler returns a new autoscaler of spec (see ParseAutoscaler),
// reading a schedule with o.ReadSchedule; a file's errors are its own.
func NewAutoscaler(spec string, o AutoscaleOptions) (Autoscaler, error) {
	return newAutoscaler(spec, o)
}

func newAutoscaler(spec string, o AutoscaleOptions) (Autoscaler, error) {
	name, args, hasArgs := strings.Cut(spec, ":")
	fail := func(option string, err error) (Autoscaler, error) {
		return nil, &OptionError{Spec: spec, Option: option, Err: err}
	}
	switch name {
	case StaticName:
		if hasArgs {
			return fail("", errors.New("static takes no option"))
		}
		return Static{}, nil
	case ExecName:
		if strings.TrimSpace(args) == "" {
			return fail("", errors.New("expected exec:COMMAND"))
		}
		return NewExecAutoscaler(args, o), nil
	case ScheduleName, OracleName:
		if name == OracleName && (args == "" || strings.Contains(args, "=")) {
			return newPlannedOracle(spec, args, o)
		}
		if args == "" {
			return fail("", fmt.Errorf("expected %s:FILE", name))
		}
		s, err := o.ReadSchedule(args)
		if err != nil {
			return nil, err
		}
		return &ScheduleScaler{Schedule: s, Oracle: name == OracleName, LeadS: o.LeadS}, nil
	case QueueName, UtilizationName:
		var s *Stabilized
		if name == QueueName {
			s = NewQueue(0)
		} else {
			s = NewUtilization(0)
		}
		if !hasArgs || args == "" {
			return fail("", fmt.Errorf("expected %s:target=%s", name, map[string]string{QueueName: "N", UtilizationName: "U"}[name]))
		}
		targetSet := false
		option, err := numericOptions(args, "expected KEY=VALUE", func(key, value string, x float64) error {
			switch key {
			case "target":
				if !(x > 0) || (name == UtilizationName && x > 1) {
					if name == UtilizationName {
						return fmt.Errorf("%s: expected a utilization above 0, at most 1", value)
					}
					return fmt.Errorf("%s: expected a positive number of waiting requests per replica", value)
				}
				s.Target, targetSet = x, true
			case "up":
				if x < 0 {
					return fmt.Errorf("%s: expected a stabilization window of 0 s or more", value)
				}
				s.UpWindowS = x
			case "down":
				if x < 0 {
					return fmt.Errorf("%s: expected a stabilization window of 0 s or more", value)
				}
				s.DownWindowS = x
			case "tolerance":
				if x < 0 || x >= 1 {
					return fmt.Errorf("%s: expected a tolerance from 0 to below 1", value)
				}
				s.Tolerance = x
			case "uppods":
				if x != math.Trunc(x) || x < 0 || x > MaxReplicas {
					return fmt.Errorf("%s: expected a whole number of replicas from 0 to %d", value, MaxReplicas)
				}
				s.UpPods = int(x)
			case "uppercent":
				if x < 0 {
					return fmt.Errorf("%s: expected a percentage, 0 or more", value)
				}
				s.UpPercent = x
			default:
				return errors.New("unknown option: expected target, up, down, tolerance, uppods or uppercent")
			}
			return nil
		})
		if err != nil {
			return fail(option, err)
		}
		if !targetSet {
			return fail("target", errors.New("missing: expected target=VALUE"))
		}
		return s, nil
	}
	return fail("", fmt.Errorf("unknown autoscaler %q: expected %s", name, strings.Join(AutoscalerNames, ", ")))
}

// numericOptions calls set with each KEY=VALUE of args (comma-separated),
// VALUE a finite number. A malformed option (form says what it should
// look like), a repeated one or set's error comes back with the option
// at fault.
func numericOptions(args, form string, set func(key, value string, x float64) error) (option string, err error) {
	seen := map[string]bool{}
	for kv := range strings.SplitSeq(args, ",") {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			return kv, errors.New(form)
		}
		if seen[key] {
			return key, errors.New("given twice")
		}
		seen[key] = true
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return key, fmt.Errorf("%q: expected a finite number", value)
		}
		if err := set(key, value, x); err != nil {
			return key, err
		}
	}
	return "", nil
}
