package cliflag

import (
	"fmt"
	"math/big"
)

// BigInt is a flag holding an integer of any size, like Python's seeds.
type BigInt struct{ *big.Int }

// Set parses a decimal integer.
func (b *BigInt) Set(s string) error {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return fmt.Errorf("%q: expected a whole number", s)
	}
	b.Int = n
	return nil
}

// String prints the integer.
func (b *BigInt) String() string {
	if b.Int == nil {
		return "0"
	}
	return b.Int.String()
}

// Type names the flag's value type in help.
func (b *BigInt) Type() string { return "int" }
