package main

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The scale curve as a PNG: one panel per plotted metric (the first
// `plotted` of scaleMetrics), one line per peer, the fixture's scale on x.

// plotSize is the PNG's size: small enough to keep in the repository,
// large enough to read. 96 dpi.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 6 * vg.Inch
	plotDPI    = 96
)

// writePlot draws the curves of series into a PNG at path.
func writePlot(path string, series []Series) error {
	const rows, cols = 2, 2
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, m := range scaleMetrics[:plotted] {
		p, err := metricPlot(m, series)
		if err != nil {
			return err
		}
		plots[i/cols][i%cols] = p
	}
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// metricPlot is one panel: metric m of every peer against the scale.
func metricPlot(m scaleMetric, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = m.name
	p.X.Label.Text = "scale (×)"
	p.Y.Label.Text = m.unit
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	var lines []any
	for _, s := range series {
		if s.Metric != m.name {
			continue
		}
		xy := make(plotter.XYs, len(s.Values))
		for i := range s.Values {
			xy[i].X, xy[i].Y = s.Scales[i], s.Values[i]
		}
		lines = append(lines, s.Peer, xy)
	}
	if len(lines) == 0 {
		return p, nil
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return nil, fmt.Errorf("plot %s: %w", m.name, err)
	}
	return p, nil
}
