//! Output files of the `kiln` binary (not part of the library).
//!
//! A file is written to a temporary file beside its destination and renamed
//! over it, so a failed command leaves nothing behind. Before any work the
//! destination is resolved and checked:
//! - a symbolic link is written through: its target is replaced, the link
//!   kept (a link to nothing is refused);
//! - anything but a regular file (a directory, a device node, a pipe) is
//!   refused, never replaced;
//! - a new file gets the usual mode (0666 less the umask), an existing one
//!   keeps its mode.
//!
//! Messages name the user's path, never the temporary file's.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// One output file, checked, with its temporary file open beside it.
pub struct OutFile {
    /// As the user gave it, for messages.
    shown: PathBuf,
    /// Where the bytes land (symbolic links resolved).
    target: PathBuf,
    /// The target's absolute path, to compare destinations.
    key: PathBuf,
    /// An existing target's mode, kept.
    keep: Option<Permissions>,
    tmp: NamedTempFile,
}

/// An I/O error without the path some libraries add to it (tempfile names
/// its temporary file, which the user never asked for).
fn plain(e: &io::Error) -> io::Error {
    e.raw_os_error().map_or_else(|| io::Error::from(e.kind()), io::Error::from_raw_os_error)
}

/// The absolute form of `p`, whose parent directory exists.
fn absolute(p: &Path) -> io::Result<PathBuf> {
    let name = p.file_name().ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Ok(fs::canonicalize(parent)?.join(name))
}

impl OutFile {
    /// Resolves and checks `path` and opens the temporary file beside its
    /// target, so an unwritable destination fails before any work.
    pub fn create(path: &Path) -> Result<OutFile, String> {
        let shown = path.to_path_buf();
        let cannot = |e: &io::Error| format!("cannot write `{}`: {}", shown.display(), plain(e));
        let (target, keep) = match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => (path.to_path_buf(), None),
            Err(e) => return Err(cannot(&e)),
            Ok(m) => {
                let target = if m.file_type().is_symlink() {
                    fs::canonicalize(path).map_err(|_| {
                        format!("cannot write `{}`: it is a symbolic link to a missing file", shown.display())
                    })?
                } else {
                    path.to_path_buf()
                };
                let meta = fs::metadata(&target).map_err(|e| cannot(&e))?;
                if meta.is_dir() {
                    return Err(format!("cannot write `{}`: it is a directory", shown.display()));
                }
                if !meta.is_file() {
                    return Err(format!(
                        "refusing to replace `{}`: it is not a regular file (a device, pipe or socket)",
                        shown.display()
                    ));
                }
                (target, Some(meta.permissions()))
            }
        };
        let key = absolute(&target).map_err(|e| cannot(&e))?;
        let dir = key.parent().unwrap_or(Path::new("/"));
        let mut builder = tempfile::Builder::new();
        builder.prefix(".kiln-");
        // The mode goes to open(2), which applies the umask: a new file
        // gets the mode any other tool would give it.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir).map_err(|e| cannot(&e))?;
        Ok(OutFile { shown, target, key, keep, tmp })
    }

    /// Whether `other` (an existing file) is this file's destination.
    pub fn is_file(&self, other: &Path) -> bool {
        fs::canonicalize(other).is_ok_and(|p| p == self.key)
    }

    /// Whether two outputs land in the same file.
    pub fn same_destination(&self, other: &OutFile) -> bool {
        self.key == other.key
    }

    /// The path as the user gave it.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// Writes `bytes` and renames the temporary file over the target.
    pub fn write(mut self, bytes: &[u8]) -> Result<(), String> {
        let shown = self.shown.display().to_string();
        let cannot = |e: &io::Error| format!("cannot write `{shown}`: {}", plain(e));
        self.tmp.write_all(bytes).and_then(|_| self.tmp.flush()).map_err(|e| cannot(&e))?;
        if let Some(mode) = self.keep {
            self.tmp.as_file().set_permissions(mode).map_err(|e| cannot(&e))?;
        }
        self.tmp.persist(&self.target).map_err(|e| cannot(&e.error))?;
        Ok(())
    }
}
