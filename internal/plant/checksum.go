package plant

import (
	"crypto/sha256"
	"encoding/hex"
	stdhash "hash"
	"strconv"
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
