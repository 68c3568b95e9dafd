//! The queued transport's wire format: the tags of request and reply records, the codes
//! a target leaves in an origin's rejection flag, and a request chunk's header and
//! runs, with the decoder that validates a request against the target's window.

use rma_core::{BasicType, Op, RmaCall};
use rma_ops::atomic::atomic_align;

pub(super) const TAG_PUT: u32 = 1;
pub(super) const TAG_GET: u32 = 2;
pub(super) const TAG_ACC: u32 = 3;
pub(super) const TAG_GACC: u32 = 4;
pub(super) const TAG_FOP: u32 = 5;
pub(super) const TAG_CAS: u32 = 6;
pub(super) const TAG_REPLY: u32 = 16;
pub(super) const TAG_REJECT: u32 = 17;
/// Why a target stopped taking calls from an origin ([`crate::winmem::PairCtl`]'s
/// `rejected`; 0 while it takes them). Honest origins never send a malformed record
/// (rma-win validates every call first), so a rejection means another process wrote
/// into the rings: the target ignores that origin's ring from then on, and every wait
/// and call of the origin toward it fails.
pub(super) const REJECT_MESSAGE: u32 = 1;
/// The request ring from the origin is corrupt (positions, a record's length).
pub(super) const REJECT_RING: u32 = 2;
/// The reply ring toward the origin is corrupt: a reply could not be sent.
pub(super) const REJECT_REPLY_RING: u32 = 3;
/// A request could not be applied: a chunk lock of the target's window stayed held
/// past the stall bound (its holder stopped, or the lock word is corrupt).
pub(super) const REJECT_STALLED: u32 = 4;
pub(super) const HDR: usize = 32;
pub(super) const RUN: usize = 16;
pub(super) const FLAG_LAST: u8 = 1;

/// A request chunk's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hdr {
    pub(crate) seq: u64,
    pub(crate) basic: u8,
    pub(crate) op: u8,
    pub(crate) flags: u8,
    pub(crate) nruns: u32,
    pub(crate) base: u64,
    pub(crate) data_len: u32,
}

impl Hdr {
    pub(crate) fn encode(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[..8].copy_from_slice(&self.seq.to_ne_bytes());
        b[8] = self.basic;
        b[9] = self.op;
        b[10] = self.flags;
        b[12..16].copy_from_slice(&self.nruns.to_ne_bytes());
        b[16..24].copy_from_slice(&self.base.to_ne_bytes());
        b[24..28].copy_from_slice(&self.data_len.to_ne_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Hdr> {
        let b: &[u8; HDR] = b.get(..HDR)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        Some(Hdr {
            seq: u64_at(0),
            basic: b[8],
            op: b[9],
            flags: b[10],
            nruns: u32_at(12),
            base: u64_at(16),
            data_len: u32_at(24),
        })
    }
}

/// A validated request: what to do, where, with which bytes. Every run lies inside the
/// target window (`start + len <= window_len`).
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) tag: u32,
    pub(crate) hdr: Hdr,
    pub(crate) basic: BasicType,
    pub(crate) op: Op,
    /// (absolute byte offset in the window, length)
    pub(crate) runs: Vec<(usize, usize)>,
    pub(crate) data: &'a [u8],
    /// Bytes the reply carries (0 for put and accumulate).
    pub(crate) reply_len: usize,
}

/// Decodes and validates one request record against a window of `window_len` bytes
/// whose start lies at address `base_addr` in this process (for element alignment).
/// Every failure is an error string; nothing is touched.
pub(crate) fn decode_request(
    tag: u32,
    msg: &[u8],
    window_len: usize,
    base_addr: usize,
) -> std::result::Result<Request<'_>, String> {
    let hdr = Hdr::decode(msg).ok_or("record shorter than a header")?;
    if !matches!(
        tag,
        TAG_PUT | TAG_GET | TAG_ACC | TAG_GACC | TAG_FOP | TAG_CAS
    ) {
        return Err(format!("unknown request tag {tag}"));
    }
    let basic =
        BasicType::from_u8(hdr.basic).ok_or_else(|| format!("unknown basic type {}", hdr.basic))?;
    let op = Op::from_u8(hdr.op).ok_or_else(|| format!("unknown op {}", hdr.op))?;
    let nruns = hdr.nruns as usize;
    let runs_end = nruns
        .checked_mul(RUN)
        .and_then(|r| r.checked_add(HDR))
        .ok_or("run count overflows")?;
    let data_len = hdr.data_len as usize;
    if runs_end.checked_add(data_len) != Some(msg.len()) {
        return Err(format!(
            "record of {} bytes does not hold {nruns} runs and {data_len} data bytes",
            msg.len()
        ));
    }
    let base = usize::try_from(hdr.base).map_err(|_| "base offset overflows")?;
    let mut runs = Vec::with_capacity(nruns);
    let mut total = 0usize;
    for i in 0..nruns {
        let r = &msg[HDR + i * RUN..HDR + (i + 1) * RUN];
        let mut w = [0u8; 8];
        w.copy_from_slice(&r[..8]);
        let off = i64::from_ne_bytes(w);
        w.copy_from_slice(&r[8..]);
        let len = u64::from_ne_bytes(w);
        let start = (base as i128) + off as i128;
        let end = start + len as i128;
        if start < 0 || end > window_len as i128 {
            return Err(format!(
                "run [{start}, {end}) outside the window of {window_len} bytes"
            ));
        }
        let (start, len) = (start as usize, len as usize);
        total = total.checked_add(len).ok_or("run lengths overflow")?;
        runs.push((start, len));
    }
    let atomic = matches!(tag, TAG_ACC | TAG_GACC | TAG_FOP | TAG_CAS);
    if atomic {
        let (size, align) = (basic.size(), atomic_align(basic));
        // alignment is that of the real address: a window created over a caller's
        // buffer may start anywhere
        if runs
            .iter()
            .any(|&(s, l)| base_addr.wrapping_add(s) % align != 0 || l % size != 0)
        {
            return Err(format!("runs not aligned to whole {basic} elements"));
        }
        let call = match tag {
            TAG_ACC => RmaCall::Accumulate,
            TAG_GACC => RmaCall::GetAccumulate,
            _ => RmaCall::FetchAndOp,
        };
        if tag == TAG_CAS {
            rma_ops::check_cas_type(basic).map_err(|e| e.to_string())?;
        } else {
            rma_ops::check(op, basic, call).map_err(|e| e.to_string())?;
        }
        if matches!(tag, TAG_FOP | TAG_CAS) && (nruns != 1 || total != size) {
            return Err("fetch_and_op and compare_and_swap take exactly one element".into());
        }
    }
    let expect_data = match tag {
        TAG_PUT | TAG_ACC => total,
        TAG_GET => 0,
        TAG_GACC | TAG_FOP if op == Op::NoOp => 0,
        TAG_GACC | TAG_FOP => total,
        _ => 2 * total, // CAS: origin and compare
    };
    if data_len != expect_data {
        return Err(format!(
            "{data_len} data bytes where {expect_data} are needed"
        ));
    }
    let reply_len = if matches!(tag, TAG_PUT | TAG_ACC) {
        0
    } else {
        total
    };
    Ok(Request {
        tag,
        hdr,
        basic,
        op,
        runs,
        data: &msg[runs_end..],
        reply_len,
    })
}
