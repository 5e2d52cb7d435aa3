package plantflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// Service holds the service model flags: --service-model, --gpu, --model,
// --max-num-seqs, --max-num-batched-tokens and --gpu-memory-utilization.
type Service struct {
	Kind                 string
	GPU, ModelCard       string
	MaxNumSeqs           int // 0: vLLM's default for the GPU
	MaxNumBatchedTokens  int // 0: vLLM's default for the GPU
	GPUMemoryUtilization float64
	// kvGiven says that --kv-capacity was given: the batched model then
	// keeps it instead of sizing the KV cache from the cards.
	kvGiven bool
	// preemptionGiven says that --preemption was given: the batched
	// model otherwise preempts as vLLM does (recompute).
	preemptionGiven bool
	model           plant.ServiceModel
}

// AddService binds the service model flags to o.
func AddService(cmd *cobra.Command, o *Service) {
	f := cmd.Flags()
	f.StringVar(&o.Kind, "service-model", plant.ServiceReference, "how a GPU serves: reference (one token budget per phase shared by the running requests, the specification) or batched (vLLM V1 iterations: one decode token per running request and prefill chunks per iteration, timed from the GPU and model cards)")
	f.StringVar(&o.GPU, "gpu", cards.DefaultGPU, "GPU card of --service-model batched: "+strings.Join(cards.GPUNames(), ", ")+", or a card file (JSON)")
	f.StringVar(&o.ModelCard, "model", cards.DefaultModel, "model card of --service-model batched: "+strings.Join(cards.ModelNames(), ", ")+", or a card file (JSON)")
	f.IntVar(&o.MaxNumSeqs, "max-num-seqs", 0, "with --service-model batched: most requests in one iteration (vLLM's max_num_seqs; default 256, 1024 on GPUs of 70 GiB or more but the A100)")
	f.IntVar(&o.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "with --service-model batched: token budget of one iteration (vLLM's max_num_batched_tokens; default 2048, 8192 on GPUs of 70 GiB or more but the A100)")
	f.Float64Var(&o.GPUMemoryUtilization, "gpu-memory-utilization", plant.DefaultGPUMemoryUtilization, "with --service-model batched: share of GPU memory for weights and KV cache, sizing the KV cache unless --kv-capacity is given")
}

// Check rejects service flags that cannot mean anything (usage errors):
// an unknown model, a card that is neither built in nor a file, a limit
// below 1, a memory share outside (0, 1], and batched-only flags without
// the batched model.
func (o *Service) Check(cmd *cobra.Command) error {
	flags := cmd.Flags()
	o.kvGiven = flags.Changed("kv-capacity")
	o.preemptionGiven = flags.Changed("preemption")
	switch o.Kind {
	case plant.ServiceReference, plant.ServiceBatched:
	default:
		return fmt.Errorf("--service-model %q: expected %s", o.Kind, strings.Join(plant.ServiceModelNames, " or "))
	}
	if o.Kind != plant.ServiceBatched {
		for _, name := range []string{"gpu", "model", "max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization"} {
			if flags.Changed(name) {
				return fmt.Errorf("--%s: needs --service-model batched", name)
			}
		}
		return nil
	}
	for _, f := range []struct {
		name  string
		value int
	}{{"max-num-seqs", o.MaxNumSeqs}, {"max-num-batched-tokens", o.MaxNumBatchedTokens}} {
		if flags.Changed(f.name) && f.value < 1 {
			return fmt.Errorf("--%s %d: expected a whole number of at least 1", f.name, f.value)
		}
	}
	if !(o.GPUMemoryUtilization > 0 && o.GPUMemoryUtilization <= 1) {
		return fmt.Errorf("--gpu-memory-utilization %v: expected a share in (0, 1]", o.GPUMemoryUtilization)
	}
	if err := checkCard("gpu", o.GPU, cards.GPUNames()); err != nil {
		return err
	}
	return checkCard("model", o.ModelCard, cards.ModelNames())
}

// checkCard accepts a built-in card's name, or anything cards reads as a
// file (whose errors are bad input, Resolve's); an unknown or ambiguous
// name is a usage error.
func checkCard(flag, value string, known []string) error {
	var err error
	if flag == "gpu" {
		_, err = cards.ResolveGPU(value)
	} else {
		_, err = cards.ResolveModel(value)
	}
	var unknown *cards.UnknownCardError
	switch {
	case !errors.As(err, &unknown):
		return nil
	case len(unknown.Ambiguous) > 0:
		return fmt.Errorf("--%s %q: ambiguous: expected %s", flag, value, strings.Join(unknown.Ambiguous, " or "))
	}
	return fmt.Errorf("--%s %q: expected a built-in card (%s) or a card file", flag, value, strings.Join(known, ", "))
}

// Resolve reads the cards and, for the batched model, sets p's KV capacity
// from them unless --kv-capacity was given. Its errors are bad input: a
// card file that cannot be read, weights that do not fit.
func (o *Service) Resolve(p *plant.Plant) error {
	o.model = plant.ServiceModel{}
	if o.Kind != plant.ServiceBatched {
		return nil
	}
	gpu, err := cards.ResolveGPU(o.GPU)
	if err != nil {
		return err
	}
	model, err := cards.ResolveModel(o.ModelCard)
	if err != nil {
		return err
	}
	m := plant.NewBatchedService(gpu, model)
	if o.MaxNumSeqs > 0 {
		m.MaxNumSeqs = o.MaxNumSeqs
	}
	if o.MaxNumBatchedTokens > 0 {
		m.MaxNumBatchedTokens = o.MaxNumBatchedTokens
	}
	m.GPUMemoryUtilization = o.GPUMemoryUtilization
	if err := m.Validate(); err != nil {
		return err
	}
	kv, err := m.KVCapacityTokens()
	if err != nil {
		return err
	}
	if !o.kvGiven {
		p.KVCapacityTokens = kv
	}
	o.model = m
	return nil
}

// Model is the service model of the flags, once resolved (Resolve); the
// zero value (the reference's) before.
func (o *Service) Model() plant.ServiceModel { return o.model }

// EngineOptions are the engine options e under the service model: the
// batched model preempts by recomputation, as vLLM does, unless
// --preemption was given.
func (o *Service) EngineOptions(e plant.EngineOptions) plant.EngineOptions {
	if o.model.Batched() && !o.preemptionGiven {
		e.Preemption = plant.PreemptionRecompute
	}
	return e
}
