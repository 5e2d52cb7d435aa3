package profile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewVerdictsSaysWhichFailed validates the embedded proxy's CSV, alone
// and beside two broken files: one verdict per path, and a failure naming
// the first broken one.
func TestNewVerdictsSaysWhichFailed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "proxy.csv")
	require.NoError(t, os.WriteFile(good, embeddedProxyCSV, 0o644))
	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("not,a,profile\n"), 0o644))
	missing := filepath.Join(dir, "missing.csv")

	v, failed := NewVerdicts([]string{good}, false)
	require.NoError(t, failed)
	require.Len(t, v.Bundles, 1)
	assert.True(t, v.Bundles[0].Valid)

	v, failed = NewVerdicts([]string{bad}, false)
	require.Error(t, failed)
	assert.Equal(t, *v.Bundles[0].Error, failed.Error(), "one profile: its error")

	v, failed = NewVerdicts([]string{good, bad, missing}, false)
	require.Len(t, v.Bundles, 3)
	assert.EqualError(t, failed, "2 of 3 profiles are invalid; first: "+*v.Bundles[1].Error)
}
