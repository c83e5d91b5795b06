package cpu

import (
	"os"
	"testing"
)

func TestTier(t *testing.T) {
	t.Logf("best tier of this CPU and build: %v; in use: %v (TAPEGRAD_ISA=%q)", Max(), Tier(), os.Getenv("TAPEGRAD_ISA"))
	if Tier() > Max() {
		t.Errorf("Tier() = %v above Max() = %v", Tier(), Max())
	}
	if !Has(Go) || !Has(Max()) || Has(Max()+1) {
		t.Errorf("Has disagrees with Max() = %v", Max())
	}
	if Max() > Go && !X86.AVX2FMA {
		t.Errorf("Max() = %v without AVX2/FMA", Max())
	}
	if err := TierError(); err != nil {
		t.Log(err)
	}
	for _, isa := range ISAs {
		got, err := ParseISA(isa.String())
		if err != nil || got != isa {
			t.Errorf("ParseISA(%q) = %v, %v", isa.String(), got, err)
		}
	}
	if got, err := ParseISA("AVX512"); err != nil || got != AVX512 {
		t.Errorf("ParseISA is not case-insensitive: %v, %v", got, err)
	}
	if _, err := ParseISA("sse"); err == nil {
		t.Error("ParseISA accepted an unknown tier")
	}
}
