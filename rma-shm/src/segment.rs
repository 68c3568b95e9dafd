//! Named shared-memory segments: files in /dev/shm, owner-only, created exclusively,
//! backing store reserved up front, mapped read-write. The mapping is only ever touched
//! through raw pointers and atomics (DESIGN.md decision 7).

use memmap2::MmapRaw;
use rma_core::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

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

impl Segment {
    /// Creates segment `name` of `len` bytes (zero-filled), failing if the name exists.
    /// Permissions are 0600; the memory is reserved now, so a full /dev/shm is an error
    /// of class NO_MEM here rather than a SIGBUS later.
    pub fn create(name: &str, len: usize) -> Result<Segment> {
        let path = path_of(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::Internal {
                        reason: format!(
                            "shared segment {name} already exists; refusing to reuse it"
                        ),
                    }
                } else {
                    Error::Os {
                        context: format!("creating shared segment {}", path.display()),
                        source: e,
                    }
                }
            })?;
        let sized = file
            .set_len(len as u64)
            .and_then(|_| crate::sys::reserve(&file, len as u64));
        if let Err(e) = sized {
            let _ = std::fs::remove_file(&path);
            return Err(Error::NoMem {
                reason: format!("cannot reserve {len} bytes of shared memory for {name}: {e}"),
            });
        }
        Self::map(name, &file, len).inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
        })
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

    /// Removes every segment whose name starts with `prefix` (the launcher's clean-up).
    pub fn unlink_prefix(prefix: &str) -> usize {
        let mut n = 0;
        if let Ok(dir) = std::fs::read_dir(SHM_DIR) {
            for entry in dir.flatten() {
                if entry.file_name().to_string_lossy().starts_with(prefix)
                    && std::fs::remove_file(entry.path()).is_ok()
                {
                    n += 1;
                }
            }
        }
        n
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
