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
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the files of docs/cluster, the Job each must be, and the
// file of the ConfigMap whose spec its pods read (--spec), if any.
var manifests = map[string]struct {
	name      string
	indexed   bool
	container string
	spec      string
}{
	"kubernetes-sweep.yaml":          {"servesim-sweep", true, "shard", "kubernetes-sweep-spec.yaml"},
	"kubernetes-merge.yaml":          {"servesim-sweep-merge", false, "merge", ""},
	"kubernetes-capacity.yaml":       {"servesim-capacity", true, "shard", "kubernetes-capacity-spec.yaml"},
	"kubernetes-capacity-final.yaml": {"servesim-capacity-final", false, "final", "kubernetes-capacity-spec.yaml"},
}

// configMaps are the ConfigMaps of docs/cluster, by file, and their names.
var configMaps = map[string]string{
	"kubernetes-sweep-spec.yaml":    "servesim-sweep-spec",
	"kubernetes-capacity-spec.yaml": "servesim-capacity-spec",
}

// decode reads the file name of docs/cluster strictly into v, an API type.
func decode(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: not a %T as the API server reads it: %v", name, v, err)
	}
}

func readJob(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	decode(t, name, &job)
	return &job
}

func readConfigMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	decode(t, name, &cm)
	return &cm
}

// TestConfigMapsAreSpecs checks that each ConfigMap is a v1 ConfigMap of
// its name whose every key is a spec file: one YAML mapping (no key twice).
func TestConfigMapsAreSpecs(t *testing.T) {
	for file, name := range configMaps {
		t.Run(file, func(t *testing.T) {
			cm := readConfigMap(t, file)
			if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != name {
				t.Errorf("%s/%s %s: expected v1 ConfigMap %s", cm.APIVersion, cm.Kind, cm.Name, name)
			}
			if len(cm.Data) == 0 {
				t.Error("no data: expected a spec file")
			}
			for key, spec := range cm.Data {
				var keys map[string]any
				if err := yaml.UnmarshalStrict([]byte(spec), &keys); err != nil || len(keys) == 0 {
					t.Errorf("data %s: expected a mapping of flag names to values (%v)", key, err)
				}
			}
		})
	}
}

// requireSpecMounted checks that the Job's pods read their spec (--spec
// PATH) from the ConfigMap of the file spec: a volume of that ConfigMap,
// its keys as files (no items), mounted read-only at PATH's folder, and
// PATH's name a key of its data.
func requireSpecMounted(t *testing.T, job *batchv1.Job, spec string) {
	t.Helper()
	cm := readConfigMap(t, spec)
	container := job.Spec.Template.Spec.Containers[0]
	k := slices.Index(container.Args, "--spec")
	if k < 0 || k+1 >= len(container.Args) {
		t.Fatalf("the pods read no spec: expected --spec PATH, the ConfigMap %s's", cm.Name)
	}
	path := container.Args[k+1]
	volumes := job.Spec.Template.Spec.Volumes
	v := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm.Name })
	if v < 0 {
		t.Fatalf("no volume of the ConfigMap %s", cm.Name)
	}
	if len(volumes[v].ConfigMap.Items) > 0 {
		t.Errorf("volume %s: items rename the ConfigMap's files: mount its keys as they are", volumes[v].Name)
	}
	m := slices.IndexFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volumes[v].Name })
	if m < 0 {
		t.Fatalf("volume %s is not mounted", volumes[v].Name)
	}
	mount := container.VolumeMounts[m]
	if !mount.ReadOnly {
		t.Errorf("volume %s is mounted read-write", mount.Name)
	}
	key, ok := strings.CutPrefix(path, strings.TrimSuffix(mount.MountPath, "/")+"/")
	if !ok || mount.SubPath != "" {
		t.Fatalf("--spec %s is not under the ConfigMap's mount %s", path, mount.MountPath)
	}
	if _, ok := cm.Data[key]; !ok {
		t.Errorf("--spec %s: the ConfigMap %s has no key %s", path, cm.Name, key)
	}
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
			if want.spec != "" {
				requireSpecMounted(t, job, want.spec)
			} else if slices.Contains(spec.Containers[0].Args, "--spec") {
				t.Error("the pods read a spec: name its ConfigMap in manifests")
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
