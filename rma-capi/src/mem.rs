//! MPI_Alloc_mem's memory: one shared segment per block, so that a window created
//! over it later (MPI_Win_create) is made over the memory itself, which the other
//! ranks map by the segment's name (the unified model, no copy to reconcile).
//!
//! A block's segment is named after the world (`<world>-m<pid>-<n>-<tag>`): rmarun's
//! reaper removes every name with the world's prefix when the job ends, so a rank that
//! dies holding blocks leaves nothing in /dev/shm. MPI_Free_mem unmaps the block and
//! removes its name; MPI_Finalize removes the names of the blocks still held (the
//! memory stays mapped until MPI_Free_mem or exit). Where no segment can be made (no
//! rma shared-memory world, or /dev/shm full) the block comes from malloc, and a
//! window over it exposes a copy.

use rma_win::backend::Segment;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The blocks handed out, by address (process-wide: MPI_Free_mem may come after
/// MPI_Finalize, when the state is gone).
fn blocks() -> MutexGuard<'static, BTreeMap<usize, Arc<Segment>>> {
    static BLOCKS: Mutex<BTreeMap<usize, Arc<Segment>>> = Mutex::new(BTreeMap::new());
    BLOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A block of `len` bytes in a segment named after `world`, or None.
pub(crate) fn allocate(world: &str, len: usize) -> Option<*mut u8> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // whole words: windows over the block access it in aligned 8-byte words
    let bytes = len.max(1).checked_add(7)? & !7;
    let (pid, n) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let mut attempt = 0u64;
    let name = || {
        attempt += 1;
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
        format!("{world}-m{pid}-{n}-{:x}", clock ^ (attempt << 32))
    };
    let seg = Segment::create_unique(name, bytes, 8).ok()?.share();
    let p = seg.as_ptr();
    blocks().insert(p as usize, seg);
    Some(p)
}

/// Whether `name` is the segment name of a block of world `world`, as [`allocate`]
/// makes them: `<world>-m<pid>-<n>-<hex>`, with a world name of letters, digits, `-`
/// and `_`. A name that a peer announces for its block is mapped only if it is one, so
/// it names a segment of this world in /dev/shm, never a path elsewhere (`../x`).
pub(crate) fn is_block_name(world: &str, name: &str) -> bool {
    let world_ok = !world.is_empty()
        && world
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let Some(rest) = name.strip_prefix(world).and_then(|r| r.strip_prefix("-m")) else {
        return false;
    };
    let mut parts = rest.split('-');
    let (Some(pid), Some(n), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    world_ok
        && digits(pid)
        && digits(n)
        && (1..=16).contains(&tag.len())
        && tag.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What MPI_Free_mem found at `p`.
pub(crate) enum Freed {
    /// A block, unmapped and its name removed (once no window holds it).
    Block,
    /// An address inside a block but not its start: nothing freed.
    Inside,
    /// No block: malloc's memory (or NULL).
    NotABlock,
}

/// Frees the block at `p`.
pub(crate) fn free(p: usize) -> Freed {
    let mut b = blocks();
    if let Some(seg) = b.remove(&p) {
        seg.unlink();
        return Freed::Block;
    }
    match b.range(..p).next_back() {
        Some((&start, seg)) if p < start + seg.len() => Freed::Inside,
        _ => Freed::NotABlock,
    }
}

/// The block holding `len` bytes at `p`: its segment and `p`'s offset in it.
pub(crate) fn block_of(p: usize, len: usize) -> Option<(Arc<Segment>, usize)> {
    let b = blocks();
    let (&start, seg) = b.range(..=p).next_back()?;
    let off = p - start;
    (off.checked_add(len)? <= seg.len()).then(|| (seg.clone(), off))
}

/// Removes the names of the blocks still held (MPI_Finalize); their memory stays.
pub(crate) fn unlink_all() {
    for seg in blocks().values() {
        seg.unlink();
    }
}

#[cfg(test)]
mod tests {
    use super::is_block_name;

    #[test]
    fn only_names_of_this_worlds_blocks_are_block_names() {
        let w = "rma-42-0123456789abcdef";
        assert!(is_block_name(w, &format!("{w}-m42-0-1f")));
        assert!(is_block_name(w, &format!("{w}-m7-12-0123456789abcdef")));
        for bad in [
            "../../etc/passwd".to_owned(),
            format!("{w}-m42-0-1f/../../../etc/passwd"),
            format!("{w}/../x"),
            format!("{w}-m42-0-../x"),
            format!("{w}-m42-0-1f-"),
            format!("{w}-m42-0"),
            format!("{w}-m-0-1f"),
            format!("{w}-m42-0-xyz"),
            format!("{w}-m42-0-0123456789abcdef0"),
            "rma-43-0123456789abcdef-m42-0-1f".to_owned(),
            format!("/dev/shm/{w}-m42-0-1f"),
            String::new(),
        ] {
            assert!(!is_block_name(w, &bad), "{bad:?}");
        }
        // a world name that is not one names no blocks
        assert!(!is_block_name("../x", "../x-m1-0-1"));
        assert!(!is_block_name("", "-m1-0-1"));
    }
}
