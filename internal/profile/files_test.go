//go:build unix

package profile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile/profiletest"
	"servesim/internal/testsupport"
)

// writeBundle writes the valid synthetic bundle into a new folder, with
// extra checksums listed in its manifest, and returns the folder.
func writeBundle(t *testing.T, extraChecksums ...string) string {
	t.Helper()
	b := profiletest.New(variantTelemetryRows)
	if len(extraChecksums) > 0 {
		setChecksums("", sameHex, extraChecksums...)(b)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.Mkdir(dir, 0o755))
	_, err := b.Write(dir)
	require.NoError(t, err)
	return dir
}

// validateWithin runs Validate and fails the test if it takes more than a
// few seconds (a FIFO opened in blocking mode would hang it forever).
func validateWithin(t *testing.T, path string) *Report {
	t.Helper()
	done := make(chan *Report, 1)
	go func() { done <- Validate(path) }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Validate hangs")
		return nil
	}
}

// check returns the named check of a report.
func check(t *testing.T, r *Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %v", name, r.Checks)
	return Check{}
}

// secret writes a file outside any bundle and returns its path and digest.
func secret(t *testing.T) (string, string) {
	t.Helper()
	data := []byte("root:x:0:0:root:/root:/bin/bash\n")
	path := filepath.Join(t.TempDir(), "passwd")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, profiletest.SHA256(data)
}

func TestBundleFilesMustBeRegularFilesInTheBundle(t *testing.T) {
	outside, outsideSum := secret(t)
	tests := []struct {
		name string
		// setup changes the written bundle; it returns the path to validate.
		setup     func(t *testing.T, dir string) string
		check     string // the check that must fail
		detail    string // what its detail must say
		csvSHA    bool   // the profile CSV's digest is reported
		noDigests []string
	}{
		{"a listed link to a file outside, with its right hash", func(t *testing.T, dir string) string {
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "passwd_link")))
			return dir
		}, "sha256 passwd_link", "passwd_link is a symbolic link that leads out of the folder", true, []string{outsideSum}},
		{"a relative link out of the bundle", func(t *testing.T, dir string) string {
			rel, err := filepath.Rel(dir, outside)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(rel, filepath.Join(dir, "passwd_link")))
			return dir
		}, "sha256 passwd_link", "leads out of the folder", true, []string{outsideSum}},
		{"l4_telemetry.csv pointing anywhere", func(t *testing.T, dir string) string {
			moved := filepath.Join(t.TempDir(), "telemetry.csv")
			require.NoError(t, os.Rename(filepath.Join(dir, profiletest.TelemetryCSV), moved))
			require.NoError(t, os.Symlink(moved, filepath.Join(dir, profiletest.TelemetryCSV)))
			return dir
		}, "sha256 " + profiletest.TelemetryCSV, "l4_telemetry.csv is a symbolic link that leads out of the folder", true, nil},
		{"a FIFO", func(t *testing.T, dir string) string {
			replaceWith(t, filepath.Join(dir, profiletest.TelemetryCSV), func(p string) error { return syscall.Mkfifo(p, 0o644) })
			return dir
		}, "sha256 " + profiletest.TelemetryCSV, "l4_telemetry.csv is a FIFO, not a regular file", true, nil},
		{"a device", func(t *testing.T, dir string) string {
			// A private node in the test's folder (never a node of /dev).
			path := filepath.Join(dir, profiletest.TelemetryCSV)
			require.NoError(t, os.Remove(path))
			if err := syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|3); err == syscall.EPERM {
				t.Skip("making a device node needs root")
			} else {
				require.NoError(t, err)
			}
			return dir
		}, "sha256 " + profiletest.TelemetryCSV, "l4_telemetry.csv is a device, not a regular file", true, nil},
		{"a folder", func(t *testing.T, dir string) string {
			replaceWith(t, filepath.Join(dir, profiletest.TelemetryCSV), func(p string) error { return os.Mkdir(p, 0o755) })
			return dir
		}, "sha256 " + profiletest.TelemetryCSV, "l4_telemetry.csv is a folder, not a regular file", true, nil},
		{"a FIFO manifest", func(t *testing.T, dir string) string {
			replaceWith(t, filepath.Join(dir, profiletest.ManifestJSON), func(p string) error { return syscall.Mkfifo(p, 0o644) })
			return dir
		}, "manifest", "profile_manifest.json: is a FIFO, not a regular file", true, nil},
		{"a FIFO profile", func(t *testing.T, dir string) string {
			replaceWith(t, filepath.Join(dir, profiletest.ProfileCSV), func(p string) error { return syscall.Mkfifo(p, 0o644) })
			return dir
		}, "profile_csv", "cannot read the profile: is a FIFO, not a regular file", false, nil},
		{"a profile linked out of its folder", func(t *testing.T, dir string) string {
			require.NoError(t, os.Remove(filepath.Join(dir, profiletest.ProfileCSV)))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, profiletest.ProfileCSV)))
			return dir
		}, "profile_csv", "cannot read the profile: is a symbolic link that leads out of the folder", false, []string{outsideSum, "root:x"}},
		{"a manifest linked out of its folder", func(t *testing.T, dir string) string {
			require.NoError(t, os.Remove(filepath.Join(dir, profiletest.ManifestJSON)))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, profiletest.ManifestJSON)))
			return dir
		}, "manifest", "is a symbolic link that leads out of the folder", true, []string{outsideSum}},
		{"an absolute link, even into the bundle", func(t *testing.T, dir string) string {
			target := filepath.Join(dir, "data", "telemetry.csv")
			require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
			require.NoError(t, os.Rename(filepath.Join(dir, profiletest.TelemetryCSV), target))
			require.NoError(t, os.Symlink(target, filepath.Join(dir, profiletest.TelemetryCSV)))
			return dir
		}, "sha256 " + profiletest.TelemetryCSV, "links must be relative and stay in it", true, nil},
		{"a sparse 30 GiB listed file", func(t *testing.T, dir string) string {
			testsupport.SparseFile(t, filepath.Join(dir, "huge.bin"), nil, 30<<30)
			return dir
		}, "sha256 huge.bin", "huge.bin is 30 GiB: larger than the 256 MiB cap", true, nil},
		{"a sparse 30 GiB profile", func(t *testing.T, dir string) string {
			require.NoError(t, os.Truncate(filepath.Join(dir, profiletest.ProfileCSV), 30<<30))
			return dir
		}, "profile_csv", "cannot read the profile: is 30 GiB: larger than the 16 MiB cap", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeBundle(t, `"passwd_link": "`+outsideSum+`"`, `"huge.bin": "`+strings.Repeat("0", 64)+`"`)
			path := tt.setup(t, dir)
			r := validateWithin(t, filepath.Join(path, profiletest.ProfileCSV))
			require.Nil(t, r.Profile, "the bundle must be rejected")
			c := check(t, r, tt.check)
			assert.Equal(t, CheckFailed, c.Status)
			assert.Contains(t, c.Detail, tt.detail)
			assert.NotContains(t, c.Detail, "\n")
			assert.Equal(t, tt.csvSHA, r.ProfileCSVSHA256 != "")
			for _, c := range r.Checks {
				for _, hidden := range tt.noDigests {
					assert.NotContains(t, c.Detail, hidden, "check %s reports a file outside the bundle", c.Name)
				}
			}
			for _, hidden := range tt.noDigests {
				assert.NotEqual(t, hidden, r.ProfileCSVSHA256)
				assert.NotEqual(t, hidden, r.ManifestSHA256)
			}
		})
	}
}

// replaceWith removes path and makes a node there.
func replaceWith(t *testing.T, path string, mk func(string) error) {
	t.Helper()
	require.NoError(t, os.Remove(path))
	require.NoError(t, mk(path))
}

func TestBundleWithTheRightHashesOfFilesInsideIsValid(t *testing.T) {
	notes := []byte("measured on rig 3\n")
	dir := writeBundle(t, `"notes.txt": "`+profiletest.SHA256(notes)+`"`)
	// A relative link that stays in the bundle is followed.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "notes.txt"), notes, 0o644))
	require.NoError(t, os.Symlink(filepath.Join("docs", "notes.txt"), filepath.Join(dir, "notes.txt")))
	r := validateWithin(t, dir+"/"+profiletest.ProfileCSV)
	require.NoError(t, r.Err)
	require.NotNil(t, r.Profile)
	assert.True(t, r.Profile.MeasurementValid)
	assert.Equal(t, CheckOK, check(t, r, "sha256 notes.txt").Status)
}

func TestTheProfileParsedIsTheProfileHashed(t *testing.T) {
	dir := writeBundle(t)
	data, err := os.ReadFile(filepath.Join(dir, profiletest.ProfileCSV))
	require.NoError(t, err)
	// other.csv has different rows; the manifest describes l4_profile.csv.
	other := strings.Replace(string(data), "1200,", "1200.0,", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.csv"), []byte(other), 0o644))
	r := validateWithin(t, filepath.Join(dir, "other.csv"))
	require.Nil(t, r.Profile)
	c := check(t, r, "sha256 l4_profile.csv")
	assert.Equal(t, CheckFailed, c.Status)
	assert.Contains(t, c.Detail, "the profile given is other.csv, not this bundle's l4_profile.csv: the file parsed must be the file hashed; give "+filepath.Join(dir, "l4_profile.csv"))
	assert.Contains(t, r.Err.Error(), "other.csv")

	// An identical copy is still another file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "copy.csv"), data, 0o644))
	r = validateWithin(t, filepath.Join(dir, "copy.csv"))
	assert.Nil(t, r.Profile)
	assert.Equal(t, CheckFailed, check(t, r, "sha256 l4_profile.csv").Status)

	// A link to it in the bundle is the same file.
	require.NoError(t, os.Symlink(profiletest.ProfileCSV, filepath.Join(dir, "current.csv")))
	r = validateWithin(t, filepath.Join(dir, "current.csv"))
	require.NoError(t, r.Err)
	assert.True(t, r.Profile.MeasurementValid)
}

// TestHashingStreamsInConstantMemory validates a bundle that lists a
// 64 MiB file: the validation allocates far less than the file.
func TestHashingStreamsInConstantMemory(t *testing.T) {
	const size = 64 << 20
	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, size))
	h, _, err := openProfileFolder(filepath.Dir(big)).hash("big", MaxBundleFileBytes)
	require.NoError(t, err)
	dir := writeBundle(t, `"big.bin": "`+h+`"`)
	require.NoError(t, os.Rename(big, filepath.Join(dir, "big.bin")))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := Validate(filepath.Join(dir, profiletest.ProfileCSV))
	runtime.ReadMemStats(&after)
	require.NoError(t, r.Err)
	assert.Equal(t, CheckOK, check(t, r, "sha256 big.bin").Status)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(size/4), "bytes allocated while validating")
}

func TestFolderOpensEachBundleFileOnce(t *testing.T) {
	dir := writeBundle(t)
	folder := openProfileFolder(dir)
	defer folder.close()
	c := &checkList{report: &Report{Path: filepath.Join(dir, profiletest.ProfileCSV)}, failed: map[string]bool{}}
	table, file := readProfileCSV(c, folder, profiletest.ProfileCSV)
	require.NotNil(t, table)
	c.report.ManifestPath = filepath.Join(dir, profiletest.ManifestJSON)
	manifest, ok := readManifest(c, c.report, folder)
	require.True(t, ok)
	validateBundle(c, folder, table, manifest, file)
	require.NoError(t, c.report.Err)
	for _, name := range append(bundleFiles, profiletest.ManifestJSON) {
		assert.Equal(t, 1, folder.opened[name], "%s opened %d times", name, folder.opened[name])
	}
}
