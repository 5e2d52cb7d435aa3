package cards

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

func posInf() float64 { return math.Inf(1) }
func nan() float64    { return math.NaN() }

// FuzzParseGPU: ParseGPU never panics, its errors are one line naming the
// file, and a card it returns validates and reads back the same from its
// JSON.
func FuzzParseGPU(f *testing.F) {
	for _, seed := range []string{goodGPU, "", "[]", "{}", `{"memory_gb": 1e999}`, goodGPU + "x",
		edit(goodGPU, "{", `{"name": "x", "memory_efficiency": 1, "compute_efficiency": 0.5, "iteration_overhead_s": 0,`)} {
		f.Add([]byte(seed))
	}
	if data, err := os.ReadFile("testdata/lab-gpu.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGPU("fuzz.json", data)
		if err != nil {
			checkError(t, err, "gpu card fuzz.json")
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("a parsed card does not validate: %v", err)
		}
		out, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseGPU("fuzz.json", out)
		if err != nil || again != g {
			t.Fatalf("the card's JSON %s reads back as %+v, %v; want %+v", out, again, err, g)
		}
	})
}

// FuzzParseModel: ParseModel never panics, its errors are one line naming
// the file, and a card it returns validates, reads back the same from its
// JSON and has finite, positive sizes.
func FuzzParseModel(f *testing.F) {
	for _, seed := range []string{goodModel, "", "null", `{"layers": 1.5}`, goodModel + "}",
		edit(goodModel, "bfloat16", "fp8")} {
		f.Add([]byte(seed))
	}
	if data, err := os.ReadFile("testdata/tiny-model.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseModel("fuzz.json", data)
		if err != nil {
			checkError(t, err, "model card fuzz.json")
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("a parsed card does not validate: %v", err)
		}
		for _, x := range []float64{m.DtypeBytes(), m.Parameters(), m.KVBytesPerToken(), m.FLOPsPerToken(), m.AttentionFLOPs(1, 1)} {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Fatalf("card %+v: a size is %v", m, x)
			}
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseModel("fuzz.json", out)
		if err != nil || again != m {
			t.Fatalf("the card's JSON %s reads back as %+v, %v; want %+v", out, again, err, m)
		}
	})
}

// checkError checks that a parse error is one line starting with prefix.
func checkError(t *testing.T, err error, prefix string) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line starting %q", msg, prefix)
	}
}
