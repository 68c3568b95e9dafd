//! Virtual topologies: Cartesian grids (`MPI_Cart_*`, `MPI_Dims_create`) and
//! distributed graphs (`MPI_Dist_graph_*`). A topology is information attached to a
//! communicator; rma never reorders ranks (the `reorder` argument is accepted and
//! has no effect, as MPI allows).

use crate::comm::UNDEFINED;
use crate::{arr, call, code, count, fail, out, On, State, R};
use std::ffi::c_int;

const CART: c_int = 1;
const DIST_GRAPH: c_int = 3;

/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` (mpi.h's sentinel addresses).
const UNWEIGHTED: usize = 2;
const WEIGHTS_EMPTY: usize = 3;

/// A communicator's topology.
#[derive(Debug, Clone)]
pub(crate) enum Topo {
    Cart {
        dims: Vec<usize>,
        periods: Vec<bool>,
    },
    Dist {
        sources: Vec<c_int>,
        sweights: Vec<c_int>,
        dests: Vec<c_int>,
        dweights: Vec<c_int>,
        weighted: bool,
    },
}

impl State {
    pub(crate) fn topo(&self, c: c_int) -> R<&Topo> {
        self.comm(c)?
            .topo
            .as_ref()
            .ok_or_else(|| fail(code::TOPOLOGY, format!("communicator {c} has no topology")))
    }

    fn cart(&self, c: c_int) -> R<(&[usize], &[bool])> {
        match self.topo(c)? {
            Topo::Cart { dims, periods } => Ok((dims, periods)),
            _ => Err(fail(
                code::TOPOLOGY,
                format!("communicator {c} has no Cartesian topology"),
            )),
        }
    }

    fn set_topo(&mut self, h: c_int, t: Topo) -> R {
        if h != 0 {
            self.comm_mut(h)?.topo = Some(t);
        }
        Ok(())
    }
}

/// Coordinates of `rank` in a grid of `dims` (row-major, the last dimension
/// fastest).
fn coords_of(dims: &[usize], mut rank: usize) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        c[i] = rank % dims[i];
        rank /= dims[i];
    }
    c
}

/// The rank at coordinates `coords` (wrapped in periodic dimensions; None outside
/// a non-periodic one).
fn rank_of(dims: &[usize], periods: &[bool], coords: &[c_int]) -> Option<usize> {
    let mut r = 0usize;
    for ((&d, &p), &x) in dims.iter().zip(periods).zip(coords) {
        let d = d as i64;
        let mut x = i64::from(x);
        if p {
            x = x.rem_euclid(d);
        } else if !(0..d).contains(&x) {
            return None;
        }
        r = r * d as usize + x as usize;
    }
    Some(r)
}

/// Balanced dimensions: `dims`'s zero entries filled so that their product with the
/// given ones is `n`, as close to each other as can be, in non-increasing order.
pub(crate) fn dims_create(n: usize, dims: &mut [usize]) -> R {
    let fixed: usize = dims.iter().filter(|&&d| d > 0).product();
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if fixed == 0 || n % fixed != 0 {
        return Err(fail(
            code::DIMS,
            format!("{n} ranks cannot fill the given dimensions"),
        ));
    }
    let mut left = n / fixed;
    if free.is_empty() {
        return if left == 1 {
            Ok(())
        } else {
            Err(fail(
                code::DIMS,
                format!("the given dimensions do not multiply to {n}"),
            ))
        };
    }
    // prime factors, largest first, each to the free dimension smallest so far
    let mut factors = Vec::new();
    let mut p = 2;
    while p * p <= left {
        while left % p == 0 {
            factors.push(p);
            left /= p;
        }
        p += 1;
    }
    if left > 1 {
        factors.push(left);
    }
    let mut sizes = vec![1usize; free.len()];
    for f in factors.into_iter().rev() {
        let i = (0..sizes.len()).min_by_key(|&i| sizes[i]).unwrap_or(0);
        sizes[i] *= f;
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    for (i, s) in free.into_iter().zip(sizes) {
        dims[i] = s;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(n: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call("MPI_Dims_create", On::World, |_| {
        let n = count(n, "nnodes")?;
        let k = count(ndims, "ndims")?;
        // SAFETY: MPI's contract: ndims ints at `dims`.
        let given = unsafe { arr(dims.cast_const(), ndims, "dims")? };
        let mut d = given
            .iter()
            .map(|&x| {
                usize::try_from(x)
                    .map_err(|_| fail(code::DIMS, format!("dimension {x} is negative")))
            })
            .collect::<R<Vec<_>>>()?;
        dims_create(n, &mut d)?;
        for (i, v) in d.into_iter().enumerate().take(k) {
            // SAFETY: as above; i < ndims.
            unsafe { *dims.add(i) = v as c_int };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    c: c_int,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Cart_create", On::Comm(c), |st| {
        // SAFETY: MPI's contract: ndims ints in each array.
        let (d, p) = unsafe { (arr(dims, ndims, "dims")?, arr(periods, ndims, "periods")?) };
        let d = d
            .iter()
            .map(|&x| match usize::try_from(x) {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(fail(code::DIMS, format!("dimension {x} is not positive"))),
            })
            .collect::<R<Vec<_>>>()?;
        let n: usize = d.iter().product();
        let comm = st.intra(c)?;
        if n > comm.size() {
            return Err(fail(
                code::DIMS,
                format!("a grid of {n} ranks on {} ranks", comm.size()),
            ));
        }
        let me = comm.rank();
        let color = (me < n).then_some(0);
        let h = st.split(c, color, me as c_int)?;
        st.set_topo(
            h,
            Topo::Cart {
                dims: d,
                periods: p.iter().map(|&x| x != 0).collect(),
            },
        )?;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "comm_cart") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(c: c_int, ndims: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", On::Comm(c), |st| {
        let n = st.cart(c)?.0.len();
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(ndims, n as c_int, "ndims") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    c: c_int,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_get", On::Comm(c), |st| {
        let (d, p) = st.cart(c)?;
        let me = st.comm(c)?.rank();
        let k = count(maxdims, "maxdims")?.min(d.len());
        let xs = coords_of(d, me);
        for i in 0..k {
            // SAFETY: MPI's contract: maxdims ints in each array; i < maxdims.
            unsafe {
                *dims.add(i) = d[i] as c_int;
                *periods.add(i) = c_int::from(p[i]);
                *coords.add(i) = xs[i] as c_int;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(
    c: c_int,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_coords", On::Comm(c), |st| {
        let (d, _) = st.cart(c)?;
        let size = st.comm(c)?.size();
        let r = usize::try_from(rank)
            .ok()
            .filter(|&r| r < size)
            .ok_or_else(|| fail(code::RANK, format!("rank {rank} is not in the grid")))?;
        let k = count(maxdims, "maxdims")?;
        if k < d.len() {
            return Err(fail(
                code::ARG,
                format!("maxdims {k} is less than the grid's {} dimensions", d.len()),
            ));
        }
        for (i, x) in coords_of(d, r).into_iter().enumerate() {
            // SAFETY: MPI's contract: maxdims ints; i < ndims <= maxdims.
            unsafe { *coords.add(i) = x as c_int };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(c: c_int, coords: *const c_int, rank: *mut c_int) -> c_int {
    call("MPI_Cart_rank", On::Comm(c), |st| {
        let (d, p) = st.cart(c)?;
        // SAFETY: MPI's contract: ndims ints.
        let xs = unsafe { arr(coords, d.len() as c_int, "coords")? };
        let r = rank_of(d, p, xs).ok_or_else(|| {
            fail(
                code::ARG,
                format!("coordinates {xs:?} lie outside the grid"),
            )
        })?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(rank, r as c_int, "rank") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    c: c_int,
    direction: c_int,
    disp: c_int,
    src: *mut c_int,
    dst: *mut c_int,
) -> c_int {
    call("MPI_Cart_shift", On::Comm(c), |st| {
        let (d, p) = st.cart(c)?;
        let me = st.comm(c)?.rank();
        let k = usize::try_from(direction)
            .ok()
            .filter(|&k| k < d.len())
            .ok_or_else(|| {
                fail(
                    code::ARG,
                    format!("direction {direction} is not a dimension"),
                )
            })?;
        let here: Vec<c_int> = coords_of(d, me).into_iter().map(|x| x as c_int).collect();
        let at = |delta: c_int| {
            let mut xs = here.clone();
            xs[k] = xs[k].saturating_add(delta);
            rank_of(d, p, &xs).map_or(crate::p2p::PROC_NULL, |r| r as c_int)
        };
        let (s, t) = (at(-disp), at(disp));
        // SAFETY: MPI's contract: two int out-parameters.
        unsafe {
            out(src, s, "rank_source")?;
            out(dst, t, "rank_dest")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(c: c_int, remain: *const c_int, new: *mut c_int) -> c_int {
    call("MPI_Cart_sub", On::Comm(c), |st| {
        let (d, p) = st.cart(c)?;
        let (d, p) = (d.to_vec(), p.to_vec());
        // SAFETY: MPI's contract: ndims ints.
        let keep: Vec<bool> = unsafe { arr(remain, d.len() as c_int, "remain_dims")? }
            .iter()
            .map(|&x| x != 0)
            .collect();
        let me = st.comm(c)?.rank();
        let xs = coords_of(&d, me);
        // ranks that agree on the dropped coordinates share a subgrid
        let mut color = 0usize;
        for i in 0..d.len() {
            if !keep[i] {
                color = color * d[i] + xs[i];
            }
        }
        let h = st.split(c, Some(color as u32), me as c_int)?;
        let pick = |v: &[usize]| (0..d.len()).filter(|&i| keep[i]).map(|i| v[i]).collect();
        st.set_topo(
            h,
            Topo::Cart {
                dims: pick(&d),
                periods: (0..d.len()).filter(|&i| keep[i]).map(|i| p[i]).collect(),
            },
        )?;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "newcomm") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(c: c_int, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", On::Comm(c), |st| {
        let t = match st.comm(c)?.topo {
            Some(Topo::Cart { .. }) => CART,
            Some(Topo::Dist { .. }) => DIST_GRAPH,
            None => UNDEFINED,
        };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(status, t, "status") }
    })
}

/// Weights given with a neighbor list: (the weights, whether the graph is weighted).
///
/// # Safety
/// MPI's contract: `w` is MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY, or `n` ints.
unsafe fn weights(w: *const c_int, n: c_int) -> R<(Vec<c_int>, bool)> {
    match w as usize {
        UNWEIGHTED => Ok((vec![1; count(n, "degree")?], false)),
        WEIGHTS_EMPTY => Ok((Vec::new(), true)),
        // SAFETY: the caller's contract.
        _ => Ok((unsafe { arr(w, n, "weights")? }.to_vec(), true)),
    }
}

/// Checks neighbor ranks against the communicator's size.
fn ranks_in(v: &[c_int], size: usize) -> R<Vec<c_int>> {
    for &r in v {
        if usize::try_from(r).map_or(true, |r| r >= size) {
            return Err(fail(code::RANK, format!("neighbor {r} is not a rank")));
        }
    }
    Ok(v.to_vec())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    c: c_int,
    indegree: c_int,
    sources: *const c_int,
    sweights: *const c_int,
    outdegree: c_int,
    dests: *const c_int,
    dweights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_create_adjacent", On::Comm(c), |st| {
        let size = st.intra(c)?.size();
        // SAFETY: MPI's contract: the neighbor lists and their weights.
        let t = unsafe {
            let (sw, w1) = weights(sweights, indegree)?;
            let (dw, w2) = weights(dweights, outdegree)?;
            Topo::Dist {
                sources: ranks_in(arr(sources, indegree, "sources")?, size)?,
                sweights: sw,
                dests: ranks_in(arr(dests, outdegree, "destinations")?, size)?,
                dweights: dw,
                weighted: w1 || w2,
            }
        };
        let me = st.comm(c)?.rank() as c_int;
        let h = st.split(c, Some(0), me)?;
        st.set_topo(h, t)?;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "comm_dist_graph") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    c: c_int,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    dests: *const c_int,
    w: *const c_int,
    _info: c_int,
    _reorder: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_create", On::Comm(c), |st| {
        let comm = st.intra(c)?;
        let (me, size) = (comm.rank(), comm.size());
        // this rank's edges, (source, destination, weight), as 3 ints each
        let mut edges: Vec<u8> = Vec::new();
        let mut weighted = w as usize != UNWEIGHTED;
        // SAFETY: MPI's contract: n sources and degrees, and as many destinations
        // (and weights) as the degrees sum to.
        unsafe {
            let srcs = ranks_in(arr(sources, n, "sources")?, size)?;
            let degs = arr(degrees, n, "degrees")?;
            let total = degs.iter().try_fold(0usize, |a, &d| {
                Ok::<_, crate::Fail>(a + count(d, "degrees")?)
            })?;
            let ds = ranks_in(arr(dests, total as c_int, "destinations")?, size)?;
            let (ws, _) = if weighted && w as usize != WEIGHTS_EMPTY {
                weights(w, total as c_int)?
            } else {
                weighted = weighted && total > 0;
                (vec![1; total], false)
            };
            let mut k = 0;
            for (&s, &d) in srcs.iter().zip(degs) {
                for _ in 0..d {
                    for v in [s, ds[k], ws[k]] {
                        edges.extend_from_slice(&v.to_le_bytes());
                    }
                    k += 1;
                }
            }
        }
        let all = crate::coll::allgather_bytes(comm.world(), &edges)?;
        let any_weighted = crate::coll::allgather_bytes(comm.world(), &[u8::from(weighted)])?
            .iter()
            .any(|b| b.first() == Some(&1));
        let (mut sources, mut sweights, mut dsts, mut dweights) = (vec![], vec![], vec![], vec![]);
        for part in &all {
            for e in part.chunks_exact(12) {
                let v = |i: usize| c_int::from_le_bytes([e[i], e[i + 1], e[i + 2], e[i + 3]]);
                let (s, d, wt) = (v(0), v(4), v(8));
                if d as usize == me {
                    sources.push(s);
                    sweights.push(wt);
                }
                if s as usize == me {
                    dsts.push(d);
                    dweights.push(wt);
                }
            }
        }
        let h = st.split(c, Some(0), me as c_int)?;
        st.set_topo(
            h,
            Topo::Dist {
                sources,
                sweights,
                dests: dsts,
                dweights,
                weighted: any_weighted,
            },
        )?;
        // SAFETY: MPI's contract: a communicator out-parameter.
        unsafe { out(new, h, "comm_dist_graph") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    c: c_int,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors_count", On::Comm(c), |st| {
        let Topo::Dist {
            sources,
            dests,
            weighted: w,
            ..
        } = st.topo(c)?
        else {
            return Err(fail(code::TOPOLOGY, "not a distributed graph"));
        };
        // SAFETY: MPI's contract: three int out-parameters.
        unsafe {
            out(indegree, sources.len() as c_int, "indegree")?;
            out(outdegree, dests.len() as c_int, "outdegree")?;
            out(weighted, c_int::from(*w), "weighted")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    c: c_int,
    maxin: c_int,
    sources: *mut c_int,
    sweights: *mut c_int,
    maxout: c_int,
    dests: *mut c_int,
    dweights: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors", On::Comm(c), |st| {
        let Topo::Dist {
            sources: s,
            sweights: sw,
            dests: d,
            dweights: dw,
            ..
        } = st.topo(c)?
        else {
            return Err(fail(code::TOPOLOGY, "not a distributed graph"));
        };
        let fill = |p: *mut c_int, v: &[c_int], max: c_int| -> R {
            if p.is_null() || p as usize == UNWEIGHTED || p as usize == WEIGHTS_EMPTY {
                return Ok(());
            }
            let k = count(max, "maxdegree")?.min(v.len());
            // SAFETY: MPI's contract: `max` ints at p; k <= max.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, k) };
            Ok(())
        };
        fill(sources, s, maxin)?;
        fill(sweights, sw, maxin)?;
        fill(dests, d, maxout)?;
        fill(dweights, dw, maxout)
    })
}

/// The neighbors of `rank` in a Cartesian grid, as the neighborhood collectives order
/// them: for each dimension, the rank one step back, then one step forward (None off
/// the edge of a dimension that is not periodic).
pub(crate) fn cart_neighbors(dims: &[usize], periods: &[bool], rank: usize) -> Vec<Option<usize>> {
    let here: Vec<c_int> = coords_of(dims, rank)
        .into_iter()
        .map(|x| x as c_int)
        .collect();
    let mut out = Vec::with_capacity(2 * dims.len());
    for k in 0..dims.len() {
        for step in [-1, 1] {
            let mut xs = here.clone();
            xs[k] += step;
            out.push(rank_of(dims, periods, &xs));
        }
    }
    out
}
