//! `cargo xtask bench --scaling`: the rank-scaling scenarios (benches/SCENARIOS.md,
//! "Rank scaling") of `rma-scale` over rma's transports and of
//! `benches/c/mpi_rma_scale.c` over MPICH and Open MPI, at N = 2, 4, 8, ... ranks up
//! to the machine's cores and one oversubscribed point at twice the cores, interleaved
//! round after round (rounds, then N, then configurations) so that slow phases of the
//! machine hit every configuration alike. Writes `target/bench/scaling/`: scaling.md
//! (a table per scenario, N against configuration), scaling.json (every raw value) and
//! scaling.svg (a log-log panel per scenario).

use super::model::{gbps, Line, Outcome, Run, Stat, Summary};
use super::plot::{self, Panel, Series};
use super::report::{cell, Table};
use super::{
    json_text, library_in, report_missing_mpi, run_config, utc_now, write, Config, Machine,
    Options, Paths, Program, Ranks, Ready, Suite,
};
use serde_json::{json, Value};
use std::fs;
use std::time::Instant;

/// The configurations of a scaling run, in column order.
pub(crate) const CONFIGS: &[Config] = &[
    Config {
        key: "rma_atomic",
        label: "rma atomic",
        command: "rmarun -n N rma-scale --transport atomic",
        program: Program::Rma {
            transport: Some("atomic"),
            create: false,
            park: false,
            check: false,
            before: false,
        },
        note: "ranks bound one per CPU when N <= CPUs, else unbound",
    },
    Config {
        key: "rma_atomic_park",
        label: "rma atomic, parking",
        command: "RMA_WAIT=park rmarun -n N rma-scale --transport atomic",
        program: Program::Rma {
            transport: Some("atomic"),
            create: false,
            park: true,
            check: false,
            before: false,
        },
        note: "every wait parks on a futex at once instead of spinning on free cores: the cost of a wake-up",
    },
    Config {
        key: "rma_queued",
        label: "rma queued",
        command: "rmarun -n N rma-scale --transport queued",
        program: Program::Rma {
            transport: Some("queued"),
            create: false,
            park: false,
            check: false,
            before: false,
        },
        note: "as rma atomic",
    },
    Config {
        key: "rma_mpi",
        label: "rma mpi/MPICH",
        command: "mpiexec.mpich -n N -bind-to core|none rma-scale (built with the mpi feature)",
        program: Program::RmaMpi {
            ompi: false,
            progress: false,
            single: false,
            before: false,
        },
        note: "the mpi transport: rma-win's layer over the MPICH of the MPICH column",
    },
    Config {
        key: "ompi_sm",
        label: "OMPI osc/sm",
        command: "mpirun.openmpi --oversubscribe -np N --bind-to core|none --mca osc sm --mca btl self,vader mpi_rma_scale.openmpi",
        program: Program::Ompi {
            osc_sm: true,
            create: false,
        },
        note: "",
    },
    Config {
        key: "mpich",
        label: "MPICH",
        command: "mpiexec.mpich -n N -bind-to core|none mpi_rma_scale.mpich",
        program: Program::Mpich {
            create: false,
            progress: false,
        },
        note: "",
    },
];

/// The scaling programs.
const SCALE: Suite = Suite {
    rust_bin: "rma-scale",
    c_stem: "mpi_rma_scale",
    ompi_extra: &["--mca", "btl", "self,vader"],
    skips_cas: false,
};

/// What a scenario's value means (the programs write µs per aggregate operation or
/// per epoch, or bytes per rank).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    /// µs per epoch or collective call, as written (lower is better).
    Latency,
    /// Million operations per second of all ranks together: 1 / (µs per operation).
    Rate,
    /// GB/s of payload of all ranks together, this many bytes per call.
    Bandwidth(u64),
    /// KiB per rank, from the bytes written (lower is better).
    Bytes,
}

impl Metric {
    /// The metric from the programs' value.
    fn of(self, value: f64) -> f64 {
        match self {
            Metric::Latency => value,
            Metric::Rate => 1.0 / value,
            Metric::Bandwidth(bytes) => gbps(bytes as f64, value),
            Metric::Bytes => value / 1024.0,
        }
    }

    /// Whether the metric falls as the programs' value grows (rates).
    fn inverse(self) -> bool {
        matches!(self, Metric::Rate | Metric::Bandwidth(_))
    }

    fn better(self) -> &'static str {
        if self.inverse() {
            "higher is better"
        } else {
            "lower is better"
        }
    }
}

/// One scenario as the tables show it.
#[derive(Debug)]
struct Scenario {
    /// The `test` field of the programs' lines.
    key: &'static str,
    what: &'static str,
    unit: &'static str,
    metric: Metric,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        key: "fence",
        what: "an empty fence epoch, every rank",
        unit: "µs per fence",
        metric: Metric::Latency,
    },
    Scenario {
        key: "fop_counter",
        what: "every rank fetch_and_op(SUM, +1 i64) + flush on rank 0's counter, under lock_all",
        unit: "Mops/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "h_fop_counter",
        what: "every rank's fop_counter through a target handle of a lock_all epoch guard (h.fetch_add + h.flush); the C programs make fop_counter's calls",
        unit: "Mops/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "ring_acc",
        what: "every rank accumulates 256 KiB of f64 (SUM) into its right neighbour + flush, under lock_all",
        unit: "GB/s, all ranks",
        metric: Metric::Bandwidth(256 << 10),
    },
    Scenario {
        key: "hot_acc",
        what: "every rank accumulates 4 KiB of i64 (SUM) into the same range of rank 0 + flush, under lock_all",
        unit: "GB/s, all ranks",
        metric: Metric::Bandwidth(4 << 10),
    },
    Scenario {
        key: "lock_excl",
        what: "every rank: lock EXCLUSIVE rank 0, get 8 B + flush, +1, put 8 B, unlock",
        unit: "Mlocks/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "lock_shared",
        what: "every rank: lock SHARED rank 0, accumulate(+1 i64), unlock",
        unit: "Mlocks/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "pscw_ring",
        what: "post(left), start(right), put 8 B to the right, complete, wait",
        unit: "µs per epoch",
        metric: Metric::Latency,
    },
    Scenario {
        key: "gacc_poll",
        what: "every rank get_accumulate(NO_OP) of a flag on rank 0 + flush, under lock_all",
        unit: "Mops/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "win_alloc",
        what: "Window::allocate (MPI_Win_allocate) of 64 KiB + free, collective",
        unit: "µs per allocate + free",
        metric: Metric::Latency,
    },
    Scenario {
        key: "counter",
        what: "every rank Counter::next on rank 0's Counter (block 1: one fetch_add + flush per value); the C programs make fop_counter's calls",
        unit: "M values/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "counter_block",
        what: "the same with blocks of 64 values (one fetch_add(64) + flush per 64 values; the C programs the same calls)",
        unit: "M values/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "mutex",
        what: "every rank: Mutex::lock (MCS), get 8 B + flush, +1, put 8 B + flush, unlock; the C programs: an MCS mutex of MPI atomics with a zero-byte message as the handover (MPICH's mcs_mutex)",
        unit: "Mlocks/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "mutex_async",
        what: "mutex with Mutex::lock_async on an executor of one task whose thread sleeps until woken (the wait's pacing, beside lock's); the C programs: mutex's calls",
        unit: "Mlocks/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "ticket_lock",
        what: "every rank: the ticket_lock example's lock (fetch_and_op ticket, poll now_serving with a yield), the same get, +1, put, release",
        unit: "Mlocks/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "sig_ring",
        what: "every rank: put_signal of 64 B to its right neighbour (signal +1), then wait_until its own signal counts the round; the C programs: put + flush + accumulate(+1) + flush, polling with fetch_and_op(NO_OP)",
        unit: "M hops/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "flag_ring",
        what: "sig_ring with put + flush + accumulate(+1) + flush instead of put_signal (the C programs: the same calls as sig_ring)",
        unit: "M hops/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "sig_stream",
        what: "every rank streams put_signal of 64 B (signal +1) to its right neighbour, then waits until its own signal counts them all; the C programs: put + flush + accumulate(+1) + flush each",
        unit: "M signalled puts/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "flag_stream",
        what: "sig_stream with put + flush + accumulate(+1) + flush instead of put_signal (the C programs: the same calls as sig_stream)",
        unit: "M signalled puts/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "hist_batch",
        what: "every rank: 256 (+1) updates to pseudo-random bins of every rank in one Window::accumulate_indexed, then flush_all; the C programs: counts combined per target, one accumulate with an indexed-block datatype per target",
        unit: "M updates/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "hist_each",
        what: "hist_batch's updates with one accumulate (1 i64) each, then flush_all",
        unit: "M updates/s, all ranks",
        metric: Metric::Rate,
    },
    Scenario {
        key: "mem_rss",
        what: "one 1 MiB window, untouched: each rank's VmRSS increase (mean over ranks)",
        unit: "KiB per rank",
        metric: Metric::Bytes,
    },
    Scenario {
        key: "mem_shm",
        what: "one 1 MiB window, untouched: /dev/shm used bytes increase (statvfs) / N",
        unit: "KiB per rank",
        metric: Metric::Bytes,
    },
];

/// The ratio columns: (numerator, denominator) configurations.
const RATIOS: &[(&str, &str)] = &[
    ("rma_atomic", "ompi_sm"),
    ("rma_queued", "rma_atomic"),
    ("rma_atomic_park", "rma_atomic"),
];

/// The default numbers of ranks: powers of two from 2 up to `cores` (and `cores`
/// itself), then one oversubscribed point at twice the cores.
pub(crate) fn default_ranks(cores: usize) -> Vec<usize> {
    let cores = cores.max(1);
    let mut v: Vec<usize> = std::iter::successors(Some(2usize), |n| n.checked_mul(2))
        .take_while(|&n| n <= cores)
        .collect();
    if cores >= 2 && !v.contains(&cores) {
        v.push(cores);
    }
    v.push(2 * cores);
    v.dedup();
    v
}

/// One number of `--ranks 2,4,8` (spaces around it allowed), in 1..=4096 (rmarun's
/// range); the list is then sorted and its repeats dropped ([`Options`]).
pub(crate) fn parse_rank(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err(format!("not a number of ranks in 1..4096: {s:?}")),
    }
}

/// Seconds a scaling run may take before it is killed (and marked timed out).
pub(crate) fn default_timeout(quick: bool) -> u64 {
    if quick {
        30
    } else {
        60
    }
}

/// One run: a configuration on N ranks in one round.
#[derive(Debug)]
struct ScaleRun {
    n: usize,
    run: Run,
    /// The `WRONG ...` lines its ranks printed.
    wrong: Vec<String>,
}

/// Everything a scaling run measured.
struct Results<'a> {
    o: &'a Options,
    ns: Vec<usize>,
    cores: usize,
    selected: Vec<&'static Config>,
    runs: Vec<ScaleRun>,
    /// Every line every run wrote (the `check` lines too).
    lines: Vec<Line>,
    /// The `scale` lines over rounds.
    summary: Summary,
}

impl Results<'_> {
    fn oversubscribed(&self, n: usize) -> bool {
        n > self.cores
    }

    fn runs_of<'s>(&'s self, key: &'s str, n: usize) -> impl Iterator<Item = &'s ScaleRun> + 's {
        self.runs
            .iter()
            .filter(move |r| r.run.config == key && r.n == n)
    }

    /// The check lines of (configuration, N, scenario): (checks, wrong) over rounds.
    fn checks(&self, key: &str, n: usize, scenario: &str) -> Option<(u64, u64)> {
        let mut found = None;
        for l in self.check_lines() {
            if l.config == key && l.n == n as u64 && l.test == scenario {
                let (c, w) = found.get_or_insert((0, 0));
                *c += l.iters;
                *w += l.med as u64;
            }
        }
        found
    }

    fn check_lines(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| l.section == "check")
    }

    fn wrong_total(&self) -> u64 {
        self.check_lines().map(|l| l.med as u64).sum()
    }

    /// Whether one round's run of (configuration, N) wrote a value for `scenario`.
    fn has_value(&self, key: &str, n: usize, round: u32, scenario: &str) -> bool {
        self.lines.iter().any(|l| {
            l.section == "scale"
                && l.config == key
                && l.n == n as u64
                && l.round == round
                && l.test == scenario
        })
    }

    /// The metric of a scenario over rounds (mapped, so lo stays the smaller).
    fn stat(&self, key: &str, n: usize, s: &Scenario) -> Option<Stat> {
        let st = self.summary.get(key, "scale", s.key, n as u64)?;
        Some(st.map(|v| s.metric.of(v)))
    }

    /// What a run that gave no value for a cell did, briefly.
    fn missing(&self, key: &str, n: usize) -> String {
        let outcomes: Vec<&Outcome> = self.runs_of(key, n).map(|r| &r.run.outcome).collect();
        if outcomes.iter().any(|o| matches!(o, Outcome::TimedOut(_))) {
            return "TIMED OUT".into();
        }
        if outcomes.iter().any(|o| matches!(o, Outcome::Failed(_))) {
            return "FAILED".into();
        }
        match outcomes.first() {
            None => "not selected".into(),
            Some(Outcome::Skipped(why)) => format!("not run ({why})"),
            // it ran and wrote no value for this scenario (df could not tell, say)
            Some(_) => "n/a".into(),
        }
    }

    /// Rounds of (configuration, N) that ran (were not skipped).
    fn rounds_run(&self, key: &str, n: usize) -> usize {
        self.runs_of(key, n)
            .filter(|r| !matches!(r.run.outcome, Outcome::Skipped(_)))
            .count()
    }

    /// A table cell: "median [lo..hi]", marked when a check was wrong or when fewer
    /// rounds than ran gave a value.
    fn cell(&self, key: &str, n: usize, s: &Scenario) -> String {
        let wrong = self
            .checks(key, n, s.key)
            .is_some_and(|(_, wrong)| wrong > 0);
        let mark = if wrong { "**WRONG** " } else { "" };
        match self.stat(key, n, s) {
            Some(st) => {
                let ran = self.rounds_run(key, n);
                let partial = if st.rounds < ran {
                    format!(" ({}/{ran} rounds; {})", st.rounds, self.missing(key, n))
                } else {
                    String::new()
                };
                format!("{mark}{}{partial}", cell(st))
            }
            None => format!("{mark}{}", self.missing(key, n)),
        }
    }

    /// The paired ratio of two configurations' metric (None when either did not run).
    fn ratio(&self, a: &str, b: &str, n: usize, s: &Scenario) -> String {
        let Some(r) = self.summary.paired_ratio(a, b, "scale", s.key, n as u64) else {
            return "n/a".into();
        };
        let r = if s.metric.inverse() {
            r.map(|x| 1.0 / x)
        } else {
            r
        };
        if [r.median, r.lo, r.hi].iter().all(|v| v.is_finite()) {
            cell(r)
        } else {
            "n/a".into()
        }
    }

    fn label(&self, key: &str) -> &'static str {
        CONFIGS
            .iter()
            .find(|c| c.key == key)
            .map_or("?", |c| c.label)
    }

    fn n_cell(&self, n: usize) -> String {
        if self.oversubscribed(n) {
            format!("{n} (oversubscribed)")
        } else {
            n.to_string()
        }
    }

    fn scenario_table(&self, s: &Scenario) -> String {
        let mut head = vec!["N".to_owned()];
        head.extend(self.selected.iter().map(|c| c.label.to_owned()));
        head.extend(RATIOS.iter().map(|(a, b)| format!("{a}/{b}")));
        let mut t = Table::new(head);
        for &n in &self.ns {
            let mut row = vec![self.n_cell(n)];
            row.extend(self.selected.iter().map(|c| self.cell(c.key, n, s)));
            row.extend(RATIOS.iter().map(|(a, b)| self.ratio(a, b, n, s)));
            t.row(row);
        }
        format!(
            "### {} — {} ({})\n\n{}.\n\n{}",
            s.key,
            s.unit,
            s.metric.better(),
            upper_first(s.what),
            t.render()
        )
    }

    /// The correctness part: every wrong count, prominently; else how many checks held.
    fn checks_section(&self) -> String {
        let mut out = String::from("## Checks\n\n");
        let wrong: Vec<&Line> = self.check_lines().filter(|l| l.med > 0.0).collect();
        let checks: u64 = self.check_lines().map(|l| l.iters).sum();
        if wrong.is_empty() {
            out.push_str(&format!(
                "Every count was exact: {checks} checks (counters, sums, the PSCW slot, every \
                 polled value) over {} check lines.\n",
                self.check_lines().count()
            ));
        } else {
            out.push_str(&format!(
                "**FAILED: {} wrong of {checks} checks.** A wrong count is a bug of the \
                 configuration that reported it:\n\n",
                self.wrong_total()
            ));
            for l in wrong {
                out.push_str(&format!(
                    "- **WRONG**: {} on {} ranks, round {}, {}: {} of {} checks wrong\n",
                    self.label(&l.config),
                    l.n,
                    l.round,
                    l.test,
                    l.med,
                    l.iters
                ));
            }
            for r in self.runs.iter().filter(|r| !r.wrong.is_empty()) {
                for w in r.wrong.iter().take(5) {
                    out.push_str(&format!(
                        "  - {} N={} round {}: `{w}`\n",
                        self.label(r.run.config),
                        r.n,
                        r.run.round
                    ));
                }
            }
        }
        out
    }

    /// Per N and configuration: each round's outcome and seconds.
    fn runs_table(&self) -> String {
        let mut head = vec!["N".to_owned(), "configuration".to_owned()];
        head.extend((1..=self.o.rounds).map(|r| format!("round {r}")));
        let mut t = Table::new(head);
        for &n in &self.ns {
            for c in &self.selected {
                let mut row = vec![self.n_cell(n), c.label.to_owned()];
                for r in self.runs_of(c.key, n) {
                    let lines = self
                        .lines
                        .iter()
                        .filter(|l| {
                            l.config == c.key
                                && l.round == r.run.round
                                && l.n == n as u64
                                && l.section == "scale"
                        })
                        .count();
                    row.push(match &r.run.outcome {
                        Outcome::Ok => format!("ok, {:.1} s", r.run.secs),
                        Outcome::Skipped(_) => "not run".into(),
                        other => format!(
                            "**{}** after {:.1} s, {lines} values kept",
                            other.describe(),
                            r.run.secs
                        ),
                    });
                }
                t.row(row);
            }
        }
        t.render()
    }

    fn libraries(&self, p: &Paths) -> Vec<String> {
        ["mpich", "ompi_sm"]
            .iter()
            .filter_map(|k| {
                self.ns
                    .iter()
                    .find_map(|n| library_in(&p.raw.join(format!("{k}_n{n}_r1.txt"))))
            })
            .collect()
    }

    fn markdown(&self, header: &str) -> String {
        let mut md = format!("{header}\n{}\n## Scenarios\n\n", self.checks_section());
        for s in SCENARIOS {
            md.push_str(&self.scenario_table(s));
            md.push('\n');
        }
        md.push_str("## Configurations\n\n");
        for c in &self.selected {
            md.push_str(&format!("- {} (`{}`): `{}`", c.label, c.key, c.command));
            if !c.note.is_empty() {
                md.push_str(&format!(" — {}", c.note));
            }
            md.push('\n');
        }
        md.push_str(&format!("\n## Runs\n\n{}", self.runs_table()));
        md
    }

    fn json(&self, date: &str, command: &str, machine: &Machine, p: &Paths) -> Value {
        let (reps, secs) = self.o.reps_secs();
        let configs: Vec<Value> = self
            .selected
            .iter()
            .map(|c| {
                let library = self
                    .ns
                    .iter()
                    .find_map(|n| library_in(&p.raw.join(format!("{}_n{n}_r1.txt", c.key))));
                json!({
                    "key": c.key,
                    "label": c.label,
                    "command": c.command,
                    "note": c.note,
                    "library": library,
                })
            })
            .collect();
        let scenarios: Vec<Value> = SCENARIOS
            .iter()
            .map(|s| {
                json!({
                    "key": s.key,
                    "what": s.what,
                    "unit": s.unit,
                    "better": s.metric.better(),
                })
            })
            .collect();
        let runs: Vec<Value> = self
            .runs
            .iter()
            .map(|r| {
                json!({
                    "config": r.run.config,
                    "n": r.n,
                    "oversubscribed": self.oversubscribed(r.n),
                    "round": r.run.round,
                    "outcome": r.run.outcome.describe(),
                    "secs": r.run.secs,
                    "wrong": r.wrong,
                })
            })
            .collect();
        let raw: Vec<Value> = self
            .lines
            .iter()
            .map(|l| {
                json!({
                    "config": l.config,
                    "round": l.round,
                    "section": l.section,
                    "scenario": l.test,
                    "n": l.n,
                    "iters_or_checks": l.iters,
                    "med_or_wrong": l.med,
                    "min": l.min,
                    "max": l.max,
                })
            })
            .collect();
        let mut summary = vec![];
        for s in SCENARIOS {
            for c in &self.selected {
                for &n in &self.ns {
                    if let Some(st) = self.stat(c.key, n, s) {
                        summary.push(json!({
                            "config": c.key,
                            "scenario": s.key,
                            "n": n,
                            "unit": s.unit,
                            "median": st.median,
                            "lo": st.lo,
                            "hi": st.hi,
                            "rounds": st.rounds,
                        }));
                    }
                }
            }
        }
        json!({
            "date": date,
            "command": command,
            "machine": {
                "cpu": machine.cpu,
                "nproc": machine.nproc,
                "kernel": machine.kernel,
            },
            "options": {
                "rounds": self.o.rounds,
                "quick": self.o.quick,
                "reps": reps,
                "secs_per_rep": secs,
                "timeout_s": self.o.timeout,
                "ranks": self.ns,
            },
            "units": "scale lines: µs per aggregate operation (per epoch for fence, pscw_ring, \
                      win_alloc), bytes per rank for mem_rss and mem_shm; check lines: \
                      iters_or_checks = checks made, med_or_wrong = checks wrong",
            "configs": configs,
            "scenarios": scenarios,
            "runs": runs,
            "raw": raw,
            "summary": summary,
            "wrong_total": self.wrong_total(),
        })
    }

    fn svg(&self, title: &str) -> String {
        let panels: Vec<Panel> = SCENARIOS
            .iter()
            .map(|s| Panel {
                title: s.key.to_owned(),
                unit: s.unit,
                series: self
                    .selected
                    .iter()
                    .map(|c| Series {
                        key: c.key,
                        label: c.label,
                        points: self
                            .ns
                            .iter()
                            .filter_map(|&n| Some((n, self.stat(c.key, n, s)?)))
                            .collect(),
                        failed: self
                            .ns
                            .iter()
                            .filter_map(|&n| {
                                let bad: Vec<String> = self
                                    .runs_of(c.key, n)
                                    .filter(|r| {
                                        matches!(
                                            r.run.outcome,
                                            Outcome::Failed(_) | Outcome::TimedOut(_)
                                        ) && !self.has_value(c.key, n, r.run.round, s.key)
                                    })
                                    .map(|r| {
                                        format!(
                                            "round {}: {}",
                                            r.run.round,
                                            r.run.outcome.describe()
                                        )
                                    })
                                    .collect();
                                (!bad.is_empty()).then(|| (n, bad.join("; ")))
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        plot::scaling(title, &self.ns, self.cores, &panels)
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The `WRONG ...` lines in a run's output.
fn wrong_lines(log: &std::path::Path) -> Vec<String> {
    fs::read_to_string(log)
        .map(|t| {
            t.lines()
                .filter_map(|l| l.find("WRONG ").map(|i| l[i..].trim().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The load averages (1, 5, 15 minutes) of /proc/loadavg: before the runs, other work
/// on the machine shows there (it skews every configuration that runs meanwhile).
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// `cargo xtask bench --scaling ...`.
pub(crate) fn main(o: &Options, cmdline: &str) -> bool {
    let start = Instant::now();
    let load_before = load_average();
    let machine = Machine::probe();
    let cores = machine.nproc.max(1);
    let ns = o.ranks.clone().unwrap_or_else(|| default_ranks(cores));
    let p = Paths::new().under("scaling");
    let _ = fs::remove_dir_all(&p.raw);
    if let Err(e) = fs::create_dir_all(&p.raw) {
        eprintln!("xtask bench: cannot create {}: {e}", p.raw.display());
        return false;
    }
    let selected = o.selected();
    let wants_mpi = selected
        .iter()
        .any(|c| !matches!(c.program, Program::Rma { .. }));
    report_missing_mpi(wants_mpi);
    let ready = Ready::prepare(&p, &selected, &SCALE);
    let (reps, secs) = o.reps_secs();
    println!(
        "bench: rank scaling at N = {} ({cores} CPUs: {} oversubscribed), {} round(s), \
         -r {reps} -t {secs}, timeout {} s per run",
        ns.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ns.iter()
            .filter(|&&n| n > cores)
            .map(|n| format!("N={n}"))
            .collect::<Vec<_>>()
            .join(", "),
        o.rounds,
        o.timeout
    );

    let (mut runs, mut lines) = (vec![], vec![]);
    for round in 1..=o.rounds {
        for &n in &ns {
            let ranks = Ranks {
                n,
                oversubscribed: n > cores,
            };
            for c in &selected {
                let stem = format!("{}_n{n}_r{round}", c.key);
                let (run, mut got) = run_config(c, round, (&p, o, &SCALE), ranks, &stem, &ready);
                let wrong = wrong_lines(&p.raw.join(format!("{stem}.txt")));
                if round == 1 || !matches!(run.outcome, Outcome::Skipped(_)) {
                    println!(
                        "round {round}/{}  N={n:<4} {:<11} {:>6.1} s  {} ({} lines)",
                        o.rounds,
                        c.key,
                        run.secs,
                        run.outcome.describe(),
                        got.len()
                    );
                }
                for w in &wrong {
                    println!("bench: {} N={n} round {round}: {w}", c.key);
                }
                runs.push(ScaleRun { n, run, wrong });
                lines.append(&mut got);
            }
        }
    }

    let scale: Vec<Line> = lines
        .iter()
        .filter(|l| l.section == "scale")
        .cloned()
        .collect();
    let results = Results {
        o,
        ns,
        cores,
        selected,
        runs,
        summary: Summary::of(&scale),
        lines,
    };
    let load_after = load_average();
    let date = utc_now();
    let libs = results.libraries(&p);
    let header = format!(
        "# rma rank scaling\n\n{date} — `{cmdline}`\n\n\
         Machine: {}, {cores} CPUs, kernel {}. {} round(s), each program with -r {reps} -t {secs}; \
         runs killed after {} s.{} Load average (1, 5, 15 min) before the runs \
         {load_before} (other work on the machine, which skews every configuration that runs \
         meanwhile), after {load_after} (this run's own ranks included).\n\n\
         **Points with N > {cores} (the CPU count) are oversubscribed**: more ranks than CPUs, \
         the MPI launchers with `--oversubscribe --bind-to none` / `-bind-to none` and rma's \
         ranks unbound; at N <= {cores} every rank is bound to its own CPU.\n\n\
         Cells: the median over the rounds of each round's median over the repetitions, \
         [the range of the per-round medians]; \"(k/R rounds)\" when only k of the R rounds \
         that ran gave a value. Ratio columns: the two configurations' metric in each round, \
         divided, median [range] over rounds. Scenarios: benches/SCENARIOS.md, \"Rank scaling\".\n",
        machine.cpu,
        machine.kernel,
        o.rounds,
        o.timeout,
        if libs.is_empty() {
            String::new()
        } else {
            format!(" MPI: {}.", libs.join("; "))
        }
    );
    let md = results.markdown(&header);
    println!("\n{md}");
    write(&p.out.join("scaling.md"), &md);
    let mut json = results.json(&date, cmdline, &machine, &p);
    json["load_average_before"] = load_before.as_str().into();
    json["load_average_after"] = load_after.as_str().into();
    write(&p.out.join("scaling.json"), &json_text(&json));
    let title = format!("rma rank scaling, {date} ({cores} CPUs; shaded: oversubscribed)");
    write(&p.out.join("scaling.svg"), &results.svg(&title));

    let wrong = results.wrong_total();
    let values = results.summary.iter().count();
    println!(
        "bench: scaling in {:.0} s; raw output in {}",
        start.elapsed().as_secs_f64(),
        p.raw.display()
    );
    if wrong > 0 {
        println!("bench: FAILED: {wrong} wrong counts (see Checks in scaling.md)");
    }
    if values == 0 {
        println!("bench: FAILED: no configuration produced results");
    }
    wrong == 0 && values > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(key: &str) -> &'static Scenario {
        SCENARIOS
            .iter()
            .find(|s| s.key == key)
            .expect("a scenario of that key")
    }

    #[test]
    fn default_ranks_go_to_the_cores_and_one_oversubscribed_point() {
        assert_eq!(default_ranks(2), [2, 4]);
        assert_eq!(default_ranks(1), [2]);
        assert_eq!(default_ranks(0), [2]);
        assert_eq!(default_ranks(4), [2, 4, 8]);
        assert_eq!(default_ranks(6), [2, 4, 6, 12]);
        assert_eq!(default_ranks(16), [2, 4, 8, 16, 32]);
    }

    #[test]
    fn ranks_option() {
        let ranks = |r: &str| Options::parse(&["--scaling", "--ranks", r]).map(|o| o.ranks);
        assert_eq!(ranks("4,2,4, 8").unwrap(), Some(vec![2, 4, 8]));
        assert!(ranks("2,x").is_err());
        assert!(ranks("0").is_err());
        assert!(ranks("5000").is_err());
        assert!(ranks("").is_err());
    }

    #[test]
    fn scaling_options() {
        let o = Options::parse(&["--scaling"]).unwrap();
        assert!(o.scaling && !o.quick && o.ranks.is_none());
        assert_eq!((o.rounds, o.timeout, o.reps_secs()), (3, 60, ("5", "0.05")));
        let keys: Vec<&str> = o.selected().iter().map(|c| c.key).collect();
        assert_eq!(
            keys,
            [
                "rma_atomic",
                "rma_atomic_park",
                "rma_queued",
                "rma_mpi",
                "ompi_sm",
                "mpich"
            ]
        );
        let q = Options::parse(&["--quick", "--scaling", "--ranks", "2,4,8"]).unwrap();
        assert_eq!((q.rounds, q.timeout, q.reps_secs()), (1, 30, ("3", "0.02")));
        assert_eq!(q.ranks, Some(vec![2, 4, 8]));
        let r = Options::parse(&[
            "--only",
            "mpich,rma_atomic",
            "--scaling",
            "--rounds",
            "2",
            "--timeout",
            "9",
        ])
        .unwrap();
        let keys: Vec<&str> = r.selected().iter().map(|c| c.key).collect();
        assert_eq!(keys, ["rma_atomic", "mpich"]);
        assert_eq!((r.rounds, r.timeout), (2, 9));
        // the keys of one kind of run are not the other's
        assert!(Options::parse(&["--scaling", "--only", "mpich_alloc"]).is_err());
        assert!(Options::parse(&["--only", "mpich"]).is_err());
        assert!(
            Options::parse(&["--ranks", "2,4"]).is_err(),
            "--ranks needs --scaling"
        );
        assert!(Options::parse(&["--scaling", "--ranks"]).is_err());
        assert!(Options::parse(&["--scaling", "--ranks", "two"]).is_err());
        // the 2-rank bench is as it was
        let b = Options::parse(&[]).unwrap();
        assert!(!b.scaling && b.timeout == 120 && b.reps_secs() == ("5", "0.02"));
    }

    #[test]
    fn launchers_bind_unless_oversubscribed() {
        let args = |c: std::process::Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let pair = args(super::super::mpi_launcher(true, Ranks::PAIR));
        assert_eq!(
            pair,
            [
                "--allow-run-as-root",
                "--oversubscribe",
                "-np",
                "2",
                "--bind-to",
                "core"
            ]
        );
        let over = Ranks {
            n: 4,
            oversubscribed: true,
        };
        assert_eq!(
            args(super::super::mpi_launcher(false, over)),
            ["-n", "4", "-bind-to", "none"]
        );
        assert_eq!(
            args(super::super::mpi_launcher(true, over))[3..],
            ["4", "--bind-to", "none"]
        );
    }

    fn results<'a>(o: &'a Options, text: &[(&str, u32, &str)], runs: Vec<ScaleRun>) -> Results<'a> {
        let lines: Vec<Line> = text
            .iter()
            .flat_map(|(c, r, t)| Line::parse_all(c, *r, t))
            .collect();
        let scale: Vec<Line> = lines
            .iter()
            .filter(|l| l.section == "scale")
            .cloned()
            .collect();
        Results {
            o,
            ns: vec![2, 4],
            cores: 2,
            selected: CONFIGS.iter().collect(),
            runs,
            summary: Summary::of(&scale),
            lines,
        }
    }

    fn run(config: &'static str, n: usize, round: u32, outcome: Outcome) -> ScaleRun {
        ScaleRun {
            n,
            run: Run {
                config,
                round,
                outcome,
                secs: 1.0,
            },
            wrong: vec![],
        }
    }

    #[test]
    fn tables_show_metrics_ratios_failures_and_wrong_counts() {
        let o = Options::parse(&["--scaling", "--rounds", "2"]).unwrap();
        let r = results(
            &o,
            &[
                (
                    "rma_atomic",
                    1,
                    "scale,fop_counter,2,10,0.05,0.04,0.06\ncheck,fop_counter,2,12,0,0,0",
                ),
                (
                    "rma_atomic",
                    2,
                    "scale,fop_counter,2,10,0.10,0.04,0.06\ncheck,fop_counter,2,12,0,0,0",
                ),
                ("ompi_sm", 1, "scale,fop_counter,2,10,0.10,0.1,0.1"),
                ("ompi_sm", 2, "scale,fop_counter,2,10,0.10,0.1,0.1"),
                (
                    "rma_queued",
                    1,
                    "scale,fop_counter,4,10,1.0,1,1\ncheck,fop_counter,4,12,1,0,0",
                ),
                ("rma_atomic", 1, "scale,ring_acc,4,10,2.62144,2,3"),
            ],
            vec![
                run("rma_atomic", 2, 1, Outcome::Ok),
                run("rma_atomic", 2, 2, Outcome::Ok),
                run("rma_atomic", 4, 1, Outcome::TimedOut(60)),
                run("rma_atomic", 4, 2, Outcome::TimedOut(60)),
                run(
                    "mpich",
                    2,
                    1,
                    Outcome::Skipped("mpicc.mpich not installed".into()),
                ),
                run(
                    "mpich",
                    2,
                    2,
                    Outcome::Skipped("mpicc.mpich not installed".into()),
                ),
                run("rma_queued", 4, 1, Outcome::Failed("exit status 1".into())),
            ],
        );
        let fop = scenario("fop_counter");
        // 1 / 0.05 and 1 / 0.10 µs: 20 and 10 Mops/s; the median of the times, 0.075 µs
        assert_eq!(r.cell("rma_atomic", 2, fop), "13.3 [10.0..20.0]");
        // paired: 20/10 and 10/10 (the median of the time ratios 0.5 and 1, inverted)
        assert_eq!(
            r.ratio("rma_atomic", "ompi_sm", 2, fop),
            "1.33 [1.00..2.00]"
        );
        assert_eq!(r.ratio("rma_queued", "rma_atomic", 2, fop), "n/a");
        assert_eq!(
            r.cell("mpich", 2, fop),
            "not run (mpicc.mpich not installed)"
        );
        assert_eq!(r.cell("rma_atomic", 4, fop), "TIMED OUT");
        assert_eq!(r.cell("rma_queued", 4, fop), "**WRONG** 1.00");
        // 256 KiB in 2.62144 µs: 100 GB/s, one of the two rounds that ran
        assert_eq!(
            r.cell("rma_atomic", 4, scenario("ring_acc")),
            "100 (1/2 rounds; TIMED OUT)"
        );
        assert_eq!(r.wrong_total(), 1);
        let md = r.markdown("# head\n");
        assert!(md.contains("**FAILED: 1 wrong of 36 checks.**"), "{md}");
        assert!(md.contains("WRONG**: rma queued on 4 ranks, round 1, fop_counter: 1 of 12"));
        assert!(md.contains("| 4 (oversubscribed) |"));
        assert!(md.contains("rma_atomic/ompi_sm"));
        let svg = r.svg("t");
        assert!(svg.contains("×<title>rma atomic N=4: round 1: timed out after 60 s"));
        // ring_acc's value came before the timeout in round 1; round 2 gave none
        let ring = svg.split("ring_acc").nth(1).unwrap_or("");
        assert!(ring.contains("×<title>rma atomic N=4: round 2: timed out"));
        assert!(!ring
            .split("hot_acc")
            .next()
            .unwrap_or("")
            .contains("round 1: timed out"));
        let json = json_text(&r.json("d", "c", &Machine::probe(), &Paths::new().under("scaling")));
        assert!(json.contains("\"wrong_total\": 1"));
        assert!(json.contains("\"oversubscribed\": true"));
    }

    #[test]
    fn every_scenario_the_programs_write_has_a_table() {
        let rust = include_str!("../../../benches/src/bin/rma-scale.rs");
        let c = include_str!("../../../benches/c/mpi_rma_scale.c");
        for s in SCENARIOS {
            let name = s.key.strip_prefix("mem_").map_or(s.key, |_| "mem");
            assert!(
                rust.contains(&format!("\"{name}\"")),
                "{} in rma-scale",
                s.key
            );
            assert!(
                c.contains(&format!("\"{name}\"")),
                "{} in mpi_rma_scale.c",
                s.key
            );
        }
    }
}
