//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
)

// The capacity examples of docs/cluster, from this package's folder.
const (
	k8sCapacityPath      = "../../docs/cluster/kubernetes-capacity.yaml"
	k8sCapacityFinalPath = "../../docs/cluster/kubernetes-capacity-final.yaml"
	slurmCapacityPath    = "../../docs/cluster/slurm-capacity.sbatch"
)

// writeStudyInputs writes into dir what the capacity examples read: the
// synthetic code-like hour as the trace (traceName) and the embedded proxy's
// table and manifest as the profile (profileName).
func writeStudyInputs(t *testing.T, dir, traceName, profileName string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var trace bytes.Buffer
	require.NoError(t, plant.CodeTraceLike(plant.DefaultTraceSeed, 3600).WriteCSV(&trace))
	require.NoError(t, os.WriteFile(filepath.Join(dir, traceName), trace.Bytes(), 0o644))
	for from, to := range map[string]string{"embedded_proxy.csv": profileName, "embedded_proxy.json": "profile_manifest.json"} {
		data, err := os.ReadFile(filepath.Join("../../internal/profile", from))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, to), data, 0o644))
	}
}

// capacityDoc reads the sizes a capacity document's search used.
func capacityDoc(t *testing.T, doc []byte) (sizes []int, controllers int) {
	t.Helper()
	var d struct {
		Evaluations []struct{ Replicas int } `json:"evaluations"`
		Controllers []any                    `json:"controllers"`
	}
	require.NoError(t, json.Unmarshal(doc, &d))
	for _, e := range d.Evaluations {
		sizes = append(sizes, e.Replicas)
	}
	return sizes, len(d.Controllers)
}

// requireCachedRun checks the final run's summary line: the sizes of the
// grid (1, 2, 4, ... maxSize) the search used came from the records, and the
// fleets simulated are the other sizes and the other controllers.
func requireCachedRun(t *testing.T, doc []byte, stderr string, maxSize, files int) {
	t.Helper()
	sizes, controllers := capacityDoc(t, doc)
	fromGrid := 0
	for _, size := range sizes {
		if size&(size-1) == 0 || size == maxSize {
			fromGrid++
		}
	}
	require.Less(t, fromGrid, len(sizes), "the study bisects")
	want := fmt.Sprintf("servesim: capacity: %d of the %d sizes the search used came from --evaluations (%d records in %d files); %d fleets simulated\n",
		fromGrid, len(sizes), gridCells(maxSize), files, len(sizes)-fromGrid+controllers-1)
	assert.Contains(t, stderr, want)
}

// gridCells is the number of sizes the search doubles through up to maxSize.
func gridCells(maxSize int) int {
	n := 1
	for size := 1; size < maxSize; size *= 2 {
		n++
	}
	return n
}

// withoutFlags returns args less each flag named (with its value, unless
// the flag is in bare).
func withoutFlags(args []string, flags, bare []string) []string {
	var out []string
	for k := 0; k < len(args); k++ {
		switch {
		case slices.Contains(bare, args[k]):
		case slices.Contains(flags, args[k]):
			k++
		default:
			out = append(out, args[k])
		}
	}
	return out
}

// TestKubernetesCapacityIndexedJob checks the capacity manifests' contract
// and then plays them: one process per completion index, with the
// environment Kubernetes gives an Indexed Job's pods and the volumes as
// folders, then the final Job's command; its document is a plain run's.
func TestKubernetesCapacityIndexedJob(t *testing.T) {
	t.Parallel()
	job := readYAML(t, k8sCapacityPath)
	assert.Equal(t, "Job", job.value(t, "kind"))
	assert.Equal(t, "Indexed", job.value(t, "completionMode"))
	completions, err := strconv.Atoi(job.value(t, "completions"))
	require.NoError(t, err)
	require.Positive(t, completions)
	assert.Equal(t, strconv.Itoa(completions), job.env(t, "SERVESIM_SHARD_COUNT"), "SERVESIM_SHARD_COUNT is completions")
	assert.Equal(t, "Never", job.value(t, "restartPolicy"))
	assert.Contains(t, job.values("fieldPath"), "metadata.annotations['batch.kubernetes.io/job-completion-index']")
	args := job.list(t, "args")
	require.GreaterOrEqual(t, len(args), 3)
	assert.Equal(t, []string{"capacity", "--shard", "auto"}, args[:3])
	out := slices.Index(args, "-o")
	require.Positive(t, out, "each pod writes its shard with -o")

	final := readYAML(t, k8sCapacityFinalPath)
	finalArgs := final.list(t, "args")
	evaluations := slices.Index(finalArgs, "--evaluations")
	require.Positive(t, evaluations)
	pattern := finalArgs[evaluations+1]
	for index := range completions {
		name := strings.ReplaceAll(args[out+1], "$(SHARD_INDEX)", strconv.Itoa(index))
		for _, file := range []string{name, name + ".partial"} {
			ok, err := filepath.Match(pattern, file)
			require.NoError(t, err)
			assert.True(t, ok, "the final run reads %s", file)
		}
	}
	assert.Equal(t, withoutFlags(args, []string{"--shard", "-o"}, []string{"--quiet"}),
		withoutFlags(finalArgs, []string{"--evaluations", "-o"}, nil), "the final run is the shards' study")

	// Play the Jobs, with the volumes as folders.
	dir := t.TempDir()
	volumes := strings.NewReplacer("/traces/", filepath.Join(dir, "traces")+"/", "/results/", filepath.Join(dir, "results")+"/")
	writeStudyInputs(t, filepath.Join(dir, "traces"), filepath.Base(args[slices.Index(args, "--trace")+1]),
		filepath.Base(args[slices.Index(args, "--profile")+1]))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "results"), 0o755))
	var wg sync.WaitGroup
	errs := make([]error, completions)
	outputs := make([][]byte, completions)
	for index := range completions {
		pod := make([]string, len(args))
		for k, a := range args {
			pod[k] = volumes.Replace(strings.ReplaceAll(a, "$(SHARD_INDEX)", strconv.Itoa(index)))
		}
		cmd := servesimProcess(t, dir, []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(index), "SERVESIM_SHARD_COUNT=" + job.env(t, "SERVESIM_SHARD_COUNT")}, pod...)
		wg.Go(func() { outputs[index], errs[index] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for index := range completions {
		require.NoError(t, errs[index], "pod %d: %s", index, outputs[index])
		assert.Empty(t, outputs[index], "pod %d", index)
	}
	finalCmd := make([]string, len(finalArgs))
	for k, a := range finalArgs {
		finalCmd[k] = volumes.Replace(a)
	}
	var stderr bytes.Buffer
	run := servesimProcess(t, dir, nil, finalCmd...)
	run.Stderr = &stderr
	require.NoError(t, run.Run(), stderr.String())
	got, err := os.ReadFile(finalCmd[slices.Index(finalCmd, "-o")+1])
	require.NoError(t, err)

	plainArgs := withoutFlags(finalCmd, []string{"--evaluations", "-o"}, nil)
	code, plain, errOut := runCLI(t, plainArgs...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, plain, string(got), "the final run writes what a plain run writes")
	maxSize, err := strconv.Atoi(args[slices.Index(args, "--max-replicas")+1])
	require.NoError(t, err)
	requireCachedRun(t, got, stderr.String(), maxSize, completions)
}

// TestSlurmCapacityJobArray checks the capacity sbatch script's contract
// and then plays it: every task of its --array runs the script with the
// environment Slurm gives array tasks (srun and sbatch are stand-ins that
// run the step and record the final job), then the final job runs; its
// document is a plain run's, also when a task left only part of its share
// (afterany: the final run simulates what is missing).
func TestSlurmCapacityJobArray(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(slurmCapacityPath)
	require.NoError(t, err)
	script := string(data)
	assert.True(t, strings.HasPrefix(script, "#!/bin/bash\n"))
	directives := sbatchDirectives(t, script)
	first, last, step := sbatchArray(t, directives["--array"])
	assert.Regexp(t, `(?m)^srun servesim capacity --shard auto `, script)
	assert.Regexp(t, `(?m)sbatch --dependency=afterany:"\$SLURM_ARRAY_JOB_ID" .*\\\n.*\\\n\s+--wrap="servesim capacity .*--evaluations `, script)

	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "the script is a bash script")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	sbatchLog := filepath.Join(dir, "sbatch.log")
	shims := map[string]string{
		"srun":   "#!/bin/sh\nexec \"$@\"\n",
		"sbatch": "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " + sbatchLog + "\necho 4243\n",
	}
	for name, body := range shims {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755))
	}
	writeStudyInputs(t, filepath.Join(dir, "data"), "code trace.csv", "l4_profile.csv")
	results := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	var ids []int
	for id := first; id <= last; id += step {
		ids = append(ids, id)
	}
	n := len(ids)
	env := append(servesimProcess(t, dir, nil).Env, "PATH="+bin+":"+os.Getenv("PATH"))
	var wg sync.WaitGroup
	outputs := make([][]byte, n)
	errs := make([]error, n)
	for k, id := range ids {
		cmd := exec.Command(bash, slurmCapacityPath)
		cmd.Env = append(slices.Clone(env), "SERVESIM_RESULTS="+results,
			"SERVESIM_TRACE="+filepath.Join(dir, "data", "code trace.csv"), "SERVESIM_PROFILE="+filepath.Join(dir, "data", "l4_profile.csv"),
			"SLURM_ARRAY_JOB_ID=4242", "SLURM_ARRAY_TASK_ID="+strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN="+strconv.Itoa(first),
			"SLURM_ARRAY_TASK_MAX="+strconv.Itoa(last), "SLURM_ARRAY_TASK_STEP="+strconv.Itoa(step), "SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(n),
			"SLURM_CPUS_PER_TASK=1")
		wg.Go(func() { outputs[k], errs[k] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for k := range ids {
		require.NoError(t, errs[k], "task %d: %s", ids[k], outputs[k])
	}
	queued, err := os.ReadFile(sbatchLog)
	require.NoError(t, err)
	submitted := strings.Split(strings.TrimSuffix(string(queued), "\n"), "\n")
	assert.Equal(t, "--dependency=afterany:4242", submitted[0], "the final run waits for the whole array, failed tasks too")
	assert.Equal(t, 1, strings.Count(string(queued), "--wrap="), "one final run, queued by one task")
	wrap, ok := strings.CutPrefix(submitted[len(submitted)-1], "--wrap=")
	require.True(t, ok, "the final run is a --wrap command: %v", submitted)
	shardFiles, err := filepath.Glob(filepath.Join(results, "capacity-*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, shardFiles, n, "one file per task")

	// The plain run: the final command without --evaluations, to another file.
	plainWrap := regexp.MustCompile(` --evaluations \S+`).ReplaceAllString(wrap, "")
	plainWrap = regexp.MustCompile(` -o \S+$`).ReplaceAllString(plainWrap, " -o "+filepath.Join(dir, "plain.json"))
	require.NotEqual(t, wrap, plainWrap)
	plainRun := exec.Command("sh", "-c", plainWrap)
	plainRun.Env = env
	msg, err := plainRun.CombinedOutput()
	require.NoError(t, err, string(msg))
	plain, err := os.ReadFile(filepath.Join(dir, "plain.json"))
	require.NoError(t, err)
	maxSize, err := strconv.Atoi(regexp.MustCompile(`--max-replicas (\d+)`).FindStringSubmatch(wrap)[1])
	require.NoError(t, err)

	runFinal := func() ([]byte, string) {
		t.Helper()
		final := exec.Command("sh", "-c", wrap)
		final.Env = env
		var stderr bytes.Buffer
		final.Stderr = &stderr
		require.NoError(t, final.Run(), stderr.String())
		got, err := os.ReadFile(filepath.Join(results, "capacity.json"))
		require.NoError(t, err)
		return got, stderr.String()
	}
	got, stderr := runFinal()
	assert.Equal(t, string(plain), string(got), "the final run writes what a plain run writes")
	requireCachedRun(t, got, stderr, maxSize, n)

	// A task preempted after its first size leaves a partial file: the
	// final run takes it, simulates the rest, and writes the same.
	largest := filepath.Join(results, fmt.Sprintf("capacity-%d.jsonl", ids[0]))
	records, err := os.ReadFile(largest)
	require.NoError(t, err)
	require.Greater(t, bytes.Count(records, []byte("\n")), 1, "the first task has more than one size")
	firstLine := records[:bytes.IndexByte(records, '\n')+1]
	require.NoError(t, os.Remove(largest))
	require.NoError(t, os.WriteFile(largest+".partial", firstLine, 0o644))
	got, stderr = runFinal()
	assert.Equal(t, string(plain), string(got), "with a partial shard")
	assert.Contains(t, stderr, fmt.Sprintf("(%d records in %d files)", gridCells(maxSize)-(bytes.Count(records, []byte("\n"))-1), n))
}

// TestCapacityShardInterruptedBySignal sends SIGTERM to a shard once it has
// written its first record: it finishes the size under way, keeps the
// records in FILE.partial, says so in one line and exits 143; the final
// run takes the partial file and writes a plain run's document.
func TestCapacityShardInterruptedBySignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeStudyInputs(t, dir, "code.csv", "profile.csv")
	study := []string{"capacity", "--trace", "code.csv", "--max-replicas", "256", "--ttft-slo", "1", "--jobs", "1"}
	var stderr bytes.Buffer
	cmd := servesimProcess(t, dir, nil, append(study, "--shard", "1/1", "-o", "cap.jsonl")...)
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waitFor(t, "the first record in the temporary file", func() bool {
		tmp, _ := filepath.Glob(filepath.Join(dir, ".cap.jsonl.tmp*"))
		if len(tmp) != 1 {
			return false
		}
		data, _ := os.ReadFile(tmp[0])
		return bytes.IndexByte(data, '\n') >= 0
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 143, exitCode(t, cmd.Wait()))
	partial, err := os.ReadFile(filepath.Join(dir, "cap.jsonl.partial"))
	require.NoError(t, err)
	records := lines(partial)
	require.NotEmpty(t, records)
	assert.Less(t, len(records), 9, "interrupted before the end")
	for _, r := range records {
		assert.Equal(t, "capacity_evaluation", decodeLine(t, r)["kind"])
	}
	assert.Equal(t, 256.0, decodeLine(t, records[0])["replicas"], "largest first")
	assert.Equal(t, fmt.Sprintf("servesim: capacity shard interrupted: %d of 9 sizes written to cap.jsonl.partial; --evaluations takes it as it is\n", len(records)),
		stderr.String())
	_, err = os.Stat(filepath.Join(dir, "cap.jsonl"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no cap.jsonl")

	final, finalErr := servesimProcess(t, dir, nil, append(study, "--evaluations", "cap.jsonl.partial")...).Output()
	plain, plainErr := servesimProcess(t, dir, nil, study...).Output()
	assert.Equal(t, exitCode(t, plainErr), exitCode(t, finalErr))
	assert.Equal(t, string(plain), string(final))
}
