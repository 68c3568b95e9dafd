//! The contract between `rma-win` (which validates) and a transport (which moves and
//! combines bytes).

use crate::{BasicType, Op, Rank, Result};

/// One contiguous piece of a layout: `len` bytes starting `offset` bytes from the
/// access's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Byte offset from the base (negative for a datatype with a negative lower bound).
    pub offset: isize,
    /// Length in bytes.
    pub len: usize,
}

/// A layout of `count` runs of `len` bytes, the first `offset` bytes from the base and
/// each `stride` bytes after the previous (what a vector datatype resolves to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    /// Byte offset of the first run from the base.
    pub offset: isize,
    /// Number of runs.
    pub count: usize,
    /// Bytes per run.
    pub len: usize,
    /// Bytes from one run's start to the next one's.
    pub stride: isize,
}

/// A memory layout resolved to byte runs, in type-map order.
///
/// `rma-datatype`'s flattened type maps implement this; a transport walks the runs
/// without knowing how they were built. Runs of a valid target layout never overlap.
pub trait Layout: Sync {
    /// Total bytes described (the sum of the run lengths).
    fn size(&self) -> usize;

    /// Calls `f` once per run, in type-map order. Adjacent runs may have been merged,
    /// so a run may span several elements, never part of one.
    fn for_each_run(&self, f: &mut dyn FnMut(Run));

    /// `Some(len)` if the layout is one run of `len` bytes at offset 0.
    fn as_contiguous(&self) -> Option<usize>;

    /// `Some` if the layout is regularly strided (the same runs as
    /// [`Layout::for_each_run`] yields, possibly unmerged), so that a transport can walk
    /// it without a callback per run. The default says nothing.
    fn as_strided(&self) -> Option<Strided> {
        None
    }
}

/// A layout of one run of `.0` bytes at offset 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contiguous(pub usize);

impl Layout for Contiguous {
    fn size(&self) -> usize {
        self.0
    }

    fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
        if self.0 > 0 {
            f(Run {
                offset: 0,
                len: self.0,
            })
        }
    }

    fn as_contiguous(&self) -> Option<usize> {
        Some(self.0)
    }
}

/// The bits of an element of at most 8 bytes stored as `bytes` (native byte order),
/// zero-extended: the form the `*_bits` calls of [`Transport`] pass elements in.
#[inline]
pub fn bits_from_bytes(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = bytes.len().min(8);
    if cfg!(target_endian = "little") {
        w[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(w)
    } else {
        w[8 - n..].copy_from_slice(&bytes[..n]);
        u64::from_be_bytes(w)
    }
}

/// The inverse of [`bits_from_bytes`]: stores the low `out.len()` (at most 8) bytes'
/// worth of `bits` into `out` in native byte order.
#[inline]
pub fn bytes_from_bits(bits: u64, out: &mut [u8]) {
    let n = out.len().min(8);
    if cfg!(target_endian = "little") {
        out[..n].copy_from_slice(&bits.to_le_bytes()[..n]);
    } else {
        out[..n].copy_from_slice(&bits.to_be_bytes()[8 - n..]);
    }
}

/// Where a call lands: a target rank, a byte offset in its window, and the layout of
/// the target elements relative to that offset.
#[derive(Clone, Copy)]
pub struct Access<'a> {
    /// The target rank: never [`Rank::NULL`], always inside the window's group.
    pub target: Rank,
    /// Byte offset of the target displacement in the target's window.
    pub base: usize,
    /// The target layout; every run lies inside the target window and, for the
    /// accumulate family, is aligned for the call's basic type.
    pub layout: &'a dyn Layout,
    /// The origin holds an exclusive lock on the target: no other origin may access
    /// the target's window meanwhile, so a transport may apply accumulates without
    /// element-wise atomicity (plain vectorised kernels).
    pub exclusive: bool,
}

impl std::fmt::Debug for Access<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("target", &self.target)
            .field("base", &self.base)
            .field("bytes", &self.layout.size())
            .field("exclusive", &self.exclusive)
            .finish()
    }
}

/// A transport: how one window's RMA calls reach target memory.
///
/// An implementation is per window (it holds whatever the window needs to reach each
/// target). `rma-win` checks everything a user can get wrong *before* calling it, so a
/// transport may assume:
///
/// - `target` is a rank of the window's group, never [`Rank::NULL`];
/// - every run of `at.layout`, shifted by `at.base`, lies inside the target's window;
/// - for the accumulate family, the layout holds whole elements of `basic`, each
///   aligned for it, the op is valid for `basic` and the call, and the target layout
///   does not overlap itself;
/// - `data` and `out` are packed in type-map order and exactly `at.layout.size()` bytes
///   long (`data` is empty for NO_OP);
/// - the caller is inside an access epoch that permits the call.
///
/// A transport returns an error only for what the caller cannot foresee: a peer that
/// died or did not answer in time, a resource that ran out, a corrupt shared structure.
///
/// # Memory-ordering contract
///
/// 1. **Atomicity.** accumulate, get_accumulate, fetch_and_op and compare_and_swap are
///    atomic per element with respect to every other accumulate-family call on the same
///    window and basic type, from any origin, the target itself included. The mechanism
///    (native atomic, CAS loop, lock stripe, or the target's progress engine) depends on
///    the basic type only, never on the op, so SUM, REPLACE and NO_OP stay mutually
///    atomic. put and get have no element atomicity in MPI's sense.
/// 2. **Ordering.** Under the default `accumulate_ordering` (strict), accumulate-family
///    calls from one origin to one target take effect in program order, whatever their
///    ops. Under a weaker ordering the transport may reorder only what the ordering
///    allows.
/// 3. **Results.** When get, get_accumulate, fetch_and_op or compare_and_swap returns,
///    `out` holds the fetched values.
/// 4. **Completion.** The effects of every call to `target` issued before
///    `flush(target)` (or `flush_all`) happen-before that flush returns: a thread that
///    later synchronizes with the origin (a fence, barrier, unlock or any release/acquire
///    pair) observes them.
/// 5. **Local reuse.** When a call returns, the transport no longer reads `data`.
/// 6. **No data races, whatever the program does.** Other ranks may touch window memory
///    at any moment, also in ways MPI calls erroneous (conflicting accesses). With ranks
///    as threads Rust's memory model applies, so every access a transport for threads
///    makes to window memory must be atomic and of one size (rma-shm uses `rma_ops::shared`:
///    aligned 8-byte atomic words); a conflicting program then reads unspecified
///    values, never undefined behaviour. No Rust reference over window memory.
pub trait Transport: Send + Sync {
    /// The transport's name (`"atomic"`, `"queued"`).
    fn name(&self) -> &'static str;

    /// Copies `data` into the target layout.
    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()>;

    /// Copies the target layout into `out`.
    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()>;

    /// Combines `data` into the target layout with `op`, element-wise atomically.
    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()>;

    /// Fetches the target layout into `out` and combines `data` into it with `op`, each
    /// element in one atomic step.
    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()>;

    /// One element of `basic` at byte `offset` of the target's window: fetches it into
    /// `out` and combines `origin` into it with `op`, atomically.
    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()>;

    /// One element of `basic` at byte `offset`: fetches it into `out` and replaces it
    /// with `origin` if it equals `compare`, atomically.
    #[allow(clippy::too_many_arguments)]
    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()>;

    /// [`Transport::fetch_and_op`] on an element of at most 8 bytes passed and
    /// returned as its bits ([`bits_from_bytes`]): the typed calls' shortcut, for
    /// transports that can apply it without byte buffers. The default goes through
    /// `fetch_and_op`.
    fn fetch_and_op_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        let size = basic.size().min(8);
        let (mut o, mut out) = ([0u8; 8], [0u8; 8]);
        bytes_from_bits(origin, &mut o[..size]);
        let src = if op == Op::NoOp { &[][..] } else { &o[..size] };
        self.fetch_and_op(target, offset, basic, op, src, &mut out[..size])?;
        Ok(bits_from_bytes(&out[..size]))
    }

    /// [`Transport::compare_and_swap`] on an element of at most 8 bytes, as bits (see
    /// [`Transport::fetch_and_op_bits`]).
    fn compare_and_swap_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        let size = basic.size().min(8);
        let (mut o, mut c, mut out) = ([0u8; 8], [0u8; 8], [0u8; 8]);
        bytes_from_bits(origin, &mut o[..size]);
        bytes_from_bits(compare, &mut c[..size]);
        self.compare_and_swap(
            target,
            offset,
            basic,
            &o[..size],
            &c[..size],
            &mut out[..size],
        )?;
        Ok(bits_from_bytes(&out[..size]))
    }

    /// [`Transport::accumulate`] of one element of at most 8 bytes at byte `offset`, as
    /// bits (see [`Transport::fetch_and_op_bits`]); `exclusive` as in [`Access`].
    fn accumulate_bits(
        &self,
        target: Rank,
        offset: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        let size = basic.size().min(8);
        let mut o = [0u8; 8];
        bytes_from_bits(origin, &mut o[..size]);
        let at = Access {
            target,
            base: offset,
            layout: &Contiguous(size),
            exclusive,
        };
        self.accumulate(at, basic, op, &o[..size])
    }

    /// A put of `data` into `at`, then an atomic update of the `u64` at byte `signal`
    /// of the same target (`op` is REPLACE or SUM, `value` its operand), ordered so
    /// that a thread that reads the signal's new value and then issues an acquire
    /// fence (or any later synchronization) sees the put's bytes
    /// (OpenSHMEM's put-with-signal). `signal` is 8-byte aligned, inside the target's
    /// window and outside the put's bytes (rma-win checked). The call completes at the
    /// next flush, as a put does.
    ///
    /// The default completes the put before the signal is updated (put, flush,
    /// accumulate): correct on every transport, MPI's included, whose calls to
    /// different locations are unordered, and free of any round trip where a flush is
    /// only a fence (rma-shm's atomic transport). A transport that applies one origin's
    /// calls in order overrides it with no flush (the queued one).
    fn put_signal(
        &self,
        at: Access<'_>,
        data: &[u8],
        signal: usize,
        op: Op,
        value: u64,
    ) -> Result<()> {
        self.put(at, data)?;
        self.flush(at.target)?;
        self.accumulate_bits(at.target, signal, at.exclusive, BasicType::U64, op, value)
    }

    /// Completes every call issued to `target` at origin and target.
    fn flush(&self, target: Rank) -> Result<()>;

    /// Completes every call issued to any target.
    fn flush_all(&self) -> Result<()>;

    /// This transport's fast path to `target` ([`FastPath`]), where it keeps one;
    /// `None` (the default) sends every call through the methods above. rma-win asks
    /// once per target handle (once per epoch), never per call.
    fn fast_path(&self, target: Rank) -> Option<&dyn FastPath> {
        let _ = target;
        None
    }
}

/// One target of a window, resolved once by its backend: the calls of
/// [`Transport`] at a byte offset of that target's window, with nothing left to look
/// up per call (a target handle resolves one per epoch and sends every call on it
/// here). rma ships two, statically dispatched in rma-backends: the atomic
/// transport's mapped memory (`rma_ops::Direct`) and an MPI window's resolved target
/// (rma-mpi's `MpiTarget`); a backend from outside offers its own through
/// [`Transport::fast_path`].
///
/// The caller has checked everything [`Transport`]'s contract lists: the offset and
/// length lie in the target's window, an element of the accumulate family is aligned
/// for its atomics and of at most 8 bytes, the op suits the element type, and an
/// access epoch covers the target.
pub trait FastPath: Send + Sync + std::fmt::Debug {
    /// put of `data` at byte `off`.
    fn put(&self, off: usize, data: &[u8]) -> Result<()>;
    /// get into `out` from byte `off`, complete when it returns.
    fn get(&self, off: usize, out: &mut [u8]) -> Result<()>;
    /// accumulate of one element given as bits; `exclusive`: this origin holds an
    /// exclusive lock on the target.
    fn accumulate_bits(
        &self,
        off: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()>;
    /// fetch_and_op on one element, as bits: the old value.
    fn fetch_and_op_bits(&self, off: usize, basic: BasicType, op: Op, origin: u64) -> Result<u64>;
    /// compare_and_swap on one element, as bits: the old value.
    fn compare_and_swap_bits(
        &self,
        off: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64>;
    /// Completes every call to this target at origin and target.
    fn flush(&self) -> Result<()>;
    /// Whether every call completes at origin and target before it returns (a flush
    /// then owes only order): callers may then apply many single-element calls one by
    /// one instead of batching them.
    fn completes_in_place(&self) -> bool {
        false
    }
}

/// Implements [`Transport`] for `$ty` by forwarding every method, the defaulted ones
/// included (a transport may specialise those) but [`Transport::fast_path`] (a
/// dispatch that makes its transport per call cannot lend a reference out of it;
/// the enum keeps the default, `None`), through `$dispatch`: a macro called as
/// `$dispatch!(self, t => t.method(args))` that binds `t` to the transport that serves
/// `self` and evaluates the call — a `match` over an enum of transports, typically, so
/// that the data path stays statically dispatched. `[$($gen)*]` are the impl's
/// generic parameters.
///
/// ```
/// use rma_core::{Access, Result, Transport};
/// # #[derive(Debug)] struct A; #[derive(Debug)] struct B;
/// # macro_rules! stub { ($t:ty) => { impl Transport for $t {
/// #   fn name(&self) -> &'static str { stringify!($t) }
/// #   fn put(&self, _: Access<'_>, _: &[u8]) -> Result<()> { Ok(()) }
/// #   fn get(&self, _: Access<'_>, _: &mut [u8]) -> Result<()> { Ok(()) }
/// #   fn accumulate(&self, _: Access<'_>, _: rma_core::BasicType, _: rma_core::Op, _: &[u8]) -> Result<()> { Ok(()) }
/// #   fn get_accumulate(&self, _: Access<'_>, _: rma_core::BasicType, _: rma_core::Op, _: &[u8], _: &mut [u8]) -> Result<()> { Ok(()) }
/// #   fn fetch_and_op(&self, _: rma_core::Rank, _: usize, _: rma_core::BasicType, _: rma_core::Op, _: &[u8], _: &mut [u8]) -> Result<()> { Ok(()) }
/// #   fn compare_and_swap(&self, _: rma_core::Rank, _: usize, _: rma_core::BasicType, _: &[u8], _: &[u8], _: &mut [u8]) -> Result<()> { Ok(()) }
/// #   fn flush(&self, _: rma_core::Rank) -> Result<()> { Ok(()) }
/// #   fn flush_all(&self) -> Result<()> { Ok(()) }
/// # } } } stub!(A); stub!(B);
/// #[derive(Debug)]
/// enum Either { A(A), B(B) }
/// macro_rules! either {
///     ($self:expr, $t:ident => $call:expr) => {
///         match $self { Either::A($t) => $call, Either::B($t) => $call }
///     };
/// }
/// rma_core::forward_transport!([] Either, either);
/// assert_eq!(Either::B(B).name(), "B");
/// ```
#[macro_export]
macro_rules! forward_transport {
    ([$($gen:tt)*] $ty:ty, $dispatch:ident) => {
        impl<$($gen)*> $crate::Transport for $ty {
            fn name(&self) -> &'static str {
                $dispatch!(self, t => t.name())
            }
            #[inline]
            fn put(&self, at: $crate::Access<'_>, data: &[u8]) -> $crate::Result<()> {
                $dispatch!(self, t => t.put(at, data))
            }
            #[inline]
            fn get(&self, at: $crate::Access<'_>, out: &mut [u8]) -> $crate::Result<()> {
                $dispatch!(self, t => t.get(at, out))
            }
            #[inline]
            fn accumulate(
                &self,
                at: $crate::Access<'_>,
                basic: $crate::BasicType,
                op: $crate::Op,
                data: &[u8],
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.accumulate(at, basic, op, data))
            }
            #[inline]
            fn get_accumulate(
                &self,
                at: $crate::Access<'_>,
                basic: $crate::BasicType,
                op: $crate::Op,
                data: &[u8],
                out: &mut [u8],
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.get_accumulate(at, basic, op, data, out))
            }
            #[inline]
            fn fetch_and_op(
                &self,
                target: $crate::Rank,
                offset: usize,
                basic: $crate::BasicType,
                op: $crate::Op,
                origin: &[u8],
                out: &mut [u8],
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.fetch_and_op(target, offset, basic, op, origin, out))
            }
            #[inline]
            fn compare_and_swap(
                &self,
                target: $crate::Rank,
                offset: usize,
                basic: $crate::BasicType,
                origin: &[u8],
                compare: &[u8],
                out: &mut [u8],
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.compare_and_swap(target, offset, basic, origin, compare, out))
            }
            #[inline]
            fn fetch_and_op_bits(
                &self,
                target: $crate::Rank,
                offset: usize,
                basic: $crate::BasicType,
                op: $crate::Op,
                origin: u64,
            ) -> $crate::Result<u64> {
                $dispatch!(self, t => t.fetch_and_op_bits(target, offset, basic, op, origin))
            }
            #[inline]
            fn compare_and_swap_bits(
                &self,
                target: $crate::Rank,
                offset: usize,
                basic: $crate::BasicType,
                origin: u64,
                compare: u64,
            ) -> $crate::Result<u64> {
                $dispatch!(self, t => t.compare_and_swap_bits(target, offset, basic, origin, compare))
            }
            #[inline]
            fn accumulate_bits(
                &self,
                target: $crate::Rank,
                offset: usize,
                exclusive: bool,
                basic: $crate::BasicType,
                op: $crate::Op,
                origin: u64,
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.accumulate_bits(target, offset, exclusive, basic, op, origin))
            }
            #[inline]
            fn put_signal(
                &self,
                at: $crate::Access<'_>,
                data: &[u8],
                signal: usize,
                op: $crate::Op,
                value: u64,
            ) -> $crate::Result<()> {
                $dispatch!(self, t => t.put_signal(at, data, signal, op, value))
            }
            #[inline]
            fn flush(&self, target: $crate::Rank) -> $crate::Result<()> {
                $dispatch!(self, t => t.flush(target))
            }
            #[inline]
            fn flush_all(&self) -> $crate::Result<()> {
                $dispatch!(self, t => t.flush_all())
            }
        }
    };
}
