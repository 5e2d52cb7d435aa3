package runparams

import (
	"errors"
	"fmt"
	"strings"

	"servesim/internal/cards"
	"servesim/internal/plant"
)

// Service holds the service model settings: service-model, gpu, model,
// max-num-seqs, max-num-batched-tokens and gpu-memory-utilization.
type Service struct {
	Kind                 string
	GPU, ModelCard       string
	MaxNumSeqs           int // 0: vLLM's default for the GPU
	MaxNumBatchedTokens  int // 0: vLLM's default for the GPU
	GPUMemoryUtilization float64
	// kvGiven says that kv-capacity was given: the batched model then
	// keeps it instead of sizing the KV cache from the cards.
	kvGiven bool
	// preemptionGiven says that preemption was given: the batched
	// model otherwise preempts as vLLM does (recompute).
	preemptionGiven bool
	model           plant.ServiceModel
}

// Check rejects service settings that cannot mean anything (usage
// errors): an unknown model, a card that is neither built in nor a file, a
// limit below 1, a memory share outside (0, 1], and batched-only settings
// without the batched model; given says which settings were given (by
// name).
func (o *Service) Check(given func(name string) bool) error {
	o.kvGiven = given("kv-capacity")
	o.preemptionGiven = given("preemption")
	switch o.Kind {
	case plant.ServiceReference, plant.ServiceBatched:
	default:
		return Errorf("%s %q: expected %s", Setting("service-model"), o.Kind, strings.Join(plant.ServiceModelNames, " or "))
	}
	if o.Kind != plant.ServiceBatched {
		for _, name := range []Setting{"gpu", "model", "max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization"} {
			if given(string(name)) {
				return Errorf("%s: needs %s batched", name, Setting("service-model"))
			}
		}
		return nil
	}
	for _, f := range []struct {
		name  Setting
		value int
	}{{"max-num-seqs", o.MaxNumSeqs}, {"max-num-batched-tokens", o.MaxNumBatchedTokens}} {
		if given(string(f.name)) && f.value < 1 {
			return Errorf("%s %d: expected a whole number of at least 1", f.name, f.value)
		}
	}
	if !(o.GPUMemoryUtilization > 0 && o.GPUMemoryUtilization <= 1) {
		return Errorf("%s %v: expected a share in (0, 1]", Setting("gpu-memory-utilization"), o.GPUMemoryUtilization)
	}
	if err := checkCard("gpu", o.GPU, cards.GPUNames()); err != nil {
		return err
	}
	return checkCard("model", o.ModelCard, cards.ModelNames())
}

// checkCard accepts a built-in card's name, or anything cards reads as a
// file (whose errors are bad input, Resolve's); an unknown or ambiguous
// name is a usage error.
func checkCard(name Setting, value string, known []string) error {
	var err error
	if name == "gpu" {
		_, err = cards.ResolveGPU(value)
	} else {
		_, err = cards.ResolveModel(value)
	}
	var unknown *cards.UnknownCardError
	switch {
	case !errors.As(err, &unknown):
		return nil
	case len(unknown.Ambiguous) > 0:
		return Errorf("%s %q: ambiguous: expected %s", name, value, strings.Join(unknown.Ambiguous, " or "))
	}
	return Errorf("%s %q: expected a built-in card (%s) or a card file", name, value, strings.Join(known, ", "))
}

// Resolve reads the cards and, for the batched model, sets p's KV capacity
// from them unless kv-capacity was given. Its errors are bad input: a
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

// ResolveRun resolves the service model for a run of plant p (Resolve),
// gives slo the batched model's own objectives where none is given, and
// checks p; its plant errors say "plant:" and name the setting.
func (o *Service) ResolveRun(p *plant.Plant, slo *plant.SLO) error {
	if err := o.Resolve(p); err != nil {
		return err
	}
	if svc := o.Model(); svc.Batched() {
		*slo = slo.ObjectivesFor(nil, svc)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("plant: %w", FieldNamed(err))
	}
	return nil
}

// Model is the service model of the settings, once resolved (Resolve); the
// zero value (the reference's) before.
func (o *Service) Model() plant.ServiceModel { return o.model }

// EngineOptions are the engine options e under the service model: the
// batched model preempts by recomputation, as vLLM does, unless
// preemption was given.
func (o *Service) EngineOptions(e plant.EngineOptions) plant.EngineOptions {
	if o.model.Batched() && !o.preemptionGiven {
		e.Preemption = plant.PreemptionRecompute
	}
	return e
}
