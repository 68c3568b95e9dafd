//! The runtime choice of transport: one enum, dispatched by hand in exactly one place.
//!
//! (`enum_dispatch` needs the trait and the enum in one crate; the `Transport` trait
//! lives in rma-core so that rma-shm can implement it without knowing rma-win, so the
//! dispatch here is a `match`, as crossbeam-channel does for its flavors.)

use crate::memory::MpiSide;
use crate::world::LaunchMode;
use rma_core::{Access, BasicType, Error, Op, Rank, Result, Transport, WinInfo};
use rma_shm::{AtomicTransport, Liveness, QueuedTransport, WindowMemory};
use std::sync::Arc;

/// Environment variable choosing the transport of windows whose info does not name one.
pub const ENV_TRANSPORT: &str = "RMA_TRANSPORT";

/// The transports of windows in rma's own worlds (threads, or processes started by
/// `rmarun`), sharing memory on one node.
pub const TRANSPORTS: &[&str] = &["atomic", "queued"];

/// The transport of every window in a world started by an MPI launcher: the system
/// MPI library's RMA.
pub const MPI_TRANSPORT: &str = "mpi";

/// The transport a window uses.
#[derive(Debug)]
pub(crate) enum AnyTransport<'w> {
    Atomic(AtomicTransport),
    Queued(QueuedTransport),
    Mpi(Arc<MpiSide<'w>>),
}

macro_rules! dispatch {
    ($self:expr, $t:ident => $call:expr) => {
        match $self {
            AnyTransport::Atomic($t) => $call,
            AnyTransport::Queued($t) => $call,
            AnyTransport::Mpi(side) => {
                // the trait's methods, not MpiWindow's inherent ones of the same names
                let $t: &dyn Transport = side.data();
                $call
            }
        }
    };
}

/// The transport name a window with this info would use in a world of `mode`: under
/// an MPI launcher always [`MPI_TRANSPORT`] (whatever was asked: the shared-memory
/// transports need an rma world); otherwise the info key, else the environment
/// ([`ENV_TRANSPORT`]), else `atomic`.
pub fn chosen_transport(info: &WinInfo, mode: LaunchMode) -> Result<String> {
    let name = match &info.transport {
        Some(n) => n.clone(),
        None => std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "atomic".to_owned()),
    };
    let known = TRANSPORTS.contains(&name.as_str()) || name == MPI_TRANSPORT;
    if mode == LaunchMode::Mpi && known {
        return Ok(MPI_TRANSPORT.to_owned());
    }
    if TRANSPORTS.contains(&name.as_str()) {
        Ok(name)
    } else if name == MPI_TRANSPORT {
        Err(Error::arg(format!(
            "the {MPI_TRANSPORT} transport needs a world started by an MPI launcher \
             (mpiexec, mpirun); this one runs as {mode}"
        )))
    } else {
        Err(Error::UnknownTransport {
            name,
            available: format!("{}, {MPI_TRANSPORT} (under mpiexec)", TRANSPORTS.join(", ")),
        })
    }
}

impl AnyTransport<'_> {
    pub(crate) fn shm(
        name: &str,
        mem: Arc<WindowMemory>,
        liveness: Liveness,
    ) -> Result<AnyTransport<'static>> {
        match name {
            "atomic" => Ok(AnyTransport::Atomic(AtomicTransport::new(mem)?)),
            "queued" => Ok(AnyTransport::Queued(QueuedTransport::new(mem, liveness)?)),
            other => Err(Error::UnknownTransport {
                name: other.to_owned(),
                available: TRANSPORTS.join(", "),
            }),
        }
    }
}

impl Transport for AnyTransport<'_> {
    fn name(&self) -> &'static str {
        dispatch!(self, t => t.name())
    }
    #[inline]
    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        dispatch!(self, t => t.put(at, data))
    }
    #[inline]
    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        dispatch!(self, t => t.get(at, out))
    }
    #[inline]
    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        dispatch!(self, t => t.accumulate(at, basic, op, data))
    }
    #[inline]
    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        dispatch!(self, t => t.get_accumulate(at, basic, op, data, out))
    }
    #[inline]
    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        dispatch!(self, t => t.fetch_and_op(target, offset, basic, op, origin, out))
    }
    #[inline]
    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        dispatch!(self, t => t.compare_and_swap(target, offset, basic, origin, compare, out))
    }
    #[inline]
    fn fetch_and_op_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        dispatch!(self, t => t.fetch_and_op_bits(target, offset, basic, op, origin))
    }
    #[inline]
    fn compare_and_swap_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        dispatch!(self, t => t.compare_and_swap_bits(target, offset, basic, origin, compare))
    }
    #[inline]
    fn accumulate_bits(
        &self,
        target: Rank,
        offset: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        dispatch!(self, t => t.accumulate_bits(target, offset, exclusive, basic, op, origin))
    }
    #[inline]
    fn flush(&self, target: Rank) -> Result<()> {
        dispatch!(self, t => t.flush(target))
    }
    fn flush_all(&self) -> Result<()> {
        dispatch!(self, t => t.flush_all())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rma_core::{ErrorClass, Info};

    fn info(name: &str) -> WinInfo {
        WinInfo::from_info(&Info::new().with("rma_transport", name)).expect("valid info")
    }

    #[test]
    fn under_mpi_every_known_name_is_mpi_and_elsewhere_mpi_is_refused() {
        for name in ["atomic", "queued", "mpi"] {
            assert_eq!(
                chosen_transport(&info(name), LaunchMode::Mpi).unwrap(),
                "mpi"
            );
        }
        for mode in [LaunchMode::Threads, LaunchMode::Processes] {
            assert_eq!(chosen_transport(&info("queued"), mode).unwrap(), "queued");
            let e = chosen_transport(&info("mpi"), mode).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            assert!(e.to_string().contains("MPI launcher"), "{e}");
        }
        for mode in [LaunchMode::Threads, LaunchMode::Mpi] {
            let e = chosen_transport(&info("carrier-pigeon"), mode).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
        }
    }
}
