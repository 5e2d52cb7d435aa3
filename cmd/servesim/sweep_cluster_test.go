//go:build unix

package main

import (
	"bufio"
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
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sweep"
)

// The files of docs/cluster and the Dockerfile, from this package's folder.
const (
	dockerfilePath  = "../../Dockerfile"
	k8sSweepPath    = "../../docs/cluster/kubernetes-sweep.yaml"
	k8sMergePath    = "../../docs/cluster/kubernetes-merge.yaml"
	slurmScriptPath = "../../docs/cluster/slurm-sweep.sbatch"
	goModPath       = "../../go.mod"
)

// dockerInstructions reads a Dockerfile's instructions (continuation lines
// joined, comments left out) as [keyword, arguments] pairs.
func dockerInstructions(t *testing.T, path string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][2]string
	pending := ""
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if pending == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		keyword, args, _ := strings.Cut(full, " ")
		out = append(out, [2]string{strings.ToUpper(keyword), strings.TrimSpace(args)})
	}
	require.Empty(t, pending, "a continuation line ends the file")
	return out
}

// TestDockerfile checks that the Dockerfile builds servesim in a Go
// builder stage, statically (CGO_ENABLED=0), and copies the binary alone
// into a distroless static image whose entry point it is.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	instructions := dockerInstructions(t, dockerfilePath)
	var stages [][][2]string
	for _, in := range instructions {
		if in[0] == "FROM" {
			stages = append(stages, nil)
		}
		require.NotEmpty(t, stages, "the first instruction is FROM (or ARG)")
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	require.Len(t, stages, 2, "a builder stage and the image")

	from := regexp.MustCompile(`^golang:(\d+\.\d+)\S* AS (\w+)$`).FindStringSubmatch(stages[0][0][1])
	require.NotNil(t, from, "the builder: FROM golang:VERSION AS NAME, not %q", stages[0][0][1])
	goMod, err := os.ReadFile(goModPath)
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	require.NotNil(t, goVersion)
	assert.Equal(t, string(goVersion[1]), from[1], "the builder's Go is go.mod's")
	builder := from[2]

	var binary string
	for _, in := range stages[0] {
		if in[0] != "RUN" || !strings.Contains(in[1], "go build") {
			continue
		}
		build := regexp.MustCompile(`^CGO_ENABLED=0 go build (.* )?-o (\S+) (.* )?\./cmd/servesim$`).FindStringSubmatch(in[1])
		require.NotNil(t, build, "RUN CGO_ENABLED=0 go build ... -o BINARY ./cmd/servesim, not %q", in[1])
		binary = build[2]
	}
	require.NotEmpty(t, binary, "the builder builds ./cmd/servesim")

	image := stages[1]
	assert.Regexp(t, `^gcr\.io/distroless/static(-debian\d+)?(:\S+)?$`, image[0][1])
	var installed string
	for _, in := range image[1:] {
		switch in[0] {
		case "COPY":
			fields := strings.Fields(in[1])
			require.Len(t, fields, 3, "COPY --from=%s BINARY PATH", builder)
			assert.Equal(t, "--from="+builder, fields[0])
			assert.Equal(t, binary, fields[1], "the binary built")
			installed = fields[2]
		case "ENTRYPOINT":
			var entry []string
			require.NoError(t, json.Unmarshal([]byte(in[1]), &entry), "ENTRYPOINT in exec form: the image has no shell")
			assert.Equal(t, []string{installed}, entry)
		case "USER", "LABEL", "ARG", "ENV":
		default:
			t.Errorf("the image stage holds only the binary: unexpected %s %s", in[0], in[1])
		}
	}
	assert.Equal(t, "ENTRYPOINT", image[len(image)-1][0])
}

// yamlDoc is a YAML file read line by line: enough to check the few keys a
// manifest's contract rests on without a YAML parser.
type yamlDoc []string

func readYAML(t *testing.T, path string) yamlDoc {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc yamlDoc
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		doc = append(doc, strings.TrimRight(line, " "))
	}
	require.NotContains(t, doc, "---", "one document")
	return doc
}

// scalar unquotes a YAML scalar.
func scalar(s string) string {
	s = strings.TrimSpace(s)
	if uq, err := strconv.Unquote(s); err == nil {
		return uq
	}
	return strings.Trim(s, "'")
}

// values returns the values of every "key: value" line.
func (d yamlDoc) values(key string) []string {
	var out []string
	for _, line := range d {
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), ":")
		if ok && k == key && strings.TrimSpace(v) != "" {
			out = append(out, scalar(v))
		}
	}
	return out
}

// value returns the value of the only "key: value" line.
func (d yamlDoc) value(t *testing.T, key string) string {
	t.Helper()
	v := d.values(key)
	require.Len(t, v, 1, "one %s", key)
	return v[0]
}

// list returns the items of the block list under the only "key:" line.
func (d yamlDoc) list(t *testing.T, key string) []string {
	t.Helper()
	var items []string
	found := 0
	for i, line := range d {
		if strings.TrimSpace(line) != key+":" {
			continue
		}
		found++
		indent := len(line) - len(strings.TrimLeft(line, " "))
		for _, item := range d[i+1:] {
			rest := strings.TrimLeft(item, " ")
			if len(item)-len(rest) < indent || !strings.HasPrefix(rest, "- ") {
				break
			}
			items = append(items, scalar(strings.TrimPrefix(rest, "- ")))
		}
	}
	require.Equal(t, 1, found, "one %s list", key)
	return items
}

// env returns the value of the container environment variable name.
func (d yamlDoc) env(t *testing.T, name string) string {
	t.Helper()
	for i, line := range d {
		if strings.TrimSpace(line) == "- name: "+name && i+1 < len(d) {
			k, v, _ := strings.Cut(strings.TrimSpace(d[i+1]), ":")
			require.Equal(t, "value", k, "%s has a value", name)
			return scalar(v)
		}
	}
	t.Fatalf("no environment variable %s", name)
	return ""
}

// TestKubernetesIndexedJob checks the manifests' contract and then plays
// them: one process per completion index, with the environment Kubernetes
// gives an Indexed Job's pods and the volumes as folders, then the merge
// Job's command; the merged file is the whole grid's output.
func TestKubernetesIndexedJob(t *testing.T) {
	t.Parallel()
	job := readYAML(t, k8sSweepPath)
	assert.Equal(t, "Job", job.value(t, "kind"))
	assert.Equal(t, "Indexed", job.value(t, "completionMode"))
	completions, err := strconv.Atoi(job.value(t, "completions"))
	require.NoError(t, err)
	require.Positive(t, completions)
	parallelism, err := strconv.Atoi(job.value(t, "parallelism"))
	require.NoError(t, err)
	assert.True(t, parallelism >= 1 && parallelism <= completions, "parallelism %d", parallelism)
	assert.Equal(t, strconv.Itoa(completions), job.env(t, "SERVESIM_SHARD_COUNT"), "SERVESIM_SHARD_COUNT is completions")
	assert.Equal(t, "Never", job.value(t, "restartPolicy"))
	args := job.list(t, "args")
	require.GreaterOrEqual(t, len(args), 3)
	assert.Equal(t, []string{"sweep", "--shard", "auto"}, args[:3])
	assert.Contains(t, job.values("fieldPath"), "metadata.annotations['batch.kubernetes.io/job-completion-index']")

	merge := readYAML(t, k8sMergePath)
	mergeArgs := merge.list(t, "args")
	require.GreaterOrEqual(t, len(mergeArgs), 2)
	assert.Equal(t, []string{"sweep", "merge"}, mergeArgs[:2])
	out := slices.Index(args, "-o")
	require.Positive(t, out, "each pod writes its shard with -o")
	var want []string
	for index := range completions {
		want = append(want, strings.ReplaceAll(args[out+1], "$(SHARD_INDEX)", strconv.Itoa(index)))
	}
	mergeOut := slices.Index(mergeArgs, "-o")
	require.Positive(t, mergeOut)
	assert.Equal(t, want, mergeArgs[2:mergeOut], "the merge reads the file of each completion index, once")

	// Play the Jobs, with the volumes as folders and a small trace.
	dir := t.TempDir()
	volumes := strings.NewReplacer("/traces/", filepath.Join(dir, "traces")+"/", "/results/", filepath.Join(dir, "results")+"/")
	writeSmallTrace(t, filepath.Join(dir, "traces"), filepath.Base(args[slices.Index(args, "--trace")+1]))
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
	}
	mergeCmd := make([]string, len(mergeArgs))
	for k, a := range mergeArgs {
		mergeCmd[k] = volumes.Replace(a)
	}
	msg, err := servesimProcess(t, dir, nil, mergeCmd...).CombinedOutput()
	require.NoError(t, err, string(msg))
	got, err := os.ReadFile(mergeCmd[mergeOut+1])
	require.NoError(t, err)
	whole := wholeGrid(t, args, volumes)
	assert.Equal(t, whole, string(got))
	assert.Len(t, lines(got), 240+1, "the example's 240 runs and the Pareto record")
}

// writeSmallTrace writes a trace of a few requests as dir/name.
func writeSmallTrace(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	trace := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	for i := range 20 {
		trace += fmt.Sprintf("2023-11-16 18:15:%02d.0,%d,%d\n", 10+2*i, 200+37*i, 20+11*i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(trace), 0o644))
}

// wholeGrid runs, in-process, the sweep of args without its shard and
// output, paths rewritten, and returns its output.
func wholeGrid(t *testing.T, args []string, paths *strings.Replacer) string {
	t.Helper()
	var whole []string
	for k := 0; k < len(args); k++ {
		switch args[k] {
		case "--shard", "-o", "--resume":
			k++
			continue
		}
		whole = append(whole, paths.Replace(args[k]))
	}
	code, out, errOut := runCLI(t, whole...)
	require.Equal(t, exitOK, code, errOut)
	return out
}

// sbatchDirectives returns the script's #SBATCH options, by name.
func sbatchDirectives(t *testing.T, script string) map[string]string {
	t.Helper()
	directives := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(script))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "#SBATCH "); ok {
			name, value, _ := strings.Cut(strings.TrimSpace(rest), "=")
			directives[name] = value
		}
	}
	return directives
}

// TestSlurmJobArray checks the sbatch script's contract and then plays it:
// every task of its --array runs the script with the environment Slurm
// gives array tasks (srun and sbatch are stand-ins that run the step and
// record the merge job), then the merge job runs; the merged file is the
// whole grid's output.
func TestSlurmJobArray(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(slurmScriptPath)
	require.NoError(t, err)
	script := string(data)
	assert.True(t, strings.HasPrefix(script, "#!/bin/bash\n"))
	directives := sbatchDirectives(t, script)
	first, last, step := sbatchArray(t, directives["--array"])
	assert.Regexp(t, `(?m)^srun servesim sweep --shard auto `, script)
	assert.Regexp(t, `(?m)sbatch --dependency=afterok:"\$SLURM_ARRAY_JOB_ID" .*\\\n.*\\\n\s+--wrap="servesim sweep merge `, script)

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
	writeSmallTrace(t, dir, "AzureLLMInferenceTrace_code.csv")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "results"), 0o755))
	var ids []int
	for id := first; id <= last; id += step {
		ids = append(ids, id)
	}
	n := len(ids)
	var wg sync.WaitGroup
	outputs := make([][]byte, n)
	errs := make([]error, n)
	for k, id := range ids {
		cmd := exec.Command(bash, slurmScriptPath)
		cmd.Dir = "."
		env := servesimProcess(t, dir, nil).Env
		cmd.Env = append(env, "PATH="+bin+":"+os.Getenv("PATH"), "SERVESIM_RESULTS="+filepath.Join(dir, "results"),
			"SERVESIM_TRACE="+filepath.Join(dir, "AzureLLMInferenceTrace_code.csv"), "SLURM_ARRAY_JOB_ID=4242",
			"SLURM_ARRAY_TASK_ID="+strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN="+strconv.Itoa(first), "SLURM_ARRAY_TASK_MAX="+strconv.Itoa(last),
			"SLURM_ARRAY_TASK_STEP="+strconv.Itoa(step), "SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(n), "SLURM_CPUS_PER_TASK=1")
		wg.Go(func() { outputs[k], errs[k] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for k := range ids {
		require.NoError(t, errs[k], "task %d: %s", ids[k], outputs[k])
	}
	queued, err := os.ReadFile(sbatchLog)
	require.NoError(t, err)
	submitted := strings.Split(strings.TrimSuffix(string(queued), "\n"), "\n")
	assert.Equal(t, "--dependency=afterok:4242", submitted[0], "the merge waits for the whole array")
	assert.Equal(t, 1, strings.Count(string(queued), "--wrap="), "one merge, queued by one task")
	wrap, ok := strings.CutPrefix(submitted[len(submitted)-1], "--wrap=")
	require.True(t, ok, "the merge is a --wrap command: %v", submitted)
	merge := exec.Command("sh", "-c", wrap)
	merge.Env = append(servesimProcess(t, dir, nil).Env, "PATH="+bin+":"+os.Getenv("PATH"))
	msg, err := merge.CombinedOutput()
	require.NoError(t, err, string(msg))
	got, err := os.ReadFile(filepath.Join(dir, "results", "sweep.jsonl"))
	require.NoError(t, err)
	shardFiles, err := filepath.Glob(filepath.Join(dir, "results", "shard-*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, shardFiles, n, "one shard file per task")

	// The whole grid: the script's srun command line, without --shard and -o.
	srun := regexp.MustCompile(`(?s)\nsrun (servesim sweep .*?)\n[^ ]`).FindStringSubmatch(script)
	require.NotNil(t, srun)
	words := strings.Fields(strings.NewReplacer("\\\n", " ", `"$trace"`, filepath.Join(dir, "AzureLLMInferenceTrace_code.csv"),
		`"$SLURM_CPUS_PER_TASK"`, "1", `${resume[@]+"${resume[@]}"}`, "", `"$out"`, "x").Replace(srun[1]))
	assert.Equal(t, wholeGrid(t, words[1:], strings.NewReplacer()), string(got))

	// Each task resolves to its own shard, and together they are all.
	var shards []int
	for _, id := range ids {
		env := map[string]string{"SLURM_ARRAY_TASK_ID": strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN": strconv.Itoa(first), "SLURM_ARRAY_TASK_MAX": strconv.Itoa(last),
			"SLURM_ARRAY_TASK_STEP": strconv.Itoa(step), "SLURM_ARRAY_TASK_COUNT": strconv.Itoa(n)}
		i, count, err := sweep.ShardFromEnv(func(k string) string { return env[k] })
		require.NoError(t, err)
		assert.Equal(t, n, count)
		shards = append(shards, i)
	}
	slices.Sort(shards)
	assert.Equal(t, n, len(slices.Compact(shards)))
}

// sbatchArray parses an sbatch --array value, which must be a range
// FIRST-LAST[:STEP][%MAX] (the form --shard auto can map onto shards).
func sbatchArray(t *testing.T, spec string) (first, last, step int) {
	t.Helper()
	array := regexp.MustCompile(`^(\d+)-(\d+)(?::(\d+))?(?:%\d+)?$`).FindStringSubmatch(spec)
	require.NotNil(t, array, "--array is a range (FIRST-LAST[:STEP][%%MAX]), which --shard auto can map onto shards, not %q", spec)
	first, _ = strconv.Atoi(array[1])
	last, _ = strconv.Atoi(array[2])
	step = 1
	if array[3] != "" {
		step, _ = strconv.Atoi(array[3])
	}
	return first, last, step
}
