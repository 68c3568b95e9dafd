//! Named shared-memory segments: files in /dev/shm, owner-only, created exclusively,
//! backing store reserved up front, mapped read-write. The mapping is only ever touched
//! through raw pointers and atomics (docs/design.md decision 7).

use memmap2::MmapRaw;
use rma_core::{Error, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

const SHM_DIR: &str = "/dev/shm";

/// A mapped shared segment.
#[derive(Debug)]
pub struct Segment {
    name: String,
    map: MmapRaw,
    len: usize,
}

fn path_of(name: &str) -> PathBuf {
    PathBuf::from(SHM_DIR).join(name)
}

fn taken(name: &str) -> Error {
    Error::Internal {
        reason: format!("shared segment {name} already exists; refusing to reuse it"),
    }
}

impl Segment {
    /// Creates segment `name` of `len` bytes (zero-filled), failing if the name exists.
    /// Permissions are 0600; the memory is reserved now, so a full /dev/shm is an error
    /// of class NO_MEM here rather than a SIGBUS later.
    pub fn create(name: &str, len: usize) -> Result<Segment> {
        Self::create_new(name, len)?.ok_or_else(|| taken(name))
    }

    /// Creates a segment of `len` bytes under the first name of `names` that is free,
    /// trying at most `attempts` names: a name someone else already holds (a squatter
    /// that guessed it, say) is skipped, never reused. Errors other than a taken name
    /// end the search at once.
    pub fn create_unique(
        mut names: impl FnMut() -> String,
        len: usize,
        attempts: usize,
    ) -> Result<Segment> {
        let mut last = None;
        for _ in 0..attempts {
            let name = names();
            match Self::create_new(&name, len)? {
                Some(seg) => return Ok(seg),
                None => {
                    tracing::warn!("shared segment {name} already exists; trying another name");
                    last = Some(name);
                }
            }
        }
        Err(match last {
            Some(name) => Error::Internal {
                reason: format!(
                    "shared segment {name} already exists, as did the {} names tried before it",
                    attempts.saturating_sub(1)
                ),
            },
            None => Error::arg("no segment name to try"),
        })
    }

    /// Creates segment `name`, or `Ok(None)` if the name exists.
    fn create_new(name: &str, len: usize) -> Result<Option<Segment>> {
        let path = path_of(name);
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
            Err(e) => {
                return Err(Error::Os {
                    context: format!("creating shared segment {}", path.display()),
                    source: e,
                })
            }
        };
        let sized = file
            .set_len(len as u64)
            .and_then(|_| crate::sys::reserve(&file, len as u64));
        if let Err(e) = sized {
            let _ = std::fs::remove_file(&path);
            return Err(Error::NoMem {
                reason: format!("cannot reserve {len} bytes of shared memory for {name}: {e}"),
            });
        }
        Self::map(name, &file, len)
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&path);
            })
            .map(Some)
    }

    /// Opens and maps an existing segment, which must be at least `min_len` bytes.
    pub fn open(name: &str, min_len: usize) -> Result<Segment> {
        let path = path_of(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::Os {
                context: format!("opening shared segment {}", path.display()),
                source: e,
            })?;
        let actual = file
            .metadata()
            .map_err(|e| Error::Os {
                context: format!("reading the size of {}", path.display()),
                source: e,
            })?
            .len();
        if actual < min_len as u64 || actual > usize::MAX as u64 {
            return Err(Error::Internal {
                reason: format!(
                    "shared segment {name} has {actual} bytes, expected at least {min_len}"
                ),
            });
        }
        Self::map(name, &file, actual as usize)
    }

    fn map(name: &str, file: &File, len: usize) -> Result<Segment> {
        let map = MmapRaw::map_raw(file).map_err(|e| Error::Os {
            context: format!("mapping shared segment {name}"),
            source: e,
        })?;
        Ok(Segment {
            name: name.to_owned(),
            map,
            len,
        })
    }

    /// Removes the name; the memory stays mapped until every mapping is dropped.
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(path_of(&self.name));
    }

    /// Removes a segment by name, if it exists.
    pub fn unlink_name(name: &str) {
        let _ = std::fs::remove_file(path_of(name));
    }

    /// Removes every segment whose name starts with `prefix` (the launcher's clean-up),
    /// and every directory so named that this user owns, with what it holds (the
    /// directories of sockets that ranks make beside their world's segments, which
    /// ranks that ended without cleaning up leave).
    pub fn unlink_prefix(prefix: &str) -> usize {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let mut n = 0;
        if let Ok(dir) = std::fs::read_dir(SHM_DIR) {
            for entry in dir.flatten() {
                if !entry.file_name().to_string_lossy().starts_with(prefix) {
                    continue;
                }
                // not following links: a link is removed, never what it names
                let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                    continue;
                };
                let gone = if meta.is_dir() {
                    meta.uid() == me && std::fs::remove_dir_all(entry.path()).is_ok()
                } else {
                    std::fs::remove_file(entry.path()).is_ok()
                };
                n += usize::from(gone);
            }
        }
        n
    }

    /// Removes what worlds of this user left in /dev/shm when the process that named
    /// them died without cleaning up (a launcher killed together with its reaper, as a
    /// cgroup or OOM kill does): every regular file owned by this user whose name has
    /// the shape of a world's segment (`rma-<pid>-<16 hex digits>`, alone or followed by
    /// `-` and a window's part) and whose pid is no longer a process. The pid in a name is
    /// the launcher's (or, for ranks as threads, the process's), and the ranks of a
    /// launcher die with it, so a dead pid means a dead world. Segments whose pid is alive
    /// are never touched, nor are other users' files. Returns how many names were
    /// removed. (Worlds in another pid namespace that share this /dev/shm under the same
    /// user are beyond what a pid can tell.)
    pub fn sweep_stale() -> usize {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let mut n = 0;
        let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
            return 0;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(world_pid_of) else {
                continue;
            };
            let ours = entry.metadata().is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.file_type().is_file() && m.uid() == me
            });
            if ours && !crate::sys::pid_alive(pid) && std::fs::remove_file(entry.path()).is_ok() {
                tracing::info!(
                    "removed {name:?}, left in {SHM_DIR} by process {pid}, which is gone"
                );
                n += 1;
            }
        }
        n
    }

    /// Makes this mapping the one this process shares under its name: a later
    /// [`Segment::open_shared`] of the same name in this process returns it instead of
    /// mapping the segment again.
    pub fn share(self) -> Arc<Segment> {
        let seg = Arc::new(self);
        let mut reg = registry();
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(seg.name.clone(), Arc::downgrade(&seg));
        seg
    }

    /// Opens segment `name` (at least `min_len` bytes) through this process's shared
    /// mapping of it if there is one, else maps it and shares that mapping. Ranks as
    /// threads thus map each window segment once per process, not once per rank: with
    /// N ranks the latter makes N² mappings, past the kernel's limit on mappings per
    /// process (`vm.max_map_count`, 65530 by default) at about 250 ranks, where even
    /// malloc starts to fail.
    pub fn open_shared(name: &str, min_len: usize) -> Result<Arc<Segment>> {
        if let Some(seg) = registry().get(name).and_then(Weak::upgrade) {
            if seg.len < min_len {
                return Err(Error::Internal {
                    reason: format!(
                        "shared segment {name} has {} bytes, expected at least {min_len}",
                        seg.len
                    ),
                });
            }
            return Ok(seg);
        }
        Ok(Self::open(name, min_len)?.share())
    }

    /// The segment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The first byte of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, for segments rma creates).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// This process's shared mappings by name ([`Segment::share`]); entries whose mapping
/// is gone are pruned on every insert.
fn registry() -> std::sync::MutexGuard<'static, HashMap<String, Weak<Segment>>> {
    static REG: std::sync::LazyLock<Mutex<HashMap<String, Weak<Segment>>>> =
        std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));
    // the map stays consistent even if a holder panicked: every operation is one call
    REG.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pid in the name of a world's segment: `rma-<pid>-<16 hex digits>` (the world's
/// control segment) or that followed by `-` and more (its windows' segments); None for
/// any other name.
pub(crate) fn world_pid_of(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix("rma-")?.split_once('-')?;
    if pid.is_empty() || pid.len() > 10 || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let pid: u32 = pid.parse().ok()?;
    let tag = rest.as_bytes().get(..16)?;
    if !tag.iter().all(u8::is_ascii_hexdigit)
        || !matches!(rest.as_bytes().get(16), None | Some(b'-'))
    {
        return None;
    }
    (1..=i32::MAX as u32).contains(&pid).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_pids_are_read_only_from_names_of_rmas_shape() {
        let tag = "0123456789abcdef";
        assert_eq!(world_pid_of(&format!("rma-42-{tag}")), Some(42));
        assert_eq!(world_pid_of(&format!("rma-42-{tag}-{tag}-w3-r1")), Some(42));
        for other in [
            format!("rma-42-{tag}x"),
            "rma-42-0123456789abcde".to_owned(),
            format!("rma-test-{tag}"),
            format!("rma--{tag}"),
            format!("rma-0-{tag}"),
            format!("rma-4294967296-{tag}"),
            format!("rma-+42-{tag}"),
            format!("sem.rma-42-{tag}"),
            format!("rma-42-{}", "g".repeat(16)),
        ] {
            assert_eq!(world_pid_of(&other), None, "{other}");
        }
    }
}
