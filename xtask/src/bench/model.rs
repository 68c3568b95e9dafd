//! The data model: one result line of a benchmark program, and the summary of a
//! configuration's lines over rounds.

use std::collections::BTreeMap;

/// One CSV line `section,test,N,iters,med_us,min_us,max_us` (benches/SCENARIOS.md),
/// as written by one configuration in one round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub(crate) config: String,
    pub(crate) round: u32,
    pub(crate) section: String,
    pub(crate) test: String,
    pub(crate) n: u64,
    pub(crate) iters: u64,
    pub(crate) med: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Line {
    /// Parses one CSV line; `None` for blank, comment or malformed lines.
    pub(crate) fn parse(config: &str, round: u32, text: &str) -> Option<Line> {
        let f: Vec<&str> = text.trim().split(',').map(str::trim).collect();
        if f.len() != 7 || f[0].is_empty() || f[0].starts_with('#') {
            return None;
        }
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        Some(Line {
            config: config.to_owned(),
            round,
            section: f[0].to_owned(),
            test: f[1].to_owned(),
            n: f[2].parse().ok()?,
            iters: f[3].parse().ok()?,
            med: num(f[4])?,
            min: num(f[5])?,
            max: num(f[6])?,
        })
    }

    /// Every parseable line of a CSV file's text.
    pub(crate) fn parse_all(config: &str, round: u32, text: &str) -> Vec<Line> {
        text.lines()
            .filter_map(|l| Line::parse(config, round, l))
            .collect()
    }

    /// The `check,contended_errors,<count>,...` line's count, if this is one.
    pub(crate) fn contended_errors(&self) -> Option<u64> {
        (self.section == "check" && self.test == "contended_errors").then_some(self.n)
    }
}

/// The median of `v` (the mean of the two middle values for an even count).
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some(0.5 * (s[n / 2 - 1] + s[n / 2])),
    }
}

/// A configuration's result for one key over rounds: the median of the per-round
/// medians and their range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stat {
    pub(crate) median: f64,
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) rounds: usize,
}

impl Stat {
    pub(crate) fn of(per_round: &[f64]) -> Option<Stat> {
        Some(Stat {
            median: median(per_round)?,
            lo: per_round.iter().copied().fold(f64::INFINITY, f64::min),
            hi: per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            rounds: per_round.len(),
        })
    }

    /// `f` applied to the median and both ends of the range (for a decreasing `f`,
    /// such as a rate from a time, the ends swap so that lo stays the smaller).
    pub(crate) fn map(self, f: impl Fn(f64) -> f64) -> Stat {
        let (a, b) = (f(self.lo), f(self.hi));
        Stat {
            median: f(self.median),
            lo: a.min(b),
            hi: a.max(b),
            rounds: self.rounds,
        }
    }
}

/// Key of a result: configuration, section, test, N.
type Key = (String, String, String, u64);

/// All configurations' results, summarized over rounds.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    stats: BTreeMap<Key, Stat>,
    /// Each key's median per round, for ratios of two configurations run side by side.
    rounds: BTreeMap<Key, BTreeMap<u32, f64>>,
    errors: BTreeMap<String, u64>,
}

impl Summary {
    pub(crate) fn of(lines: &[Line]) -> Summary {
        let mut groups: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
        let mut rounds: BTreeMap<Key, BTreeMap<u32, f64>> = BTreeMap::new();
        let mut errors: BTreeMap<String, u64> = BTreeMap::new();
        for l in lines {
            if let Some(e) = l.contended_errors() {
                *errors.entry(l.config.clone()).or_default() += e;
                continue;
            }
            let key = (l.config.clone(), l.section.clone(), l.test.clone(), l.n);
            groups.entry(key.clone()).or_default().push(l.med);
            rounds.entry(key).or_default().insert(l.round, l.med);
        }
        let stats = groups
            .into_iter()
            .filter_map(|(k, v)| Some((k, Stat::of(&v)?)))
            .collect();
        Summary {
            stats,
            rounds,
            errors,
        }
    }

    /// Scenario `test_a` of `a` over scenario `test_b` of `b` (a handle row against a
    /// C program's plain row, or the same scenario of both), paired by round: the ratio
    /// of the two configurations' medians in each round both ran (a few seconds apart,
    /// so under about the same load), summarized over those rounds. Robust where the
    /// machine's speed shifts between rounds, which moves both sides of a pair
    /// together.
    pub(crate) fn paired_lat_ratio_of(
        &self,
        a: &str,
        test_a: &str,
        b: &str,
        test_b: &str,
    ) -> Option<Stat> {
        self.paired(
            &(a.to_owned(), "lat".to_owned(), test_a.to_owned(), 1),
            &(b.to_owned(), "lat".to_owned(), test_b.to_owned(), 1),
        )
    }

    /// `a / b` for any key (section, test, N), paired by round as
    /// [`Summary::paired_lat_ratio_of`].
    pub(crate) fn paired_ratio(
        &self,
        a: &str,
        b: &str,
        section: &str,
        test: &str,
        n: u64,
    ) -> Option<Stat> {
        let key = |c: &str| (c.to_owned(), section.to_owned(), test.to_owned(), n);
        self.paired(&key(a), &key(b))
    }

    fn paired(
        &self,
        ka: &(String, String, String, u64),
        kb: &(String, String, String, u64),
    ) -> Option<Stat> {
        let (ra, rb) = (self.rounds.get(ka)?, self.rounds.get(kb)?);
        let ratios: Vec<f64> = ra
            .iter()
            .filter_map(|(round, x)| Some(x / rb.get(round)?))
            .collect();
        Stat::of(&ratios)
    }

    pub(crate) fn get(&self, config: &str, section: &str, test: &str, n: u64) -> Option<Stat> {
        let key = (config.to_owned(), section.to_owned(), test.to_owned(), n);
        self.stats.get(&key).copied()
    }

    /// The µs per call of a `lat` scenario.
    pub(crate) fn lat(&self, config: &str, test: &str) -> Option<Stat> {
        self.get(config, "lat", test, 1)
    }

    /// Every summarized key with its result, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &Stat)> {
        self.stats.iter()
    }

    /// The contended-check errors a configuration reported over all its rounds
    /// (`None` when it reported no check line at all).
    pub(crate) fn errors(&self, config: &str) -> Option<u64> {
        self.errors.get(config).copied()
    }

    pub(crate) fn has_config(&self, config: &str) -> bool {
        self.stats.keys().any(|k| k.0 == config)
    }
}

/// How one configuration's run in one round ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Ok,
    /// It ran and exited with a failure (exit status or signal).
    Failed(String),
    /// It ran past the timeout and was killed.
    TimedOut(u64),
    /// It did not run (its tools are missing or did not build).
    Skipped(String),
}

/// One configuration's run in one round.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) config: &'static str,
    pub(crate) round: u32,
    pub(crate) outcome: Outcome,
    pub(crate) secs: f64,
}

impl Outcome {
    pub(crate) fn describe(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Failed(why) => format!("failed: {why}"),
            Outcome::TimedOut(s) => format!("timed out after {s} s (killed)"),
            Outcome::Skipped(why) => format!("not run: {why}"),
        }
    }
}

/// Payload GB/s (1e9 B/s) of `bytes` moved in `us` microseconds.
pub(crate) fn gbps(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(config: &str, round: u32, text: &str) -> Line {
        Line::parse(config, round, text).expect("a valid line")
    }

    #[test]
    fn parses_lines_and_skips_the_rest() {
        let l = line("mpich_alloc", 2, "lat,fop,1,6466,1.5900,1.1350,1.8220");
        assert_eq!(l.section, "lat");
        assert_eq!(l.test, "fop");
        assert_eq!((l.n, l.iters, l.round), (1, 6466, 2));
        assert_eq!((l.med, l.min, l.max), (1.59, 1.135, 1.822));
        let text = "# comment\n\nlat,fop,1,x,1,1,1\nbw,bw_lockall,512,10,0.1,0.1\n\
                    hw,avx_add,8192,57160,0.1762,0.1042,0.2760\nlat,acc,1,5,nan,1,1\n";
        let all = Line::parse_all("hw", 1, text);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].test, "avx_add");
        assert_eq!(all[0].n, 8192);
    }

    #[test]
    fn paired_ratios_follow_the_rounds_both_ran() {
        let lines = [
            line("a", 1, "lat,acc,1,10,1.0,1,1"),
            line("a", 2, "lat,acc,1,10,2.2,1,1"),
            line("a", 3, "lat,acc,1,10,9.0,1,1"),
            line("b", 1, "lat,acc,1,10,1.0,1,1"),
            line("b", 2, "lat,acc,1,10,2.0,1,1"),
        ];
        let s = Summary::of(&lines);
        let r = s.paired_lat_ratio_of("a", "acc", "b", "acc").unwrap();
        assert_eq!(r.rounds, 2, "round 3 has no partner");
        assert!((r.median - 1.05).abs() < 1e-12 && r.lo == 1.0 && (r.hi - 1.1).abs() < 1e-12);
        // the ratio of medians would be 2.2 / 1.5
        assert_eq!(s.paired_lat_ratio_of("a", "acc", "c", "acc"), None);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn summary_is_the_median_of_per_round_medians_with_their_range() {
        let lines = [
            line("a", 1, "lat,acc,1,10,0.30,0.01,9"),
            line("a", 2, "lat,acc,1,10,0.10,0.01,9"),
            line("a", 3, "lat,acc,1,10,0.20,0.01,9"),
            line("b", 1, "lat,acc,1,10,1.0,1,1"),
            line("a", 1, "check,contended_errors,0,0,0,0,0"),
            line("a", 2, "check,contended_errors,2,0,0,0,0"),
        ];
        let s = Summary::of(&lines);
        let a = s.lat("a", "acc").unwrap();
        assert_eq!((a.median, a.lo, a.hi, a.rounds), (0.2, 0.1, 0.3, 3));
        assert_eq!(s.lat("b", "acc").unwrap().rounds, 1);
        assert_eq!(s.lat("a", "fop"), None);
        assert_eq!(s.lat("c", "acc"), None);
        assert_eq!(s.errors("a"), Some(2));
        assert_eq!(s.errors("b"), None);
        assert!(s.has_config("b") && !s.has_config("c"));
    }

    #[test]
    fn map_keeps_the_range_ordered() {
        let t = Stat::of(&[0.5, 0.25, 1.0]).unwrap();
        let rate = t.map(|us| 1.0 / us);
        assert_eq!((rate.median, rate.lo, rate.hi), (2.0, 1.0, 4.0));
        assert_eq!(gbps(8.0 * 4096.0, 1.0), 32.768);
    }
}
