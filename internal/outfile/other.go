//go:build !unix

package outfile

import (
	"io/fs"
	"os"
)

// keepOwner does nothing where files have no Unix owner.
func keepOwner(*os.File, fs.FileInfo) {}

// ClosedAtStart reports whether f, a standard stream of the process, was
// closed when the process started; only Unix systems can tell.
func ClosedAtStart(*os.File) bool { return false }
