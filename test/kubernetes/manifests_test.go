// Package kubernetes checks the Kubernetes manifests of docs/cluster
// against the API's own types (k8s.io/api), decoded strictly as an API
// server does with fieldValidation=Strict: a field misspelt, misplaced or
// of the wrong type fails. It is a module of its own, so that servesim
// itself does not depend on the Kubernetes packages: make k8s-manifests.
// No API server runs here (none can without a network: see
// docs/cluster/README.md); the tests in cmd/servesim play the Jobs.
package kubernetes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the files of docs/cluster, and the Job each must be.
var manifests = map[string]struct {
	name      string
	indexed   bool
	container string
}{
	"kubernetes-sweep.yaml":          {"servesim-sweep", true, "shard"},
	"kubernetes-merge.yaml":          {"servesim-sweep-merge", false, "merge"},
	"kubernetes-capacity.yaml":       {"servesim-capacity", true, "shard"},
	"kubernetes-capacity-final.yaml": {"servesim-capacity-final", false, "final"},
}

func readJob(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster", name))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatalf("%s: not a batch/v1 Job as the API server reads it: %v", name, err)
	}
	return &job
}

func TestManifestsAreJobs(t *testing.T) {
	for file, want := range manifests {
		t.Run(file, func(t *testing.T) {
			job := readJob(t, file)
			if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != want.name {
				t.Errorf("%s/%s %s: expected batch/v1 Job %s", job.APIVersion, job.Kind, job.Name, want.name)
			}
			spec := job.Spec.Template.Spec
			if spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %q: a podFailurePolicy needs Never", spec.RestartPolicy)
			}
			if len(spec.Containers) != 1 || spec.Containers[0].Name != want.container {
				t.Fatalf("expected one container named %s", want.container)
			}
			rules := job.Spec.PodFailurePolicy
			if rules == nil {
				t.Fatal("no podFailurePolicy: bad input (exit 1, 2) would be retried")
			}
			for _, r := range rules.Rules {
				if r.OnExitCodes != nil && (r.OnExitCodes.ContainerName == nil || *r.OnExitCodes.ContainerName != want.container) {
					t.Errorf("a rule on exit codes names no container %s", want.container)
				}
			}
			if !want.indexed {
				return
			}
			// An Indexed Job: a retry per index, evictions spending none,
			// bad input failing its index, and time for servesim's grace.
			if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
				t.Error("not an Indexed Job")
			}
			if job.Spec.BackoffLimitPerIndex == nil || *job.Spec.BackoffLimitPerIndex < 1 {
				t.Error("no backoffLimitPerIndex: a failed shard is not retried on its own")
			}
			var ignore, failIndex bool
			for _, r := range rules.Rules {
				switch r.Action {
				case batchv1.PodFailurePolicyActionIgnore:
					ignore = slices.ContainsFunc(r.OnPodConditions, func(c batchv1.PodFailurePolicyOnPodConditionsPattern) bool {
						return c.Type == corev1.DisruptionTarget
					})
				case batchv1.PodFailurePolicyActionFailIndex:
					failIndex = r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn &&
						slices.Equal(r.OnExitCodes.Values, []int32{1, 2})
				}
			}
			if !ignore || !failIndex {
				t.Errorf("podFailurePolicy: expected Ignore on DisruptionTarget (%v) and FailIndex on exit codes 1 and 2 (%v)", ignore, failIndex)
			}
			if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 15 {
				t.Error("terminationGracePeriodSeconds: servesim takes up to 10 s after SIGTERM")
			}
			env := spec.Containers[0].Env
			i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "SERVESIM_SHARD_COUNT" })
			if i < 0 || job.Spec.Completions == nil || env[i].Value != itoa(int(*job.Spec.Completions)) {
				t.Error("SERVESIM_SHARD_COUNT is not completions")
			}
			args := spec.Containers[0].Args
			if k := slices.Index(args, "--resume"); k < 0 || k+1 >= len(args) || args[k+1] != "auto" {
				t.Error("the pods do not resume with --resume auto")
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}
