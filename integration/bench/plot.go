package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The scale curve as a PNG: one panel per entry of panels, one line per
// peer, the fixture's scale on x.

// panel is one chart: a metric of scaleMetrics, without the peers in skip.
type panel struct {
	metric, title string
	skip          map[string]bool
}

// panels are drawn two per row. Reloader's memory dwarfs the others', so
// the second panel shows the floor and KICK's builds on their own.
var panels = []panel{
	{metric: "RSS steady", title: "RSS steady (MB)"},
	{metric: "RSS steady", title: "RSS steady without Reloader (MB)", skip: map[string]bool{peerReloader: true}},
	{metric: "burst of 10 %, last restart", title: "burst of 10 % of the workloads, last restart (s)"},
	{metric: "single change p50", title: "single change p50 (ms)"},
	{metric: "install CPU", title: "install CPU (s)"},
	{metric: "controller ready after", title: "install: ready after (s)"},
}

// The PNG's size: small enough to keep in the repository, large enough to
// read.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 9 * vg.Inch
	plotDPI    = 96
)

// writePlot draws the curves of series into a PNG at path.
func writePlot(path string, series []Series) error {
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := panelPlot(pn, series)
		if err != nil {
			return err
		}
		plots[i/cols][i%cols] = p
	}
	return savePNG(path, plots, plotWidth, plotHeight)
}

// savePNG draws a grid of plots (nil cells stay empty) into a PNG of the
// given size at path.
func savePNG(path string, plots [][]*plot.Plot, width, height vg.Length) error {
	rows, cols := len(plots), len(plots[0])
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
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

// panelPlot is one panel: its metric of every peer not skipped against the
// scale, each peer drawn alike in every panel. The y axis starts at 0 and
// leaves room above the data for the legend.
func panelPlot(pn panel, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.X.Label.Text = "scale"
	p.X.Tick.Marker = scaleTicks(series)
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	style := map[string]int{}
	top, lines := 0.0, 0
	for _, s := range series {
		if _, ok := style[s.Peer]; !ok {
			style[s.Peer] = len(style)
		}
		if s.Metric != pn.metric || pn.skip[s.Peer] {
			continue
		}
		xy := make(plotter.XYs, len(s.Values))
		for i := range s.Values {
			xy[i].X, xy[i].Y = s.Scales[i], s.Values[i]
			top = max(top, s.Values[i])
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", pn.title, err)
		}
		n := style[s.Peer]
		l.Color, l.Dashes = plotutil.Color(n), plotutil.Dashes(n)
		pts.Color, pts.Shape = plotutil.Color(n), plotutil.Shape(n)
		p.Add(l, pts)
		p.Legend.Add(s.Peer, l, pts)
		lines++
	}
	p.Y.Min, p.Y.Max = 0, max(top, 1)*(1+0.12*float64(lines/2+1))
	return p, nil
}

// scaleTicks marks the scales measured: 1×, 5×, 10×.
func scaleTicks(series []Series) plot.ConstantTicks {
	var scales []float64
	for _, s := range series {
		scales = append(scales, s.Scales...)
	}
	slices.Sort(scales)
	var ticks plot.ConstantTicks
	for _, v := range slices.Compact(scales) {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64) + "×"})
	}
	return ticks
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 6, 64)
		}
	}
	return ticks
}

// writeFanoutPlot draws the rollouts in progress over time of each fan-out
// run into a PNG at path, one panel per run (the runs differ too much in
// height and length to share axes).
func writeFanoutPlot(path string, res *FanoutResults) error {
	if len(res.Runs) == 0 {
		return fmt.Errorf("no fan-out run to plot")
	}
	plots := make([][]*plot.Plot, len(res.Runs))
	for i, r := range res.Runs {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%d Deployments, one Secret, %s: rollouts in progress", res.Deployments, r.budget())
		p.X.Label.Text = "seconds after the change"
		p.Y.Label.Text = "rollouts in progress"
		p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
		xy := make(plotter.XYs, 0, len(r.Timeline)+1)
		top := 1.0
		for _, pt := range r.Timeline {
			xy = append(xy, plotter.XY{X: pt.S, Y: float64(pt.InProgress)})
			top = max(top, float64(pt.InProgress))
		}
		if len(xy) > 0 {
			xy = append(xy, plotter.XY{X: r.SettledMS / 1000, Y: xy[len(xy)-1].Y})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", r.budget(), err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = plotutil.Color(i)
		p.Add(l)
		if r.MaxConcurrent > 0 {
			limit := plotter.NewFunction(func(float64) float64 { return float64(r.MaxConcurrent) })
			limit.Dashes = plotutil.Dashes(1)
			p.Add(limit)
			p.Legend.Add("maxConcurrent", limit)
			p.Legend.Top = true
		}
		p.X.Min, p.X.Max = 0, max(r.SettledMS/1000, 1)
		p.Y.Min, p.Y.Max = 0, top*1.15
		plots[i] = []*plot.Plot{p}
	}
	return savePNG(path, plots, plotWidth, vg.Length(len(plots))*3.5*vg.Inch)
}
