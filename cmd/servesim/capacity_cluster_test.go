//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	k8sCapacitySpec      = "../../docs/cluster/kubernetes-capacity-spec.yaml"
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
	requireRecoverableIndexedJob(t, job, args)
	require.GreaterOrEqual(t, len(args), 3)
	assert.Equal(t, []string{"capacity", "--shard", "auto"}, args[:3])
	out := slices.Index(args, "-o")
	require.Positive(t, out, "each pod writes its shard with -o")

	final := readYAML(t, k8sCapacityFinalPath)
	finalArgs := final.list(t, "args")
	evaluations := slices.Index(finalArgs, "--evaluations")
	require.Positive(t, evaluations)
	pattern := finalArgs[evaluations+1]
	for index := range completions + 2 {
		name := strings.ReplaceAll(args[out+1], "$(SHARD_INDEX)", strconv.Itoa(index))
		for _, file := range []string{name, name + ".partial"} {
			ok, err := filepath.Match(pattern, file)
			require.NoError(t, err)
			assert.Equal(t, index < completions, ok, "the final run reads %s only if it is of one of the Job's indexes", file)
		}
	}
	assert.Equal(t, withoutFlags(args, []string{"--shard", "-o", "--resume"}, []string{"--quiet"}),
		withoutFlags(finalArgs, []string{"--evaluations", "-o"}, nil), "the final run is the shards' study")
	assert.Equal(t, job.values("configMap"), final.values("configMap"), "the final Job mounts the shards' spec")

	// Play the Jobs, with the volumes as folders and the ConfigMap's spec
	// in the one standing for /spec, which both Jobs read.
	play := newIndexedJob(t, job, args)
	spec := play.mountSpec(t, k8sCapacitySpec)
	writeStudyInputs(t, filepath.Join(play.dir, "traces"), filepath.Base(spec.value(t, "trace")), filepath.Base(spec.value(t, "profile")))
	for index, output := range play.all(t, completions) {
		assert.Empty(t, output, "pod %d", index)
	}
	finalCmd := play.command(finalArgs)
	var stderr bytes.Buffer
	run := servesimProcess(t, play.dir, nil, finalCmd...)
	run.Stderr = &stderr
	require.NoError(t, run.Run(), stderr.String())
	got, err := os.ReadFile(finalCmd[slices.Index(finalCmd, "-o")+1])
	require.NoError(t, err)

	plainArgs := withoutFlags(finalCmd, []string{"--evaluations", "-o"}, nil)
	code, plain, errOut := runCLI(t, plainArgs...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, plain, string(got), "the final run writes what a plain run writes")
	maxSize, err := strconv.Atoi(spec.value(t, "max-replicas"))
	require.NoError(t, err)
	requireCachedRun(t, got, stderr.String(), maxSize, completions)
}

// TestSlurmCapacityJobArray checks the capacity sbatch script's contract
// and then plays it: every task of its --array with the environment Slurm
// gives array tasks, then the final run it queued; its document is a plain
// run's, also when a task left only part of its share (afterany: the final
// run simulates what is missing, and names the tasks), and after the task
// rerun resumes that part. Files of an earlier study are not read.
func TestSlurmCapacityJobArray(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(slurmCapacityPath)
	require.NoError(t, err)
	script := string(data)
	assert.True(t, strings.HasPrefix(script, "#!/bin/bash\n"))
	shards := requirePortableDirectives(t, script)
	assert.Regexp(t, `(?m)^srun "\$servesim" capacity --shard "\$\(\(id \+ 1\)\)/\$shards" --resume auto `, script)

	abs, err := filepath.Abs(slurmCapacityPath)
	require.NoError(t, err)
	p := newSlurmPlay(t, abs, "SERVESIM_TRACE=data/code trace.csv", "SERVESIM_PROFILE=data/l4_profile.csv", "SERVESIM_RESULTS=results")
	writeStudyInputs(t, filepath.Join(p.dir, "data"), "code trace.csv", "l4_profile.csv")
	// An earlier study's records, of a shard beyond this array.
	require.NoError(t, os.Mkdir(p.results, 0o755))
	code, stale, errOut := runCLI(t, "capacity", "--max-elapsed", "60", "--max-replicas", "4", "--shard", "1/1")
	require.Equal(t, exitOK, code, errOut)
	require.NoError(t, os.WriteFile(filepath.Join(p.results, "capacity-9.jsonl"), []byte(stale), 0o644))

	p.array(0, shards-1)
	calls := p.submissions()
	require.Len(t, calls, 1, "one final run, queued by the first task")
	p.requireQueuedStep(calls[0], "final")
	assert.Contains(t, calls[0], "--cpus-per-task=1", "the final run has a task's CPUs")

	// The plain run: the script's study, on the inputs made absolute.
	study := regexp.MustCompile(`(?s)\nstudy=\((.*?)\)\n`).FindStringSubmatch(script)
	require.NotNil(t, study)
	words := []string{"capacity"}
	for _, w := range strings.Fields(study[1]) {
		words = append(words, strings.NewReplacer(`"$trace"`, filepath.Join(p.dir, "data", "code trace.csv"),
			`"$profile"`, filepath.Join(p.dir, "data", "l4_profile.csv"), "'", "").Replace(w))
	}
	code, plain, errOut := runCLI(t, words...)
	require.Equal(t, exitOK, code, errOut)
	final := func() string {
		t.Helper()
		out, code := p.run("SERVESIM_STEP=final")
		require.Equal(t, 0, code, out)
		got, err := os.ReadFile(filepath.Join(p.results, "capacity.json"))
		require.NoError(t, err)
		assert.Equal(t, plain, string(got), "the final run writes what a plain run writes")
		return out
	}
	maxSize, err := strconv.Atoi(regexp.MustCompile(`--max-replicas (\d+)`).FindStringSubmatch(study[1])[1])
	require.NoError(t, err)
	out := final()
	assert.Contains(t, out, fmt.Sprintf("(%d records in %d files)", gridCells(maxSize), shards))

	// A task preempted after its first size leaves a partial file: the
	// final run takes it, simulates the rest, and writes the same; the
	// task rerun takes it up and simulates only the rest.
	largest := filepath.Join(p.results, "capacity-0.jsonl")
	records, err := os.ReadFile(largest)
	require.NoError(t, err)
	require.Greater(t, bytes.Count(records, []byte("\n")), 1, "the first task has more than one size")
	firstLine := records[:bytes.IndexByte(records, '\n')+1]
	require.NoError(t, os.Remove(largest))
	require.NoError(t, os.WriteFile(largest+".partial", firstLine, 0o644))
	out = final()
	assert.Contains(t, out, "servesim-capacity: tasks 0 did not complete (see their logs): this run simulates the sizes they lack itself; to spread them over the cluster instead, cancel it and run: sbatch --array=0 "+p.script+"\n")
	assert.Contains(t, out, fmt.Sprintf("(%d records in %d files)", gridCells(maxSize)-(bytes.Count(records, []byte("\n"))-1), shards))
	out, code = p.task(0, 0, 0)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("servesim: capacity shard: --resume auto: 1 of the shard's %d sizes taken from %s.partial\n", bytes.Count(records, []byte("\n")), largest))
	got, err := os.ReadFile(largest)
	require.NoError(t, err)
	assert.Equal(t, string(records), string(got))
	assert.NoFileExists(t, largest+".partial")
	final()
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
