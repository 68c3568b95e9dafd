//! rma's own cases: every op x basic type through a window, derived layouts on both
//! sides, self-targets, window creation and info, and each error class with the window
//! checked unchanged afterwards.

mod blocks;
mod check;
mod dynamic;
mod errors;
mod handles;
mod large;
mod layouts;
mod ops;
mod passive;
mod shared;
mod soak;
mod windows;
mod worlds;

use crate::Case;

/// Every own case.
pub fn cases() -> Vec<Case> {
    let c = |name, ranks, body| Case { name, ranks, body };
    vec![
        c("own_blocks_counter", 4, blocks::counter),
        c("own_blocks_mutex", 4, blocks::mutex),
        c("own_blocks_signal", 3, blocks::signal),
        c("own_blocks_indexed", 3, blocks::indexed),
        c("own_check_conflicts", 3, check::conflicts),
        c("own_check_allowed", 3, check::allowed),
        c("own_check_long_run", 3, check::long_run),
        c("own_dynamic_every_call", 3, dynamic::every_call),
        c("own_dynamic_churn", 3, dynamic::churn),
        c("own_dynamic_misuse", 2, dynamic::misuse),
        c("own_worlds_overlapping", 4, worlds::overlapping),
        c("own_worlds_independent", 4, worlds::independent),
        c("own_worlds_misuse", 2, worlds::misuse),
        c("own_worlds_create_group", 4, worlds::create_group),
        c("own_worlds_collectives", 3, worlds::collectives),
        c("own_worlds_node", 4, worlds::node),
        c("own_shared_every_call", 3, shared::every_call),
        c(
            "own_shared_views_concurrently",
            4,
            shared::views_concurrently,
        ),
        c("own_shared_misuse", 2, shared::misuse),
        c("own_handles_lock_all", 4, handles::lock_all_handles),
        c("own_handles_lock", 3, handles::lock_handles),
        c("own_handles_fence", 3, handles::fence_handles),
        c("own_handles_pscw", 4, handles::pscw_handles),
        c("own_handles_dropped_guards", 3, handles::dropped_guards),
        c("own_handles_op_checks", 2, handles::handle_op_checks),
        c(
            "own_handles_element_types",
            3,
            handles::element_type_handles,
        ),
        c("own_handles_batched", 3, handles::batched_adds),
        c(
            "own_every_op_and_type_concurrently",
            4,
            ops::concurrent_fold,
        ),
        c(
            "own_every_op_and_type_fetched_in_order",
            2,
            ops::sequential_fetch,
        ),
        c("own_compare_and_swap_every_type", 3, ops::cas_every_type),
        c("own_self_target_every_call", 3, ops::self_target),
        c(
            "own_derived_layouts_both_sides",
            4,
            layouts::derived_both_sides,
        ),
        c("own_pair_vector_maxloc", 4, layouts::pair_vector_maxloc),
        c(
            "own_get_accumulate_derived_result",
            2,
            layouts::get_accumulate_derived_result,
        ),
        c(
            "own_large_strided_vector_accumulate",
            2,
            layouts::large_strided,
        ),
        c("own_large_both_ways_at_once", 2, large::both_ways_at_once),
        c(
            "own_exclusive_lock_excludes",
            4,
            passive::exclusive_lock_excludes,
        ),
        c(
            "own_lock_contention_is_fair",
            4,
            passive::lock_contention_is_fair,
        ),
        c(
            "own_lock_all_flush_and_requests",
            3,
            passive::lock_all_flush_and_requests,
        ),
        c("own_pscw_ring", 4, passive::pscw_ring),
        c("own_passive_and_pscw_sync_misuse", 2, passive::sync_misuse),
        c(
            "own_progress_without_target_calls",
            2,
            windows::progress_without_target_calls,
        ),
        c(
            "own_huge_irregular_target_layout",
            3,
            large::huge_irregular_layout,
        ),
        c(
            "own_error_classes_leave_window_unchanged",
            3,
            errors::error_classes,
        ),
        c(
            "own_error_classes_in_passive_epochs",
            3,
            errors::passive_error_classes,
        ),
        c(
            "own_misaligned_created_window",
            2,
            errors::misaligned_created_window,
        ),
        c("own_sync_errors", 2, errors::sync_errors),
        c("own_info_effective_values", 2, windows::info_values),
        c("own_create_over_private_memory", 3, windows::create_private),
        c(
            "own_transport_named_or_refused",
            2,
            windows::transport_named_or_refused,
        ),
        c("own_many_windows_in_order", 3, windows::many_windows),
        c("own_disp_unit_and_sizes_differ", 3, windows::uneven_windows),
        c("own_soak", 4, soak::soak),
    ]
}
