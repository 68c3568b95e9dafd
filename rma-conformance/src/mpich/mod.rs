//! Cases re-expressed from MPICH's `test/mpi/rma/` suite (pmodels/mpich) and its
//! `test/mpi/errors/rma/` error tests. Each file names the MPICH test it comes from and
//! says what it checks and how it was adapted; the code is our own.
//!
//! MPICH's tests coordinate ranks with point-to-point messages, which rma does not
//! have; the ports use barriers, or flags in a window, in their place. Some earlier
//! ports were written when rma had only fence synchronization and use fences where
//! MPICH takes locks only to get an epoch; their headers say so.

mod acc_ordering;
mod accfence2;
mod atomic_rmw_cas;
mod atomic_rmw_fop;
mod badrma;
mod cas_type_check;
mod compare_and_swap;
mod derived_acc_flush_local;
mod fetch_and_op;
mod fetchandadd;
mod get_acc_local;
mod get_accumulate;
mod large_small_acc;
mod linked_list_fop;
mod lockcontention3;
mod lockopts;
mod mcs_mutex;
mod pscw_ordering;
mod racc_local_comp;
mod req_example;
mod reqops;
mod rget_testall;
mod rget_unlock;
mod rmanull;
mod rmazero;
mod strided_acc_indexed;
mod strided_acc_subarray;
mod test1;
mod transpose5;
mod win_dynamic;
mod win_info;
mod win_shared;
mod win_sync_complete;
mod win_sync_free_at;
mod win_sync_free_pt;
mod win_sync_lock_at;
mod win_sync_lock_fence;
mod win_sync_lock_pt;
mod win_sync_nested;
mod win_sync_op;
mod win_sync_unlock;
mod wintest;
mod wrma_flush_get;

use crate::Case;

/// Every ported case.
pub fn cases() -> Vec<Case> {
    let c = |name, ranks, body| Case { name, ranks, body };
    vec![
        c("accfence2", 4, accfence2::run),
        c("win_shared", 4, win_shared::run),
        c("win_shared_noncontig", 4, win_shared::run_noncontig),
        c("win_shared_noncontig_put", 4, win_shared::run_noncontig_put),
        c("win_shared_zerobyte", 3, win_shared::run_zerobyte),
        c("win_info", 2, win_info::run),
        c("win_dynamic_acc", 4, win_dynamic::run_acc),
        c("linked_list_dynamic", 4, win_dynamic::run_linked_list),
        c("wintest", 3, wintest::run),
        c("win_flavors", 3, win_info::run_flavors),
        c("test1", 2, test1::run),
        c("transpose5", 2, transpose5::run),
        c("fetch_and_op_i8", 4, fetch_and_op::run_i8),
        c("fetch_and_op_i16", 4, fetch_and_op::run_i16),
        c("fetch_and_op_i32", 4, fetch_and_op::run_i32),
        c("fetch_and_op_i64", 4, fetch_and_op::run_i64),
        c("fetch_and_op_u8", 4, fetch_and_op::run_u8),
        c("fetch_and_op_u16", 4, fetch_and_op::run_u16),
        c("fetch_and_op_u32", 4, fetch_and_op::run_u32),
        c("fetch_and_op_u64", 4, fetch_and_op::run_u64),
        c("fetch_and_op_f32", 4, fetch_and_op::run_f32),
        c("fetch_and_op_f64", 4, fetch_and_op::run_f64),
        c("compare_and_swap", 4, compare_and_swap::run),
        c("get_accumulate_i16", 4, get_accumulate::run_i16),
        c("get_accumulate_i32", 4, get_accumulate::run_i32),
        c("get_accumulate_i64", 4, get_accumulate::run_i64),
        c("get_accumulate_f64", 4, get_accumulate::run_f64),
        c("get_accumulate_derived", 4, get_accumulate::run_derived),
        c("atomic_rmw_fop", 3, atomic_rmw_fop::run),
        c("atomic_rmw_cas", 3, atomic_rmw_cas::run),
        c("acc_ordering", 4, acc_ordering::run),
        c("large_small_acc", 2, large_small_acc::run),
        c("strided_acc_indexed", 4, strided_acc_indexed::run),
        c("strided_acc_subarray", 4, strided_acc_subarray::run),
        c("rmanull", 4, rmanull::run),
        c("rmazero", 4, rmazero::run),
        c("badrma", 2, badrma::run),
        c("cas_type_check", 4, cas_type_check::run),
        c("win_sync_op", 4, win_sync_op::run),
        c("win_sync_free_at", 4, win_sync_free_at::run),
        c("win_sync_lock_fence", 4, win_sync_lock_fence::run),
        c("reqops", 4, reqops::run),
        c("racc_local_comp", 2, racc_local_comp::run),
        c("rget_unlock", 2, rget_unlock::run),
        c("rget_testall", 2, rget_testall::run),
        c("req_example", 4, req_example::run),
        c("get_acc_local", 2, get_acc_local::run),
        c("lockcontention3", 4, lockcontention3::run),
        c("lockopts", 2, lockopts::run),
        c("fetchandadd", 4, fetchandadd::run),
        c("linked_list_fop", 4, linked_list_fop::run),
        c("mcs_mutex", 4, mcs_mutex::run),
        c("wrma_flush_get_put", 3, wrma_flush_get::run_put),
        c("wrma_flush_get_acc", 3, wrma_flush_get::run_acc),
        c("wrma_flush_get_gacc", 3, wrma_flush_get::run_gacc),
        c("wrma_flush_get_fop", 3, wrma_flush_get::run_fop),
        c("wrma_flush_get_cas", 3, wrma_flush_get::run_cas),
        c("derived_acc_flush_local", 3, derived_acc_flush_local::run),
        c("pscw_ordering", 4, pscw_ordering::run),
        c("win_sync_complete", 4, win_sync_complete::run),
        c("win_sync_nested", 4, win_sync_nested::run),
        c("win_sync_unlock", 4, win_sync_unlock::run),
        c("win_sync_lock_pt", 4, win_sync_lock_pt::run),
        c("win_sync_lock_at", 4, win_sync_lock_at::run),
        c("win_sync_free_pt", 4, win_sync_free_pt::run),
    ]
}

/// Every rank's `mine` (each at most `max` elements), gathered on every rank through a
/// scratch window: each rank puts its length and values into its slot of every rank's
/// window. Collective. (`World::allgather` carries only small messages.)
pub(crate) fn gather_all<T: rma_win::Equivalence + Default>(
    world: &rma_win::World,
    info: &rma_win::Info,
    mine: &[T],
    max: usize,
) -> rma_win::Result<Vec<Vec<T>>> {
    use rma_win::{Assert, Rank, Window};
    assert!(
        mine.len() <= max,
        "gather_all: {} values, room for {max}",
        mine.len()
    );
    let n = world.size();
    let me = world.rank();
    let mut lens = Window::allocate::<u64>(world, n, info)?;
    let mut vals = Window::allocate::<T>(world, n * max, info)?;
    lens.fence(Assert::NONE)?;
    vals.fence(Assert::NONE)?;
    for r in 0..n {
        let to = Rank::new(r as u32);
        lens.put(&[mine.len() as u64], to, me as i64)?;
        vals.put(mine, to, (me * max) as i64)?;
    }
    lens.fence(Assert::NONE)?;
    vals.fence(Assert::NONE)?;
    let counts: Vec<u64> = lens.local_vec()?;
    let all: Vec<T> = vals.local_vec()?;
    let out = (0..n)
        .map(|r| all[r * max..r * max + counts[r] as usize].to_vec())
        .collect();
    vals.free()?;
    lens.free()?;
    Ok(out)
}
