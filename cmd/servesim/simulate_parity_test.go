package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
)

// TestSimulateDocumentMatchesReference runs `servesim simulate` like
// run_plant.py produced each first-five-minutes golden of the reference and
// compares the whole document: the as_dict keys and values under "result",
// "summary" and "dilation".
func TestSimulateDocumentMatchesReference(t *testing.T) {
	t.Parallel()
	goldens, err := filepath.Glob(filepath.Join(sharedtest.Reference(t, "golden", "plant_first300s"), "*.json"))
	require.NoError(t, err)
	require.Len(t, goldens, 21)
	name := regexp.MustCompile(`^code_first300s__(l4_proxy|l4_synthetic)__(\w+)__(.+)\.json$`)
	for _, golden := range goldens {
		m := name.FindStringSubmatch(filepath.Base(golden))
		require.NotNil(t, m, golden)
		t.Run(filepath.Base(golden), func(t *testing.T) {
			s, out, errOut := testStreams("")
			code := run(context.Background(), []string{"simulate",
				"--profile", sharedtest.Reference(t, "data", m[1], "l4_profile.csv"),
				"--trace", sharedtest.CodeTrace(t), "--max-elapsed", "300",
				"--scheduler", m[2], "--controller", strings.Replace(m[3], "_", ":", 1), "--stride", "50"}, s)
			require.Equal(t, exitOK, code, errOut.String())
			var got, want map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &got))
			data, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &want))
			result := want["result"].(map[string]any)
			for key, value := range result {
				requireClose(t, key, value, got[key])
			}
			requireClose(t, "summary", want["summary"], got["summary"])
			requireClose(t, "dilation", want["dilation"], got["dilation"])
		})
	}
}

// requireClose compares decoded JSON values: numbers within a relative 1e-9
// (absolute below 1), everything else exactly.
func requireClose(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		require.Truef(t, ok, "%s: want %v, got %v", path, want, got)
		require.LessOrEqualf(t, math.Abs(g-w), 1e-9*math.Max(1, math.Abs(w)), "%s: want %v, got %v", path, w, g)
	case map[string]any:
		g, ok := got.(map[string]any)
		require.Truef(t, ok, "%s: want an object", path)
		require.Lenf(t, g, len(w), "%s: keys", path)
		for k, v := range w {
			requireClose(t, path+"."+k, v, g[k])
		}
	case []any:
		g, ok := got.([]any)
		require.Truef(t, ok, "%s: want an array", path)
		require.Lenf(t, g, len(w), "%s: length", path)
		for i := range w {
			requireClose(t, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		require.Equalf(t, want, got, "%s", path)
	}
}
