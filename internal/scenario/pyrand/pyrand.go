// Package pyrand is a Python-compatible pseudo-random generator: CPython's
// random.Random (the MT19937 Mersenne Twister) seeded from an integer the way
// random.seed(int) does, so the same seed gives the same stream of random()
// values to the last bit.
package pyrand

import (
	"math"
	"math/big"
)

// MT19937 parameters (Matsumoto and Nishimura, 1998), as in CPython's
// Modules/_randommodule.c.
const (
	stateSize   = 624
	shiftSize   = 397
	matrixA     = 0x9908b0df
	upperMask   = 0x80000000
	lowerMask   = 0x7fffffff
	initSeed    = 19650218
	initMult    = 1812433253
	arrayMult1  = 1664525
	arrayMult2  = 1566083941
	temperMaskB = 0x9d2c5680
	temperMaskC = 0xefc60000
)

// Random is CPython's random.Random generator. The zero value is not usable;
// create one with New or NewInt64. It is not safe for concurrent use.
type Random struct {
	state [stateSize]uint32
	index int
}

// NewInt64 returns the generator random.Random(seed) gives in Python.
func NewInt64(seed int64) *Random {
	return New(big.NewInt(seed))
}

// New returns the generator random.Random(seed) gives in Python for an
// integer seed of any size. Like CPython, it uses the absolute value of seed,
// split into 32-bit words from the least significant, as the init_by_array
// key (a single zero word for seed 0). A nil seed means 0.
func New(seed *big.Int) *Random {
	r := &Random{}
	r.initByArray(seedKey(seed))
	return r
}

// seedKey splits |seed| into little-endian 32-bit words, at least one.
func seedKey(seed *big.Int) []uint32 {
	n := new(big.Int)
	if seed != nil {
		n.Abs(seed)
	}
	if n.Sign() == 0 {
		return []uint32{0}
	}
	words := (n.BitLen()-1)/32 + 1
	key := make([]uint32, words)
	mask := big.NewInt(0xffffffff)
	word := new(big.Int)
	for i := range key {
		key[i] = uint32(word.And(n, mask).Uint64())
		n.Rsh(n, 32)
	}
	return key
}

// initGenrand is MT19937's init_genrand.
func (r *Random) initGenrand(s uint32) {
	r.state[0] = s
	for i := 1; i < stateSize; i++ {
		prev := r.state[i-1]
		r.state[i] = initMult*(prev^(prev>>30)) + uint32(i)
	}
	r.index = stateSize
}

// initByArray is MT19937's init_by_array.
func (r *Random) initByArray(key []uint32) {
	r.initGenrand(initSeed)
	mt := &r.state
	i, j := 1, 0
	for k := max(stateSize, len(key)); k > 0; k-- {
		prev := mt[i-1]
		mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * arrayMult1)) + key[j] + uint32(j)
		i++
		j++
		if i >= stateSize {
			mt[0] = mt[stateSize-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := stateSize - 1; k > 0; k-- {
		prev := mt[i-1]
		mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * arrayMult2)) - uint32(i)
		i++
		if i >= stateSize {
			mt[0] = mt[stateSize-1]
			i = 1
		}
	}
	mt[0] = 0x80000000 // the most significant bit is 1: a non-zero initial state
}

// twist regenerates the whole state block.
func (r *Random) twist() {
	mt := &r.state
	for k := range stateSize {
		y := (mt[k] & upperMask) | (mt[(k+1)%stateSize] & lowerMask)
		next := mt[(k+shiftSize)%stateSize] ^ (y >> 1)
		if y&1 != 0 {
			next ^= matrixA
		}
		mt[k] = next
	}
	r.index = 0
}

// Uint32 returns the next 32-bit output (MT19937's genrand_uint32, which is
// what Python's getrandbits(32) returns).
func (r *Random) Uint32() uint32 {
	if r.index >= stateSize {
		r.twist()
	}
	y := r.state[r.index]
	r.index++
	y ^= y >> 11
	y ^= (y << 7) & temperMaskB
	y ^= (y << 15) & temperMaskC
	y ^= y >> 18
	return y
}

// Float64 is Python's random(): a float in [0, 1) with 53-bit resolution,
// (a*2**26 + b) / 2**53 with a the top 27 bits of one output and b the top
// 26 bits of the next.
func (r *Random) Float64() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// Expovariate is Python's expovariate(lambd): an exponentially distributed
// value with rate lambd, -log(1.0 - random()) / lambd. The logarithm is Go's
// math.Log, which can differ from the C library's log (that CPython calls)
// in the last bit, so a value can differ from Python's by one unit in the
// last place; the random() draw underneath is always identical.
func (r *Random) Expovariate(lambd float64) float64 {
	return -math.Log(1.0-r.Float64()) / lambd
}
