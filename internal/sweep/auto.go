package sweep

import (
	"fmt"
	"strconv"
)

// The environment variables ShardFromEnv reads.
const (
	// Slurm job arrays (sbatch --array): the task's ID, and the array's
	// task count or its lowest and highest IDs (and the step between IDs).
	EnvSlurmTaskID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	EnvSlurmTaskStep  = "SLURM_ARRAY_TASK_STEP"
	// Kubernetes Indexed Jobs: the pod's completion index (0-based), and
	// the number of completions, which the Job passes on in
	// SERVESIM_SHARD_COUNT (Kubernetes itself does not).
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
	EnvShardCount         = "SERVESIM_SHARD_COUNT"
)

// ShardFromEnv returns the shard (the I-th of N, 1-based) of a process
// started by a Slurm job array or a Kubernetes Indexed Job, read through
// getenv (os.Getenv):
//
//   - Slurm: SLURM_ARRAY_TASK_ID is task I; N and the offset come from
//     SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX (I = (ID - MIN) / STEP
//   - 1, N = (MAX - MIN) / STEP + 1, STEP being SLURM_ARRAY_TASK_STEP or
//     1), or without them from SLURM_ARRAY_TASK_COUNT (I = ID + 1). An array
//     that is not a range (--array=1,3,7: its count disagrees with MIN, MAX
//     and STEP) is refused, since its tasks cannot name contiguous shards.
//   - Kubernetes: JOB_COMPLETION_INDEX is I - 1 and SERVESIM_SHARD_COUNT is
//     N (the Job's completions).
//
// With neither, or both, or a value that does not parse, it returns an
// error naming the variables.
func ShardFromEnv(getenv func(string) string) (i, n int, err error) {
	slurm, k8s := getenv(EnvSlurmTaskID), getenv(EnvJobCompletionIndex)
	switch {
	case slurm != "" && k8s != "":
		return 0, 0, fmt.Errorf("--shard auto: both a Slurm job array (%s=%s) and a Kubernetes Indexed Job (%s=%s) are set: give --shard I/N",
			EnvSlurmTaskID, slurm, EnvJobCompletionIndex, k8s)
	case slurm != "":
		i, n, err = slurmShard(getenv)
	case k8s != "":
		i, n, err = indexedJobShard(getenv)
	default:
		return 0, 0, fmt.Errorf("--shard auto: found neither a Slurm job array (%s with %s, or %s and %s) nor a Kubernetes Indexed Job (%s with %s)",
			EnvSlurmTaskID, EnvSlurmTaskCount, EnvSlurmTaskMin, EnvSlurmTaskMax, EnvJobCompletionIndex, EnvShardCount)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("--shard auto: %w", err)
	}
	return i, n, nil
}

// envInt reads a whole number of at least least from the variable name; ok
// is false when the variable is not set.
func envInt(getenv func(string) string, name string, least int) (v int, ok bool, err error) {
	s := getenv(name)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.Atoi(s)
	if err != nil || v < least {
		return 0, false, fmt.Errorf("%s=%q: expected a whole number of at least %d", name, s, least)
	}
	return v, true, nil
}

// slurmShard is the shard of a Slurm job array task.
func slurmShard(getenv func(string) string) (i, n int, err error) {
	var id, count, lo, hi, step int
	var hasCount, hasMin, hasMax bool
	for _, v := range []struct {
		name  string
		least int
		to    *int
		has   *bool
	}{
		{EnvSlurmTaskID, 0, &id, nil},
		{EnvSlurmTaskCount, 1, &count, &hasCount},
		{EnvSlurmTaskMin, 0, &lo, &hasMin},
		{EnvSlurmTaskMax, 0, &hi, &hasMax},
		{EnvSlurmTaskStep, 1, &step, nil},
	} {
		x, ok, err := envInt(getenv, v.name, v.least)
		if err != nil {
			return 0, 0, err
		}
		*v.to = x
		if v.has != nil {
			*v.has = ok
		}
	}
	step = max(step, 1)
	switch {
	case hasMin && hasMax:
		if hi < lo {
			return 0, 0, fmt.Errorf("%s=%d is below %s=%d", EnvSlurmTaskMax, hi, EnvSlurmTaskMin, lo)
		}
		if id < lo || id > hi || (id-lo)%step != 0 {
			return 0, 0, fmt.Errorf("%s=%d is not a task of the array %d-%d:%d (%s, %s, %s)",
				EnvSlurmTaskID, id, lo, hi, step, EnvSlurmTaskMin, EnvSlurmTaskMax, EnvSlurmTaskStep)
		}
		n = (hi-lo)/step + 1
		if hasCount && count != n {
			return 0, 0, fmt.Errorf("the job array is not a range: %s=%d, but %d-%d:%d holds %d tasks; submit it as --array=0-%d or give --shard I/N",
				EnvSlurmTaskCount, count, lo, hi, step, n, count-1)
		}
		return (id-lo)/step + 1, n, nil
	case hasMin || hasMax:
		return 0, 0, fmt.Errorf("%s and %s go together; only one is set", EnvSlurmTaskMin, EnvSlurmTaskMax)
	case hasCount:
		if id >= count {
			return 0, 0, fmt.Errorf("%s=%d is not below %s=%d (without %s, task IDs count from 0)",
				EnvSlurmTaskID, id, EnvSlurmTaskCount, count, EnvSlurmTaskMin)
		}
		return id + 1, count, nil
	}
	return 0, 0, fmt.Errorf("%s is set, but neither %s nor %s and %s", EnvSlurmTaskID, EnvSlurmTaskCount, EnvSlurmTaskMin, EnvSlurmTaskMax)
}

// indexedJobShard is the shard of a Kubernetes Indexed Job's pod.
func indexedJobShard(getenv func(string) string) (i, n int, err error) {
	index, _, err := envInt(getenv, EnvJobCompletionIndex, 0)
	if err != nil {
		return 0, 0, err
	}
	count, ok, err := envInt(getenv, EnvShardCount, 1)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("%s is set, but not %s (set it to the Job's completions)", EnvJobCompletionIndex, EnvShardCount)
	}
	if index >= count {
		return 0, 0, fmt.Errorf("%s=%d is not below %s=%d", EnvJobCompletionIndex, index, EnvShardCount, count)
	}
	return index + 1, count, nil
}
