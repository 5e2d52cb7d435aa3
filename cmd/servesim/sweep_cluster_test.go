//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
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
	"go.yaml.in/yaml/v3"
)

// The files of docs/cluster and the Dockerfile, from this package's folder.
const (
	dockerfilePath  = "../../Dockerfile"
	k8sSweepPath    = "../../docs/cluster/kubernetes-sweep.yaml"
	k8sSweepSpec    = "../../docs/cluster/kubernetes-sweep-spec.yaml"
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
	requireRecoverableIndexedJob(t, job, args)

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

	// Play the Jobs, with the volumes as folders, the ConfigMap's spec in
	// the one standing for /spec, and a small trace.
	play := newIndexedJob(t, job, args)
	dir := play.dir
	spec := play.mountSpec(t, k8sSweepSpec)
	writeSmallTrace(t, filepath.Join(dir, "traces"), filepath.Base(spec.value(t, "trace")))
	play.all(t, completions)
	mergeCmd := play.command(mergeArgs)
	msg, err := servesimProcess(t, dir, nil, mergeCmd...).CombinedOutput()
	require.NoError(t, err, string(msg))
	got, err := os.ReadFile(mergeCmd[mergeOut+1])
	require.NoError(t, err)
	whole := wholeGrid(t, args, play.volumes)
	assert.Equal(t, whole, string(got))
	assert.Len(t, lines(got), 240+1, "the example's 240 runs and the Pareto record")

	// A pod of index 1 evicted after its first run left a partial file:
	// the index's next pod resumes it, and the merge is the same.
	pod1 := play.pod(t, 1)
	shard1 := pod1.Args[1:][out+1] // the file of -o
	records, err := os.ReadFile(shard1)
	require.NoError(t, err)
	require.NoError(t, os.Remove(shard1))
	require.NoError(t, os.WriteFile(shard1+".partial", lines(records)[0], 0o644))
	msg, err = pod1.CombinedOutput()
	require.NoError(t, err, string(msg))
	assert.Contains(t, string(msg), "--resume auto: 1 of the shard's 30 runs taken from "+shard1+".partial")
	assert.NoFileExists(t, shard1+".partial")
	msg, err = servesimProcess(t, dir, nil, mergeCmd...).CombinedOutput()
	require.NoError(t, err, string(msg))
	got, err = os.ReadFile(mergeCmd[mergeOut+1])
	require.NoError(t, err)
	assert.Equal(t, whole, string(got))
}

// indexedJob plays a Kubernetes Indexed Job of docs/cluster on this
// machine: its volumes /spec/, /traces/ and /results/ are folders of dir,
// and a pod is a servesim process with the environment Kubernetes gives it.
type indexedJob struct {
	dir     string
	volumes *strings.Replacer // the volumes' paths to the folders
	job     yamlDoc
	args    []string // the pods' arguments, as the manifest has them
}

// newIndexedJob prepares a play of job, whose pods run args: a temporary
// dir with an empty results folder (the caller writes the spec, with
// mountSpec, and the traces).
func newIndexedJob(t *testing.T, job yamlDoc, args []string) *indexedJob {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "results"), 0o755))
	return &indexedJob{
		dir: dir,
		volumes: strings.NewReplacer("/spec/", filepath.Join(dir, "spec")+"/", "/traces/", filepath.Join(dir, "traces")+"/",
			"/results/", filepath.Join(dir, "results")+"/"),
		job:  job,
		args: args,
	}
}

// specFile is the settings a pod reads from a spec file: its keys (flag
// names) and their values, as YAML reads them.
type specFile map[string]any

// value returns the value of key, as a string.
func (s specFile) value(t *testing.T, key string) string {
	t.Helper()
	v, ok := s[key]
	require.True(t, ok, "the spec sets %s", key)
	return fmt.Sprint(v)
}

// mountSpec plays the ConfigMap of the file configMap mounted at /spec:
// the Job mounts it, and the key its pods' --spec PATH names is written
// where the folder standing for /spec has PATH, with the volumes' paths
// in it made the folders'. It returns the spec the pods read.
func (j *indexedJob) mountSpec(t *testing.T, configMap string) specFile {
	t.Helper()
	data, err := os.ReadFile(configMap)
	require.NoError(t, err)
	var cm struct {
		Kind     string                `yaml:"kind"`
		Metadata struct{ Name string } `yaml:"metadata"`
		Data     map[string]string     `yaml:"data"`
	}
	require.NoError(t, yaml.Unmarshal(data, &cm))
	require.Equal(t, "ConfigMap", cm.Kind)
	assert.Contains(t, j.job.values("configMap"), "{name: "+cm.Metadata.Name+"}", "the Job mounts the ConfigMap")
	at := slices.Index(j.args, "--spec")
	require.Positive(t, at, "the pods read the ConfigMap's spec with --spec")
	key, ok := strings.CutPrefix(j.args[at+1], "/spec/")
	require.True(t, ok, "--spec %s: expected a file of the ConfigMap's volume, /spec", j.args[at+1])
	content, ok := cm.Data[key]
	require.True(t, ok, "the ConfigMap has no key %s", key)
	path := j.volumes.Replace(j.args[at+1])
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(j.volumes.Replace(content)), 0o644))
	var spec specFile
	require.NoError(t, yaml.Unmarshal([]byte(content), &spec))
	return spec
}

// command is args with the volumes' paths made the folders'.
func (j *indexedJob) command(args []string) []string {
	out := make([]string, len(args))
	for k, a := range args {
		out[k] = j.volumes.Replace(a)
	}
	return out
}

// pod is the process of the pod of completion index.
func (j *indexedJob) pod(t *testing.T, index int) *exec.Cmd {
	t.Helper()
	args := make([]string, len(j.args))
	for k, a := range j.args {
		args[k] = strings.ReplaceAll(a, "$(SHARD_INDEX)", strconv.Itoa(index))
	}
	env := []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(index), "SERVESIM_SHARD_COUNT=" + j.job.env(t, "SERVESIM_SHARD_COUNT")}
	return servesimProcess(t, j.dir, env, j.command(args)...)
}

// all runs the pods of every completion index at once, fails the test
// when one fails and returns each pod's output (stdout and stderr).
func (j *indexedJob) all(t *testing.T, completions int) [][]byte {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, completions)
	outputs := make([][]byte, completions)
	for index := range completions {
		cmd := j.pod(t, index)
		wg.Go(func() { outputs[index], errs[index] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for index := range completions {
		require.NoError(t, errs[index], "pod %d: %s", index, outputs[index])
	}
	return outputs
}

// requireRecoverableIndexedJob checks what makes an Indexed Job of
// docs/cluster recover by itself: its pods resume what an earlier pod of
// their index left (--resume auto), an eviction or preemption spends no
// retry of the index (podFailurePolicy Ignore on DisruptionTarget), bad
// input is not retried (FailIndex on exit 1 and 2, which needs
// backoffLimitPerIndex), and servesim's 10 s grace after SIGTERM fits
// the pod's.
func requireRecoverableIndexedJob(t *testing.T, job yamlDoc, args []string) {
	t.Helper()
	resume := slices.Index(args, "--resume")
	require.Positive(t, resume, "the pods resume with --resume auto")
	assert.Equal(t, "auto", args[resume+1])
	perIndex, err := strconv.Atoi(job.value(t, "backoffLimitPerIndex"))
	require.NoError(t, err)
	assert.Positive(t, perIndex)
	assert.Equal(t, []string{"Ignore", "FailIndex"}, job.values("action"))
	assert.Equal(t, []string{"DisruptionTarget"}, job.values("type"))
	assert.Equal(t, "[1, 2]", job.value(t, "values"))
	grace, err := strconv.Atoi(job.value(t, "terminationGracePeriodSeconds"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, grace, 15)
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
// output, paths rewritten (a spec file is the play's, which mountSpec
// wrote), and returns its output.
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

// slurmPlay plays a Slurm script of docs/cluster as Slurm runs it, without
// Slurm: each task is `bash SCRIPT` with the environment Slurm gives an
// array task, in the folder it was submitted from, with stand-ins on PATH
// for srun (runs the step), scontrol (shows the job in a partition,
// account and QOS) and sbatch (records each submission, one argument a
// line and a line "--" after each, and answers job 4243; it fails while
// the file sbatch-fails exists).
type slurmPlay struct {
	t       *testing.T
	script  string // the script, as submitted (Command=)
	dir     string // the folder sbatch ran in
	results string
	env     []string
}

// Where the stand-in scontrol says the job runs and what it was submitted as.
const (
	playPartition = "gpu"
	playAccount   = "lab"
	playQOS       = "long"
	playCommand   = "/home/me/servesim/docs/cluster/script.sbatch"
)

func newSlurmPlay(t *testing.T, script string, env ...string) *slurmPlay {
	t.Helper()
	_, err := exec.LookPath("bash")
	require.NoError(t, err, "the scripts are bash scripts")
	p := &slurmPlay{t: t, script: script, dir: t.TempDir()}
	p.results = filepath.Join(p.dir, "results")
	bin := filepath.Join(p.dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	shims := map[string]string{
		"srun": "#!/bin/sh\nexec \"$@\"\n",
		"sbatch": "#!/bin/sh\n[ -e " + filepath.Join(p.dir, "sbatch-fails") + " ] && { echo 'sbatch: error: Batch job submission failed' >&2; exit 1; }\n" +
			"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " + filepath.Join(p.dir, "sbatch.log") + "\necho -- >> " + filepath.Join(p.dir, "sbatch.log") + "\necho 4243\n",
		"scontrol": "#!/bin/sh\necho \"JobId=$SLURM_JOB_ID JobName=x Partition=" + playPartition + " Account=" + playAccount + " QOS=" + playQOS + " Command=" + playCommand + "\"\n",
	}
	for name, body := range shims {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755))
	}
	p.env = append(servesimProcess(t, p.dir, nil).Env, "PATH="+bin+":"+os.Getenv("PATH"), "SLURM_CONF=/etc/slurm/slurm.conf")
	p.env = append(p.env, env...)
	return p
}

// run runs the script with the environment env added, returning its
// combined output and exit code.
func (p *slurmPlay) run(env ...string) (string, int) {
	p.t.Helper()
	cmd := exec.Command("bash", p.script)
	cmd.Dir = p.dir
	cmd.Env = append(slices.Clone(p.env), env...)
	out, err := cmd.CombinedOutput()
	return string(out), exitCode(p.t, err)
}

// task runs task id of an array of the tasks first to last, as a
// submission with --array=FIRST-LAST starts it.
func (p *slurmPlay) task(id, first, last int, env ...string) (string, int) {
	p.t.Helper()
	return p.run(append([]string{"SLURM_ARRAY_JOB_ID=4242", "SLURM_JOB_ID=" + strconv.Itoa(5000+id), "SLURM_ARRAY_TASK_ID=" + strconv.Itoa(id),
		"SLURM_ARRAY_TASK_MIN=" + strconv.Itoa(first), "SLURM_ARRAY_TASK_MAX=" + strconv.Itoa(last), "SLURM_ARRAY_TASK_STEP=1",
		"SLURM_ARRAY_TASK_COUNT=" + strconv.Itoa(last-first+1), "SLURM_CPUS_PER_TASK=1", "SLURM_MEM_PER_CPU=512"}, env...)...)
}

// array runs tasks first to last at once, each of which must succeed.
func (p *slurmPlay) array(first, last int) {
	p.t.Helper()
	var wg sync.WaitGroup
	outs := make([]string, last-first+1)
	codes := make([]int, last-first+1)
	for id := first; id <= last; id++ {
		wg.Go(func() { outs[id-first], codes[id-first] = p.task(id, first, last) })
	}
	wg.Wait()
	for id := first; id <= last; id++ {
		require.Equal(p.t, 0, codes[id-first], "task %d: %s", id, outs[id-first])
	}
}

// submissions are the sbatch calls made so far, each its arguments.
func (p *slurmPlay) submissions() [][]string {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, "sbatch.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(p.t, err)
	var calls [][]string
	var call []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "--" {
			calls = append(calls, call)
			call = nil
			continue
		}
		call = append(call, line)
	}
	return calls
}

// requireQueuedStep checks a submission of the script's next step (merge,
// final): after the whole array whatever its fate, in the task's
// partition, account and QOS, with a time limit, memory and the log
// appended to in the folder sbatch ran in, the step and the settings
// exported, the script itself as the job's script.
func (p *slurmPlay) requireQueuedStep(call []string, step string) {
	p.t.Helper()
	for _, want := range []string{"--dependency=afterany:4242", "--kill-on-invalid-dep=yes", "--partition=" + playPartition, "--account=" + playAccount,
		"--qos=" + playQOS, "--open-mode=append", "--array=0"} {
		assert.Contains(p.t, call, want)
	}
	has := func(prefix string) string {
		for _, a := range call {
			if strings.HasPrefix(a, prefix) {
				return a
			}
		}
		p.t.Errorf("no %s in %v", prefix, call)
		return ""
	}
	assert.Regexp(p.t, `^--time=\d\d:\d\d:\d\d$`, has("--time="))
	assert.Regexp(p.t, `^--mem-per-cpu=\d+[KMG]$`, has("--mem-per-cpu="), "--mem would clash with the script's own --mem-per-cpu")
	assert.NotContains(p.t, has("--output="), "/", "the log goes to the folder sbatch ran in, which exists")
	export := has("--export=")
	assert.True(p.t, strings.HasPrefix(export, "--export=ALL,SERVESIM_STEP="+step+","), export)
	assert.Contains(p.t, export, ",SERVESIM_RESULTS="+p.results+",")
	assert.Contains(p.t, export, ",SERVESIM_SCRIPT="+playCommand)
	assert.Equal(p.t, p.script, call[len(call)-1], "the job is the script itself")
}

// requirePortableDirectives checks the #SBATCH lines every script of
// docs/cluster needs: an array from 0 as long as the script's shard count,
// few enough CPUs for a 2-CPU node, a requeue with the log appended to,
// the log in the folder sbatch ran in.
func requirePortableDirectives(t *testing.T, script string) (shards int) {
	t.Helper()
	directives := sbatchDirectives(t, script)
	first, last, step := sbatchArray(t, directives["--array"])
	assert.Equal(t, 0, first, "task ID runs shard ID+1")
	assert.Equal(t, 1, step)
	count := regexp.MustCompile(`(?m)^shards=\$\{SERVESIM_SHARDS:-(\d+)\}$`).FindStringSubmatch(script)
	require.NotNil(t, count, "the script names its shard count")
	shards, _ = strconv.Atoi(count[1])
	assert.Equal(t, shards, last+1, "the array has a task per shard")
	cpus, err := strconv.Atoi(directives["--cpus-per-task"])
	require.NoError(t, err)
	assert.LessOrEqual(t, cpus, 2, "a 2-CPU node can run a task")
	assert.Equal(t, "append", directives["--open-mode"], "a requeued task's log is appended to")
	assert.Contains(t, directives, "--requeue")
	assert.NotContains(t, directives["--output"], "/", "the log goes to the folder sbatch ran in: a folder that does not exist loses it")
	assert.NotContains(t, script, "set -e", "a failing command is handled where it fails")
	return shards
}

// TestSlurmJobArray checks the sbatch script's contract and then plays it:
// every task of its --array with the environment Slurm gives array tasks,
// the trace and results given as relative paths from the folder sbatch ran
// in, then the merge it queued; the merged file is the whole grid's output.
// A task rerun on its own (--array=3) runs its own shard; a merge with a
// shard missing fails naming the task and the command that resumes it; a
// task whose sbatch fails runs its shard all the same; stale files of an
// earlier study are passed over.
func TestSlurmJobArray(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(slurmScriptPath)
	require.NoError(t, err)
	script := string(data)
	assert.True(t, strings.HasPrefix(script, "#!/bin/bash\n"))
	shards := requirePortableDirectives(t, script)
	assert.Regexp(t, `(?m)^srun "\$servesim" sweep --shard "\$\(\(id \+ 1\)\)/\$shards" --resume auto `, script)

	abs, err := filepath.Abs(slurmScriptPath)
	require.NoError(t, err)
	p := newSlurmPlay(t, abs, "SERVESIM_TRACE=data/code.csv", "SERVESIM_RESULTS=results")
	writeSmallTrace(t, filepath.Join(p.dir, "data"), "code.csv")
	// An earlier study's files: a shard beyond this array, a partial file.
	require.NoError(t, os.Mkdir(p.results, 0o755))
	code, stale, errOut := runCLI(t, "sweep", "--max-elapsed", "20", "--controller", "max,min")
	require.Equal(t, exitOK, code, errOut)
	for _, name := range []string{"shard-9.jsonl", "shard-5.jsonl.partial"} {
		require.NoError(t, os.WriteFile(filepath.Join(p.results, name), []byte(stale), 0o644))
	}

	p.array(0, shards-1)
	calls := p.submissions()
	require.Len(t, calls, 1, "one merge, queued by the first task")
	p.requireQueuedStep(calls[0], "merge")
	assert.Contains(t, calls[0], "--cpus-per-task=1")
	_, err = os.Stat(filepath.Join(p.results, "shard-5.jsonl.partial"))
	assert.ErrorIs(t, err, os.ErrNotExist, "task 5 replaced the stale partial file")

	// The whole grid: the script's grid, on the trace made absolute.
	grid := regexp.MustCompile(`(?s)\ngrid=\((.*?)\)\n`).FindStringSubmatch(script)
	require.NotNil(t, grid)
	words := []string{"sweep", "--trace", filepath.Join(p.dir, "data", "code.csv")}
	for _, w := range strings.Fields(grid[1]) {
		words = append(words, strings.Trim(w, "'"))
	}
	code, whole, errOut := runCLI(t, words...)
	require.Equal(t, exitOK, code, errOut)
	merged := filepath.Join(p.results, "sweep.jsonl")
	out, code := p.run("SERVESIM_STEP=merge")
	require.Equal(t, 0, code, out)
	got, err := os.ReadFile(merged)
	require.NoError(t, err)
	assert.Equal(t, whole, string(got))
	assert.Len(t, lines(got), 240+1, "the example's 240 runs and the Pareto record")

	// Task 3 rerun as its own array (sbatch --array=3): shard 4, not 1/1;
	// it queues a merge for its own array.
	shard3 := filepath.Join(p.results, "shard-3.jsonl")
	want3, err := os.ReadFile(shard3)
	require.NoError(t, err)
	require.NoError(t, os.Remove(shard3))
	out, code = p.task(3, 3, 3)
	require.Equal(t, 0, code, out)
	got3, err := os.ReadFile(shard3)
	require.NoError(t, err)
	assert.Equal(t, string(want3), string(got3))
	assert.Len(t, p.submissions(), 2, "the rerun queued its own merge")

	// A shard missing (its task failed after one run): the merge fails
	// naming the task, the partial file, and the command that resumes it;
	// the rerun resumes, and the merge writes the whole grid's output.
	shard5 := filepath.Join(p.results, "shard-5.jsonl")
	records, err := os.ReadFile(shard5)
	require.NoError(t, err)
	require.NoError(t, os.Remove(shard5))
	require.NoError(t, os.WriteFile(shard5+".partial", lines(records)[0], 0o644))
	out, code = p.run("SERVESIM_STEP=merge", "SERVESIM_SCRIPT="+playCommand)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "servesim-sweep: the shards of tasks 5 are missing in "+p.results+": ")
	assert.Contains(t, out, "; 5 left a .partial file that the rerun resumes\n")
	assert.Contains(t, out, "servesim-sweep: resume them, then the merge runs again: sbatch --array=5 "+playCommand+"\n")
	out, code = p.task(5, 5, 5)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "servesim: sweep: --resume auto: 1 of the shard's 30 runs taken from "+shard5+".partial\n")
	out, code = p.run("SERVESIM_STEP=merge")
	require.Equal(t, 0, code, out)
	got, err = os.ReadFile(merged)
	require.NoError(t, err)
	assert.Equal(t, whole, string(got))

	// A task whose sbatch fails (a partition it may not use) runs its
	// shard all the same, and says how to run the merge.
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "sbatch-fails"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(p.results, "shard-0.jsonl")))
	out, code = p.task(0, 0, shards-1)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "servesim-sweep: could not queue the merge (see sbatch's error above); once the tasks have ended, run it: SERVESIM_STEP=merge SERVESIM_RESULTS="+p.results+" bash "+playCommand+"\n")
	assert.FileExists(t, filepath.Join(p.results, "shard-0.jsonl"))

	// A trace that is not there fails the task at once, naming it; a task
	// beyond the study's shards is refused.
	out, code = p.task(1, 0, shards-1, "SERVESIM_TRACE=nosuch.csv")
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "servesim-sweep: trace "+filepath.Join(p.dir, "nosuch.csv")+": no such file (SERVESIM_TRACE; a relative path is taken from the folder sbatch ran in, "+p.dir+")\n", out)
	out, code = p.task(8, 0, 8)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "servesim-sweep: task 8: this study has 8 shards, tasks 0 to 7 (SERVESIM_SHARDS)\n")
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
