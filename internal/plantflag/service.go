package plantflag

import (
	"strings"

	"github.com/spf13/cobra"

	"servesim/internal/cards"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// AddService binds the service model flags to o.
func AddService(cmd *cobra.Command, o *runparams.Service) {
	f := cmd.Flags()
	f.StringVar(&o.Kind, "service-model", plant.ServiceReference, "how a GPU serves: reference (one token budget per phase shared by the running requests, the specification) or batched (vLLM V1 iterations: one decode token per running request and prefill chunks per iteration, timed from the GPU and model cards)")
	f.StringVar(&o.GPU, "gpu", cards.DefaultGPU, "GPU card of --service-model batched: "+strings.Join(cards.GPUNames(), ", ")+", or a card file (JSON)")
	f.StringVar(&o.ModelCard, "model", cards.DefaultModel, "model card of --service-model batched: "+strings.Join(cards.ModelNames(), ", ")+", or a card file (JSON)")
	f.IntVar(&o.MaxNumSeqs, "max-num-seqs", 0, "with --service-model batched: most requests in one iteration (vLLM's max_num_seqs; default 256, 1024 on GPUs of 70 GiB or more but the A100)")
	f.IntVar(&o.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "with --service-model batched: token budget of one iteration (vLLM's max_num_batched_tokens; default 2048, 8192 on GPUs of 70 GiB or more but the A100)")
	f.Float64Var(&o.GPUMemoryUtilization, "gpu-memory-utilization", plant.DefaultGPUMemoryUtilization, "with --service-model batched: share of GPU memory for weights and KV cache, sizing the KV cache unless --kv-capacity is given")
}
