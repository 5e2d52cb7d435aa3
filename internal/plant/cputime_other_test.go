//go:build !unix

package plant

import "time"

// processCPUTime is unknown here: benchmarks report a CPU time of zero.
func processCPUTime() time.Duration { return 0 }
