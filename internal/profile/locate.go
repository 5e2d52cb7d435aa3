package profile

import (
	"os"
	"path/filepath"
)

// BundleProfileCSV is the aggregate profile a measured bundle folder holds.
const BundleProfileCSV = "l4_profile.csv"

// ResolvePath returns the profile CSV that a profile argument names: a
// folder means the bundle's l4_profile.csv inside it; anything else (a
// file, or a path that does not exist, which loading then reports) is
// returned as given. Every command that reads a profile resolves its
// argument here, so they all accept the same paths.
func ResolvePath(arg string) string {
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		return filepath.Join(arg, BundleProfileCSV)
	}
	return arg
}
