//go:build unix

package trace

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEstimateLeavesAFIFOAlone: estimating a FIFO (in a temporary folder)
// neither opens it, which would wait for a writer, nor reads from it, which
// would take the requests Read is to see.
func TestEstimateLeavesAFIFOAlone(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	done := make(chan int, 1)
	go func() { done <- (&Source{Path: fifo}).Estimate() }()
	select {
	case n := <-done:
		assert.Equal(t, 0, n)
	case <-time.After(10 * time.Second):
		t.Fatal("Estimate opened the FIFO and waits for a writer")
	}
}
