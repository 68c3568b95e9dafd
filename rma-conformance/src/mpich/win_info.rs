//! Ported from MPICH `test/mpi/rma/win_info.c` and `win_flavors.c`.
//!
//! - `win_info`: a key no one knows, set on a window after its creation, is ignored:
//!   get_info does not report it; the hints MPI names (`no_locks`,
//!   `accumulate_ordering`, `accumulate_ops`, `same_size`) read back.
//! - `win_flavors`: a created window reports flavor create, an allocated one allocate
//!   (and a shared one shared, a dynamic one dynamic: our additions), and each a
//!   memory model of unified or separate; an allocated window with bytes has an
//!   address.
//!
//! Adapted: `set_info` returns the keys it ignored, which is checked too; rank 0's
//! created window is empty, as in MPICH's test, which gives it a NULL buffer.

use crate::{create_info, shared_window};
use rma_win::{Flavor, Info, MemoryModel, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    let ignored = win.set_info(&Info::new().with("invalid_test_key", "true"))?;
    assert_eq!(ignored, ["invalid_test_key"]);
    let out = win.info();
    assert_eq!(
        out.get("invalid_test_key"),
        None,
        "the unknown key was ignored"
    );
    for key in [
        "no_locks",
        "accumulate_ordering",
        "accumulate_ops",
        "same_size",
    ] {
        assert!(out.get(key).is_some(), "{key} is reported");
    }
    win.free()
}

pub(crate) fn run_flavors(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let model_ok = |m: MemoryModel| matches!(m, MemoryModel::Unified | MemoryModel::Separate);
    let mut buf = vec![0u8; me * 8];
    let mut created = Window::create(world, &mut buf, &create_info(world, info))?;
    assert_eq!(created.flavor(), Flavor::Create);
    assert!(model_ok(created.memory_model()));
    created.free()?;
    drop(created);
    let mut allocated = Window::allocate_bytes(world, me * 8, 1, info)?;
    assert_eq!(allocated.flavor(), Flavor::Allocate);
    assert!(model_ok(allocated.memory_model()));
    // (a plugged-in backend, the recording one, may keep no address)
    if me > 0 && world.backend().builtin() {
        assert_ne!(allocated.base_addr(), 0, "an allocated window's address");
    }
    allocated.free()?;
    if let Some(mut dynamic) = crate::dynamic_window(world, info)? {
        assert_eq!(dynamic.flavor(), Flavor::Dynamic);
        assert!(model_ok(dynamic.memory_model()));
        dynamic.free()?;
    }
    if let Some(mut shared) = shared_window::<u64>(world, me, info)? {
        assert_eq!(shared.flavor(), Flavor::Shared);
        assert!(model_ok(shared.memory_model()));
        shared.free()?;
    }
    Ok(())
}
