package workload

import (
	"crypto/sha256"
	"encoding/hex"
	stdhash "hash"
	"strconv"
	"sync"
)

// WorkloadChecksum is the reference's workload_checksum: the SHA-256 of
// "id,arrival(9 decimals),prompt,output" lines joined by newlines.
func WorkloadChecksum(requests []Request) string {
	var sum Checksum
	for _, r := range requests {
		sum.Add(r)
	}
	return sum.Sum()
}

// Checksum computes WorkloadChecksum one request at a time, as a workload
// is read. The zero value is ready for the first request.
type Checksum struct {
	hash stdhash.Hash
	buf  []byte // lines not hashed yet
	n    int    // requests added
}

// checksumBuffer is the size of the lines hashed at once.
const checksumBuffer = 8 << 10

// Add adds the next request's line.
func (c *Checksum) Add(r Request) {
	if c.hash == nil {
		c.hash, c.buf = sha256.New(), make([]byte, 0, checksumBuffer)
	}
	if len(c.buf) > cap(c.buf)-128 {
		c.hash.Write(c.buf)
		c.buf = c.buf[:0]
	}
	if c.n > 0 {
		c.buf = append(c.buf, '\n')
	}
	c.n++
	c.buf = strconv.AppendInt(c.buf, int64(r.ID), 10)
	c.buf = append(c.buf, ',')
	c.buf = strconv.AppendFloat(c.buf, r.ArrivalTimeS, 'f', 9, 64)
	c.buf = append(c.buf, ',')
	c.buf = strconv.AppendInt(c.buf, int64(r.PromptTokens), 10)
	c.buf = append(c.buf, ',')
	c.buf = strconv.AppendInt(c.buf, int64(r.OutputTokens), 10)
}

// Sum is the checksum of the requests added so far, in hex.
func (c *Checksum) Sum() string {
	if c.hash == nil {
		c.hash = sha256.New()
	}
	c.hash.Write(c.buf)
	c.buf = c.buf[:0]
	return hex.EncodeToString(c.hash.Sum(nil))
}

// Checksum is the workload checksum of asRun, w's requests as a run hands
// them to the plant: as read (dilation nil) or with their arrivals
// normalized by the factor *dilation (plant.NormalizeFleetOfferedLoadInPlace).
// A workload whose requests were given by WithRequests computes it once
// for each normalization; any other at every call.
func (w Workload) Checksum(dilation *float64, asRun []Request) string {
	if w.checksums == nil {
		return WorkloadChecksum(asRun)
	}
	key := checksumKey{normalized: dilation != nil}
	if dilation != nil {
		key.dilation = *dilation
	}
	return w.checksums.checksum(key, asRun)
}

// checksumMemo remembers the workload checksums of a workload's runs (the
// WorkloadChecksum of its requests as run), so that many runs of one
// workload, a sweep's cells, compute each once. The copies of a Workload
// share it.
type checksumMemo struct {
	mu   sync.Mutex
	sums map[checksumKey]string
}

// checksumKey is how a run rewrote the workload's arrivals: not at all, or
// normalized by a dilation factor, which with the workload's requests
// determines the requests as run (plant's normalizer.dilate).
type checksumKey struct {
	normalized bool
	dilation   float64
}

// checksum is the workload checksum of requests, the workload's requests
// as run under key, computed at the first run under key.
func (m *checksumMemo) checksum(key checksumKey, requests []Request) string {
	m.mu.Lock()
	sum, ok := m.sums[key]
	m.mu.Unlock()
	if ok {
		return sum
	}
	sum = WorkloadChecksum(requests)
	m.mu.Lock()
	if m.sums == nil {
		m.sums = map[checksumKey]string{}
	}
	m.sums[key] = sum
	m.mu.Unlock()
	return sum
}
