//! MPI error codes back to [`rma_core::Error`], with the MPI error class preserved.
//!
//! The shim reports each MPI error's class as rma's own class code (`error_class` in
//! shim.c); this module picks the [`Error`] variant of that class and fills it from
//! what the call knew ([`Call`]), so that `err.class()` names the class the MPI library
//! raised and the message carries the library's own text.

use crate::ffi::Api;
use rma_core::{BasicType, Error, Op, Rank, Result};
use std::ffi::{c_char, c_int, CStr};

/// The shim's code for an integer it does not know (a basic type, op or bit).
const SHIM_EBADCODE: c_int = -1;
/// The shim's code for a failed allocation.
const SHIM_ENOMEM: c_int = -2;

/// What a failing call was doing, to fill the error's structured fields: built
/// with the call, read only if it fails ([`Call::check`], [`Call::error`]).
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The MPI function (`"MPI_Win_lock"`).
    name: &'static str,
    /// The target or peer rank, if any.
    rank: Option<Rank>,
    /// The basic type and op, if any.
    basic: Option<BasicType>,
    op: Option<Op>,
    /// Assertion bits given and the bits the call accepts.
    assert: Option<(u32, u32)>,
    /// The target byte range `[start, end)` and the target window's length.
    range: Option<(i128, i128, usize)>,
    /// The displacement and the target's disp_unit.
    disp: Option<(i64, usize)>,
    /// The number of bytes the call moves.
    bytes: usize,
    /// The size of the group the ranks index.
    size: usize,
}

impl Call {
    /// A call with nothing known but its name.
    pub const fn new(name: &'static str) -> Call {
        Call {
            name,
            rank: None,
            basic: None,
            op: None,
            assert: None,
            range: None,
            disp: None,
            bytes: 0,
            size: 0,
        }
    }

    /// With a target rank.
    pub const fn rank(mut self, rank: Rank) -> Call {
        self.rank = Some(rank);
        self
    }

    /// With a basic type and op.
    pub const fn typed(mut self, basic: BasicType, op: Option<Op>) -> Call {
        self.basic = Some(basic);
        self.op = op;
        self
    }

    /// With where the call lands — the target bytes `[start, end)` and the target
    /// window's length (`range`), the displacement and the target's disp_unit
    /// (`disp`) — and how many bytes it moves.
    pub const fn placed(
        mut self,
        range: (i128, i128, usize),
        disp: (i64, usize),
        bytes: usize,
    ) -> Call {
        self.range = Some(range);
        self.disp = Some(disp);
        self.bytes = bytes;
        self
    }

    /// With assertion bits and the call's accepted bits.
    pub const fn assert(mut self, bits: u32, allowed: u32) -> Call {
        self.assert = Some((bits, allowed));
        self
    }

    /// With the size of the group its ranks index (for an error of class RANK).
    pub const fn group(mut self, size: usize) -> Call {
        self.size = size;
        self
    }

    /// `Ok` for MPI_SUCCESS, else [`Call::error`].
    #[inline]
    pub fn check(&self, api: &Api, code: c_int) -> Result<()> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.error(api, code))
        }
    }

    /// The [`Error`] for this call, failed with MPI error code (or negative shim
    /// code) `code`: the variant of the MPI error class the library raised, its
    /// message naming the MPI function, class and the library's text. Asks the
    /// library (MPI_Error_class, MPI_Error_string), so it is an MPI call too.
    pub fn error(&self, api: &Api, code: c_int) -> Error {
        match code {
            SHIM_EBADCODE => {
                return Error::Internal {
                    reason: format!("{}: the shim was passed a code it does not know", self.name),
                }
            }
            SHIM_ENOMEM => {
                return Error::NoMem {
                    reason: format!("{}: the shim could not allocate", self.name),
                }
            }
            _ => {}
        }
        // SAFETY: `error_class` takes any integer and returns a class code.
        let class = unsafe { (api.error_class)(code) };
        of_class(class, describe(api, code, self), self)
    }
}

/// The MPI library's message for `code`, prefixed by the function and class names.
fn describe(api: &Api, code: c_int, call: &Call) -> String {
    let mut buf = [0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for the capacity passed; the shim writes at most that many
    // bytes and their count into `len`.
    let rc = unsafe {
        (api.error_string)(
            code,
            buf.as_mut_ptr().cast::<c_char>(),
            buf.len() as c_int,
            &mut len,
        )
    };
    let text = if rc == 0 {
        let n = (len.max(0) as usize).min(buf.len());
        String::from_utf8_lossy(&buf[..n]).trim().to_owned()
    } else {
        format!("MPI error code {code}")
    };
    // SAFETY: the shim returns NULL or a pointer to a static NUL-terminated name.
    let class = unsafe {
        let p = (api.error_class_name)(code);
        if p.is_null() {
            "MPI_ERR_OTHER".to_owned()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    format!("{} failed with {class}: {text}", call.name)
}

/// The [`Error`] variant of rma class code `class` (shim.c's `C_*` enum).
fn of_class(class: c_int, reason: String, call: &Call) -> Error {
    let rank = call.rank.unwrap_or(Rank::NULL);
    match class {
        1 => Error::InvalidRank {
            rank,
            size: call.size,
        },
        2 => match call.disp {
            Some((disp, disp_unit)) => Error::DispOverflow { disp, disp_unit },
            None => Error::InvalidDispUnit { disp_unit: 0 },
        },
        3 => Error::CountOverflow {
            count: call.bytes,
            what: call.name,
        },
        4 => Error::InvalidDatatype { reason },
        5 => Error::OpNotForType {
            op: call.op.unwrap_or(Op::NoOp),
            basic: call.basic.unwrap_or(BasicType::Byte),
        },
        6 => Error::BufferTooSmall {
            which: "origin",
            needed: call.bytes,
            got: call.bytes,
        },
        7 => {
            let (start, end, window_len) = call.range.unwrap_or((0, 0, 0));
            Error::OutOfWindow {
                rank,
                start,
                end,
                window_len,
            }
        }
        8 => Error::Sync {
            call: call.name,
            reason,
        },
        9 => Error::Flavor { reason },
        10 => Error::Conflict { reason },
        11 => {
            let (bits, allowed) = call.assert.unwrap_or((0, 0));
            Error::InvalidAssert {
                call: call.name,
                bits,
                allowed,
            }
        }
        12 => Error::InvalidInfo {
            key: String::new(),
            value: String::new(),
            reason,
        },
        13 => Error::InvalidArgument { reason },
        14 => Error::InvalidWindow { reason },
        15 => Error::NoMem { reason },
        16 => Error::ProcFailed { rank, reason },
        17 => Error::Internal { reason },
        19 => Error::NotShareable { reason },
        _ => Error::Os {
            context: call.name.to_owned(),
            source: std::io::Error::other(reason),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rma_core::ErrorClass;

    /// Every class code the shim emits maps to the variant of that class.
    #[test]
    fn class_codes_map_to_their_classes() {
        use ErrorClass::*;
        let want = [
            Rank,
            Disp,
            Count,
            Type,
            ErrorClass::Op,
            Buffer,
            RmaRange,
            RmaSync,
            RmaFlavor,
            RmaConflict,
            Assert,
            Info,
            Arg,
            Win,
            NoMem,
            ProcFailed,
            Intern,
            Other,
            RmaShared,
        ];
        let call = Call::new("MPI_Test").rank(rma_core::Rank::new(1));
        for (code, class) in (1..).zip(want) {
            let e = of_class(code, "why".into(), &call);
            assert_eq!(e.class(), class, "shim class code {code}");
        }
        assert_eq!(of_class(99, "why".into(), &call).class(), Other);
    }
}
