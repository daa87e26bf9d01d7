//! Atomic file output: every file yarnsim writes (BCC and OBJ frames, PNGs, the run manifest, the
//! `--stats` records) goes through [`write_atomic`].
//!
//! The bytes go to a temporary file in the same directory as the final name (a hidden name,
//! `.NAME.PID.N.tmp`, so globs such as `frame_*.bcc` never match it), which is flushed to disk
//! (`sync_all`) and then renamed over the final name. A rename within one directory replaces the
//! name in one step, so a reader, a crash or a full disk sees either the previous complete file or
//! the new complete file under the final name, never a partial one. When anything fails (creating,
//! writing, flushing or renaming; or the writer closure panics) the temporary file is removed and the
//! final name is left as it was.
//!
//! A path naming a symbolic link to a file writes that file (the link stays); one naming a device,
//! a pipe or a socket (`/dev/null`) is written in place, not replaced. A path naming one of this
//! process's open files (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/N`) is a stream whatever the
//! descriptor is open on: written through the descriptor, after what went before, so that
//! `--stats /dev/stdout > log` adds to `log` as the shell's redirection does (a rename through
//! `/proc/self/fd/1` replaced the shell's file with a new one, and run as root the next write
//! replaced the `/dev/stdout` link itself with a file).
//!
//! A regular file that is replaced keeps its permission bits (a `--stats` file made private stays
//! private): the temporary file gets them before anything is written to it. It is a new file all
//! the same, as an atomic replace must make it: its owner and group are the writing process's,
//! and other hard links to the old file keep the old contents (the name is moved to the new file;
//! a write in place, which would keep them, could leave a partial file).
//!
//! The directory itself is not flushed after the rename: after a power loss the rename may be undone
//! (the final name then holds the previous file, or nothing), but never a partial file.
//!
//! A run holds each of its output directories ([`lock_dir`]) from before it removes or writes
//! anything there to its end, so two runs (two `--resume`s of one run, or a second run started
//! into a directory whose first run is still relaxing and has written no frame yet) never write
//! into one directory at once.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an atomic write failed. Every variant names the final path and the temporary file; in every
/// case the temporary file has been removed and the final path is untouched.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{}: not a file name to write to", path.display())]
    NoFileName { path: PathBuf },
    #[error("{}: cannot create the temporary file {}: {source}", path.display(), tmp.display())]
    Create {
        path: PathBuf,
        tmp: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: writing the temporary file {} failed: {source}", path.display(), tmp.display())]
    Write {
        path: PathBuf,
        tmp: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: flushing the temporary file {} to disk failed: {source}", path.display(), tmp.display())]
    Sync {
        path: PathBuf,
        tmp: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: renaming the temporary file {} to it failed: {source}", path.display(), tmp.display())]
    Rename {
        path: PathBuf,
        tmp: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A device, pipe or socket written in place ([`write_atomic`]).
    #[error("{}: writing failed: {source}", path.display())]
    InPlace {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// [`lock_dir`]: another process holds the directory.
    #[error("{}: another yarnsim run is writing into this directory; wait for it to end, or give another directory", path.display())]
    Busy { path: PathBuf },
    /// [`lock_dir`]: the directory could not be opened or locked.
    #[error("{}: cannot lock the directory for this run: {source}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl OutputError {
    /// The final path that was to be written.
    pub fn path(&self) -> &Path {
        match self {
            OutputError::NoFileName { path }
            | OutputError::Busy { path }
            | OutputError::Lock { path, .. }
            | OutputError::InPlace { path, .. }
            | OutputError::Create { path, .. }
            | OutputError::Write { path, .. }
            | OutputError::Sync { path, .. }
            | OutputError::Rename { path, .. } => path,
        }
    }

    /// The underlying I/O error, if any.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            OutputError::NoFileName { .. } | OutputError::Busy { .. } => None,
            OutputError::Lock { source, .. }
            | OutputError::InPlace { source, .. }
            | OutputError::Create { source, .. }
            | OutputError::Write { source, .. }
            | OutputError::Sync { source, .. }
            | OutputError::Rename { source, .. } => Some(source),
        }
    }

    /// The error as an [`io::Error`] of the same kind whose message is this error's without the
    /// leading final path (for error types that print the path themselves, e.g. `BccError::Io`).
    pub fn into_io_error(self) -> io::Error {
        let kind = self
            .io_error()
            .map(io::Error::kind)
            .unwrap_or(io::ErrorKind::InvalidInput);
        let full = self.to_string();
        let prefix = format!("{}: ", self.path().display());
        let message = full.strip_prefix(&prefix).unwrap_or(&full).to_string();
        io::Error::new(kind, message)
    }
}

/// Distinguishes the temporary files of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The temporary name a write of `path` uses: `.NAME.PID.N.tmp` in the same directory.
fn temp_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.{n}.tmp", std::process::id()));
    Some(path.with_file_name(tmp_name))
}

/// The final name a temporary file name of [`write_atomic`] stands for (`.NAME.PID.N.tmp` gives
/// `NAME`), or `None` when `name` is not one.
pub fn temp_target(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    // rest = NAME.PID.N
    let mut parts = rest.rsplitn(3, '.');
    let (n, pid, base) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && digits(pid) && !base.is_empty()).then_some(base)
}

/// What a path to be written names, which decides how it is written.
enum Target {
    /// Nothing yet, a regular file, a directory (whose rename fails, naming it), or a link to
    /// nothing: written atomically there.
    Plain,
    /// A symbolic link to a file: that file is written atomically, the link kept (a rename over
    /// the link's own name would put a file in its place).
    Linked(PathBuf),
    /// A device, a pipe or a socket (`/dev/null`, `/dev/stdout`): written in place, for a rename
    /// over it would replace the device node with a file (`table --json /dev/null`, run as root,
    /// did).
    Special,
    /// One of this process's open file descriptors, named through `/proc/self/fd/N`, `/dev/fd/N`
    /// or a link to them (`/dev/stdout`): written through the descriptor, whatever it is open on.
    OwnFd(i32),
}

/// Whether `path` names a device, a pipe or a socket, or one of this process's open descriptors
/// (`/dev/stdout`, whatever it is redirected to), which [`write_atomic`] writes in place: each
/// write goes out as it is, after what went before, not over it.
pub fn is_stream(path: &Path) -> bool {
    matches!(target_of(path), Target::Special | Target::OwnFd(_))
}

/// Whether `path` names one of this process's open descriptors (`/dev/stdout`, `/dev/fd/N`,
/// `/proc/self/fd/N`, or a link to them), whatever it is open on.
pub fn is_own_descriptor(path: &Path) -> bool {
    own_fd(path).is_some()
}

/// The descriptor `path` names when it is, or links (through at most 40 links) to, one of this
/// process's: `/proc/self/fd/N`, `/proc/thread-self/fd/N`, `/proc/PID/fd/N` with this process's
/// PID, or `/dev/fd/N`.
fn own_fd(path: &Path) -> Option<i32> {
    let pid = format!("/proc/{}/fd/", std::process::id());
    let prefixes = [
        "/proc/self/fd/",
        "/proc/thread-self/fd/",
        "/dev/fd/",
        pid.as_str(),
    ];
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let text = p.to_str()?;
        if let Some(n) = prefixes
            .iter()
            .find_map(|pre| text.strip_prefix(pre)?.parse::<i32>().ok())
        {
            return Some(n);
        }
        let to = std::fs::read_link(&p).ok()?;
        p = match p.parent() {
            Some(dir) if to.is_relative() => dir.join(to),
            _ => to,
        };
    }
    None
}

fn target_of(path: &Path) -> Target {
    if let Some(fd) = own_fd(path) {
        return Target::OwnFd(fd);
    }
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => Target::Special,
        Ok(m) if m.is_file() && path.is_symlink() => match std::fs::canonicalize(path) {
            Ok(to) => Target::Linked(to),
            Err(_) => Target::Plain,
        },
        _ => Target::Plain,
    }
}

/// [`write_atomic`] of a device, pipe or socket: opened for writing as it is (never created or
/// truncated) and written.
fn write_in_place<F>(path: &Path, write: F) -> Result<(), OutputError>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let err = |source| OutputError::InPlace {
        path: path.to_path_buf(),
        source,
    };
    let file = File::options().write(true).open(path).map_err(err)?;
    let mut w = BufWriter::new(file);
    write(&mut w).and_then(|()| w.flush()).map_err(err)
}

/// [`write_atomic`] of one of this process's descriptors: standard output and error through
/// Rust's own handles (so that the bytes keep their place among the process's other lines),
/// another descriptor through a duplicate of it (sharing its offset).
fn write_to_fd<F>(path: &Path, fd: i32, write: F) -> Result<(), OutputError>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let err = |source| OutputError::InPlace {
        path: path.to_path_buf(),
        source,
    };
    match fd {
        1 => {
            let mut out = io::stdout().lock();
            write(&mut out).and_then(|()| out.flush()).map_err(err)
        }
        2 => {
            let mut out = io::stderr().lock();
            write(&mut out).and_then(|()| out.flush()).map_err(err)
        }
        _ => {
            use std::os::fd::FromRawFd;
            // SAFETY: `dup` only reads the descriptor table; a descriptor not open gives EBADF.
            let copy = unsafe { libc::dup(fd) };
            if copy < 0 {
                return Err(err(io::Error::last_os_error()));
            }
            // SAFETY: `copy` is a new descriptor that nothing else owns.
            let file = unsafe { File::from_raw_fd(copy) };
            let mut w = BufWriter::new(file);
            write(&mut w).and_then(|()| w.flush()).map_err(err)
        }
    }
}

/// Removes the temporary file when dropped unless disarmed (also when the writer panics).
struct TempGuard<'a> {
    tmp: &'a Path,
    armed: bool,
}

/// The temporary files of writes in progress in this process, which [`abandon_writes`] removes
/// when a signal ends the process (a temporary file's guard does not run then).
static LIVE_TEMPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

impl TempGuard<'_> {
    /// Creates the temporary file `tmp` (it must not exist) and guards it, listed in
    /// [`LIVE_TEMPS`] as it is created, under the list's lock: [`abandon_writes`] finds every
    /// temporary file that exists.
    fn create(tmp: &Path) -> io::Result<(TempGuard<'_>, File)> {
        let mut live = LIVE_TEMPS.lock().unwrap_or_else(|e| e.into_inner());
        let file = File::options().write(true).create_new(true).open(tmp)?;
        live.push(tmp.to_path_buf());
        Ok((TempGuard { tmp, armed: true }, file))
    }
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(self.tmp);
        }
        let mut live = LIVE_TEMPS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = live.iter().rposition(|p| p == self.tmp) {
            live.swap_remove(i);
        }
    }
}

/// For a process about to end by a signal ([`crate::interrupt`]): removes the temporary files of
/// the writes in progress and holds their list, so that while the returned hold lives no write
/// starts (each waits for it; the process ends first). A write in progress either had renamed its
/// file into place (then its target is whole, and its temporary file gone) or now fails for want
/// of the file, its target keeping its previous contents.
pub fn abandon_writes() -> WritesHeld {
    let live = LIVE_TEMPS.lock().unwrap_or_else(|e| e.into_inner());
    for tmp in live.iter() {
        let _ = std::fs::remove_file(tmp);
    }
    WritesHeld(live)
}

/// [`abandon_writes`]'s hold on the writes of this process.
pub struct WritesHeld(#[allow(dead_code)] std::sync::MutexGuard<'static, Vec<PathBuf>>);

/// Writes `path` atomically: `write` fills a buffered temporary file beside `path`, which is then
/// flushed to disk and renamed to `path` (see the module doc). If `write` returns an error, or any
/// step fails, nothing is left behind and `path` keeps what it held before.
pub fn write_atomic<F>(path: &Path, write: F) -> Result<(), OutputError>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let resolved;
    let path = match target_of(path) {
        Target::Special => return write_in_place(path, write),
        Target::OwnFd(fd) => return write_to_fd(path, fd, write),
        Target::Linked(to) => {
            resolved = to;
            resolved.as_path()
        }
        Target::Plain => path,
    };
    let Some(tmp) = temp_path(path) else {
        return Err(OutputError::NoFileName {
            path: path.to_path_buf(),
        });
    };
    let err_path = || path.to_path_buf();
    let (mut guard, file) = TempGuard::create(&tmp).map_err(|source| OutputError::Create {
        path: err_path(),
        tmp: tmp.clone(),
        source,
    })?;
    // (Before the contents, so that a private file's never sit in a file others may read.)
    keep_permissions(path, &file).map_err(|source| OutputError::Create {
        path: err_path(),
        tmp: tmp.clone(),
        source,
    })?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let written = write(&mut w).and_then(|()| w.flush());
    if let Err(source) = written {
        return Err(OutputError::Write {
            path: err_path(),
            tmp: tmp.clone(),
            source,
        });
    }
    let file = w.into_inner().map_err(|e| OutputError::Write {
        path: err_path(),
        tmp: tmp.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(|source| OutputError::Sync {
        path: err_path(),
        tmp: tmp.clone(),
        source,
    })?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|source| OutputError::Rename {
        path: err_path(),
        tmp: tmp.clone(),
        source,
    })?;
    guard.armed = false;
    Ok(())
}

/// Gives `tmp`, the temporary file of a write of `path`, the permission bits (read, write and
/// execute) of the regular file at `path`, if there is one (a new file keeps those the process's
/// umask gives).
fn keep_permissions(path: &Path, tmp: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => tmp.set_permissions(std::fs::Permissions::from_mode(
                m.permissions().mode() & 0o777,
            )),
            _ => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, tmp);
        Ok(())
    }
}

/// Whether a file can be written at `path` as [`write_atomic`] writes it, asked before a run does
/// any work: a temporary file is made beside it (under the name a write would use) and removed.
/// Nothing at `path` is touched.
pub fn probe_writable(path: &Path) -> io::Result<()> {
    let resolved;
    let path = match target_of(path) {
        Target::Special => return File::options().write(true).open(path).map(drop),
        Target::OwnFd(fd) => {
            // SAFETY: `fcntl(F_GETFL)` only reads the descriptor's flags.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            return match flags {
                f if f < 0 => Err(io::Error::last_os_error()),
                f if f & libc::O_ACCMODE == libc::O_RDONLY => Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("descriptor {fd} is open for reading only"),
                )),
                _ => Ok(()),
            };
        }
        Target::Linked(to) => {
            resolved = to;
            resolved.as_path()
        }
        Target::Plain => path,
    };
    let tmp = temp_path(path)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let (mut guard, file) = TempGuard::create(&tmp)?;
    drop(file);
    guard.armed = false;
    std::fs::remove_file(&tmp)
}

/// A run's hold on an output directory ([`lock_dir`]), released when dropped or when the process
/// ends, however it ends (the lock is the kernel's, on an open handle of the directory: a run
/// killed with `kill -9` leaves no stale lock behind).
#[derive(Debug)]
pub struct DirLock {
    _dir: Option<File>,
}

/// Takes the exclusive advisory lock of directory `dir` (`flock` on an open handle of it), or
/// fails at once with [`OutputError::Busy`] when another process holds it. Elsewhere than on unix
/// nothing is locked.
pub fn lock_dir(dir: &Path) -> Result<DirLock, OutputError> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let lock_err = |source| OutputError::Lock {
            path: dir.to_path_buf(),
            source,
        };
        let file = File::open(dir).map_err(lock_err)?;
        // SAFETY: `flock` on a descriptor this function owns, open for the call's duration.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            return Err(if e.kind() == io::ErrorKind::WouldBlock {
                OutputError::Busy {
                    path: dir.to_path_buf(),
                }
            } else {
                lock_err(e)
            });
        }
        Ok(DirLock { _dir: Some(file) })
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(DirLock { _dir: None })
    }
}

/// [`write_atomic`] of a byte buffer.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomic(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised() {
        let t = temp_path(Path::new("/a/b/frame_0001.bcc")).unwrap();
        let name = t.file_name().unwrap().to_str().unwrap();
        assert_eq!(t.parent(), Some(Path::new("/a/b")));
        assert_eq!(temp_target(name), Some("frame_0001.bcc"), "{name}");
        assert_eq!(temp_target("frame_0001.bcc"), None);
        assert_eq!(temp_target(".frame_0001.bcc.tmp"), None);
        assert_eq!(temp_target(".1.2.tmp"), None);
        assert!(temp_path(Path::new("/")).is_none());
    }
}
