package registry_test

import (
	"testing"

	"github.com/tapegrad/tapegrad/registry"
)

func TestNewAttrsFillsDefaultsOnce(t *testing.T) {
	a := registry.NewAttrs(attrsT{Padding: "VALID", NumBits: 4})
	v := a.Value()
	if v.Padding != "VALID" || v.NumBits != 4 {
		t.Errorf("set fields changed: %+v", v)
	}
	if v.DataFormat != "NHWC" || len(v.Dilations) != 4 || v.Training == nil || !*v.Training || v.Epsilon == nil || *v.Epsilon != 0.0001 {
		t.Errorf("defaults not filled: %+v", v)
	}
	// Normalising the result again is the identity, without allocating:
	// applying an op with it fills nothing anew.
	d, err := registry.Lookup("regtest.Attrs")
	if err != nil {
		t.Fatal(err)
	}
	boxed := a.Boxed()
	if n := testing.AllocsPerRun(20, func() {
		if _, err := d.NormalizeAttrs(boxed); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("normalising NewAttrs' result allocates %v times", n)
	}
	// The zero Attrs means every default.
	var zero registry.Attrs[attrsT]
	if zero.Boxed() != nil {
		t.Errorf("zero Attrs boxes %v, want nil (all defaults)", zero.Boxed())
	}
}

func TestNewAttrsBadValueReportedByTheOp(t *testing.T) {
	a := registry.NewAttrs(attrsT{Padding: "WRONG"})
	d, err := registry.Lookup("regtest.Attrs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.NormalizeAttrs(a.Boxed()); err == nil {
		t.Error("an attr outside its allowed list was accepted")
	}
}

func TestOpPackage(t *testing.T) {
	d, err := registry.Lookup("regtest.Attrs")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Package(), "github.com/tapegrad/tapegrad/registry_test"; got != want {
		t.Errorf("Package() = %q, want %q (the registering package)", got, want)
	}
}
