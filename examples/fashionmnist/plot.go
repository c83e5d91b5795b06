package main

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"os"
)

// plotHistory writes a PNG with two panels: the training loss, and the
// training and test accuracy, per epoch.
func plotHistory(path string, h []epochStats) error {
	loss := make(plotter.XYs, len(h))
	train := make(plotter.XYs, len(h))
	test := make(plotter.XYs, len(h))
	for i, s := range h {
		x := float64(i + 1)
		loss[i] = plotter.XY{X: x, Y: s.Loss}
		train[i] = plotter.XY{X: x, Y: s.TrainAcc}
		test[i] = plotter.XY{X: x, Y: s.TestAcc}
	}
	p1 := plot.New()
	p1.Title.Text = "training loss"
	p1.X.Label.Text = "epoch"
	l1, err := plotter.NewLine(loss)
	if err != nil {
		return err
	}
	p1.Add(l1, plotter.NewGrid())
	p2 := plot.New()
	p2.Title.Text = "accuracy"
	p2.X.Label.Text = "epoch"
	l2, err := plotter.NewLine(train)
	if err != nil {
		return err
	}
	l3, err := plotter.NewLine(test)
	if err != nil {
		return err
	}
	l3.LineStyle.Width = vg.Points(2)
	l2.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p2.Add(l2, l3, plotter.NewGrid())
	p2.Legend.Add("train", l2)
	p2.Legend.Add("test", l3)
	p2.Legend.Top = false
	p2.Legend.Left = false

	img := vgimg.New(10*vg.Inch, 4*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{p1, p2}}, tiles, dc)
	p1.Draw(canvases[0][0])
	p2.Draw(canvases[0][1])
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
