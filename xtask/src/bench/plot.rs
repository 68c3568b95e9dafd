//! Hand-written SVG plots: small-op latency per scenario and configuration (grouped
//! bars, log scale), accumulate bandwidth against N (log-log, one curve each), and the
//! rank-scaling grid (one log-log panel per scenario, metric against ranks).

use super::model::{gbps, Stat, Summary};
use super::report::{hw_for_lat, num, BW_NS, LAT_TESTS};
use super::{config, CONFIGS};
use std::fmt::Write as _;

const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";

/// A colour per configuration (and the hardware), stable across plots.
fn colour(key: &str) -> &'static str {
    match key {
        "rma_atomic" => "#d62728",
        "rma_queued" => "#ff7f0e",
        "rma_create" => "#e377c2",
        "mpich_alloc" => "#1f77b4",
        "mpich_create" => "#17becf",
        "ompi_sm" => "#2ca02c",
        "ompi_rdma" => "#9467bd",
        "ompi_rdma_create" => "#8c564b",
        "rma_mpi" => "#bcbd22",
        "mpich" => "#1f77b4",
        _ => "#333333",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A log10 axis from 10^lo to 10^hi onto pixels a..b.
#[derive(Debug, Clone, Copy)]
struct LogAxis {
    lo: f64,
    hi: f64,
    a: f64,
    b: f64,
}

impl LogAxis {
    /// The decades that hold every value (one decade when there are none).
    fn fitting(values: impl Iterator<Item = f64>, a: f64, b: f64) -> LogAxis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v.log10().floor());
            hi = hi.max(v.log10().ceil());
        }
        if lo > hi {
            (lo, hi) = (0.0, 1.0);
        }
        if lo == hi {
            hi += 1.0;
        }
        LogAxis { lo, hi, a, b }
    }

    fn px(&self, v: f64) -> f64 {
        let t = (v.max(1e-300).log10() - self.lo) / (self.hi - self.lo);
        self.a + t.clamp(-0.05, 1.05) * (self.b - self.a)
    }

    /// The decades on the axis: (value, label).
    fn decades(&self) -> impl Iterator<Item = (f64, String)> {
        (self.lo as i32..=self.hi as i32).map(|e| {
            let decimals = (-e).max(0) as usize;
            (10f64.powi(e), format!("{:.decimals$}", 10f64.powi(e)))
        })
    }
}

/// The frame of a plot: the plotting area, and the SVG text written so far.
struct Canvas {
    svg: String,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Canvas {
    fn new(width: f64, height: f64, title: &str, margins: [f64; 4]) -> Canvas {
        let [left, right, top, bottom] = margins;
        let mut svg = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" {FONT}>\n\
             <rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n"
        );
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
            width / 2.0,
            escape(title)
        );
        Canvas {
            svg,
            left,
            right: width - right,
            top,
            bottom: height - bottom,
        }
    }

    /// The y axis (log) with a grid line and label per decade, and its title.
    fn y_axis(&mut self, y: &LogAxis, label: &str) {
        for (v, tick) in y.decades() {
            let py = y.px(v);
            let _ = writeln!(
                self.svg,
                "<line x1=\"{}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\" stroke=\"#dddddd\"/>\n\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                self.left,
                self.right,
                self.left - 6.0,
                py + 4.0,
                tick
            );
        }
        let (cx, cy) = (self.left - 54.0, (self.top + self.bottom) / 2.0);
        let _ = writeln!(
            self.svg,
            "<text x=\"{cx}\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {cx} {cy:.1})\">{}</text>",
            escape(label)
        );
        self.frame();
    }

    fn frame(&mut self) {
        let _ = writeln!(
            self.svg,
            "<rect x=\"{}\" y=\"{}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"black\"/>",
            self.left,
            self.top,
            self.right - self.left,
            self.bottom - self.top
        );
    }

    /// A tick and a label under the x axis at pixel `px`.
    fn x_tick(&mut self, px: f64, label: &str) {
        let _ = writeln!(
            self.svg,
            "<line x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"black\"/>\n\
             <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            self.bottom,
            self.bottom + 5.0,
            self.bottom + 18.0,
            escape(label)
        );
    }

    fn x_label(&mut self, label: &str) {
        let _ = writeln!(
            self.svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (self.left + self.right) / 2.0,
            self.bottom + 36.0,
            escape(label)
        );
    }

    /// A legend in the right margin: a swatch (dashed when asked) and a name per entry.
    fn legend(&mut self, entries: &[(&str, &str, bool)]) {
        for (i, (name, colour, dashed)) in entries.iter().enumerate() {
            let y = self.top + 10.0 + 18.0 * i as f64;
            let x = self.right + 12.0;
            let dash = if *dashed {
                " stroke-dasharray=\"5,3\""
            } else {
                ""
            };
            let _ = writeln!(
                self.svg,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"6\"{dash}/>\n\
                 <text x=\"{}\" y=\"{}\">{}</text>",
                x + 22.0,
                x + 28.0,
                y + 4.0,
                escape(name)
            );
        }
    }

    /// A line of small text at the bottom edge: what the marks mean, the date and the
    /// machine, so the figure says it without the summary beside it.
    fn caption(&mut self, height: f64, text: &str) {
        let _ = writeln!(
            self.svg,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\" fill=\"#444444\">{}</text>",
            self.left,
            height - 6.0,
            escape(text)
        );
    }

    fn finish(mut self) -> String {
        self.svg.push_str("</svg>\n");
        self.svg
    }
}

/// The marks' meaning, for every plot's caption.
const MARKS: &str = "points: median over rounds of each round's median; whiskers: range of \
                     the round medians; x: selected but no value (crashed or not run)";

/// Per latency scenario, one point per configuration (median, with the range of the
/// per-round medians as a whisker) on a log axis, the hardware floor where one means
/// something, and an x where a configuration that ran gave no value for the scenario
/// (it crashed there, or skips it). `about` (the date and the machine) goes in the
/// caption.
pub(crate) fn latency(s: &Summary, about: &str) -> String {
    let series: Vec<(&str, &str)> = CONFIGS
        .iter()
        .map(|c| {
            (
                c.key,
                if c.key == "hw" {
                    "HW floor (hw_limits)"
                } else {
                    c.label
                },
            )
        })
        .collect();
    let value = |key: &str, test: &str| {
        if key == "hw" {
            hw_for_lat(test).and_then(|h| s.get("hw", "hw", h, 1))
        } else {
            s.lat(key, test)
        }
    };
    // the configurations that ran: an x marks each scenario they gave no value for
    let ran: Vec<&str> = series
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| *k != "hw" && LAT_TESTS.iter().any(|t| value(k, t).is_some()))
        .collect();
    let all = LAT_TESTS
        .iter()
        .flat_map(|t| series.iter().filter_map(move |(k, _)| value(k, t)))
        .flat_map(|st| [st.lo, st.hi]);
    let height = 480.0;
    let mut c = Canvas::new(
        1100.0,
        height,
        "Small-op latency, 2 ranks (log scale)",
        [70.0, 190.0, 36.0, 80.0],
    );
    let y = LogAxis::fitting(all, c.bottom, c.top);
    c.y_axis(&y, "µs per call (per call per rank in cont_*)");
    let group = (c.right - c.left) / LAT_TESTS.len() as f64;
    let step = group * 0.85 / series.len() as f64;
    for (g, test) in LAT_TESTS.iter().enumerate() {
        let x0 = c.left + group * g as f64 + group * 0.075;
        for (i, (key, _)) in series.iter().enumerate() {
            let x = x0 + step * (i as f64 + 0.5);
            let Some(st) = value(key, test) else {
                if ran.contains(key) {
                    let yb = c.bottom - 6.0;
                    let _ = writeln!(
                        c.svg,
                        "<text x=\"{x:.1}\" y=\"{yb:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{}\">x<title>{} {test}: no value (crashed or not run)</title></text>",
                        colour(key),
                        escape(config(key).label)
                    );
                }
                continue;
            };
            let _ = writeln!(
                c.svg,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{}\"/>\n\
                 <circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"><title>{} {test}: {} µs [{}..{}]</title></circle>",
                y.px(st.hi),
                y.px(st.lo),
                colour(key),
                y.px(st.median),
                colour(key),
                escape(config(key).label),
                num(st.median),
                num(st.lo),
                num(st.hi)
            );
        }
        c.x_tick(c.left + group * (g as f64 + 0.5), test);
    }
    c.x_label("scenario (benches/SCENARIOS.md)");
    let legend: Vec<(&str, &str, bool)> = series
        .iter()
        .map(|(k, name)| (*name, colour(k), false))
        .collect();
    c.legend(&legend);
    c.caption(height, &format!("{MARKS}. {about}"));
    c.finish()
}

/// The bandwidth curves: (legend, configuration, test).
const BW_CURVES: &[(&str, &str, &str)] = &[
    ("rma atomic lock_all", "rma_atomic", "bw_lockall"),
    ("rma atomic excl", "rma_atomic", "bw_excl"),
    ("rma queued lock_all", "rma_queued", "bw_lockall"),
    ("MPICH lock_all", "mpich_alloc", "bw_lockall"),
    ("OMPI osc/sm lock_all", "ompi_sm", "bw_lockall"),
    ("OMPI osc/rdma lock_all", "ompi_rdma", "bw_lockall"),
];

/// A curve of the bandwidth plot.
struct Curve {
    name: &'static str,
    colour: &'static str,
    dashed: bool,
    points: Vec<Point>,
}

/// One point of a bandwidth curve: N, and the GB/s of the median and of the slowest
/// and fastest round medians (the whisker).
struct Point {
    n: f64,
    gbps: f64,
    low: f64,
    high: f64,
}

/// The point at `n` of a call moving `bytes`, whose time per call is `st`.
fn point(n: f64, bytes: f64, st: &Stat) -> Point {
    Point {
        n,
        gbps: gbps(bytes, st.median),
        low: gbps(bytes, st.hi),
        high: gbps(bytes, st.lo),
    }
}

/// Accumulate bandwidth (GB/s) against N (f64 per call), log-log, one curve per
/// configuration, and the avx_add streaming limit at the sizes hw_limits measures.
pub(crate) fn bandwidth(s: &Summary, about: &str) -> String {
    let mut curves: Vec<Curve> = BW_CURVES
        .iter()
        .map(|(name, key, test)| Curve {
            name,
            colour: colour(key),
            dashed: *test == "bw_excl",
            points: BW_NS
                .iter()
                .filter_map(|&n| {
                    let st = s.get(key, "bw", test, n)?;
                    Some(point(n as f64, 8.0 * n as f64, &st))
                })
                .collect(),
        })
        .collect();
    curves.push(Curve {
        name: "HW avx_add limit",
        colour: colour("hw"),
        dashed: true,
        points: s
            .iter()
            .filter(|((c, sec, t, _), _)| c == "hw" && sec == "hw" && t == "avx_add")
            .map(|((.., bytes), st)| point(*bytes as f64 / 8.0, *bytes as f64, st))
            .collect(),
    });
    let height = 520.0;
    let mut c = Canvas::new(
        900.0,
        height,
        "Accumulate bandwidth, 2 ranks (log-log)",
        [70.0, 200.0, 36.0, 80.0],
    );
    let last = *BW_NS.last().unwrap_or(&1) as f64;
    let x = LogAxis {
        lo: 0.0,
        hi: last.log10(),
        a: c.left,
        b: c.right,
    };
    let all = curves
        .iter()
        .flat_map(|cv| cv.points.iter().flat_map(|p| [p.low, p.high]));
    let y = LogAxis::fitting(all, c.bottom, c.top);
    c.y_axis(&y, "GB/s of payload (8 N bytes per call)");
    for &n in BW_NS {
        c.x_tick(x.px(n as f64), &n.to_string());
    }
    c.x_label("N (f64 per accumulate)");
    for cv in &curves {
        let dash = if cv.dashed {
            " stroke-dasharray=\"5,3\""
        } else {
            ""
        };
        let path: Vec<String> = cv
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x.px(p.n), y.px(p.gbps)))
            .collect();
        if path.len() > 1 {
            let _ = writeln!(
                c.svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{dash}/>",
                path.join(" "),
                cv.colour
            );
        }
        for p in &cv.points {
            let px = x.px(p.n);
            let _ = writeln!(
                c.svg,
                "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{}\"/>\n\
                 <circle cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"><title>{} N={}: {} GB/s [{}..{}]</title></circle>",
                y.px(p.low),
                y.px(p.high),
                cv.colour,
                y.px(p.gbps),
                cv.colour,
                escape(cv.name),
                p.n,
                num(p.gbps),
                num(p.low),
                num(p.high)
            );
        }
    }
    let legend: Vec<(&str, &str, bool)> = curves
        .iter()
        .map(|cv| (cv.name, cv.colour, cv.dashed))
        .collect();
    c.legend(&legend);
    c.caption(height, &format!("{MARKS}. {about}"));
    c.finish()
}

/// One configuration's line in a panel of the scaling grid.
#[derive(Debug)]
pub(crate) struct Series<'a> {
    pub(crate) key: &'a str,
    pub(crate) label: &'a str,
    /// (ranks, the metric over rounds).
    pub(crate) points: Vec<(usize, Stat)>,
    /// Ranks where a run failed or timed out, and what happened (drawn as a ×).
    pub(crate) failed: Vec<(usize, String)>,
}

/// One scenario's panel of the scaling grid.
#[derive(Debug)]
pub(crate) struct Panel<'a> {
    pub(crate) title: String,
    pub(crate) unit: &'a str,
    pub(crate) series: Vec<Series<'a>>,
}

/// The rank-scaling grid: per scenario a log-log panel of its metric against the number
/// of ranks, one line per configuration with its points (whiskers: the range over
/// rounds), a × at the top of a panel where a configuration's run failed or timed out,
/// and the oversubscribed ranks (more than `cores`) shaded.
pub(crate) fn scaling(title: &str, ns: &[usize], cores: usize, panels: &[Panel]) -> String {
    const COLS: usize = 3;
    const PW: f64 = 380.0;
    const PH: f64 = 260.0;
    const HEAD: f64 = 78.0;
    let rows = panels.len().div_ceil(COLS).max(1);
    let width = PW * COLS as f64 + 20.0;
    let mut c = Canvas::new(width, HEAD + PH * rows as f64 + 10.0, title, [0.0; 4]);
    // the legend: one entry per configuration, then the markers
    let mut keys: Vec<(&str, &str)> = vec![];
    for s in panels.iter().flat_map(|p| &p.series) {
        if !keys.iter().any(|k| k.0 == s.key) {
            keys.push((s.key, s.label));
        }
    }
    let mut x = 20.0;
    for (key, label) in &keys {
        let _ = writeln!(
            c.svg,
            "<line x1=\"{x}\" y1=\"40\" x2=\"{}\" y2=\"40\" stroke=\"{}\" stroke-width=\"4\"/>\n\
             <circle cx=\"{}\" cy=\"40\" r=\"3.5\" fill=\"{}\"/>\n\
             <text x=\"{}\" y=\"44\">{}</text>",
            x + 22.0,
            colour(key),
            x + 11.0,
            colour(key),
            x + 28.0,
            escape(label)
        );
        x += 40.0 + 7.0 * label.chars().count() as f64;
    }
    let _ = writeln!(
        c.svg,
        "<text x=\"20\" y=\"64\" font-weight=\"bold\">×</text>\n\
         <text x=\"32\" y=\"64\">a run failed or timed out before this value (hover for why)</text>\n\
         <rect x=\"480\" y=\"54\" width=\"22\" height=\"13\" fill=\"#eeeeee\"/>\n\
         <text x=\"508\" y=\"64\">oversubscribed: more ranks than the {cores} CPUs (values of 0 are not drawn)</text>"
    );
    let (lo_n, hi_n) = (
        ns.iter().copied().min().unwrap_or(1).max(1) as f64,
        ns.iter().copied().max().unwrap_or(2).max(1) as f64,
    );
    for (i, panel) in panels.iter().enumerate() {
        let (x0, y0) = (10.0 + PW * (i % COLS) as f64, HEAD + PH * (i / COLS) as f64);
        (c.left, c.right, c.top, c.bottom) = (x0 + 70.0, x0 + PW - 16.0, y0 + 24.0, y0 + PH - 44.0);
        let xa = LogAxis {
            lo: (lo_n / 1.4).log10(),
            hi: (hi_n * 1.4).log10(),
            a: c.left,
            b: c.right,
        };
        if let Some(first) = ns.iter().copied().filter(|&n| n > cores).min() {
            // from halfway (log) between the last point within the cores and the first past
            let below = ns.iter().copied().filter(|&n| n <= cores).max();
            let from = below.map_or(c.left, |b| xa.px(((b * first) as f64).sqrt()));
            let _ = writeln!(
                c.svg,
                "<rect x=\"{from:.1}\" y=\"{}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#eeeeee\"/>",
                c.top,
                c.right - from,
                c.bottom - c.top
            );
        }
        let _ = writeln!(
            c.svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
            (c.left + c.right) / 2.0,
            y0 + 16.0,
            escape(&panel.title)
        );
        let values = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|(_, st)| [st.lo, st.hi]));
        let ya = LogAxis::fitting(values, c.bottom, c.top);
        c.y_axis(&ya, panel.unit);
        for &n in ns {
            c.x_tick(xa.px(n as f64), &n.to_string());
        }
        c.x_label("ranks");
        for (k, s) in panel.series.iter().enumerate() {
            let col = colour(s.key);
            let pts: Vec<(usize, f64, &Stat)> = s
                .points
                .iter()
                .filter(|(_, st)| st.median.is_finite() && st.median > 0.0)
                .map(|(n, st)| (*n, xa.px(*n as f64), st))
                .collect();
            if pts.len() > 1 {
                let path: Vec<String> = pts
                    .iter()
                    .map(|(_, px, st)| format!("{px:.1},{:.1}", ya.px(st.median)))
                    .collect();
                let _ = writeln!(
                    c.svg,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{col}\" stroke-width=\"2\"/>",
                    path.join(" ")
                );
            }
            for (n, px, st) in &pts {
                let _ = writeln!(
                    c.svg,
                    "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{col}\"/>\n\
                     <circle cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{col}\"><title>{} N={n}: {} {}</title></circle>",
                    ya.px(st.lo.max(1e-300)),
                    ya.px(st.hi.max(1e-300)),
                    ya.px(st.median),
                    escape(s.label),
                    num(st.median),
                    escape(panel.unit)
                );
            }
            for (n, why) in &s.failed {
                let _ = writeln!(
                    c.svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\" fill=\"{col}\">×<title>{} N={n}: {}</title></text>",
                    xa.px(*n as f64) + 9.0 * k as f64 - 18.0,
                    c.top + 15.0,
                    escape(s.label),
                    escape(why)
                );
            }
        }
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::Line;

    #[test]
    fn log_axis_maps_decades_to_the_ends() {
        let a = LogAxis::fitting([0.03, 2.0].into_iter(), 100.0, 0.0);
        assert_eq!((a.lo, a.hi), (-2.0, 1.0));
        assert_eq!(a.px(0.01), 100.0);
        assert_eq!(a.px(10.0), 0.0);
        let labels: Vec<String> = a.decades().map(|d| d.1).collect();
        assert_eq!(labels, ["0.01", "0.1", "1", "10"]);
        let empty = LogAxis::fitting(std::iter::empty(), 0.0, 1.0);
        assert_eq!((empty.lo, empty.hi), (0.0, 1.0));
    }

    #[test]
    fn plots_escape_and_close() {
        let lines = Line::parse_all(
            "ompi_sm",
            1,
            "lat,fop,1,1,0.03,0.03,0.03\nbw,bw_lockall,8,1,0.05,0,0\nbw,bw_lockall,64,1,0.06,0,0",
        );
        let s = Summary::of(&lines);
        let about = "2026-11-24; a CPU, 2 CPUs, kernel 6";
        for svg in [latency(&s, about), bandwidth(&s, about)] {
            assert!(svg.ends_with("</svg>\n"));
            assert!(svg.contains("OMPI osc/sm"));
            assert!(!svg.contains("NaN"));
            // the figure says what its marks mean, when and where it was measured
            assert!(
                svg.contains("whiskers: range of the round medians"),
                "{svg}"
            );
            assert!(svg.contains(about), "{svg}");
            // points, not bars
            assert!(svg.contains("<circle"));
        }
        // osc/sm ran but gave no cas: an x marks it
        let lat = latency(&s, about);
        assert!(lat.contains("OMPI osc/sm cas: no value"), "{lat}");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn scaling_grid_marks_failures_and_oversubscription() {
        let st = |v: f64| Stat::of(&[v]).unwrap();
        let panel = Panel {
            title: "fop_counter".into(),
            unit: "Mops/s",
            series: vec![Series {
                key: "rma_atomic",
                label: "rma atomic",
                points: vec![(2, st(20.0)), (4, st(0.0))],
                failed: vec![(4, "timed out <60 s>".into())],
            }],
        };
        let svg = scaling("t", &[2, 4], 2, &[panel]);
        assert!(svg.ends_with("</svg>\n"));
        assert!(svg.contains("rma atomic N=2: 20.0 Mops/s"));
        assert!(!svg.contains("N=4: 0"), "a zero has no place on a log axis");
        assert!(svg.contains("×<title>rma atomic N=4: timed out &lt;60 s&gt;</title>"));
        assert!(
            svg.contains("fill=\"#eeeeee\""),
            "the oversubscribed part is shaded"
        );
        assert!(!svg.contains("NaN"));
    }
}
