//! MpiTargetSpec layouts as MPI datatypes: where a call lands (displacement) and the derived
//! datatype that describes its runs there.
//!
//! A layout resolved to runs of whole elements of one basic type becomes, in order of
//! preference: the predefined type with a count (contiguous, at a multiple of the
//! target's disp_unit), `MPI_Type_create_hvector` (regularly strided, as
//! [`Layout::as_strided`] reports it), or `MPI_Type_create_hindexed` of the runs. The
//! displacement is chosen at or below the lowest byte touched so that every offset in
//! the datatype is non-negative. Derived types are committed for one call and freed
//! when the [`Placement`] drops (MPI keeps a type alive while operations use it).

use crate::world::MpiWorld;
use rma_core::{BasicType, Error, Layout, Rank, Result, Run, Strided};
use rma_mpi_sys::{Call, Handle};
use std::ffi::c_int;

/// Where one RMA call lands: the MPI rank, displacement (in the target's disp_unit)
/// and the target datatype with its count.
#[derive(Debug)]
pub(crate) struct Placement<'w> {
    world: &'w MpiWorld,
    /// The target rank.
    pub(crate) rank: c_int,
    /// The target displacement, in units of the target's disp_unit.
    pub(crate) disp: i64,
    /// The target count.
    pub(crate) count: c_int,
    /// The target datatype.
    pub(crate) ty: Handle,
    /// The bytes `[start, end)` of the target window the call touches, the window's
    /// length and disp_unit (for error reports).
    pub(crate) range: (i128, i128, usize),
    pub(crate) disp_unit: usize,
    derived: bool,
}

impl Placement<'_> {
    /// Whether the target datatype is a derived one (built for this call).
    pub(crate) fn derived(&self) -> bool {
        self.derived
    }
}

impl Drop for Placement<'_> {
    fn drop(&mut self) {
        if self.derived {
            // SAFETY: `ty` is a derived type this placement committed and frees once;
            // MPI keeps it alive for operations still using it.
            let _ = self.world.mpi(|api| unsafe { (api.type_free)(self.ty) });
        }
    }
}

/// The shape of a target layout, in bytes relative to the call's byte offset.
#[derive(Debug)]
enum Shape {
    Contiguous(usize),
    Strided(Strided),
    Runs(Vec<Run>),
}

/// A target region: `layout` (or `bytes` contiguous bytes) at byte `byte` of `rank`'s
/// window, which is `window_len` bytes long with displacement unit `disp_unit`.
#[derive(Clone, Copy)]
pub(crate) struct Region<'l> {
    pub(crate) rank: Rank,
    pub(crate) byte: usize,
    pub(crate) layout: Option<&'l dyn Layout>,
    pub(crate) window_len: usize,
    pub(crate) disp_unit: usize,
    /// The MPI displacement of byte 0 (a dynamic window's arena address; else 0).
    pub(crate) base: usize,
}

/// Places `bytes` bytes of `basic` elements at `region`: checks that the layout holds
/// whole elements, matches the origin's length and fits the target window, then
/// builds the target datatype.
pub(crate) fn place<'w>(
    world: &'w MpiWorld,
    region: Region<'_>,
    bytes: usize,
    basic: BasicType,
) -> Result<Placement<'w>> {
    let shape = shape_of(region.layout, bytes, basic)?;
    let (lo, hi) = span(&shape);
    let start = region.byte as i128 + lo;
    let end = region.byte as i128 + hi;
    if start < 0 || end > region.window_len as i128 {
        return Err(Error::OutOfWindow {
            rank: region.rank,
            start,
            end,
            window_len: region.window_len,
        });
    }
    let du = region.disp_unit.max(1) as i128;
    let disp = start / du;
    // bytes from the displacement's address to the call's byte offset
    let origin = region.byte as i128 - disp * du;
    let rank = world.c_rank(region.rank)?;
    let (ty, count, derived) = build(world, &shape, origin, basic)?;
    Ok(Placement {
        world,
        rank,
        disp: disp as i64 + region.base as i64,
        count,
        ty,
        range: (start, end, region.window_len),
        disp_unit: region.disp_unit,
        derived,
    })
}

fn shape_of(layout: Option<&dyn Layout>, bytes: usize, basic: BasicType) -> Result<Shape> {
    let elem = basic.size();
    if bytes % elem != 0 {
        return Err(Error::arg(format!(
            "{bytes} bytes are not a whole number of {basic} elements"
        )));
    }
    let Some(layout) = layout else {
        return Ok(Shape::Contiguous(bytes));
    };
    if layout.size() != bytes {
        return Err(Error::arg(format!(
            "the target layout describes {} bytes, the origin holds {bytes}",
            layout.size()
        )));
    }
    if let Some(n) = layout.as_contiguous() {
        return Ok(Shape::Contiguous(n));
    }
    if let Some(s) = layout
        .as_strided()
        .filter(|s| s.len % elem == 0 && s.count > 0)
    {
        return Ok(Shape::Strided(s));
    }
    let mut runs = Vec::new();
    layout.for_each_run(&mut |r| runs.push(r));
    if let Some(bad) = runs.iter().find(|r| r.len % elem != 0) {
        return Err(Error::datatype(format!(
            "a run of {} bytes at offset {} is not a whole number of {basic} elements",
            bad.len, bad.offset
        )));
    }
    Ok(Shape::Runs(runs))
}

/// `(lowest byte, one past the highest)` relative to the call's byte offset.
fn span(shape: &Shape) -> (i128, i128) {
    match shape {
        Shape::Contiguous(n) => (0, *n as i128),
        Shape::Strided(s) => {
            let first = s.offset as i128;
            let last = first + (s.count as i128 - 1) * s.stride as i128;
            (first.min(last), first.max(last) + s.len as i128)
        }
        Shape::Runs(runs) => runs
            .iter()
            .filter(|r| r.len > 0)
            .fold(None, |acc: Option<(i128, i128)>, r| {
                let (a, b) = (r.offset as i128, r.offset as i128 + r.len as i128);
                Some(acc.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))))
            })
            .unwrap_or((0, 0)),
    }
}

fn c_count(n: usize, what: &'static str) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::CountOverflow { count: n, what })
}

/// The target datatype and count for `shape`, whose byte 0 lies `origin` bytes after
/// the displacement's address.
fn build(
    world: &MpiWorld,
    shape: &Shape,
    origin: i128,
    basic: BasicType,
) -> Result<(Handle, c_int, bool)> {
    let elem = basic.size();
    match shape {
        Shape::Contiguous(n) if origin == 0 => {
            let count = c_count(n / elem, "elements in one MPI call")?;
            Ok((world.basic_handle(basic)?, count, false))
        }
        Shape::Contiguous(n) => hindexed(world, basic, &[(origin as i64, n / elem)]),
        Shape::Strided(s) => hvector(world, basic, s, origin),
        Shape::Runs(runs) => {
            let blocks: Vec<(i64, usize)> = runs
                .iter()
                .map(|r| ((origin + r.offset as i128) as i64, r.len / elem))
                .collect();
            hindexed(world, basic, &blocks)
        }
    }
}

fn hvector(
    world: &MpiWorld,
    basic: BasicType,
    s: &Strided,
    origin: i128,
) -> Result<(Handle, c_int, bool)> {
    let count = c_count(s.count, "blocks in a strided layout")?;
    let blocklen = c_count(s.len / basic.size(), "elements per block")?;
    let shift = (origin + s.offset as i128) as i64;
    let mut ty: Handle = 0;
    // SAFETY: plain integers in, a committed datatype out through a valid pointer.
    let rc = world.mpi(|api| unsafe {
        (api.type_hvector)(
            basic as c_int,
            count,
            blocklen,
            s.stride as i64,
            shift,
            &mut ty,
        )
    });
    world.check(rc, Call::new("MPI_Type_create_hvector").typed(basic, None))?;
    Ok((ty, 1, true))
}

fn hindexed(
    world: &MpiWorld,
    basic: BasicType,
    blocks: &[(i64, usize)],
) -> Result<(Handle, c_int, bool)> {
    let n = c_count(blocks.len(), "runs in a target layout")?;
    let lens = blocks
        .iter()
        .map(|&(_, len)| c_count(len, "elements per run"))
        .collect::<Result<Vec<c_int>>>()?;
    let displs: Vec<i64> = blocks.iter().map(|&(d, _)| d).collect();
    let mut ty: Handle = 0;
    // SAFETY: `lens` and `displs` hold `n` entries each; the datatype comes back through
    // a valid pointer.
    let rc = world.mpi(|api| unsafe {
        (api.type_hindexed)(basic as c_int, n, lens.as_ptr(), displs.as_ptr(), &mut ty)
    });
    world.check(rc, Call::new("MPI_Type_create_hindexed").typed(basic, None))?;
    Ok((ty, 1, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vector(Strided);

    impl Layout for Vector {
        fn size(&self) -> usize {
            self.0.count * self.0.len
        }
        fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
            for i in 0..self.0.count as isize {
                f(Run {
                    offset: self.0.offset + i * self.0.stride,
                    len: self.0.len,
                })
            }
        }
        fn as_contiguous(&self) -> Option<usize> {
            None
        }
        fn as_strided(&self) -> Option<Strided> {
            Some(self.0)
        }
    }

    #[test]
    fn span_of_negative_stride_starts_at_the_last_block() {
        let v = Vector(Strided {
            offset: 40,
            count: 3,
            len: 8,
            stride: -16,
        });
        let shape = shape_of(Some(&v), 24, BasicType::F64).unwrap();
        assert_eq!(span(&shape), (8, 48));
    }

    #[test]
    fn partial_elements_are_refused() {
        assert!(shape_of(None, 12, BasicType::F64).is_err());
        let v = Vector(Strided {
            offset: 0,
            count: 2,
            len: 4,
            stride: 8,
        });
        assert!(matches!(
            shape_of(Some(&v), 8, BasicType::I32),
            Ok(Shape::Strided(_))
        ));
        assert!(shape_of(Some(&v), 16, BasicType::I32).is_err());
    }
}
