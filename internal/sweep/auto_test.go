package sweep

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShardFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		i, n int
		want string // the error's text, when it fails
	}{
		// Slurm: sbatch --array=0-3 sets the ID, COUNT, MIN, MAX and STEP.
		{"slurm 0-3, first", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_STEP": "1"}, 1, 4, ""},
		{"slurm 0-3, last", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, 4, 4, ""},
		{"slurm count only", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "5"}, 3, 5, ""},
		{"slurm min offset: --array=1-8, task 1", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8"}, 1, 8, ""},
		{"slurm min offset: --array=10-19, task 15", map[string]string{"SLURM_ARRAY_TASK_ID": "15", "SLURM_ARRAY_TASK_COUNT": "10", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "19"}, 6, 10, ""},
		{"slurm step: --array=0-12:4, task 8", map[string]string{"SLURM_ARRAY_TASK_ID": "8", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "12", "SLURM_ARRAY_TASK_STEP": "4"}, 3, 4, ""},
		{"slurm one task", map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "7", "SLURM_ARRAY_TASK_MAX": "7"}, 1, 1, ""},
		{"slurm list, not a range", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7"}, 0, 0,
			"--shard auto: the job array is not a range: SLURM_ARRAY_TASK_COUNT=3, but 1-7:1 holds 7 tasks; submit it as --array=0-2 or give --shard I/N"},
		{"slurm ID outside the array", map[string]string{"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, 0, 0, "SLURM_ARRAY_TASK_ID=9 is not a task of the array 0-3:1"},
		{"slurm ID between steps", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "12", "SLURM_ARRAY_TASK_STEP": "4"}, 0, 0, "is not a task of the array 0-12:4"},
		{"slurm ID past the count", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, 0, "SLURM_ARRAY_TASK_ID=4 is not below SLURM_ARRAY_TASK_COUNT=4"},
		{"slurm max below min", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_MAX": "4"}, 0, 0, "SLURM_ARRAY_TASK_MAX=4 is below SLURM_ARRAY_TASK_MIN=5"},
		{"slurm min without max", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0"}, 0, 0, "SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX go together"},
		{"slurm ID alone", map[string]string{"SLURM_ARRAY_TASK_ID": "4"}, 0, 0, "SLURM_ARRAY_TASK_ID is set, but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX"},
		{"slurm ID not a number", map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, 0, `--shard auto: SLURM_ARRAY_TASK_ID="x": expected a whole number of at least 0`},
		{"slurm count 0", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "0"}, 0, 0, `SLURM_ARRAY_TASK_COUNT="0": expected a whole number of at least 1`},
		{"slurm step 0", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_STEP": "0"}, 0, 0, `SLURM_ARRAY_TASK_STEP="0"`},
		// Kubernetes Indexed Job: the index from 0, the count from the manifest.
		{"indexed job, first", map[string]string{"JOB_COMPLETION_INDEX": "0", "SERVESIM_SHARD_COUNT": "8"}, 1, 8, ""},
		{"indexed job, last", map[string]string{"JOB_COMPLETION_INDEX": "7", "SERVESIM_SHARD_COUNT": "8"}, 8, 8, ""},
		{"indexed job without the count", map[string]string{"JOB_COMPLETION_INDEX": "3"}, 0, 0,
			"--shard auto: JOB_COMPLETION_INDEX is set, but not SERVESIM_SHARD_COUNT (set it to the Job's completions)"},
		{"indexed job past the count", map[string]string{"JOB_COMPLETION_INDEX": "8", "SERVESIM_SHARD_COUNT": "8"}, 0, 0, "JOB_COMPLETION_INDEX=8 is not below SERVESIM_SHARD_COUNT=8"},
		{"indexed job, negative index", map[string]string{"JOB_COMPLETION_INDEX": "-1", "SERVESIM_SHARD_COUNT": "8"}, 0, 0, `JOB_COMPLETION_INDEX="-1"`},
		{"indexed job, bad count", map[string]string{"JOB_COMPLETION_INDEX": "0", "SERVESIM_SHARD_COUNT": "eight"}, 0, 0, `SERVESIM_SHARD_COUNT="eight": expected a whole number of at least 1`},
		// Neither, or both.
		{"neither", map[string]string{"SERVESIM_SHARD_COUNT": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, 0,
			"--shard auto: found neither a Slurm job array (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX) nor a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with SERVESIM_SHARD_COUNT)"},
		{"both", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "0", "SERVESIM_SHARD_COUNT": "2"}, 0, 0,
			"both a Slurm job array (SLURM_ARRAY_TASK_ID=0) and a Kubernetes Indexed Job (JOB_COMPLETION_INDEX=0) are set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, n, err := ShardFromEnv(func(name string) string { return tt.env[name] })
			if tt.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, [2]int{tt.i, tt.n}, [2]int{i, n})
		})
	}
}

// TestShardFromEnvCoversTheGrid: the shards every task of an array picks
// are 1..N, each once, so the tasks together run the whole grid.
func TestShardFromEnvCoversTheGrid(t *testing.T) {
	arrays := []struct{ lo, hi, step int }{{0, 9, 1}, {1, 10, 1}, {5, 5, 1}, {0, 21, 3}, {100, 131, 1}}
	for _, a := range arrays {
		seen := map[int]bool{}
		n := 0
		for id := a.lo; id <= a.hi; id += a.step {
			env := map[string]string{"SLURM_ARRAY_TASK_ID": strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN": strconv.Itoa(a.lo), "SLURM_ARRAY_TASK_MAX": strconv.Itoa(a.hi), "SLURM_ARRAY_TASK_STEP": strconv.Itoa(a.step)}
			i, count, err := ShardFromEnv(func(name string) string { return env[name] })
			require.NoError(t, err)
			assert.False(t, seen[i], "shard %d twice", i)
			seen[i] = true
			n = count
		}
		assert.Len(t, seen, n, "array %v: every shard 1..%d once", a, n)
	}
}

// FuzzShardFromEnv checks over any values of the variables that
// ShardFromEnv either fails or returns a shard I of N with 1 <= I <= N.
func FuzzShardFromEnv(f *testing.F) {
	f.Add("3", "4", "0", "3", "1", "", "")
	f.Add("15", "10", "10", "19", "", "", "")
	f.Add("", "", "", "", "", "7", "8")
	f.Add("8", "4", "0", "12", "4", "", "")
	f.Add("-1", "99999999999999999999", "x", "3", "0", "1", "0")
	f.Fuzz(func(t *testing.T, id, count, lo, hi, step, index, shards string) {
		env := map[string]string{EnvSlurmTaskID: id, EnvSlurmTaskCount: count, EnvSlurmTaskMin: lo, EnvSlurmTaskMax: hi,
			EnvSlurmTaskStep: step, EnvJobCompletionIndex: index, EnvShardCount: shards}
		i, n, err := ShardFromEnv(func(name string) string { return env[name] })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--shard auto: ") {
				t.Fatalf("error without its flag: %v", err)
			}
			return
		}
		if i < 1 || i > n {
			t.Fatalf("shard %d/%d from %v", i, n, env)
		}
	})
}
