package plant

import (
	"fmt"
	"strconv"
	"strings"

	"servesim/internal/cards"
	"servesim/internal/profile"
)

// Service model names (--service-model).
const (
	// ServiceReference is the reference's service model: each phase has
	// one token budget per second at a clock, shared by every running
	// request. It is the default.
	ServiceReference = "reference"
	// ServiceBatched is iteration-level serving as vLLM's V1 engine does
	// it: each iteration serves one decode token to every running request
	// and fills a token budget with prefill chunks, and lasts as long as
	// its memory reads and its compute take on the GPU card.
	ServiceBatched = "batched"
)

// ServiceModelNames are the service models, the default first.
var ServiceModelNames = []string{ServiceReference, ServiceBatched}

// ServiceModel chooses how a plant serves its requests. The zero value is
// the reference's model.
type ServiceModel struct {
	// Kind is ServiceReference ("" means it) or ServiceBatched.
	Kind string `json:"service_model"`
	// GPU and Model are the cards of the batched model.
	GPU   cards.GPU   `json:"gpu"`
	Model cards.Model `json:"model"`
	// MaxNumSeqs is the most requests an iteration serves (vLLM's
	// max_num_seqs).
	MaxNumSeqs int `json:"max_num_seqs"`
	// MaxNumBatchedTokens is an iteration's token budget, decode and
	// prefill tokens together (vLLM's max_num_batched_tokens).
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// GPUMemoryUtilization is the share of the GPU's memory the engine
	// takes for the weights and the KV cache (vLLM's
	// gpu_memory_utilization); it sizes the KV capacity when the plant's
	// is not given (KVCapacityTokens).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
}

// vLLM V1's defaults for its OpenAI server (vllm serve), as of v0.11
// (EngineArgs._set_default_args): GPUs of 70 GiB or more other than the
// A100 get the larger budget.
const (
	DefaultMaxNumSeqs                 = 256
	DefaultMaxNumBatchedTokens        = 2048
	LargeGPUMaxNumSeqs                = 1024
	LargeGPUMaxNumBatchedTokens       = 8192
	DefaultGPUMemoryUtilization       = 0.9
	largeGPUBytes               int64 = 70 << 30
)

// NewBatchedService returns the batched model on gpu and model with vLLM
// V1's defaults for that GPU.
func NewBatchedService(gpu cards.GPU, model cards.Model) ServiceModel {
	seqs, tokens := DefaultLimits(gpu)
	return ServiceModel{Kind: ServiceBatched, GPU: gpu, Model: model, MaxNumSeqs: seqs,
		MaxNumBatchedTokens: tokens, GPUMemoryUtilization: DefaultGPUMemoryUtilization}
}

// DefaultLimits are vLLM V1's default max_num_seqs and
// max_num_batched_tokens for its OpenAI server on gpu.
func DefaultLimits(gpu cards.GPU) (maxNumSeqs, maxNumBatchedTokens int) {
	if gpu.MemoryGB*1e9 >= float64(largeGPUBytes) && !strings.HasPrefix(strings.ToUpper(gpu.Name), "A100") {
		return LargeGPUMaxNumSeqs, LargeGPUMaxNumBatchedTokens
	}
	return DefaultMaxNumSeqs, DefaultMaxNumBatchedTokens
}

// Batched reports whether the model is the batched one.
func (s ServiceModel) Batched() bool { return s.Kind == ServiceBatched }

// Name is the model's name: ServiceReference for the zero value.
func (s ServiceModel) Name() string {
	if s.Kind == "" {
		return ServiceReference
	}
	return s.Kind
}

// Names of the service model's fields in errors.
const (
	FieldServiceModel         = "service_model"
	FieldMaxNumSeqs           = "max_num_seqs"
	FieldMaxNumBatchedTokens  = "max_num_batched_tokens"
	FieldGPUMemoryUtilization = "gpu_memory_utilization"
)

// Validate checks the model: a known kind and, for the batched one, valid
// cards, at least one sequence and one batched token, and a memory
// utilization in (0, 1]. The error is a *FieldError or a card's error.
func (s ServiceModel) Validate() error {
	switch s.Kind {
	case "", ServiceReference:
		return nil
	case ServiceBatched:
	default:
		return fmt.Errorf("%s %q: expected %s", FieldServiceModel, s.Kind, strings.Join(ServiceModelNames, " or "))
	}
	if err := s.GPU.Validate(); err != nil {
		return err
	}
	if err := s.Model.Validate(); err != nil {
		return err
	}
	if s.MaxNumSeqs < 1 {
		return &FieldError{Field: FieldMaxNumSeqs, Value: float64(s.MaxNumSeqs), Why: "must be at least 1"}
	}
	if s.MaxNumBatchedTokens < 1 {
		return &FieldError{Field: FieldMaxNumBatchedTokens, Value: float64(s.MaxNumBatchedTokens), Why: "must be at least 1"}
	}
	if !(s.GPUMemoryUtilization > 0 && s.GPUMemoryUtilization <= 1) {
		return &FieldError{Field: FieldGPUMemoryUtilization, Value: s.GPUMemoryUtilization, Why: "must be in (0, 1]"}
	}
	return nil
}

// KVCapacityTokens is the KV cache the batched model's cards leave at its
// memory utilization (cards.KVCapacityTokens).
func (s ServiceModel) KVCapacityTokens() (float64, error) {
	return cards.KVCapacityTokens(s.GPU, s.Model, s.GPUMemoryUtilization)
}

// FieldMaxConcurrency names Options.MaxConcurrency in errors.
const FieldMaxConcurrency = "max_concurrency"

// ServiceReport is the service block of a run under the batched model.
type ServiceReport struct {
	ServiceModel
	// KVCapacityTokens is the KV cache the run had, tokens.
	KVCapacityTokens float64 `json:"kv_capacity_tokens"`
	// Iterations is the number of engine iterations.
	Iterations int `json:"iterations"`
	// MeanBatch is the mean number of requests an iteration served
	// (null without iterations).
	MeanBatch *float64 `json:"mean_batch_requests"`
	// Preemptions counts the requests preempted for recomputation, and
	// RecomputedTokens the KV tokens they lost.
	Preemptions      int     `json:"preemptions"`
	RecomputedTokens float64 `json:"recomputed_tokens"`
}

// serviceReport is the service block of the run; nil under the
// reference's model.
func (sim *simulation) serviceReport() *ServiceReport {
	b := sim.batched
	if b == nil {
		return nil
	}
	r := &ServiceReport{ServiceModel: b.svc, KVCapacityTokens: sim.plant.KVCapacityTokens, Iterations: b.iterations,
		Preemptions: b.preemptions, RecomputedTokens: b.recomputedTokens}
	if b.iterations > 0 {
		mean := float64(b.batched) / float64(b.iterations)
		r.MeanBatch = &mean
	}
	return r
}

// baselinePromptTokens and baselineOutputTokens are the lone request the
// batched model's default objectives are judged on: the measured L4
// profile's 1,024-token decode condition, 128 tokens out.
const (
	baselinePromptTokens = 1024
	baselineOutputTokens = 128
)

// Baseline is a lone request's TTFT and TPOT under the batched model at
// the profile's top level (a 1,024-token prompt, 128 tokens out), seconds:
// what the profile's baseline is to the reference's model.
func (s ServiceModel) Baseline() (ttftS, tpotS float64) {
	g, m := s.GPU, s.Model
	bandwidth := g.MemoryBandwidthGBps * 1e9 * g.MemoryEfficiency
	compute := g.PeakTFLOPS * 1e12 * g.ComputeEfficiency
	iteration := func(context, tokens float64) float64 {
		memory := (m.WeightGB*1e9 + m.KVBytesPerToken()*(context+tokens)) / bandwidth
		work := (m.FLOPsPerToken()*tokens + m.AttentionFLOPs(context, tokens)) / compute
		return g.IterationOverheadS + max(memory, work)
	}
	budget := float64(max(1, s.MaxNumBatchedTokens))
	for done := 0.0; done < baselinePromptTokens; {
		chunk := min(budget, baselinePromptTokens-done)
		ttftS += iteration(done, chunk)
		done += chunk
	}
	for k := range baselineOutputTokens - 1 {
		tpotS += iteration(float64(baselinePromptTokens+k), 1)
	}
	return ttftS, tpotS / (baselineOutputTokens - 1)
}

// ObjectivesFor is what a run on profile p under svc judges requests by:
// the objectives given, a zero TTFT or TPOT taken as 2 and 1.5 times the
// baseline's (the reference's rule): the profile's under the reference's
// model, the batched model's own (Baseline) under it, since the profile's
// baseline describes the reference's service.
func (s SLO) ObjectivesFor(p *profile.Profile, svc ServiceModel) SLO {
	if !svc.Batched() {
		return s.OrProfile(p)
	}
	ttft, tpot := svc.Baseline()
	if s.TTFTSeconds == 0 {
		s.TTFTSeconds = 2 * ttft
	}
	if s.TPOTSeconds == 0 {
		s.TPOTSeconds = 1.5 * tpot
	}
	return s
}

// SumServiceReports is the service block of a fleet: the replicas'
// iterations, preemptions and recomputed tokens summed, the mean batch
// over all their iterations, the model and KV capacity of the first (all
// replicas share them); nil when reports has no block.
func SumServiceReports(reports []*ServiceReport) *ServiceReport {
	var sum *ServiceReport
	batched := 0.0
	for _, r := range reports {
		if r == nil {
			continue
		}
		if sum == nil {
			sum = &ServiceReport{ServiceModel: r.ServiceModel, KVCapacityTokens: r.KVCapacityTokens}
		}
		sum.Iterations += r.Iterations
		sum.Preemptions += r.Preemptions
		sum.RecomputedTokens += r.RecomputedTokens
		if r.MeanBatch != nil {
			batched += *r.MeanBatch * float64(r.Iterations)
		}
	}
	if sum != nil && sum.Iterations > 0 {
		mean := batched / float64(sum.Iterations)
		sum.MeanBatch = &mean
	}
	return sum
}

// Label names the batched model and its cards for titles: ", batched
// L4 + Qwen2.5-7B-Instruct"; empty for a nil report (the reference's
// model).
func (r *ServiceReport) Label() string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(", batched %s + %s", r.GPU.Name, r.Model.Name)
}

// Line is what a table says of the batched model's run: its limits, KV
// capacity, iterations, mean batch and preemptions; empty for a nil
// report.
func (r *ServiceReport) Line() string {
	if r == nil {
		return ""
	}
	batch := "-"
	if r.MeanBatch != nil {
		batch = strconv.FormatFloat(*r.MeanBatch, 'f', 2, 64)
	}
	return fmt.Sprintf("service: %d sequences and %d tokens per iteration, KV %.0f tokens; %d iterations, mean batch %s requests, %d preemptions",
		r.MaxNumSeqs, r.MaxNumBatchedTokens, r.KVCapacityTokens, r.Iterations, batch, r.Preemptions)
}
