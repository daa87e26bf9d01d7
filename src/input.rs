//! Reading the files a user names (a scene, a certificate) with a bound on their size: a path that
//! names a file that never ends (`/dev/zero`, a pipe whose writer never stops) was read until the
//! machine ran out of memory. A BCC file bounds itself: its header says how long it is
//! ([`crate::bcc`]).

use std::io::{self, Read};
use std::path::Path;

/// The bytes of the file at `path`, or an error of kind [`io::ErrorKind::FileTooLarge`] once it
/// holds more than `max` bytes (`what`, e.g. "a scene file", says what it should have been).
pub fn read_at_most(path: &Path, max: u64, what: &str) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("more than {max} bytes, more than {what} holds (a device or a stream that does not end?)"),
        ));
    }
    Ok(bytes)
}
