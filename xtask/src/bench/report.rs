//! The summary tables (Markdown, also printed) and the bar of the target table.

use super::model::{gbps, Outcome, Run, Stat, Summary};
use super::{config, Config, CONFIGS};

/// The `lat` scenarios, in table order.
pub(crate) const LAT_TESTS: &[&str] = &[
    "fop",
    "cas",
    "acc",
    "gacc",
    "put",
    "get",
    "acc_fence",
    "msgrate",
    "cont_fop",
    "cont_acc",
    "h_fop",
    "h_cas",
    "h_acc",
    "h_put",
    "h_get",
    "h_msgrate",
    "hb_msgrate",
];
/// The bandwidth scenarios and their N.
pub(crate) const BW_TESTS: &[&str] = &["bw_lockall", "bw_excl", "bw_fence"];
pub(crate) const BW_NS: &[u64] = &[1, 8, 64, 512, 4096, 32768, 262144];
const LAYOUT_NS: &[u64] = &[4096, 32768];
const BUSY_TESTS: &[&str] = &["busy_acc", "busy_fop", "busy_put", "busy_get"];
const BUSY_CALLS: u64 = 100;
/// hw_limits' tests in the order it runs them.
const HW_TESTS: &[&str] = &[
    "roundtrip",
    "handoff",
    "fetch_add_local",
    "cas_local",
    "cas_f64_add_local",
    "fetch_add_contended",
    "cas_f64_add_contended",
    "avx_add",
    "memcpy",
    "atomic_add",
];

/// The hardware floor shown beside a latency scenario: the hw_limits test doing the
/// same atomic on a line in the origin's cache, a line round trip for a fence, both
/// cores on one word for the contended ones (put and get have none that means much).
pub(crate) fn hw_for_lat(test: &str) -> Option<&'static str> {
    Some(match test {
        "fop" => "fetch_add_local",
        "cas" => "cas_local",
        "acc" | "gacc" | "msgrate" | "h_acc" | "h_msgrate" | "hb_msgrate" => "cas_f64_add_local",
        "h_fop" => "fetch_add_local",
        "h_cas" => "cas_local",
        "acc_fence" => "roundtrip",
        "cont_fop" => "fetch_add_contended",
        "cont_acc" => "cas_f64_add_contended",
        _ => return None,
    })
}

/// A number with about 3 significant digits.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        if a >= 1000.0 {
            0
        } else {
            1
        }
    } else {
        (2 - a.log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{v:.decimals$}")
}

/// A byte size in B, KiB or MiB.
pub(crate) fn size(b: u64) -> String {
    match b {
        _ if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        _ if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        _ => format!("{b} B"),
    }
}

/// "median [lo..hi]" (the range of the per-round medians; none for one round).
pub(crate) fn cell(s: Stat) -> String {
    if s.rounds > 1 {
        format!("{} [{}..{}]", num(s.median), num(s.lo), num(s.hi))
    } else {
        num(s.median)
    }
}

/// A table rendered as Markdown with padded columns (readable as plain text too).
pub(crate) struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new<S: Into<String>>(head: impl IntoIterator<Item = S>) -> Table {
        Table {
            head: head.into_iter().map(Into::into).collect(),
            rows: vec![],
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self) -> String {
        let width = |i: usize| {
            std::iter::once(&self.head)
                .chain(&self.rows)
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
                .max(3)
        };
        let widths: Vec<usize> = (0..self.head.len()).map(width).collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let c = cells.get(i).map(String::as_str).unwrap_or("");
                    format!("{c}{}", " ".repeat(w - c.chars().count().min(*w)))
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let mut out = line(&self.head);
        out.push_str(&line(&rule));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// Whether a measured value meets its goal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    Pass,
    Miss,
    Info,
    NotAvailable,
}

impl Verdict {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Miss => "MISS",
            Verdict::Info => "info",
            Verdict::NotAvailable => "n/a",
        }
    }
}

/// The goal of a row of the bar.
#[derive(Debug, Clone, Copy)]
enum Goal {
    AtMost(f64),
    AtLeast(f64),
    Info,
}

impl Goal {
    fn text(self, unit: &str) -> String {
        match self {
            Goal::AtMost(x) => format!("≤ {}{unit}", num(x)),
            Goal::AtLeast(x) => format!("≥ {}{unit}", num(x)),
            Goal::Info => "(information)".into(),
        }
    }

    fn verdict(self, v: f64) -> Verdict {
        match self {
            Goal::AtMost(x) if v <= x => Verdict::Pass,
            Goal::AtLeast(x) if v >= x => Verdict::Pass,
            Goal::Info => Verdict::Info,
            _ => Verdict::Miss,
        }
    }
}

/// What a row of the bar measured: the numbers in words, the value judged, and an
/// optional second condition with its explanation.
struct Measured {
    text: String,
    value: f64,
    also: Option<(bool, String)>,
}

/// One row of the bar: a target of the issue and how this run did.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) target: String,
    pub(crate) measured: String,
    pub(crate) value: Option<f64>,
    pub(crate) unit: &'static str,
    pub(crate) goal: String,
    pub(crate) verdict: Verdict,
    pub(crate) note: String,
}

fn check(target: &str, goal: Goal, unit: &'static str, m: Result<Measured, String>) -> Check {
    let (measured, value, verdict, note) = match m {
        Ok(m) => {
            let mut verdict = goal.verdict(m.value);
            let note = match m.also {
                Some((ok, why)) => {
                    if !ok && verdict == Verdict::Pass {
                        verdict = Verdict::Miss;
                    }
                    why
                }
                None => String::new(),
            };
            (m.text, Some(m.value), verdict, note)
        }
        Err(why) => (String::new(), None, Verdict::NotAvailable, why),
    };
    Check {
        target: target.into(),
        measured,
        value,
        unit,
        goal: goal.text(unit),
        verdict,
        note,
    }
}

/// The summary of a bench run and how each configuration's runs went.
pub(crate) struct Report<'a> {
    pub(crate) summary: &'a Summary,
    pub(crate) runs: &'a [Run],
}

impl Report<'_> {
    /// Why a configuration has no value for a key.
    fn why_missing(&self, c: &Config) -> String {
        let runs: Vec<&Run> = self.runs.iter().filter(|r| r.config == c.key).collect();
        if runs.is_empty() {
            return "not selected".into();
        }
        let bad = runs.iter().find(|r| r.outcome != Outcome::Ok);
        match bad {
            Some(r) if matches!(r.outcome, Outcome::Skipped(_)) => r.outcome.describe(),
            Some(r) if !self.summary.has_config(c.key) => {
                format!("{} (round {})", r.outcome.describe(), r.round)
            }
            _ if c.note.is_empty() => "not measured".into(),
            _ => format!("not measured ({})", c.note),
        }
    }

    /// A result, or why there is none (`n/a: <config>: <reason>`).
    fn need(&self, key: &str, section: &str, test: &str, n: u64) -> Result<Stat, String> {
        let c = config(key);
        self.summary
            .get(key, section, test, n)
            .ok_or_else(|| format!("{}: no {test} ({})", c.label, self.why_missing(c)))
    }

    fn lat(&self, key: &str, test: &str) -> Result<f64, String> {
        self.need(key, "lat", test, 1).map(|s| s.median)
    }

    fn cell_or_na(&self, key: &str, section: &str, test: &str, n: u64) -> String {
        self.summary
            .get(key, section, test, n)
            .map_or_else(|| "n/a".into(), cell)
    }

    /// The configurations shown as columns (all but the hardware).
    fn columns() -> impl Iterator<Item = &'static Config> {
        CONFIGS.iter().filter(|c| c.key != "hw")
    }

    fn head(first: &str) -> Vec<String> {
        std::iter::once(first.to_owned())
            .chain(Self::columns().map(|c| c.label.to_owned()))
            .collect()
    }

    fn latency_table(&self) -> String {
        let mut head = Self::head("µs per call");
        head.push("HW (hw_limits test)".into());
        let mut t = Table::new(head);
        for test in LAT_TESTS {
            let mut row = vec![(*test).to_owned()];
            row.extend(Self::columns().map(|c| self.cell_or_na(c.key, "lat", test, 1)));
            row.push(match hw_for_lat(test) {
                Some(h) => match self.summary.get("hw", "hw", h, 1) {
                    Some(s) => format!("{} ({h})", cell(s)),
                    None => "n/a".into(),
                },
                None => "—".into(),
            });
            t.row(row);
        }
        t.render()
    }

    fn bandwidth_table(&self) -> String {
        let mut head = Self::head("GB/s");
        head.push("HW avx_add".into());
        let mut t = Table::new(head);
        for test in BW_TESTS {
            for &n in BW_NS {
                let bytes = 8.0 * n as f64;
                let mut row = vec![format!("{test} {n} ({})", size(8 * n))];
                row.extend(Self::columns().map(|c| {
                    self.summary
                        .get(c.key, "bw", test, n)
                        .map_or_else(|| "n/a".into(), |s| cell(s.map(|us| gbps(bytes, us))))
                }));
                row.push(
                    self.summary
                        .get("hw", "hw", "avx_add", 8 * n)
                        .map_or_else(|| "—".into(), |s| cell(s.map(|us| gbps(bytes, us)))),
                );
                t.row(row);
            }
        }
        t.render()
    }

    fn layout_table(&self) -> String {
        let mut t = Table::new(Self::head("µs per call"));
        for &n in LAYOUT_NS {
            for test in ["contig", "strided"] {
                let mut row = vec![format!("{test} {n}")];
                row.extend(Self::columns().map(|c| self.cell_or_na(c.key, "layout", test, n)));
                t.row(row);
            }
            let mut row = vec![format!("throughput strided/contig {n}")];
            row.extend(Self::columns().map(|c| {
                let get = |test| self.summary.get(c.key, "layout", test, n);
                match (get("contig"), get("strided")) {
                    (Some(a), Some(b)) => num(a.median / b.median),
                    _ => "n/a".into(),
                }
            }));
            t.row(row);
        }
        t.render()
    }

    fn busy_table(&self) -> String {
        let mut t = Table::new(Self::head("total µs, 100 calls"));
        for test in BUSY_TESTS {
            let mut row = vec![(*test).to_owned()];
            row.extend(Self::columns().map(|c| self.cell_or_na(c.key, "busy", test, BUSY_CALLS)));
            t.row(row);
        }
        t.render()
    }

    fn hw_table(&self) -> String {
        let mut t = Table::new(["hw_limits test", "N", "µs [range]", "as"]);
        let mut hw: Vec<_> = self
            .summary
            .iter()
            .filter(|((cfg, section, ..), _)| cfg == "hw" && section == "hw")
            .collect();
        let rank = |test: &str| {
            HW_TESTS
                .iter()
                .position(|t| *t == test)
                .unwrap_or(HW_TESTS.len())
        };
        hw.sort_by_key(|((_, _, test, n), _)| (rank(test), *n));
        for ((_, _, test, n), s) in hw {
            let derived = if *n > 1 {
                format!("{} GB/s", num(gbps(*n as f64, s.median)))
            } else {
                format!("{} ns", num(s.median * 1e3))
            };
            t.row(vec![test.clone(), n.to_string(), cell(*s), derived]);
        }
        t.render()
    }

    /// Per configuration: its runs and its contended final-value check.
    fn runs_table(&self) -> String {
        let mut t = Table::new(["configuration", "runs ok", "other runs", "contended errors"]);
        for c in CONFIGS {
            let runs: Vec<&Run> = self.runs.iter().filter(|r| r.config == c.key).collect();
            if runs.is_empty() {
                t.row(vec![
                    c.label.into(),
                    "—".into(),
                    "not selected".into(),
                    "n/a".into(),
                ]);
                continue;
            }
            let ok = runs.iter().filter(|r| r.outcome == Outcome::Ok).count();
            let other: Vec<String> = runs
                .iter()
                .filter(|r| r.outcome != Outcome::Ok)
                .map(|r| format!("round {}: {}", r.round, r.outcome.describe()))
                .collect();
            let errors = match self.summary.errors(c.key) {
                Some(0) => "0".into(),
                Some(e) => format!("{e} FAILED"),
                None => "n/a".into(),
            };
            t.row(vec![
                c.label.into(),
                format!("{ok}/{}", runs.len()),
                other.join("; "),
                errors,
            ]);
        }
        t.render()
    }

    /// Total contended-check errors over every configuration.
    pub(crate) fn contended_errors(&self) -> u64 {
        CONFIGS
            .iter()
            .filter_map(|c| self.summary.errors(c.key))
            .sum()
    }

    /// rma's mpi transport / the same library called directly, µs per call: the
    /// median of the per-round ratios (each round runs both, a few seconds apart), with the
    /// medians over rounds and the ratios' range.
    fn mpi_overhead(&self, rma: &str, direct: &str, test: &str) -> Result<Measured, String> {
        self.mpi_overhead_of(rma, test, direct, test)
    }

    /// [`Report::mpi_overhead`] of `rma`'s scenario `ours` (a handle row) against
    /// `direct`'s `theirs`.
    fn mpi_overhead_of(
        &self,
        rma: &str,
        ours: &str,
        direct: &str,
        theirs: &str,
    ) -> Result<Measured, String> {
        let (a, b) = (self.lat(rma, ours)?, self.lat(direct, theirs)?);
        let r = self
            .summary
            .paired_lat_ratio_of(rma, ours, direct, theirs)
            .ok_or_else(|| format!("no round ran both {rma} and {direct}"))?;
        Ok(Measured {
            text: format!(
                "{} {} µs, {} {} µs; per-round ratio {}..{} over {} rounds",
                config(rma).label,
                num(a),
                config(direct).label,
                num(b),
                num(r.lo),
                num(r.hi),
                r.rounds
            ),
            value: r.median,
            also: None,
        })
    }

    /// A `pair` row of `rma` (`p_{test}`): the median over rounds of each round's
    /// median ratio of calls through a handle to the same MPI calls made directly.
    fn paired_in_process(&self, rma: &str, test: &str) -> Result<Measured, String> {
        let s = self.need(rma, "pair", &format!("p_{test}"), 1)?;
        Ok(Measured {
            text: format!(
                "per round, the median over alternating block pairs; {}..{} over {} rounds",
                num(s.lo),
                num(s.hi),
                s.rounds
            ),
            value: s.median,
            also: None,
        })
    }

    /// rma atomic / OMPI osc/sm, µs per call.
    fn vs_sm(&self, test: &str) -> Result<Measured, String> {
        self.vs_sm_of(test, test)
    }

    /// rma atomic's scenario `ours` (a handle row) / OMPI osc/sm's `theirs`.
    fn vs_sm_of(&self, ours: &str, theirs: &str) -> Result<Measured, String> {
        let (a, b) = (self.lat("rma_atomic", ours)?, self.lat("ompi_sm", theirs)?);
        Ok(Measured {
            text: format!("rma atomic {} µs, OMPI osc/sm {} µs", num(a), num(b)),
            value: a / b,
            also: None,
        })
    }

    /// rate of rma atomic / rate of OMPI osc/sm, for `calls` calls per µs-per-call.
    fn rate_vs_sm(&self, test: &str, calls: f64) -> Result<Measured, String> {
        self.rate_vs_sm_of(test, test, calls)
    }

    /// [`Report::rate_vs_sm`] of rma atomic's scenario `ours` against osc/sm's `theirs`.
    fn rate_vs_sm_of(&self, ours: &str, theirs: &str, calls: f64) -> Result<Measured, String> {
        let (a, b) = (self.lat("rma_atomic", ours)?, self.lat("ompi_sm", theirs)?);
        Ok(Measured {
            text: format!(
                "rma atomic {} Mops/s, OMPI osc/sm {} Mops/s",
                num(calls / a),
                num(calls / b)
            ),
            value: b / a,
            also: None,
        })
    }

    /// rma atomic bw_lockall at N / HW avx_add at `bytes`.
    fn bw_vs_hw(&self, n: u64, bytes: u64) -> Result<Measured, String> {
        let a = gbps(
            8.0 * n as f64,
            self.need("rma_atomic", "bw", "bw_lockall", n)?.median,
        );
        let h = gbps(
            bytes as f64,
            self.need("hw", "hw", "avx_add", bytes)?.median,
        );
        Ok(Measured {
            text: format!(
                "rma atomic {} GB/s, avx_add {} {} GB/s",
                num(a),
                size(bytes),
                num(h)
            ),
            value: a / h,
            also: None,
        })
    }

    fn strided(&self, n: u64) -> Result<Measured, String> {
        let c = self.need("rma_atomic", "layout", "contig", n)?.median;
        let s = self.need("rma_atomic", "layout", "strided", n)?.median;
        Ok(Measured {
            text: format!("contig {} µs, strided {} µs", num(c), num(s)),
            value: c / s,
            also: None,
        })
    }

    fn busy(&self, key: &str) -> Result<f64, String> {
        self.need(key, "busy", "busy_acc", BUSY_CALLS)
            .map(|s| s.median)
    }

    fn busy_vs_sm(&self) -> Result<Measured, String> {
        let (a, b) = (self.busy("rma_atomic")?, self.busy("ompi_sm")?);
        Ok(Measured {
            text: format!("rma atomic {} µs, OMPI osc/sm {} µs", num(a), num(b)),
            value: a / b,
            also: None,
        })
    }

    fn busy_queued(&self) -> Result<Measured, String> {
        let q = self.busy("rma_queued")?;
        Ok(Measured {
            text: format!("rma queued {} µs", num(q)),
            value: q,
            also: None,
        })
    }

    /// rma queued / rma atomic, and rma queued below OMPI osc/rdma.
    fn queued(&self, test: &str) -> Result<Measured, String> {
        let (q, a) = (self.lat("rma_queued", test)?, self.lat("rma_atomic", test)?);
        let also = match self.lat("ompi_rdma", test) {
            Ok(r) if q < r => (true, format!("below OMPI osc/rdma {} µs", num(r))),
            Ok(r) => (false, format!("not below OMPI osc/rdma {} µs", num(r))),
            Err(why) => (true, format!("second condition n/a: {why}")),
        };
        Ok(Measured {
            text: format!("rma queued {} µs, rma atomic {} µs", num(q), num(a)),
            value: q / a,
            also: Some(also),
        })
    }

    fn create_acc(&self) -> Result<Measured, String> {
        let v = self.lat("rma_create", "acc")?;
        let other = |key: &str| {
            self.lat(key, "acc")
                .map_or_else(|_| "n/a".into(), |x| format!("{} µs", num(x)))
        };
        Ok(Measured {
            text: format!(
                "rma create {} µs (MPICH create {}, OMPI rdma create {})",
                num(v),
                other("mpich_create"),
                other("ompi_rdma_create")
            ),
            value: v,
            also: None,
        })
    }

    /// Every row of the target table, measured.
    pub(crate) fn bar(&self) -> Vec<Check> {
        const X: &str = "×";
        const US: &str = " µs";
        let mut v = vec![
            check(
                "fetch_and_op + flush: rma atomic / OMPI osc/sm",
                Goal::AtMost(0.5),
                X,
                self.vs_sm("fop"),
            ),
            check(
                "accumulate 1 f64 + flush: rma atomic / OMPI osc/sm",
                Goal::AtMost(0.5),
                X,
                self.vs_sm("acc"),
            ),
        ];
        for (test, name) in [("cas", "compare_and_swap"), ("put", "put"), ("get", "get")] {
            let target = format!("{name} + flush: rma atomic / OMPI osc/sm");
            v.push(check(&target, Goal::AtMost(0.6), X, self.vs_sm(test)));
        }
        v.push(check(
            "message rate: rma atomic / OMPI osc/sm",
            Goal::AtLeast(3.0),
            X,
            self.rate_vs_sm("msgrate", 1.0),
        ));
        v.push(check(
            "both ranks fetch_and_op one element: aggregate rate vs OMPI osc/sm",
            Goal::AtLeast(2.5),
            X,
            self.rate_vs_sm("cont_fop", 2.0),
        ));
        v.push(check(
            "both ranks accumulate one element: aggregate rate vs OMPI osc/sm",
            Goal::AtLeast(2.0),
            X,
            self.rate_vs_sm("cont_acc", 2.0),
        ));
        for n in [4096, 32768, 262144] {
            let target = format!(
                "accumulate bandwidth, lock_all, N={n} ({}): rma atomic / HW avx_add",
                size(8 * n)
            );
            v.push(check(
                &target,
                Goal::AtLeast(0.9),
                X,
                self.bw_vs_hw(n, 8 * n),
            ));
        }
        v.push(check(
            "accumulate bandwidth, lock_all, N=512 (4 KiB) / HW avx_add 8 KiB",
            Goal::Info,
            X,
            self.bw_vs_hw(512, 8192),
        ));
        for n in LAYOUT_NS {
            let target =
                format!("strided target layout N={n}: rma atomic throughput strided / contig");
            v.push(check(&target, Goal::AtLeast(0.6), X, self.strided(*n)));
        }
        v.push(check(
            "100 acc + flush while the target computes: rma atomic / OMPI osc/sm",
            Goal::AtMost(1.0),
            X,
            self.busy_vs_sm(),
        ));
        v.push(check(
            "100 acc + flush while the target computes: rma queued total",
            Goal::AtMost(200.0),
            US,
            self.busy_queued(),
        ));
        for test in ["fop", "cas", "acc", "gacc", "put", "get"] {
            let target = format!(
                "queued small-op latency {test}: rma queued / rma atomic, and below OMPI osc/rdma"
            );
            v.push(check(&target, Goal::AtMost(4.0), X, self.queued(test)));
        }
        for (rma, direct) in [
            ("rma_mpi_mpich", "mpich_alloc"),
            ("rma_mpi_ompi", "ompi_rdma"),
        ] {
            for test in ["fop", "acc", "gacc", "put", "get", "msgrate"] {
                let target = format!(
                    "mpi transport overhead, {test}: {} / {}",
                    config(rma).label,
                    config(direct).label
                );
                v.push(check(
                    &target,
                    Goal::AtMost(1.1),
                    X,
                    self.mpi_overhead(rma, direct, test),
                ));
            }
        }
        // issue 17: calls through a target handle of a lock_all epoch guard
        for (test, name) in [
            ("fop", "fetch_and_op"),
            ("acc", "accumulate 1 f64"),
            ("cas", "compare_and_swap"),
            ("put", "put"),
            ("get", "get"),
        ] {
            let target = format!("handle: {name} + flush: rma atomic / OMPI osc/sm");
            let h = format!("h_{test}");
            v.push(check(
                &target,
                Goal::AtMost(0.5),
                X,
                self.vs_sm_of(&h, test),
            ));
        }
        v.push(check(
            "handle: message rate: rma atomic / OMPI osc/sm",
            Goal::AtLeast(3.0),
            X,
            self.rate_vs_sm_of("h_msgrate", "msgrate", 1.0),
        ));
        v.push(check(
            "handle, batched additions: message rate: rma atomic / OMPI osc/sm",
            Goal::AtLeast(3.0),
            X,
            self.rate_vs_sm_of("hb_msgrate", "msgrate", 1.0),
        ));
        // the mpi transport through handles, against the library it runs over
        let handle_overheads = [
            ("rma_mpi_ompi", "ompi_rdma", 1.3),
            // the C baseline initializes MPI at THREAD_SINGLE; so does this one
            ("rma_mpi_ompi_single", "ompi_rdma", 1.3),
            ("rma_mpi_mpich", "mpich_alloc", 1.1),
        ];
        for (rma, direct, goal) in handle_overheads {
            for test in ["fop", "acc", "put", "get", "msgrate"] {
                let target = format!(
                    "handle: mpi transport overhead, {test}: {} / {}",
                    config(rma).label,
                    config(direct).label
                );
                let h = format!("h_{test}");
                v.push(check(
                    &target,
                    Goal::AtMost(goal),
                    X,
                    self.mpi_overhead_of(rma, &h, direct, test),
                ));
            }
        }
        // the same overhead, measured in one process against the same MPI calls made
        // directly, in alternating millisecond blocks (the `pair` rows): both sides at
        // the same machine speed
        for (rma, direct, goal) in handle_overheads {
            for test in ["fop", "acc", "put", "get", "msgrate"] {
                let target = format!(
                    "handle, paired in one process: mpi transport overhead, {test}: {} / {} calls made directly",
                    config(rma).label,
                    config(direct).label,
                );
                v.push(check(
                    &target,
                    Goal::AtMost(goal),
                    X,
                    self.paired_in_process(rma, test),
                ));
            }
        }
        v.push(check(
            "window over private memory, accumulate + flush: rma create",
            Goal::AtMost(0.5),
            US,
            self.create_acc(),
        ));
        v
    }

    fn bar_table(checks: &[Check]) -> String {
        let mut t = Table::new(["target", "measured (medians)", "value", "goal", "result"]);
        for c in checks {
            let value = c
                .value
                .map_or_else(|| "n/a".into(), |v| format!("{}{}", num(v), c.unit));
            let result = if c.note.is_empty() {
                c.verdict.word().to_owned()
            } else {
                format!("{}: {}", c.verdict.word(), c.note)
            };
            t.row(vec![
                c.target.clone(),
                c.measured.clone(),
                value,
                c.goal.clone(),
                result,
            ]);
        }
        t.render()
    }

    /// The whole summary as Markdown, after `header` (a few lines about the run).
    pub(crate) fn markdown(&self, header: &str) -> String {
        let checks = self.bar();
        let passed = checks.iter().filter(|c| c.verdict == Verdict::Pass).count();
        let judged = checks
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Pass | Verdict::Miss))
            .count();
        let notes: String = CONFIGS
            .iter()
            .map(|c| {
                format!(
                    "* **{}**: `{}`{}\n",
                    c.label,
                    c.command,
                    if c.note.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", c.note)
                    }
                )
            })
            .collect();
        format!(
            "# rma bench summary\n\n{header}\n\
             Cells: median over rounds of the per-round medians [range of the per-round medians].\n\n\
             ## The bar (issue 7): {passed} of {judged} judged rows pass\n\n{}\n\
             ## Latency (µs per call; per call per rank in cont_*, per epoch in acc_fence)\n\n{}\n\
             ## Accumulate bandwidth (GB/s of payload, 8 N bytes per call)\n\n{}\n\
             ## Target layout (accumulate N f64 + flush; strided = vector(N, 1, 2, f64))\n\n{}\n\
             ## Target busy 50 ms outside the library\n\n{}\n\
             ## Hardware (hw_limits)\n\n{}\n\
             ## Runs and the contended final-value check (must be 0)\n\n{}\n\
             ## Configurations\n\n{notes}",
            Self::bar_table(&checks),
            self.latency_table(),
            self.bandwidth_table(),
            self.layout_table(),
            self.busy_table(),
            self.hw_table(),
            self.runs_table(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{Line, Outcome, Run, Summary};
    use super::*;

    fn summary(lines: &[(&str, &str)]) -> Summary {
        let all: Vec<Line> = lines
            .iter()
            .flat_map(|(cfg, text)| Line::parse_all(cfg, 1, text))
            .collect();
        Summary::of(&all)
    }

    fn find<'a>(checks: &'a [Check], target: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.target.starts_with(target))
            .unwrap()
    }

    /// The row's value (within rounding) and verdict.
    fn assert_row(c: &Check, value: f64, verdict: Verdict) {
        let v = c.value.expect("a value");
        assert!(
            (v - value).abs() < 1e-9 * value.abs().max(1.0),
            "{}: {v} != {value}",
            c.target
        );
        assert_eq!(c.verdict, verdict, "{}", c.target);
    }

    #[test]
    fn number_format() {
        assert_eq!(num(0.0335), "0.0335");
        assert_eq!(num(0.25), "0.250");
        assert_eq!(num(1.5), "1.50");
        assert_eq!(num(35.52), "35.5");
        assert_eq!(num(438.979), "439.0");
        assert_eq!(num(50093.26), "50093");
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(size(8), "8 B");
        assert_eq!(size(32768), "32 KiB");
        assert_eq!(size(2 << 20), "2 MiB");
    }

    #[test]
    fn ratios_and_verdicts() {
        let s = summary(&[
            ("rma_atomic", "lat,fop,1,1,0.010,0,0\nlat,acc,1,1,0.030,0,0\nlat,msgrate,1,1,0.005,0,0\n\
                            bw,bw_lockall,4096,1,1.0,0,0\nlayout,contig,4096,1,1.0,0,0\nlayout,strided,4096,1,2.0,0,0"),
            ("ompi_sm", "lat,fop,1,1,0.025,0,0\nlat,acc,1,1,0.040,0,0\nlat,msgrate,1,1,0.030,0,0"),
            ("hw", "hw,avx_add,32768,1,1.0,0,0"),
            ("rma_queued", "lat,fop,1,1,0.030,0,0"),
            ("ompi_rdma", "lat,fop,1,1,0.020,0,0"),
        ]);
        let runs = [Run {
            config: "mpich_alloc",
            round: 1,
            outcome: Outcome::Skipped("MPICH not installed".into()),
            secs: 0.0,
        }];
        let r = Report {
            summary: &s,
            runs: &runs,
        };
        let bar = r.bar();
        assert_row(find(&bar, "fetch_and_op"), 0.4, Verdict::Pass);
        assert_row(find(&bar, "accumulate 1 f64"), 0.75, Verdict::Miss);
        assert_row(find(&bar, "message rate"), 6.0, Verdict::Pass);
        // 8 * 4096 B in 1 µs = 32.8 GB/s against 32.8 GB/s
        assert_row(
            find(&bar, "accumulate bandwidth, lock_all, N=4096"),
            1.0,
            Verdict::Pass,
        );
        assert_row(
            find(&bar, "strided target layout N=4096"),
            0.5,
            Verdict::Miss,
        );
        // queued 3x atomic passes the first condition but is not below osc/rdma
        let q = find(&bar, "queued small-op latency fop");
        assert_eq!(q.verdict, Verdict::Miss);
        assert!(q.note.contains("not below"));
        let na = find(&bar, "compare_and_swap");
        assert_eq!((na.value, na.verdict), (None, Verdict::NotAvailable));
        assert!(na.note.contains("rma atomic"), "{}", na.note);
        // a missing configuration says why
        let create = find(&bar, "window over private memory");
        assert_eq!(create.verdict, Verdict::NotAvailable);
        let md = r.markdown("");
        assert!(md.contains("MPICH not installed"));
        assert_eq!(r.contended_errors(), 0);
    }

    #[test]
    fn contended_errors_are_counted_and_shown() {
        let s = summary(&[
            ("hw", "check,contended_errors,0,0,0,0,0"),
            (
                "rma_queued",
                "lat,fop,1,1,0.5,0,0\ncheck,contended_errors,1,0,0,0,0",
            ),
        ]);
        let runs = [Run {
            config: "rma_queued",
            round: 1,
            outcome: Outcome::Ok,
            secs: 1.0,
        }];
        let r = Report {
            summary: &s,
            runs: &runs,
        };
        assert_eq!(r.contended_errors(), 1);
        assert!(r.runs_table().contains("1 FAILED"));
    }

    #[test]
    fn table_pads_columns() {
        let mut t = Table::new(["a", "µs"]);
        t.row(vec!["long cell".into(), "1".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "| a         | µs  |");
        assert_eq!(lines[1], "| --------- | --- |");
        assert_eq!(lines[2], "| long cell | 1   |");
    }
}
