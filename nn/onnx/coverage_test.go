package onnx_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// sampleLayers gives, for each layer constructor of package nn, a layer it
// makes; nil for the containers (Sequential, Named, Lambda), which the
// walker itself handles (and the layer cases nest).
var sampleLayers = map[string]func(r *rand.Rand) nn.Module{
	"NewConv2D":          func(r *rand.Rand) nn.Module { return nn.NewConv2D(1, 1, 1, nn.ConvOpts{Rand: r}) },
	"NewDepthwiseConv2D": func(r *rand.Rand) nn.Module { return nn.NewDepthwiseConv2D(1, 1, nn.ConvOpts{Rand: r}) },
	"NewSeparableConv2D": func(r *rand.Rand) nn.Module { return nn.NewSeparableConv2D(1, 1, 1, nn.ConvOpts{Rand: r}) },
	"NewDense":           func(r *rand.Rand) nn.Module { return nn.NewDense(1, 1, nn.DenseOpts{Rand: r}) },
	"NewBatchNorm":       func(r *rand.Rand) nn.Module { return nn.NewBatchNorm(1, nn.BatchNormOpts{}) },
	"NewFakeQuantWeights": func(r *rand.Rand) nn.Module {
		return nn.NewFakeQuantWeights(nn.NewDense(1, 1, nn.DenseOpts{Rand: r}), nn.WeightQuantOpts{})
	},
	"NewFakeQuantActivation": func(r *rand.Rand) nn.Module { return nn.NewFakeQuantActivation(nn.ActQuantOpts{}) },
	"NewFractionalAvgPool":   func(r *rand.Rand) nn.Module { return nn.NewFractionalAvgPool(1.5, nn.FractionalPoolOpts{}) },
	"NewDropout":             func(r *rand.Rand) nn.Module { return nn.NewDropout(0.5) },
	"ReLU":                   func(r *rand.Rand) nn.Module { return nn.ReLU() },
	"ReLU6":                  func(r *rand.Rand) nn.Module { return nn.ReLU6() },
	"Flatten":                func(r *rand.Rand) nn.Module { return nn.Flatten() },
	"GlobalAvgPool":          func(r *rand.Rand) nn.Module { return nn.GlobalAvgPool("NHWC") },
	"MaxPool2D":              func(r *rand.Rand) nn.Module { return nn.MaxPool2D(1, 1, nn.PoolOpts{}) },
	"AvgPool2D":              func(r *rand.Rand) nn.Module { return nn.AvgPool2D(1, 1, nn.PoolOpts{}) },
	"NewLayerNorm":           func(r *rand.Rand) nn.Module { return nn.NewLayerNorm(1, nn.LayerNormOpts{}) },
	"Tanh":                   func(r *rand.Rand) nn.Module { return nn.Tanh() },
	"Sigmoid":                func(r *rand.Rand) nn.Module { return nn.Sigmoid() },
	"NewSequential":          nil,
	"Named":                  nil,
	"NewLambda":              nil,
}

// layerKey identifies a layer kind: its type, a Lambda's function, and
// whether a Pool2D averages.
func layerKey(m nn.Module) string {
	if l, ok := m.(*nn.Lambda); ok {
		return "lambda:" + funcName(l.Func())
	}
	if p, ok := m.(*nn.Pool2D); ok && p.Avg() {
		return "*nn.Pool2D (average)"
	}
	return reflect.TypeOf(m).String()
}

func funcName(f func(autodiff.Value) autodiff.Value) string {
	return fmt.Sprintf("%#x", reflect.ValueOf(f).Pointer())
}

// leaves adds the keys of m's layers (through Sequential and Named).
func leaves(m nn.Module, keys map[string]bool) {
	m, _ = nn.Unnamed(m)
	switch l := m.(type) {
	case *nn.Sequential:
		for _, c := range l.Layers() {
			leaves(c, keys)
		}
	case *nn.FakeQuantWeights:
		keys[layerKey(m)] = true
		leaves(l.Layer, keys)
	default:
		keys[layerKey(m)] = true
	}
}

// TestEveryLayerKindCovered: every layer constructor of package nn (an
// exported function returning Module or a pointer to a Module type) has a
// sample here, and the layer cases run against ONNX Runtime contain a
// layer of its kind. A new layer kind fails this test until it has an
// export rule and a case in TestLayersAgainstORT.
func TestEveryLayerKindCovered(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join("..", n), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	modules := map[string]bool{"Module": true} // types with a Forward method
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Forward" {
				rt := fd.Recv.List[0].Type
				if s, ok := rt.(*ast.StarExpr); ok {
					rt = s.X
				}
				if id, ok := rt.(*ast.Ident); ok {
					modules[id.Name] = true
				}
			}
		}
	}
	var ctors []string
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Results == nil || len(fd.Type.Results.List) != 1 {
				continue
			}
			rt := fd.Type.Results.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			if id, ok := rt.(*ast.Ident); ok && modules[id.Name] {
				ctors = append(ctors, fd.Name.Name)
			}
		}
	}
	if len(ctors) < 10 {
		t.Fatalf("found only %d layer constructors in package nn: %v", len(ctors), ctors)
	}
	covered := map[string]bool{}
	r := rand.New(rand.NewSource(1))
	for _, c := range layerCases {
		leaves(c.build(r), covered)
	}
	for _, name := range ctors {
		sample, known := sampleLayers[name]
		switch {
		case !known:
			t.Errorf("nn.%s: a layer constructor without an export test (add it to sampleLayers and a case to layerCases, with an export rule)", name)
		case sample != nil && !covered[layerKey(sample(r))]:
			t.Errorf("nn.%s: no layer case contains a %s", name, layerKey(sample(r)))
		}
	}
}
