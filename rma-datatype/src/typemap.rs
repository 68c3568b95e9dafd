//! [`TypeMap`]: the flattened byte layout of `count` instances of a datatype.

use crate::node::{self, Node};
use rma_core::{Error, Layout, Rank, Result, Run, Strided};
use std::fmt;

/// The byte runs of `count` instances of a datatype, in type-map order, adjacent runs
/// merged; offsets are relative to the buffer's start (or the target displacement) and
/// may be negative.
///
/// Compact: a regular layout is a small tree (`vector(1_000_000, 1, 2, f64)` is one
/// repeat node over one run), so building, measuring and checking it never costs
/// memory proportional to its element count. Only explicit index lists (indexed,
/// hindexed, struct) take space proportional to their length.
#[derive(Clone)]
pub struct TypeMap {
    root: Node,
}

impl TypeMap {
    pub(crate) fn new(root: Node) -> TypeMap {
        TypeMap { root }
    }

    /// Bytes of data described.
    pub fn size(&self) -> usize {
        self.root.size()
    }

    /// `Some(len)` if the map is one run of `len` bytes at offset 0 (a plain copy).
    pub fn as_contiguous(&self) -> Option<usize> {
        match self.root {
            Node::Run { off: 0, len } => Some(len),
            _ => None,
        }
    }

    /// Whether the map holds no data.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// The runs in type-map order, adjacent runs merged, generated on the fly.
    pub fn runs(&self) -> impl Iterator<Item = Run> + '_ {
        node::Runs::new(&self.root)
    }

    /// `(lowest byte offset, one past the highest)` covered by data; `None` if empty.
    pub fn span(&self) -> Option<(isize, isize)> {
        self.root.info().map(|i| (i.lo, i.hi))
    }

    /// Number of runs after merging, as [`TypeMap::runs`] yields them (computed from
    /// the tree, without enumerating).
    pub fn run_count(&self) -> u64 {
        self.root.info().map_or(0, |i| i.runs)
    }

    /// Number of nodes in the internal tree (a measure of memory use: a shared
    /// subtree counts once per use).
    pub fn node_count(&self) -> usize {
        self.root.info().map_or(0, |i| i.nodes)
    }

    /// `Ok` if no byte is covered twice, else [`Error::OverlappingTarget`] (class TYPE)
    /// naming one such byte.
    ///
    /// Decided from the tree for regular layouts; only parts whose pieces interleave
    /// are enumerated and sorted.
    pub fn check_no_overlap(&self) -> Result<()> {
        node::find_overlap(&self.root, 0).map_err(|offset| Error::OverlappingTarget { offset })
    }

    /// `Ok` if every byte `base + offset` lies in `[0, window_len)`, else
    /// [`Error::OutOfWindow`] (class RMA_RANGE) with the span that does not fit.
    pub fn check_fits(&self, base: usize, window_len: usize, rank: Rank) -> Result<()> {
        let Some((lo, hi)) = self.span() else {
            return Ok(());
        };
        let start = base as i128 + lo as i128;
        let end = base as i128 + hi as i128;
        if start < 0 || end > window_len as i128 {
            Err(Error::OutOfWindow {
                rank,
                start,
                end,
                window_len,
            })
        } else {
            Ok(())
        }
    }

    /// `Ok` if every run lies inside a buffer of `len` bytes starting at offset 0,
    /// else an error of class BUFFER naming the buffer `which` (`"origin"`,
    /// `"result"`, ...): [`Error::BufferUnderrun`] for a layout reaching below offset 0
    /// (a negative lower bound, which no slice can hold), [`Error::BufferTooSmall`]
    /// for one reaching past the end.
    pub fn check_buffer(&self, which: &'static str, len: usize) -> Result<()> {
        let Some((lo, hi)) = self.span() else {
            return Ok(());
        };
        if lo < 0 {
            return Err(Error::BufferUnderrun {
                which,
                below: lo.unsigned_abs(),
            });
        }
        if hi as usize > len {
            return Err(Error::BufferTooSmall {
                which,
                needed: hi as usize,
                got: len,
            });
        }
        Ok(())
    }

    fn check_packed(&self, which: &'static str, len: usize) -> Result<()> {
        let size = self.size();
        if len < size {
            Err(Error::BufferTooSmall {
                which,
                needed: size,
                got: len,
            })
        } else if len > size {
            Err(Error::arg(format!(
                "the {which} buffer holds {len} bytes but the type map packs exactly {size}"
            )))
        } else {
            Ok(())
        }
    }

    /// Gathers the runs of `src` (the strided buffer, offsets from its start) into
    /// `dst`, in type-map order. `dst.len()` must equal [`TypeMap::size`]; a run
    /// outside `src` is an [`Error::BufferTooSmall`] for the `"origin"` buffer. On
    /// error nothing is written.
    #[doc(alias = "MPI_Pack")]
    pub fn pack(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.check_buffer("origin", src.len())?;
        self.check_packed("packed", dst.len())?;
        let mut pos = 0;
        node::pack(&self.root, 0, src, dst, &mut pos);
        debug_assert_eq!(pos, dst.len());
        Ok(())
    }

    /// Scatters the packed `src` into the runs of `dst` (the strided buffer), the
    /// inverse of [`TypeMap::pack`]; bytes of `dst` outside the runs are untouched.
    /// `src.len()` must equal [`TypeMap::size`]; a run outside `dst` is an
    /// [`Error::BufferTooSmall`] for the `"origin"` buffer (use
    /// [`TypeMap::check_buffer`] first to name another). On error nothing is written.
    #[doc(alias = "MPI_Unpack")]
    pub fn unpack(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.check_buffer("origin", dst.len())?;
        self.check_packed("packed", src.len())?;
        let mut pos = 0;
        node::unpack(&self.root, 0, src, &mut pos, dst);
        debug_assert_eq!(pos, src.len());
        Ok(())
    }
}

impl Layout for TypeMap {
    fn size(&self) -> usize {
        TypeMap::size(self)
    }

    fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
        let mut pending = None;
        node::for_each_run(&self.root, 0, &mut pending, f);
        if let Some(last) = pending {
            f(last);
        }
    }

    fn as_contiguous(&self) -> Option<usize> {
        TypeMap::as_contiguous(self)
    }

    fn as_strided(&self) -> Option<Strided> {
        match &self.root {
            Node::Run { off, len } => Some(Strided {
                offset: *off,
                count: 1,
                len: *len,
                stride: *len as isize,
            }),
            Node::Rep { off, rep } => match rep.body {
                Node::Run { off: first, len } => Some(Strided {
                    offset: off + first,
                    count: rep.count,
                    len,
                    stride: rep.stride,
                }),
                _ => None,
            },
            _ => None,
        }
    }
}

impl fmt::Debug for TypeMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypeMap")
            .field("size", &self.size())
            .field("runs", &self.run_count())
            .field("span", &self.span())
            .field("nodes", &self.node_count())
            .finish()
    }
}

#[cfg(test)]
mod strided_tests {
    use crate::Datatype;
    use rma_core::{Layout, Run, Strided};

    /// What `as_strided` promises: the same runs as `for_each_run` (unmerged).
    #[test]
    fn as_strided_describes_the_same_runs() {
        let f64t = Datatype::of::<f64>();
        for (count, blocklen, stride) in [(5, 1, 2), (3, 2, 5), (7, 1, 1), (4, 3, -4)] {
            let mut t = Datatype::vector(count, blocklen, stride, &f64t).unwrap();
            t.commit();
            let map = t.type_map(1).unwrap();
            let mut runs = vec![];
            map.for_each_run(&mut |r| runs.push(r));
            let Some(Strided {
                offset,
                count: n,
                len,
                stride: s,
            }) = map.as_strided()
            else {
                panic!("vector({count}, {blocklen}, {stride}) is strided");
            };
            let listed: Vec<Run> = (0..n as isize)
                .map(|i| Run {
                    offset: offset + i * s,
                    len,
                })
                .collect();
            let merged_bytes: usize = runs.iter().map(|r| r.len).sum();
            assert_eq!(
                n * len,
                merged_bytes,
                "vector({count}, {blocklen}, {stride})"
            );
            if stride as usize != blocklen {
                assert_eq!(listed, runs, "vector({count}, {blocklen}, {stride})");
            }
        }
    }
}
