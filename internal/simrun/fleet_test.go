package simrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// TestFleetSummaryStreamsTheSameDocument runs fleets on a trace file with
// --summary, streamed, and with the records kept for a request log, which
// loads the trace whole: the documents and the warnings are the same.
func TestFleetSummaryStreamsTheSameDocument(t *testing.T) {
	trace := plant.CodeTraceLike(2, 1200)
	path := filepath.Join(t.TempDir(), "trace.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, trace.WriteCSV2024(f))
	require.NoError(t, f.Close())
	for _, router := range fleet.RouterNames {
		for _, normalize := range []float64{0, 0.8} {
			for _, jobs := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/normalize=%g/jobs=%d", router, normalize, jobs), func(t *testing.T) {
					run := func(requests bool) (string, string) {
						var stderr bytes.Buffer
						cfg := Config{
							TracePath: path, MaxElapsedS: plant.NoElapsedLimit, Normalize: normalize,
							Scheduler: "chunked", Controller: "reactive", Stride: 1, Summary: true,
							Plant: plant.NewPlant(nil), Requests: requests, Version: "test", Stderr: &stderr,
							Fleet: Fleet{Enabled: true, Replicas: 3, Router: router, RouterSeed: 5, Jobs: jobs},
						}
						cfg.Plant.MaxSimulationTimeS = 1500 // the later arrivals are cut: a warning
						res, err := Run(context.Background(), cfg)
						require.NoError(t, err)
						doc, err := json.Marshal(res.Document())
						require.NoError(t, err)
						return string(doc), stderr.String()
					}
					streamedDoc, streamedErr := run(false)
					heldDoc, heldErr := run(true)
					require.Equal(t, heldDoc, streamedDoc)
					require.Equal(t, heldErr, streamedErr)
				})
			}
		}
	}
}
