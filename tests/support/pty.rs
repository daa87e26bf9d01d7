//! A pseudo-terminal for the tests of what a run shows on a terminal (its progress bar), and a
//! small model of the screen the bytes written to it draw.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::FromRawFd;

/// A new pseudo-terminal of `cols` × `rows`: its master side (what a terminal reads from and
/// writes to) and its slave side (what a program sees as its terminal).
pub fn open(cols: u16, rows: u16) -> (File, File) {
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname on the descriptor opened here; ptsname's
    // string is copied before any other call; the descriptors are owned by the Files made.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(master)).to_owned();
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            slave >= 0,
            "open {name:?}: {}",
            std::io::Error::last_os_error()
        );
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        assert_eq!(libc::ioctl(slave, libc::TIOCSWINSZ, &size), 0);
        // (Not inherited by the programs started: one holding the master would keep the terminal
        // from hanging up when the test closes it.)
        for fd in [master, slave] {
            assert_eq!(libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC), 0);
        }
        (File::from_raw_fd(master), File::from_raw_fd(slave))
    }
}

/// Reads `master` to its end (EIO once every slave descriptor is closed) on a thread of its own,
/// so that a program writing to the terminal never blocks on a full buffer.
pub fn drain(mut master: File) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut master, &mut buf) {
                Ok(0) | Err(_) => return all,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
}

/// Reads `master` on a thread of its own until [`Reader::close`], which then closes it: the
/// terminal hangs up (its programs get SIGHUP and fail to write to it).
pub struct Reader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u8>>,
}

impl Reader {
    pub fn new(mut master: File) -> Reader {
        use std::os::fd::AsRawFd;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
                let mut fd = libc::pollfd {
                    fd: master.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll(2) of one descriptor this thread owns, for at most 20 ms.
                if unsafe { libc::poll(&mut fd, 1, 20) } <= 0 {
                    continue;
                }
                match std::io::Read::read(&mut master, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => all.extend_from_slice(&buf[..n]),
                }
            }
            all
        });
        Reader { stop, thread }
    }

    /// Closes the terminal (it hangs up); what was read from it.
    pub fn close(self) -> Vec<u8> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

/// The lines of the screen that `bytes` draw on a terminal `cols` wide, scrolled-off ones
/// included, as a terminal keeps them: carriage return, line feed, backspace, the wrap of a line at
/// the terminal's width, and the escape sequences the progress bars use (cursor up and down, to a
/// column, erase in line; others are skipped) are applied, so a line that was drawn and then erased
/// is gone, and text written after a bar without erasing it is on the bar's line. A line that
/// wrapped is returned whole, its rows joined.
pub fn screen(bytes: &[u8], cols: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    // Each row, and whether it continues the row above (the text wrapped into it).
    let mut rows: Vec<(Vec<char>, bool)> = vec![(Vec::new(), false)];
    let (mut row, mut col) = (0usize, 0usize);
    let down = |rows: &mut Vec<(Vec<char>, bool)>, row: usize| {
        while rows.len() <= row {
            rows.push((Vec::new(), false));
        }
    };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                down(&mut rows, row);
                col = col.min(cols - 1);
            }
            '\x08' => col = col.min(cols - 1).saturating_sub(1),
            '\x1b' => {
                if chars.peek() != Some(&'[') {
                    chars.next();
                    continue;
                }
                chars.next();
                let mut params = String::new();
                let mut last = '\0';
                for p in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&p) {
                        last = p;
                        break;
                    }
                    params.push(p);
                }
                let n = params.parse::<usize>().ok();
                col = col.min(cols - 1);
                match last {
                    'A' => row = row.saturating_sub(n.unwrap_or(1).max(1)),
                    'B' => {
                        row += n.unwrap_or(1).max(1);
                        down(&mut rows, row);
                    }
                    'G' => col = (n.unwrap_or(1).max(1) - 1).min(cols - 1),
                    'K' => {
                        let line = &mut rows[row].0;
                        match n.unwrap_or(0) {
                            0 => line.truncate(col),
                            1 => line.iter_mut().take(col + 1).for_each(|c| *c = ' '),
                            _ => line.clear(),
                        }
                    }
                    _ => {}
                }
            }
            c if c.is_control() => {}
            c => {
                // (A character past the last column wraps to the next row first.)
                if col >= cols {
                    row += 1;
                    down(&mut rows, row);
                    rows[row].1 = true;
                    col = 0;
                }
                let line = &mut rows[row].0;
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for (chars, continues) in rows {
        let text: String = chars.into_iter().collect();
        match lines.last_mut() {
            Some(last) if continues => last.push_str(&text),
            _ => lines.push(text),
        }
    }
    lines.iter().map(|l| l.trim_end().to_string()).collect()
}
