//go:build unix

package plant

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time (user and system) the process has used so
// far: on a machine shared with other work, a benchmark's CPU time per
// operation varies less than its wall time.
func processCPUTime() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
