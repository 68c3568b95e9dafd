use crate::error::{Error, Result};
use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// Assertion flags for synchronization calls (MPI_MODE_*), OR-ed together.
///
/// `Assert::NONE` (0) is valid everywhere. Each synchronization call accepts only some
/// flags: [`Assert::check_fence`], [`Assert::check_lock`], [`Assert::check_post`] and
/// [`Assert::check_start`] return an error of class ASSERT for any other bit.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Assert(u32);

impl Assert {
    /// No assertion.
    pub const NONE: Assert = Assert(0);
    /// The matching calls on other ranks are known to be in the right state
    /// (lock, start, post): no synchronization with the target is needed.
    #[doc(alias = "MPI_MODE_NOCHECK")]
    pub const NOCHECK: Assert = Assert(1);
    /// The local window was not updated by local stores since the last synchronization.
    #[doc(alias = "MPI_MODE_NOSTORE")]
    pub const NOSTORE: Assert = Assert(2);
    /// The local window will not be updated by put or accumulate until the next
    /// synchronization.
    #[doc(alias = "MPI_MODE_NOPUT")]
    pub const NOPUT: Assert = Assert(4);
    /// The fence does not complete any sequence of locally issued RMA calls.
    #[doc(alias = "MPI_MODE_NOPRECEDE")]
    pub const NOPRECEDE: Assert = Assert(8);
    /// The fence does not start any sequence of locally issued RMA calls.
    #[doc(alias = "MPI_MODE_NOSUCCEED")]
    pub const NOSUCCEED: Assert = Assert(16);

    const ALL: u32 = 31;

    /// Flags from raw bits; unknown bits are kept so that validation can report them.
    pub const fn from_bits(bits: u32) -> Assert {
        Assert(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Assert) -> bool {
        self.0 & other.0 == other.0
    }

    fn check(self, call: &'static str, allowed: Assert) -> Result<Assert> {
        if self.0 & !allowed.0 != 0 {
            Err(Error::InvalidAssert {
                call,
                bits: self.0,
                allowed: allowed.0,
            })
        } else {
            Ok(self)
        }
    }

    /// Valid assertions for fence: NOSTORE, NOPUT, NOPRECEDE, NOSUCCEED.
    pub fn check_fence(self) -> Result<Assert> {
        self.check(
            "fence",
            Assert::NOSTORE | Assert::NOPUT | Assert::NOPRECEDE | Assert::NOSUCCEED,
        )
    }

    /// Valid assertions for lock and lock_all: NOCHECK.
    pub fn check_lock(self) -> Result<Assert> {
        self.check("lock", Assert::NOCHECK)
    }

    /// Valid assertions for post: NOCHECK, NOSTORE, NOPUT.
    pub fn check_post(self) -> Result<Assert> {
        self.check("post", Assert::NOCHECK | Assert::NOSTORE | Assert::NOPUT)
    }

    /// Valid assertions for start: NOCHECK.
    pub fn check_start(self) -> Result<Assert> {
        self.check("start", Assert::NOCHECK)
    }
}

impl BitOr for Assert {
    type Output = Assert;
    fn bitor(self, rhs: Assert) -> Assert {
        Assert(self.0 | rhs.0)
    }
}

impl BitOrAssign for Assert {
    fn bitor_assign(&mut self, rhs: Assert) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for Assert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(u32, &str); 5] = [
            (1, "NOCHECK"),
            (2, "NOSTORE"),
            (4, "NOPUT"),
            (8, "NOPRECEDE"),
            (16, "NOSUCCEED"),
        ];
        if self.0 == 0 {
            return f.write_str("Assert::NONE");
        }
        let mut first = true;
        for (bit, name) in NAMES {
            if self.0 & bit != 0 {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        let unknown = self.0 & !Assert::ALL;
        if unknown != 0 {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{unknown:#x}")?;
        }
        Ok(())
    }
}

/// The kind of a passive-target lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockType {
    /// Many origins may hold a shared lock on one target at once (MPI_LOCK_SHARED).
    #[doc(alias = "MPI_LOCK_SHARED")]
    Shared,
    /// One origin at a time (MPI_LOCK_EXCLUSIVE).
    #[doc(alias = "MPI_LOCK_EXCLUSIVE")]
    Exclusive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_accepts_its_flags_and_rejects_nocheck() {
        let ok = Assert::NOSTORE | Assert::NOPUT | Assert::NOPRECEDE | Assert::NOSUCCEED;
        assert_eq!(ok.check_fence().unwrap(), ok);
        assert_eq!(Assert::NONE.check_fence().unwrap(), Assert::NONE);
        let err = Assert::NOCHECK.check_fence().unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Assert);
        let err = Assert::from_bits(64).check_fence().unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Assert);
    }

    #[test]
    fn lock_post_start_masks() {
        assert!(Assert::NOCHECK.check_lock().is_ok());
        assert!(Assert::NOPUT.check_lock().is_err());
        assert!((Assert::NOCHECK | Assert::NOSTORE | Assert::NOPUT)
            .check_post()
            .is_ok());
        assert!(Assert::NOPRECEDE.check_post().is_err());
        assert!(Assert::NOCHECK.check_start().is_ok());
        assert!(Assert::NOSTORE.check_start().is_err());
    }

    #[test]
    fn debug_names_flags() {
        assert_eq!(
            format!("{:?}", Assert::NOPRECEDE | Assert::NOSUCCEED),
            "NOPRECEDE | NOSUCCEED"
        );
        assert_eq!(
            format!("{:?}", Assert::from_bits(2 | 128)),
            "NOSTORE | 0x80"
        );
    }
}
