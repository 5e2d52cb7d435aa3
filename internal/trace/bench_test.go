package trace

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// benchRequests is the size of the benchmark traces.
const benchRequests = 1_000_000

// syntheticTrace writes n requests of the synthetic code-like trace
// (workload.CodeTraceLike, seed 1) in format: Azure in the 2024 week-long form
// (UTC offset, microseconds), BurstGPT with times in microseconds and two
// models, Mooncake with one hash id per 512 prompt tokens, and a CSV log
// (request,arrival_ms,prompt,output, times in milliseconds).
func syntheticTrace(format Format, n int) []byte {
	var b bytes.Buffer
	switch format {
	case Azure:
		b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	case BurstGPT:
		b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	case CSV:
		b.WriteString("request,arrival_ms,prompt,output\n")
	}
	start := time.Date(2024, 5, 10, 0, 0, 0, 0, time.UTC)
	config := workload.CodeTraceLike(1, 1e9)
	i, nextHash := 0, int64(0)
	config.Each(func(us int64, prompt, output int) bool {
		switch format {
		case Azure:
			stamp := start.Add(time.Duration(us) * time.Microsecond)
			fmt.Fprintf(&b, "%s.%06d+00:00,%d,%d\n", stamp.Format(time.DateTime), stamp.Nanosecond()/1000, prompt, output)
		case BurstGPT:
			model := []string{"ChatGPT", "GPT-4"}[i%2]
			fmt.Fprintf(&b, "%d.%06d,%s,%d,%d,%d,Conversation log\n", us/1e6, us%1e6, model, prompt, output, prompt+output)
		case Mooncake:
			fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, us/1000, prompt, output)
			for k := range (prompt + 511) / 512 {
				if k > 0 {
					b.WriteString(", ")
				}
				fmt.Fprint(&b, nextHash)
				nextHash++
			}
			b.WriteString("]}\n")
		case CSV:
			fmt.Fprintf(&b, "r%d,%d.%03d,%d,%d\n", i, us/1000, us%1000, prompt, output)
		}
		i++
		return i < n
	})
	return b.Bytes()
}

// BenchmarkLoad reads a synthetic trace of benchRequests requests in each
// format, from memory.
func BenchmarkLoad(b *testing.B) {
	for _, format := range Formats {
		b.Run(string(format), func(b *testing.B) {
			data := syntheticTrace(format, benchRequests)
			opt := Options{Format: format}
			if format == CSV {
				opt.Columns = &Columns{Arrival: "arrival_ms", Prompt: "prompt", Output: "output", Unit: Milliseconds}
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				tr, err := Load(bytes.NewReader(data), "bench", workload.NoElapsedLimit, opt)
				require.NoError(b, err)
				require.Len(b, tr.Requests, benchRequests)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRequests, "ns/request")
		})
	}
}

// BenchmarkStats computes the statistics of a trace of benchRequests.
func BenchmarkStats(b *testing.B) {
	tr, err := Load(bytes.NewReader(syntheticTrace(BurstGPT, benchRequests)), "bench", workload.NoElapsedLimit, Options{})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		ComputeStats(tr)
	}
}

// BenchmarkConvert writes a trace of benchRequests in each canonical form.
func BenchmarkConvert(b *testing.B) {
	tr, err := Load(bytes.NewReader(syntheticTrace(Mooncake, benchRequests)), "bench", workload.NoElapsedLimit, Options{})
	require.NoError(b, err)
	for _, format := range ConvertFormats {
		b.Run(string(format), func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				require.NoError(b, Convert(&buf, tr, format))
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}
