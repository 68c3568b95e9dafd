use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// Key-value hints given at window creation (MPI_Info's role).
///
/// Keys rma does not know are kept and ignored, as MPI requires; keys it knows are
/// validated by [`WinInfo::from_info`], and a bad value is an error of class INFO.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[doc(alias = "MPI_Info")]
pub struct Info {
    entries: BTreeMap<String, String>,
}

impl Info {
    /// An empty info object (MPI_INFO_NULL's role): every key takes its default.
    #[doc(alias = "MPI_Info_create")]
    pub fn new() -> Info {
        Info::default()
    }

    /// Sets `key` to `value`, replacing an earlier value (builder form).
    #[doc(alias = "MPI_Info_set")]
    pub fn with(mut self, key: &str, value: &str) -> Info {
        self.set(key, value);
        self
    }

    /// Sets `key` to `value`, replacing an earlier value.
    #[doc(alias = "MPI_Info_set")]
    pub fn set(&mut self, key: &str, value: &str) {
        self.entries.insert(key.to_owned(), value.to_owned());
    }

    /// The value of `key`, if set.
    #[doc(alias("MPI_Info_get", "MPI_Info_get_string"))]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Removes `key`.
    #[doc(alias = "MPI_Info_delete")]
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.entries.remove(key)
    }

    /// All entries, sorted by key.
    #[doc(alias = "MPI_Info_get_nthkey")]
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of entries.
    #[doc(alias = "MPI_Info_get_nkeys")]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The `accumulate_ordering` info value: which orderings accumulate-family calls from
/// one origin to one target on overlapping elements must keep.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccOrdering(u8);

impl AccOrdering {
    /// No ordering (`none`).
    pub const NONE: AccOrdering = AccOrdering(0);
    /// Read after read.
    pub const RAR: AccOrdering = AccOrdering(1);
    /// Read after write.
    pub const RAW: AccOrdering = AccOrdering(2);
    /// Write after read.
    pub const WAR: AccOrdering = AccOrdering(4);
    /// Write after write.
    pub const WAW: AccOrdering = AccOrdering(8);
    /// All four, the default (`rar,raw,war,waw`).
    pub const STRICT: AccOrdering = AccOrdering(15);

    const TOKENS: [(&'static str, AccOrdering); 4] = [
        ("rar", AccOrdering::RAR),
        ("raw", AccOrdering::RAW),
        ("war", AccOrdering::WAR),
        ("waw", AccOrdering::WAW),
    ];

    /// Parses `none` or a comma-separated subset of `rar`, `raw`, `war`, `waw` in any
    /// order (whitespace around tokens ignored, repeats allowed).
    pub fn parse(value: &str) -> Result<AccOrdering> {
        let bad = |reason: &str| Error::InvalidInfo {
            key: "accumulate_ordering".into(),
            value: value.into(),
            reason: reason.into(),
        };
        if value.trim() == "none" {
            return Ok(AccOrdering::NONE);
        }
        let mut bits = 0;
        for token in value.split(',') {
            let token = token.trim();
            match Self::TOKENS.iter().find(|(name, _)| *name == token) {
                Some((_, flag)) => bits |= flag.0,
                None if token == "none" => {
                    return Err(bad("\"none\" cannot be combined with other orderings"))
                }
                None => {
                    return Err(bad(&format!(
                        "{token:?} is not an ordering; expected \"none\" or a comma-separated subset of rar, raw, war, waw"
                    )))
                }
            }
        }
        Ok(AccOrdering(bits))
    }

    /// Whether every ordering in `other` is required by `self`.
    pub const fn contains(self, other: AccOrdering) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no ordering is required.
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }
}

impl Default for AccOrdering {
    fn default() -> AccOrdering {
        AccOrdering::STRICT
    }
}

impl fmt::Display for AccOrdering {
    /// The canonical form: `none`, or the set tokens in the order rar, raw, war, waw.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let names: Vec<&str> = Self::TOKENS
            .iter()
            .filter(|(_, flag)| self.contains(*flag))
            .map(|(name, _)| *name)
            .collect();
        f.write_str(&names.join(","))
    }
}

impl fmt::Debug for AccOrdering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccOrdering({self})")
    }
}

/// The `accumulate_ops` info value: which ops concurrent accumulates on one element may
/// use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AccOps {
    /// One op, or NO_OP (`same_op_no_op`, the default).
    #[default]
    SameOpNoOp,
    /// One op only (`same_op`).
    SameOp,
}

impl AccOps {
    /// Parses `same_op_no_op` or `same_op`.
    pub fn parse(value: &str) -> Result<AccOps> {
        match value.trim() {
            "same_op_no_op" => Ok(AccOps::SameOpNoOp),
            "same_op" => Ok(AccOps::SameOp),
            _ => Err(Error::InvalidInfo {
                key: "accumulate_ops".into(),
                value: value.into(),
                reason: "expected \"same_op_no_op\" or \"same_op\"".into(),
            }),
        }
    }

    /// The info value.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccOps::SameOpNoOp => "same_op_no_op",
            AccOps::SameOp => "same_op",
        }
    }
}

/// The window info keys rma knows, parsed and validated.
///
/// | key | values | default |
/// |---|---|---|
/// | `accumulate_ordering` | `none` or a subset of `rar,raw,war,waw` | `rar,raw,war,waw` |
/// | `accumulate_ops` | `same_op_no_op`, `same_op` | `same_op_no_op` |
/// | `mpi_accumulate_granularity` | bytes, a non-negative integer (0: no hint) | `0` |
/// | `no_locks` | `true`, `false` | `false` |
/// | `same_size` | `true`, `false` | `false` |
/// | `same_disp_unit` | `true`, `false` | `false` |
/// | `alloc_shared_noncontig` | `true`, `false` | `false` |
/// | `rma_dynamic_bytes` | bytes, 1 to 2^31 (rma's own key): what each rank's attached regions of a dynamic window may hold at once | 1048576 |
/// | `rma_transport` | a transport name (rma's own key): used, or the window's creation fails with RMA_FLAVOR | unset: the environment's choice, else the launch mode's default |
/// | `rma_check` | `off`, `conflicts`, `conflicts_log` (rma's own key): the conflict checker, see [`CheckMode`] | unset: the `RMA_CHECK` environment variable, else `off` |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WinInfo {
    /// `accumulate_ordering`.
    pub accumulate_ordering: AccOrdering,
    /// `accumulate_ops`.
    pub accumulate_ops: AccOps,
    /// `mpi_accumulate_granularity`: the size in bytes of the units a transport may
    /// apply atomically as a whole (0: no hint). rma accepts it and reports it back;
    /// element-wise atomicity holds regardless.
    pub accumulate_granularity: usize,
    /// `no_locks`: the user promises never to lock this window.
    pub no_locks: bool,
    /// `same_size`: every rank gives the same window size.
    pub same_size: bool,
    /// `same_disp_unit`: every rank gives the same disp_unit.
    pub same_disp_unit: bool,
    /// `alloc_shared_noncontig`: ranks' memory need not be contiguous.
    pub alloc_shared_noncontig: bool,
    /// `rma_dynamic_bytes` (rma's own key): the bytes each rank's regions of a dynamic
    /// window may hold at once.
    pub dynamic_bytes: usize,
    /// `rma_transport`: the transport this window must use, if named (rma-win refuses
    /// a creation whose named transport cannot serve the window, with RMA_FLAVOR).
    pub transport: Option<String>,
    /// `rma_check`: the conflict checker's mode, if the key was given.
    pub check: Option<CheckMode>,
}

/// What rma does about conflicting accesses (MPI calls them erroneous): the
/// `rma_check` info key and the `RMA_CHECK` environment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckMode {
    /// No checking (the default): nothing is recorded.
    Off,
    /// Record every access; a conflict found at a synchronization makes it fail with
    /// class RMA_CONFLICT.
    Conflicts,
    /// As `Conflicts`, but a conflict is logged (tracing, level warn) and the
    /// synchronization succeeds.
    ConflictsLog,
}

impl CheckMode {
    /// The environment variable that sets the mode of every window whose info does not.
    pub const ENV: &'static str = "RMA_CHECK";

    /// Parses `off`, `conflicts` or `conflicts_log` (also `conflicts-log`); `key` names
    /// where the value came from, for the error (class INFO).
    pub fn parse(key: &str, value: &str) -> Result<CheckMode> {
        match value.trim() {
            "off" | "" => Ok(CheckMode::Off),
            "conflicts" => Ok(CheckMode::Conflicts),
            "conflicts_log" | "conflicts-log" => Ok(CheckMode::ConflictsLog),
            _ => Err(Error::InvalidInfo {
                key: key.into(),
                value: value.into(),
                reason: "expected off, conflicts or conflicts_log".into(),
            }),
        }
    }

    /// The value's name, as `get_info` reports it.
    pub const fn as_str(self) -> &'static str {
        match self {
            CheckMode::Off => "off",
            CheckMode::Conflicts => "conflicts",
            CheckMode::ConflictsLog => "conflicts_log",
        }
    }
}

impl Default for WinInfo {
    fn default() -> WinInfo {
        WinInfo {
            accumulate_ordering: AccOrdering::STRICT,
            accumulate_ops: AccOps::SameOpNoOp,
            accumulate_granularity: 0,
            no_locks: false,
            same_size: false,
            same_disp_unit: false,
            alloc_shared_noncontig: false,
            dynamic_bytes: crate::DYNAMIC_BYTES,
            transport: None,
            check: None,
        }
    }
}

impl WinInfo {
    /// The info key naming a window's transport.
    pub const TRANSPORT_KEY: &'static str = "rma_transport";
    /// The info key sizing each rank's part of a dynamic window.
    pub const DYNAMIC_KEY: &'static str = "rma_dynamic_bytes";
    /// The info key of the conflict checker ([`CheckMode`]).
    pub const CHECK_KEY: &'static str = "rma_check";

    /// Parses the keys rma knows; other keys are ignored. A bad value of a known key is
    /// an error of class INFO.
    pub fn from_info(info: &Info) -> Result<WinInfo> {
        let mut out = WinInfo::default();
        for (key, value) in info.iter() {
            match key {
                "accumulate_ordering" => out.accumulate_ordering = AccOrdering::parse(value)?,
                "accumulate_ops" => out.accumulate_ops = AccOps::parse(value)?,
                "mpi_accumulate_granularity" => {
                    out.accumulate_granularity =
                        value.trim().parse().map_err(|_| Error::InvalidInfo {
                            key: key.into(),
                            value: value.into(),
                            reason: "expected a non-negative integer number of bytes".into(),
                        })?
                }
                "no_locks" => out.no_locks = parse_bool(key, value)?,
                "same_size" => out.same_size = parse_bool(key, value)?,
                "same_disp_unit" => out.same_disp_unit = parse_bool(key, value)?,
                "alloc_shared_noncontig" => out.alloc_shared_noncontig = parse_bool(key, value)?,
                Self::DYNAMIC_KEY => {
                    out.dynamic_bytes = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|&b: &usize| (1..=1 << 31).contains(&b))
                        .ok_or_else(|| Error::InvalidInfo {
                            key: key.into(),
                            value: value.into(),
                            reason: "expected a number of bytes from 1 to 2^31".into(),
                        })?
                }
                Self::CHECK_KEY => out.check = Some(CheckMode::parse(key, value)?),
                Self::TRANSPORT_KEY => {
                    let name = value.trim();
                    if name.is_empty() {
                        return Err(Error::InvalidInfo {
                            key: key.into(),
                            value: value.into(),
                            reason: "an empty name names no transport; give one, or remove the key for the default".into(),
                        });
                    }
                    out.transport = Some(name.to_owned())
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The effective values of every key, as `get_info` reports them.
    pub fn to_info(&self) -> Info {
        let b = |v: bool| if v { "true" } else { "false" };
        let mut info = Info::new()
            .with("accumulate_ordering", &self.accumulate_ordering.to_string())
            .with("accumulate_ops", self.accumulate_ops.as_str())
            .with(
                "mpi_accumulate_granularity",
                &self.accumulate_granularity.to_string(),
            )
            .with("no_locks", b(self.no_locks))
            .with("same_size", b(self.same_size))
            .with("same_disp_unit", b(self.same_disp_unit))
            .with("alloc_shared_noncontig", b(self.alloc_shared_noncontig))
            .with(Self::DYNAMIC_KEY, &self.dynamic_bytes.to_string());
        if let Some(t) = &self.transport {
            info.set(Self::TRANSPORT_KEY, t);
        }
        if let Some(c) = self.check {
            info.set(Self::CHECK_KEY, c.as_str());
        }
        info
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::InvalidInfo {
            key: key.into(),
            value: value.into(),
            reason: "expected \"true\" or \"false\"".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn ordering_default_is_strict_and_round_trips() {
        let w = WinInfo::from_info(&Info::new()).unwrap();
        assert_eq!(w.accumulate_ordering, AccOrdering::STRICT);
        assert_eq!(
            w.to_info().get("accumulate_ordering"),
            Some("rar,raw,war,waw")
        );
        assert_eq!(w.to_info().get("accumulate_ops"), Some("same_op_no_op"));
    }

    #[test]
    fn ordering_subsets_in_any_order() {
        let o = AccOrdering::parse("waw, rar").unwrap();
        assert!(o.contains(AccOrdering::RAR) && o.contains(AccOrdering::WAW));
        assert!(!o.contains(AccOrdering::RAW));
        assert_eq!(o.to_string(), "rar,waw");
        assert_eq!(AccOrdering::parse("none").unwrap(), AccOrdering::NONE);
        assert_eq!(
            AccOrdering::parse("war,raw,waw,rar,rar").unwrap(),
            AccOrdering::STRICT
        );
        // every subset parses back from its canonical form
        for bits in 0..16u8 {
            let o = AccOrdering(bits);
            assert_eq!(AccOrdering::parse(&o.to_string()).unwrap(), o);
        }
    }

    #[test]
    fn ordering_rejects_unknown_tokens() {
        for bad in ["", "rar,", "rwa", "none,rar", "RAR", "rar;waw"] {
            let e = AccOrdering::parse(bad).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Info, "{bad:?}");
        }
    }

    #[test]
    fn known_keys_validate_and_read_back() {
        let info = Info::new()
            .with("accumulate_ordering", "none")
            .with("accumulate_ops", "same_op")
            .with("mpi_accumulate_granularity", "64")
            .with("no_locks", "true")
            .with("some_vendor_key", "whatever");
        let w = WinInfo::from_info(&info).unwrap();
        let back = w.to_info();
        assert_eq!(back.get("accumulate_ordering"), Some("none"));
        assert_eq!(back.get("accumulate_ops"), Some("same_op"));
        assert_eq!(back.get("mpi_accumulate_granularity"), Some("64"));
        assert_eq!(back.get("no_locks"), Some("true"));
        assert_eq!(back.get("some_vendor_key"), None);
        for (k, v) in [
            ("accumulate_ops", "any"),
            ("mpi_accumulate_granularity", "-1"),
            ("no_locks", "yes"),
            ("rma_transport", " "),
        ] {
            let e = WinInfo::from_info(&Info::new().with(k, v)).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Info, "{k}={v}");
        }
    }
}
