package cpu

import (
	"fmt"
	"os"
	"strings"
	"sync"

	xcpu "golang.org/x/sys/cpu"
)

// ISA is an instruction-set tier of the assembly kernels, ordered from the
// portable Go loops up: a kernel package that has code for a tier uses it
// when Tier() is at least that tier.
type ISA int

// The tiers.
const (
	// Go is the portable Go code, on every CPU and under the noasm tag.
	Go ISA = iota
	// AVX2 is AVX2 with FMA3 on 256-bit YMM registers (X86.AVX2FMA).
	AVX2
	// AVX512 is AVX-512 F, BW, VL and DQ on 512-bit ZMM registers with
	// the mask registers, on top of AVX2: the Skylake-SP feature set that
	// every AVX-512 CPU since has, with the ZMM state saved by the OS.
	AVX512
)

// String returns the tier's name as TAPEGRAD_ISA spells it: "go",
// "avx2" or "avx512".
func (t ISA) String() string {
	switch t {
	case Go:
		return "go"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("ISA(%d)", int(t))
}

// ISAs lists every tier, lowest first.
var ISAs = []ISA{Go, AVX2, AVX512}

// ParseISA returns the tier named s (case-insensitive, as String spells
// it).
func ParseISA(s string) (ISA, error) {
	for _, t := range ISAs {
		if strings.EqualFold(s, t.String()) {
			return t, nil
		}
	}
	return Go, fmt.Errorf("unknown ISA tier %q (want go, avx2 or avx512)", s)
}

var tiers struct {
	once     sync.Once
	max, cur ISA
	err      error
}

func initTiers() {
	tiers.once.Do(func() {
		m := Go
		if X86.AVX2FMA { // false under noasm and off amd64
			m = AVX2
			x := &xcpu.X86
			// HasAVX512F includes the OS check that ZMM and mask state
			// are saved (XGETBV).
			if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ {
				m = AVX512
			}
		}
		tiers.max, tiers.cur = m, m
		if s := os.Getenv("TAPEGRAD_ISA"); s != "" {
			t, err := ParseISA(s)
			if err != nil {
				tiers.err = fmt.Errorf("TAPEGRAD_ISA: %w; using %v", err, m)
				return
			}
			tiers.cur = min(t, m)
		}
	})
}

// Max returns the best tier this CPU and build run, whatever TAPEGRAD_ISA
// says: Go under the noasm tag and off amd64.
func Max() ISA {
	initTiers()
	return tiers.max
}

// Tier returns the tier kernels use: Max capped by the environment
// variable TAPEGRAD_ISA (go, avx2 or avx512), read once. A tier above Max
// is capped to Max; an unknown name is ignored (see TierError).
func Tier() ISA {
	initTiers()
	return tiers.cur
}

// Has reports whether this CPU and build run tier t (t <= Max()),
// regardless of TAPEGRAD_ISA: tests use it to run every tier there is.
func Has(t ISA) bool { return t <= Max() }

// TierError returns the problem with TAPEGRAD_ISA, if its value was not a
// tier name, or nil.
func TierError() error {
	initTiers()
	return tiers.err
}
