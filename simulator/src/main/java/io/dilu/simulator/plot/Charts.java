package io.dilu.simulator.plot;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.text.TextUtils;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.RectangleInsets;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.jfree.svg.SVGGraphics2D;
import org.jfree.svg.SVGUtils;

/**
 * The simulator's figures: panels of step lines stacked over one shared time axis, drawn with JFreeChart and
 * written as PNG and as SVG (JFreeSVG). The same figure gives the same SVG text on every run: the ids JFreeSVG
 * gives clip paths are made from a prefix the caller names instead of the clock, and every number on an axis
 * is formatted in {@link Locale#ROOT}, whatever the machine's locale.
 */
public final class Charts {

    static {
        // Figures are only ever drawn off screen; a DISPLAY in the environment must not make AWT try to open it.
        System.setProperty("java.awt.headless", "true");
        // JFreeChart draws rotated text (the value axes' titles) as a TextLayout by default, a workaround for old
        // JDKs that JFreeSVG can only write as glyph outlines; drawn as a string it stays text in the SVG.
        TextUtils.setUseDrawRotatedStringWorkaround(false);
    }

    /** Colour-blind-safe colours (Okabe and Ito), in the order series are given them. */
    private static final List<Color> PALETTE = List.of(new Color(0x0072B2), new Color(0xD55E00), new Color(0x009E73),
            new Color(0xCC79A7), new Color(0xE69F00), new Color(0x56B4E9), new Color(0x000000), new Color(0xF0E442));

    /** SVG coordinates to two decimals: a hundredth of a pixel is finer than any screen, and the files stay small. */
    private static final int SVG_DECIMALS = 2;

    private Charts() {}

    /**
     * A line drawn as steps: {@code y[i]} holds from {@code x[i]} until {@code x[i + 1]}, the last one until
     * {@code end}.
     */
    public record Steps(String name, Color color, double[] x, double[] y, double end) {

        public Steps {
            if (x.length != y.length || x.length == 0) {
                throw new IllegalArgumentException("need as many x as y, at least one, got " + x.length + " and " + y.length);
            }
            x = x.clone();
            y = y.clone();
        }
    }

    /**
     * One panel of a figure.
     *
     * @param axisLabel the value axis' title
     * @param integers whether the values are counts (ticks on whole numbers)
     * @param inLegend whether the panel's lines are named in the figure's legend (once is enough when every
     *     panel has one line per policy in the same colours)
     */
    public record Panel(String axisLabel, List<Steps> lines, boolean integers, boolean inLegend) {

        public Panel {
            lines = List.copyOf(lines);
        }
    }

    /** The colour of the {@code i}-th series, repeating after eight. */
    public static Color color(int i) {
        return PALETTE.get(Math.floorMod(i, PALETTE.size()));
    }

    /** Panels stacked top to bottom over one time axis from {@code from} to {@code to}, under a title and subtitle. */
    public static JFreeChart stacked(String title, String subtitle, String timeLabel, double from, double to, List<Panel> panels) {
        NumberAxis time = new NumberAxis(timeLabel);
        time.setStandardTickUnits(NumberAxis.createStandardTickUnits(Locale.ROOT));
        if (to > from) {
            time.setRange(from, to);
        }
        CombinedDomainXYPlot plot = new CombinedDomainXYPlot(time);
        plot.setGap(10);
        for (Panel panel : panels) {
            XYSeriesCollection data = new XYSeriesCollection();
            XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
            // One path per line rather than a segment per point: a tenth of the SVG's size.
            renderer.setDrawSeriesLineAsPath(true);
            renderer.setDefaultSeriesVisibleInLegend(panel.inLegend());
            for (int i = 0; i < panel.lines().size(); i++) {
                Steps line = panel.lines().get(i);
                data.addSeries(series(line));
                renderer.setSeriesPaint(i, line.color());
                renderer.setSeriesStroke(i, new BasicStroke(1.5f));
            }
            NumberAxis axis = new NumberAxis(panel.axisLabel());
            axis.setStandardTickUnits(panel.integers() ? NumberAxis.createIntegerTickUnits(Locale.ROOT)
                    : NumberAxis.createStandardTickUnits(Locale.ROOT));
            axis.setAutoRangeIncludesZero(true);
            XYPlot sub = new XYPlot(data, null, axis, renderer);
            sub.setBackgroundPaint(Color.WHITE);
            sub.setDomainGridlinePaint(Color.LIGHT_GRAY);
            sub.setRangeGridlinePaint(Color.LIGHT_GRAY);
            plot.add(sub);
        }
        JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        chart.setPadding(new RectangleInsets(4, 4, 4, 16)); // room for the time axis' last label
        chart.addSubtitle(new TextTitle(subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        LegendTitle legend = chart.getLegend();
        legend.setPosition(RectangleEdge.BOTTOM);
        return chart;
    }

    private static XYSeries series(Steps line) {
        XYSeries s = new XYSeries(line.name(), false, true);
        for (int i = 0; i < line.x().length; i++) {
            double until = i + 1 < line.x().length ? line.x()[i + 1] : line.end();
            s.add(line.x()[i], line.y()[i]);
            s.add(until, line.y()[i]);
        }
        return s;
    }

    /**
     * Writes {@code chart} at {@code width} × {@code height} as {@code png} and {@code svg}; {@code idPrefix}
     * starts every id in the SVG (give each figure that may share an HTML page with another its own).
     */
    public static void write(JFreeChart chart, int width, int height, Path png, Path svg, String idPrefix) throws IOException {
        try (OutputStream out = Files.newOutputStream(png)) {
            ChartUtils.writeChartAsPNG(out, chart, width, height);
        }
        Files.writeString(svg, svg(chart, width, height, idPrefix), StandardCharsets.UTF_8);
    }

    /** {@code chart} as an SVG document. */
    public static String svg(JFreeChart chart, int width, int height, String idPrefix) {
        SVGGraphics2D g = new SVGGraphics2D(width, height);
        g.setDefsKeyPrefix(idPrefix);
        g.setGeomDoubleConverter(SVGUtils.createDoubleConverter(SVG_DECIMALS));
        g.setTransformDoubleConverter(SVGUtils.createDoubleConverter(SVG_DECIMALS));
        chart.draw(g, new Rectangle2D.Double(0, 0, width, height));
        return g.getSVGDocument();
    }
}
