package profile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolvePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.csv")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct{ name, arg, want string }{
		{"folder means its l4_profile.csv", dir, filepath.Join(dir, "l4_profile.csv")},
		{"folder with a trailing slash", dir + "/", filepath.Join(dir, "l4_profile.csv")},
		{"file as given", file, file},
		{"missing path as given", filepath.Join(dir, "none.csv"), filepath.Join(dir, "none.csv")},
		{"empty as given", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ResolvePath(tt.arg))
		})
	}
}
