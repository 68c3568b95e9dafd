//! The backends rma ships, behind one enum, and the choice between them.
//!
//! `rma-win` programs against the backend contract of `rma-core` ([`Backend`],
//! [`Services`], [`Memory`], [`Epochs`], [`rma_core::Transport`]) and holds an [`AnyWorld`] and
//! its [`AnyWindow`]s, which implement it by delegating to one of:
//!
//! - **rma's shared memory** (rma-shm): ranks as threads or as processes started by
//!   `rmarun`, with the `atomic` and `queued` transports;
//! - **a system MPI library** (rma-mpi, the `mpi` feature): ranks started by an MPI
//!   launcher, with the `mpi` transport;
//! - **any other backend** ([`DynBackend`], boxed): one plugged in from outside, such
//!   as the recording backend rma's conformance suite runs on. It costs a virtual call
//!   per RMA call; the built-in arms are matched and inlined.
//!
//! Adding a backend means implementing the traits; nothing in `rma-win` changes.
//! Building one into this enum (a static arm) is the way to make it as fast as the
//! shipped ones.

// unsafe only where a constructor forwards its caller's promise (create_mapped,
// create_in_place)
#![deny(unsafe_code)]

mod choice;

pub use choice::{chosen_transport, known_transport, ENV_TRANSPORT, MPI_TRANSPORT, TRANSPORTS};
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub use rma_mpi::CCalls;
/// What rma's shared memory offers a C interface beside windows: the job's abort
/// handle, named shared segments (MPI_Alloc_mem blocks), the liveness interval.
pub use rma_shm::{liveness_interval, segment::Segment, AbortHandle, ENV_LIVENESS_MS};

use rma_core::{
    Backend, BackendWindow, DynBackend, Epochs, FastPath, Flavor, Info, LaunchMode, Memory, Result,
    Services, Shape, WinInfo,
};
use rma_mpi::EpochWindow;
use rma_shm::ShmWindow;
use std::sync::atomic::AtomicU32;

/// Where a node world of an MPI world lives ([`AnyWorld::split_shared`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NodeBackend {
    /// On rma's shared memory: the `atomic` and `queued` transports.
    #[default]
    Rma,
    /// On the MPI library (MPI_Comm_split_type's communicator).
    Mpi,
}

/// Environment variable, a test hook: [`AnyWorld::split_shared`] treats each run of
/// this many consecutive ranks as one node, so that one machine can stand for several
/// (MPI's launchers reach other hosts only through ssh). Unset or empty: the real
/// nodes.
pub const ENV_NODE_RANKS: &str = "RMA_NODE_RANKS";

/// [`ENV_NODE_RANKS`]' value; class ARG for one that is not a positive number.
fn node_ranks() -> Result<Option<usize>> {
    match std::env::var(ENV_NODE_RANKS) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(rma_core::Error::arg(format!(
                "{ENV_NODE_RANKS}={v:?}: expected a positive number of ranks per node"
            ))),
        },
        Err(_) => Ok(None),
    }
}

/// A world of any backend.
#[derive(Debug)]
pub enum AnyWorld {
    /// rma's shared-memory world (threads, or processes started by `rmarun`).
    Shm(rma_shm::ShmWorld),
    /// `MPI_COMM_WORLD` of a system MPI library (processes started by an MPI launcher).
    Mpi(rma_mpi::MpiWorld),
    /// A backend from outside rma's own crates.
    Dyn(Box<dyn DynBackend>),
}

/// A window of any backend (the counterpart of [`AnyWorld`]).
#[derive(Debug)]
pub enum AnyWindow<'w> {
    /// On rma's shared memory.
    Shm(ShmWindow<'w>),
    /// Over two MPI windows (boxed: it is large, and every call through it costs an MPI
    /// call anyway).
    Mpi(Box<EpochWindow<'w>>),
    /// Of a backend from outside rma's own crates.
    Dyn(Box<dyn BackendWindow + 'w>),
}

macro_rules! world {
    ($self:expr, $w:ident => $call:expr) => {
        match $self {
            AnyWorld::Shm($w) => $call,
            AnyWorld::Mpi($w) => $call,
            AnyWorld::Dyn(b) => {
                let $w: &dyn DynBackend = &**b;
                $call
            }
        }
    };
}

macro_rules! window {
    ($self:expr, $w:ident => $call:expr) => {
        match $self {
            AnyWindow::Shm($w) => $call,
            AnyWindow::Mpi(b) => {
                let $w: &EpochWindow<'_> = b;
                $call
            }
            AnyWindow::Dyn(b) => {
                let $w: &dyn BackendWindow = &**b;
                $call
            }
        }
    };
}

impl AnyWorld {
    /// Joins the world this process was started in: the one `rmarun` named in the
    /// environment, else `MPI_COMM_WORLD` when an MPI launcher started it (MPI is then
    /// initialized, and finalized when the world drops). `Ok(None)` when neither
    /// started it.
    ///
    /// Errors: under an MPI launcher, class RMA_FLAVOR if this build has no MPI
    /// support (the `mpi` feature) or the library's class if MPI fails to start.
    pub fn from_env() -> Result<Option<AnyWorld>> {
        if let Some(w) = rma_shm::ShmWorld::from_env()? {
            return Ok(Some(AnyWorld::Shm(w)));
        }
        // MPI_THREAD_SERIALIZED is enough: rma-win's World and Window are neither Send
        // nor Sync, so one thread makes the process's MPI calls, and the world is
        // confined to it (rma-mpi then takes no lock per call; its gate serializes
        // only a progress thread's calls with that thread's). Asking for MULTIPLE
        // would make the library lock around each call (MPICH 4.0: about 0.1-0.3 µs
        // per call on this machine kind, benches/results). RMA_MPI_THREAD asks for
        // another level (`single`: no locks in Open MPI, no progress thread).
        let level = rma_mpi::ThreadLevel::from_env(rma_mpi::ThreadLevel::Serialized)?;
        match rma_mpi::MpiWorld::from_env_thread(level)? {
            Some(mut w) => {
                w.confine()?;
                Ok(Some(AnyWorld::Mpi(w)))
            }
            None => Ok(None),
        }
    }

    /// Collectively splits the world (MPI_Comm_split): the ranks giving the same
    /// `color` form a new world, numbered by `key`, then by their rank here; `None`
    /// (MPI_UNDEFINED) joins none and gets `Ok(None)`. rma's shared memory makes each
    /// sub-world a control segment of its own; under MPI it is MPI_Comm_split's
    /// communicator. A backend plugged in from outside has no sub-worlds (class
    /// RMA_FLAVOR, on every rank, before anything collective).
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<AnyWorld>> {
        match self {
            AnyWorld::Shm(w) => Ok(w.split(color, key)?.map(AnyWorld::Shm)),
            AnyWorld::Mpi(w) => Ok(w.split(color, key)?.map(AnyWorld::Mpi)),
            AnyWorld::Dyn(_) => Err(rma_core::Error::Flavor {
                reason: "a backend plugged in with World::from_backend has no sub-worlds \
                         (split, dup, create); make the windows on its whole world"
                    .into(),
            }),
        }
    }

    /// The world of the ranks `members`, in that order, made by them alone
    /// (MPI_Comm_create_group): only the members call it, with the same members and
    /// `tag`. RMA_FLAVOR on a backend plugged in from outside, as for
    /// [`AnyWorld::split`].
    pub fn create_group(&self, members: &[usize], tag: u32) -> Result<AnyWorld> {
        match self {
            AnyWorld::Shm(w) => Ok(AnyWorld::Shm(w.create_group(members, tag)?)),
            AnyWorld::Mpi(w) => Ok(AnyWorld::Mpi(w.create_group(members, tag)?)),
            AnyWorld::Dyn(_) => Err(rma_core::Error::Flavor {
                reason: "a backend plugged in with World::from_backend has no sub-worlds \
                         (split, dup, create, create_group); make the windows on its whole world"
                    .into(),
            }),
        }
    }

    /// The ranks of this world that share memory, numbered by `key`, then by their
    /// rank here (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Collective.
    ///
    /// - rma's shared memory: every rank shares memory already (threads of one
    ///   process, or processes `rmarun` started on this node): a world of all of them.
    /// - an MPI world: MPI_Comm_split_type finds the ranks of each node; with
    ///   [`NodeBackend::Rma`] they then form a world on rma's shared memory (one control
    ///   segment per node, the MPI communicator used only to name it, then freed),
    ///   whose windows run on the `atomic` or `queued` transport; with
    ///   [`NodeBackend::Mpi`] the node world stays an MPI world (its windows are the
    ///   library's).
    /// - a plugged backend: class RMA_FLAVOR (no sub-worlds).
    ///
    /// [`ENV_NODE_RANKS`] (a test hook) overrides what counts as a node: each run of
    /// that many consecutive ranks of this world.
    pub fn split_shared(&self, key: i32, backend: NodeBackend) -> Result<AnyWorld> {
        let hook = node_ranks()?;
        let color = |rank: usize| hook.map(|n| (rank / n) as u32);
        let whole = || rma_core::Error::Internal {
            reason: "a split by node left this rank out".into(),
        };
        match self {
            AnyWorld::Shm(w) => {
                let node = w.split(Some(color(w.rank()).unwrap_or(0)), key)?;
                Ok(AnyWorld::Shm(node.ok_or_else(whole)?))
            }
            AnyWorld::Mpi(w) => {
                let node = match color(w.rank()) {
                    Some(c) => w.split(Some(c), key)?.ok_or_else(whole)?,
                    None => w.split_shared(key)?,
                };
                match backend {
                    NodeBackend::Mpi => Ok(AnyWorld::Mpi(node)),
                    NodeBackend::Rma => {
                        let shm = rma_shm::ShmWorld::over(node.rank(), node.size(), &|mine| {
                            node.allgather(mine)
                        });
                        // the MPI node world goes either way (a collective of its ranks)
                        node.finalize()?;
                        Ok(AnyWorld::Shm(shm?))
                    }
                }
            }
            AnyWorld::Dyn(_) => Err(rma_core::Error::Flavor {
                reason: "a backend plugged in with World::from_backend has no sub-worlds \
                         (split_shared); make the windows on its whole world"
                    .into(),
            }),
        }
    }

    /// A world over `comm`, a communicator of a program that initialized MPI itself
    /// (rma-mpi's [`MpiWorld::from_raw_comm`](rma_mpi::MpiWorld::from_raw_comm), whose
    /// contract and errors are this one's). Confined to its thread when made on MPI's
    /// main thread, as the worlds of [`AnyWorld::from_env`] are.
    ///
    /// # Safety
    /// As [`MpiWorld::from_raw_comm`](rma_mpi::MpiWorld::from_raw_comm).
    #[allow(unsafe_code)]
    pub unsafe fn from_raw_mpi_comm(comm: isize) -> Result<AnyWorld> {
        // SAFETY: the caller's promise, forwarded.
        let mut w = unsafe { rma_mpi::MpiWorld::from_raw_comm(comm)? };
        // made on another thread (possible at MULTIPLE only) it stays unconfined: its
        // calls take the world's lock
        let _ = w.confine();
        Ok(AnyWorld::Mpi(w))
    }

    /// rma's shared-memory world of this process alone (MPI's singleton start: a
    /// program run without a launcher).
    pub fn singleton() -> Result<AnyWorld> {
        Ok(AnyWorld::Shm(rma_shm::ShmWorld::singleton()?))
    }

    /// A world of a backend from outside rma's own crates.
    pub fn plugged(backend: impl DynBackend + 'static) -> AnyWorld {
        AnyWorld::Dyn(Box::new(backend))
    }

    /// Whether any thread of the process may use this world (rma's shared memory),
    /// rather than only the one that made it (a system MPI world, confined to its
    /// thread; a backend from outside, which promises nothing).
    pub fn any_thread(&self) -> bool {
        matches!(self, AnyWorld::Shm(_))
    }

    /// What ends the whole job from any thread, without this world's lock
    /// (MPI_Abort), where the backend offers it: rma's shared memory.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        match self {
            AnyWorld::Shm(w) => Some(w.abort_handle()),
            _ => None,
        }
    }

    /// The name rma's shared memory gives this world's segments, after which a
    /// program's shared blocks ([`Segment`]) are named so that peers can map them;
    /// `None` for other backends.
    pub fn segment_name(&self) -> Option<&str> {
        match self {
            AnyWorld::Shm(w) => Some(w.name()),
            _ => None,
        }
    }

    /// The most bytes one rank may contribute to one [`Services::allgather`]: rma's
    /// shared memory passes them through its control segment (GATHER_BYTES), MPI
    /// through MPI_Allgatherv, whose total over the ranks is an `int` (bounded here
    /// at 64 MiB a round, and at `i32::MAX` over all ranks); a plugged backend
    /// promises nothing, so it gets shared memory's bound.
    pub fn gather_limit(&self) -> usize {
        match self {
            AnyWorld::Mpi(w) => (64 << 20).min(i32::MAX as usize / w.size().max(1)),
            _ => rma_shm::GATHER_BYTES,
        }
    }

    /// Whether this is one of rma's own backends (not one plugged in from outside).
    pub fn builtin(&self) -> bool {
        !matches!(self, AnyWorld::Dyn(_))
    }

    /// The shared-memory world, if this is one.
    pub fn shm(&self) -> Option<&rma_shm::ShmWorld> {
        match self {
            AnyWorld::Shm(w) => Some(w),
            _ => None,
        }
    }

    /// The MPI world, if this is one.
    pub fn mpi(&self) -> Option<&rma_mpi::MpiWorld> {
        match self {
            AnyWorld::Mpi(w) => Some(w),
            _ => None,
        }
    }

    /// rma-win's parsed info with the transport this world's built-in backends use
    /// for a window of `flavor` ([`chosen_transport`]); a plugged-in backend chooses
    /// its own.
    fn choose(&self, parsed: &WinInfo, flavor: Flavor) -> Result<WinInfo> {
        let mut parsed = parsed.clone();
        if self.builtin() {
            parsed.transport = Some(chosen_transport(&parsed, self.mode(), flavor)?);
        }
        Ok(parsed)
    }
}

impl From<rma_shm::ShmWorld> for AnyWorld {
    fn from(w: rma_shm::ShmWorld) -> AnyWorld {
        AnyWorld::Shm(w)
    }
}

impl From<rma_mpi::MpiWorld> for AnyWorld {
    fn from(w: rma_mpi::MpiWorld) -> AnyWorld {
        AnyWorld::Mpi(w)
    }
}

impl Services for AnyWorld {
    fn rank(&self) -> usize {
        world!(self, w => w.rank())
    }
    fn size(&self) -> usize {
        world!(self, w => w.size())
    }
    fn mode(&self) -> LaunchMode {
        world!(self, w => Services::mode(w))
    }
    fn barrier(&self) -> Result<()> {
        world!(self, w => w.barrier())
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        world!(self, w => w.allgather(mine))
    }
    fn check_peers(&self) -> Result<()> {
        world!(self, w => Services::check_peers(w))
    }
    #[inline]
    fn failure_word(&self) -> &AtomicU32 {
        world!(self, w => w.failure_word())
    }
    fn check_failed(&self) -> Result<()> {
        world!(self, w => w.check_failed())
    }
}

impl Backend for AnyWorld {
    type Window<'w> = AnyWindow<'w>;

    /// The transport is chosen first ([`chosen_transport`]: honoured, refused or
    /// fallen back from), before anything collective.
    fn allocate(
        &self,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'_>> {
        let parsed = &self.choose(parsed, Flavor::Allocate)?;
        Ok(match self {
            AnyWorld::Shm(w) => AnyWindow::Shm(w.allocate(len, disp_unit, info, parsed)?),
            AnyWorld::Mpi(w) => AnyWindow::Mpi(Box::new(w.allocate(len, disp_unit, info, parsed)?)),
            AnyWorld::Dyn(w) => AnyWindow::Dyn(w.allocate_dyn(len, disp_unit, info, parsed)?),
        })
    }

    fn allocate_shared(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'_>> {
        let parsed = &self.choose(parsed, Flavor::Shared)?;
        Ok(match self {
            AnyWorld::Shm(w) => {
                AnyWindow::Shm(w.allocate_shared(len, disp_unit, contiguous, info, parsed)?)
            }
            AnyWorld::Mpi(w) => AnyWindow::Mpi(Box::new(
                w.allocate_shared(len, disp_unit, contiguous, info, parsed)?,
            )),
            AnyWorld::Dyn(w) => {
                AnyWindow::Dyn(w.allocate_shared_dyn(len, disp_unit, contiguous, info, parsed)?)
            }
        })
    }

    fn create_dynamic(
        &self,
        capacity: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'_>> {
        let parsed = &self.choose(parsed, Flavor::Dynamic)?;
        Ok(match self {
            AnyWorld::Shm(w) => AnyWindow::Shm(w.create_dynamic(capacity, info, parsed)?),
            AnyWorld::Mpi(w) => AnyWindow::Mpi(Box::new(w.create_dynamic(capacity, info, parsed)?)),
            AnyWorld::Dyn(w) => AnyWindow::Dyn(w.create_dynamic_dyn(capacity, info, parsed)?),
        })
    }

    /// rma's shared memory maps what it is given (the transport chosen as for a
    /// shared window); a system MPI and backends from outside refuse (RMA_FLAVOR).
    #[allow(unsafe_code)] // forwards the caller's promise
    unsafe fn create_mapped(
        &self,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'_>> {
        match self {
            AnyWorld::Shm(w) => {
                let parsed = &self.choose(parsed, Flavor::Shared)?;
                // SAFETY: forwarded from this function's contract.
                Ok(AnyWindow::Shm(unsafe {
                    w.create_mapped(len, disp_unit, peers, info, parsed)?
                }))
            }
            _ => Err(rma_core::Error::Flavor {
                reason: "only rma's shared-memory worlds can expose memory another window \
                         already shares"
                    .into(),
            }),
        }
    }

    /// rma's shared memory updates the memory in place (the transport chosen as for a
    /// created window); a system MPI and backends from outside refuse (RMA_FLAVOR).
    #[allow(unsafe_code)] // forwards the caller's promise
    unsafe fn create_in_place(
        &self,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'_>> {
        match self {
            AnyWorld::Shm(w) => {
                let parsed = &self.choose(parsed, Flavor::Create)?;
                // SAFETY: forwarded from this function's contract.
                Ok(AnyWindow::Shm(unsafe {
                    rma_core::Backend::create_in_place(w, ptr, len, disp_unit, info, parsed)?
                }))
            }
            _ => Err(rma_core::Error::Flavor {
                reason: "only rma's shared-memory worlds can expose memory in place".into(),
            }),
        }
    }

    fn create<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<AnyWindow<'w>> {
        let parsed = &self.choose(parsed, Flavor::Create)?;
        Ok(match self {
            AnyWorld::Shm(w) => AnyWindow::Shm(w.create(buf, disp_unit, info, parsed)?),
            AnyWorld::Mpi(w) => AnyWindow::Mpi(Box::new(w.create(buf, disp_unit, info, parsed)?)),
            AnyWorld::Dyn(w) => AnyWindow::Dyn(w.create_dyn(buf, disp_unit, info, parsed)?),
        })
    }
}

/// What a target handle keeps of its target: the fast path its backend offers for
/// calls the handle has already checked ([`AnyWindow::fast`]).
#[derive(Debug, Clone, Copy)]
pub enum Fast<'a> {
    /// The target's mapped memory and atomicity domain (rma-shm's atomic transport):
    /// calls apply in place with load, store and atomics, and complete before they
    /// return, so a flush owes only order (a fence).
    Direct(rma_ops::Direct<'a>),
    /// The target of an MPI window resolved once (rma-mpi): calls go to MPI with no
    /// placement or derived datatype where their bytes start at a whole displacement.
    Mpi(rma_mpi::MpiTarget<'a>),
}

/// Each call on the target at byte offset `off`, already checked by the caller
/// (in the window, aligned for atomics, inside an epoch that covers the target).
impl Fast<'_> {
    /// put of `data`.
    #[inline(always)]
    pub fn put(&self, off: usize, data: &[u8]) -> Result<()> {
        match self {
            Fast::Direct(d) => {
                d.put(off, data);
                Ok(())
            }
            Fast::Mpi(m) => m.put(off, data),
        }
    }

    /// get into `out`, complete when it returns.
    #[inline(always)]
    pub fn get(&self, off: usize, out: &mut [u8]) -> Result<()> {
        match self {
            Fast::Direct(d) => {
                d.get(off, out);
                Ok(())
            }
            Fast::Mpi(m) => m.get(off, out),
        }
    }

    /// accumulate of one element given as bits; `exclusive`: this origin holds an
    /// exclusive lock on the target.
    #[inline(always)]
    pub fn accumulate_bits(
        &self,
        off: usize,
        exclusive: bool,
        basic: rma_core::BasicType,
        op: rma_core::Op,
        origin: u64,
    ) -> Result<()> {
        match self {
            Fast::Direct(d) => d.accumulate_bits(off, exclusive, basic, op, origin),
            Fast::Mpi(m) => m.accumulate_bits(off, basic, op, origin),
        }
    }

    /// fetch_and_op on one element, as bits: the old value.
    #[inline(always)]
    pub fn fetch_and_op_bits(
        &self,
        off: usize,
        basic: rma_core::BasicType,
        op: rma_core::Op,
        origin: u64,
    ) -> Result<u64> {
        match self {
            Fast::Direct(d) => d.fetch_and_op_bits(off, basic, op, origin),
            Fast::Mpi(m) => m.fetch_and_op_bits(off, basic, op, origin),
        }
    }

    /// compare_and_swap on one element, as bits: the old value.
    #[inline(always)]
    pub fn compare_and_swap_bits(
        &self,
        off: usize,
        basic: rma_core::BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        match self {
            Fast::Direct(d) => d.compare_and_swap_bits(off, basic, origin, compare),
            Fast::Mpi(m) => m.compare_and_swap_bits(off, basic, origin, compare),
        }
    }

    /// put of `data` at `off`, then the `u64` signal at `signal` updated with `op`
    /// (REPLACE or SUM) and `value`, the data visible to whoever sees the signal
    /// ([`rma_core::Transport::put_signal`]): in place with a release fence between
    /// for [`Fast::Direct`]; put, flush, accumulate for MPI, whose calls to different
    /// locations are unordered.
    #[inline(always)]
    pub fn put_signal(
        &self,
        off: usize,
        data: &[u8],
        signal: usize,
        op: rma_core::Op,
        value: u64,
    ) -> Result<()> {
        self.put(off, data)?;
        self.flush()?;
        self.accumulate_bits(signal, false, rma_core::BasicType::U64, op, value)
    }

    /// flush of the target: for [`Fast::Direct`] only the order fence, since every
    /// call completed when it returned (the contract of [`AnyWindow::fast`]).
    #[inline(always)]
    pub fn flush(&self) -> Result<()> {
        match self {
            Fast::Direct(_) => {
                rma_ops::flush_fence();
                Ok(())
            }
            Fast::Mpi(m) => m.flush(),
        }
    }

    /// Whether every call completes at origin and target before it returns (as
    /// [`FastPath::completes_in_place`] says of a backend's own): true for rma's
    /// atomic transport.
    #[inline(always)]
    pub fn completes_in_place(&self) -> bool {
        match self {
            Fast::Direct(_) => true,
            Fast::Mpi(_) => false,
        }
    }
}

#[cfg(feature = "bench-hooks")]
impl<'a> Fast<'a> {
    /// The MPI calls a C program makes on this target, straight through the library
    /// ([`CCalls`], all unsafe), for benchmarks that compare rma's per-call cost with
    /// the library's own in one process; `None` but for an MPI window's target whose
    /// calls take no lock (rma-mpi's `MpiTarget::c_calls`). Not part of rma's API:
    /// only with the `bench-hooks` feature.
    pub fn c_calls(&self) -> Option<CCalls<'a>> {
        match self {
            Fast::Mpi(m) => m.c_calls(),
            _ => None,
        }
    }
}

impl<'w> AnyWindow<'w> {
    /// A window of a backend from outside rma's own crates (or a wrapper around one
    /// of rma's, such as rma-win's conflict checker).
    pub fn plugged(window: Box<dyn BackendWindow + 'w>) -> AnyWindow<'w> {
        AnyWindow::Dyn(window)
    }
}

impl AnyWindow<'_> {
    /// `target`'s fast path, where its backend offers one ([`Fast`]); rma-win's target
    /// handles resolve it once per epoch. `None` for the queued transport, a backend
    /// from outside rma (see [`AnyWindow::plugged_fast`]), or a rank outside the
    /// window; those calls go through the [`rma_core::Transport`] trait.
    ///
    /// Contract for callers: a [`Fast::Direct`] is returned only where every call of
    /// this window's transport completes at origin and target before it returns, so a
    /// flush of calls made through it or through the transport owes only order
    /// ([`rma_ops::flush_fence`]).
    #[inline]
    pub fn fast(&self, target: rma_core::Rank) -> Option<Fast<'_>> {
        match self {
            AnyWindow::Shm(w) => w.direct(target).map(Fast::Direct),
            AnyWindow::Mpi(w) => w.target(target).ok().map(Fast::Mpi),
            AnyWindow::Dyn(_) => None,
        }
    }

    /// The fast path to `target` that a backend from outside rma keeps
    /// ([`rma_core::Transport::fast_path`]); `None` for rma's own, whose fast paths
    /// [`AnyWindow::fast`] gives (kept apart from [`Fast`] so that the shipped arms'
    /// calls pay nothing for it).
    #[inline]
    pub fn plugged_fast(&self, target: rma_core::Rank) -> Option<&dyn FastPath> {
        match self {
            AnyWindow::Dyn(w) => w.fast_path(target),
            _ => None,
        }
    }
}

impl Memory for AnyWindow<'_> {
    fn shapes(&self) -> Vec<Shape> {
        window!(self, w => w.shapes())
    }
    fn flavor(&self) -> Flavor {
        window!(self, w => w.flavor())
    }
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        window!(self, w => w.read_local(offset, out))
    }
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        window!(self, w => w.write_local(offset, data))
    }
    fn sync(&self) -> Result<()> {
        window!(self, w => Memory::sync(w))
    }
    fn shared_segment(&self, rank: usize) -> Option<rma_core::RawSegment<'_>> {
        window!(self, w => w.shared_segment(rank))
    }
    fn attach(&self, data: &[u8]) -> Result<usize> {
        window!(self, w => w.attach(data))
    }
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        window!(self, w => w.detach(offset, out))
    }
    #[inline]
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        window!(self, w => w.attached(rank, start, end))
    }
}

impl Epochs for AnyWindow<'_> {
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        window!(self, w => w.acquire_lock(target, exclusive))
    }
    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        window!(self, w => w.release_lock(target, exclusive))
    }
    fn post_to(&self, origin: usize) -> Result<()> {
        window!(self, w => w.post_to(origin))
    }
    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        window!(self, w => w.wait_posted(target, want))
    }
    fn complete_to(&self, target: usize) -> Result<()> {
        window!(self, w => w.complete_to(target))
    }
    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        window!(self, w => w.wait_completed(origin, want))
    }
    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        window!(self, w => w.has_completed(origin, want))
    }
    fn check_peers(&self) -> Result<()> {
        window!(self, w => Epochs::check_peers(w))
    }
    #[inline]
    fn fence_barrier(&self) -> Option<Result<()>> {
        window!(self, w => w.fence_barrier())
    }
    fn free(&mut self) -> Result<()> {
        match self {
            AnyWindow::Shm(w) => w.free(),
            AnyWindow::Mpi(w) => w.free(),
            AnyWindow::Dyn(w) => w.free(),
        }
    }
    fn leaves_on_drop(&self) -> bool {
        window!(self, w => w.leaves_on_drop())
    }
    fn depart(&self) {
        window!(self, w => w.depart())
    }
}

rma_core::forward_transport!(['w] AnyWindow<'w>, window);

/// Installs rma's tracing output: `RUST_LOG` on stderr, and the `RMA_TRACE` timeline
/// file (created afresh unless a launcher started this process as a rank, which
/// appends to it). See `rma_shm::trace`.
pub fn init_tracing() {
    rma_shm::trace::init_with(launcher().is_none());
}

/// What started this process as a rank, if anything did: `"rmarun"` (its world is
/// named in the environment) or `"an MPI launcher"`. `None` when the program runs
/// plainly (it then starts its own ranks as threads).
pub fn launcher() -> Option<&'static str> {
    if std::env::var_os(rma_shm::ENV_WORLD).is_some() {
        Some("rmarun")
    } else if rma_mpi::MpiWorld::launched() {
        Some("an MPI launcher")
    } else {
        None
    }
}

/// Runs `f` on `n` ranks, each a thread of this process with its own world (rma's
/// shared memory), and returns their results in rank order. A rank that panics is
/// seen by the others as a dead peer; its panic is resumed once every thread has
/// ended.
pub fn run_threads<R, F>(n: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(AnyWorld) -> R + Sync,
{
    rma_shm::run_threads(n, |w| f(AnyWorld::Shm(w)))
}
