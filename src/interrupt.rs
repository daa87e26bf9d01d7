//! What SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed: an ssh session dropped) do to a
//! command: stop where the work done can be kept, or end without leaving temporary files behind.
//!
//! [`install`] (first thing in `main`, while the process has one thread) blocks the signals in
//! the calling thread, so every thread started later has them blocked too, and starts one thread
//! that waits for them (`sigwait`). What a signal does therefore runs as ordinary code, not in a
//! signal handler, and may lock, allocate and print:
//!
//! * while a command has said it can stop cleanly ([`set_graceful`]: `yarnsim run` with `--out`,
//!   which then stops at the next point where a checkpoint can be written, writes one and ends),
//!   the first signal sets the flag [`stop_flag`] (read by the command's loops: a run's frames,
//!   [`crate::relax::Saves::stop`]) and prints the command's notice;
//! * otherwise, and on a second signal (other than SIGHUP: a hang-up repeats itself), the
//!   process ends at once ([`end_by_signal`]): the temporary files of writes in progress are
//!   removed ([`crate::output::abandon_writes`]), the command's last words are said
//!   ([`set_last_words`]: `yarnsim table` prints the rows it finished), and the signal is
//!   raised again with its default action, so that the parent sees the process end by the
//!   signal, as it did before (a shell loop over runs stops at Ctrl-C).
//!
//! The watcher itself never waits on the command: the notice and the last words print on threads
//! of their own (a command blocked writing to a full pipe holds the locks of standard output and
//! of the progress bar; a print that fails panics), and the process ends within
//! [`LAST_WORDS_WAIT`] of a second signal whatever they do. A signal the parent set to be ignored
//! (a background job of a script, `trap '' INT`) stays ignored: it is not taken over.
//!
//! A command that stopped cleanly ends the same way ([`end_by_signal`] with [`requested`]), after
//! its own clean-up and [`wait_notice`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Set by the first signal while a command can stop cleanly.
static STOP: AtomicBool = AtomicBool::new(false);

/// The signal that set [`STOP`] (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

type Notice = Arc<dyn Fn(i32) + Send + Sync>;
type LastWords = Arc<dyn Fn() + Send + Sync>;

/// The command's notice for a clean stop ([`set_graceful`]); `None`: a signal ends the process.
static GRACEFUL: Mutex<Option<Notice>> = Mutex::new(None);

/// The thread printing the notice of the first signal.
static NOTICE: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// What the command says as the process ends by a signal ([`set_last_words`]).
static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// How long a process ending by a signal waits for its notice and last words to be printed
/// (each): longer, and they are blocked (on a full pipe, say), which must not keep it alive.
pub const LAST_WORDS_WAIT: Duration = Duration::from_secs(2);

/// Why [`install`] failed.
#[derive(Debug, thiserror::Error)]
pub enum InterruptError {
    #[error("cannot block SIGINT, SIGTERM and SIGHUP for their watcher thread (error {0})")]
    Mask(i32),
    #[error("cannot start the thread that watches for SIGINT, SIGTERM and SIGHUP: {0}")]
    Thread(#[source] std::io::Error),
}

/// The signals handled here: SIGINT, SIGTERM and SIGHUP, except one whose disposition is "ignore"
/// (a blocked signal is still queued, and `sigwait` would take a signal the parent meant to be
/// ignored: `nohup` ignores SIGHUP). `None` when there is none to handle.
///
/// SIGHUP is a terminal that went away (an ssh session dropped, a terminal window closed) as much
/// as a request to stop: left to its default action it ended a run at once, losing every frame
/// since its last checkpoint (all of them without `--checkpoint-every`) and leaving the temporary
/// files of its writes in progress.
#[cfg(unix)]
fn signal_set() -> Option<libc::sigset_t> {
    // SAFETY: sigemptyset initializes the set it is given; sigaction with a null new action only
    // reads the current one into `old`; sigaddset adds valid signal numbers.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        let mut any = false;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let mut old = std::mem::zeroed::<libc::sigaction>();
            let ignored = libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN;
            if !ignored {
                libc::sigaddset(&mut set, sig);
                any = true;
            }
        }
        any.then_some(set)
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and so in every thread it starts after) and
/// starts the thread that handles them (see the module doc). Call it before any other thread
/// exists: a thread started earlier keeps the signals unblocked, and one delivered to it would end
/// the process by the default action, as if this had not been called.
#[cfg(unix)]
pub fn install() -> Result<(), InterruptError> {
    let Some(set) = signal_set() else {
        return Ok(());
    };
    // SAFETY: a valid, initialized set; the old mask is not asked for.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(InterruptError::Mask(rc));
    }
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: the set is valid and blocked in every thread; sig is written on success.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc != 0 {
                continue;
            }
            let notice = GRACEFUL.lock().unwrap_or_else(|e| e.into_inner()).clone();
            match notice {
                Some(notice) if !STOP.load(Ordering::SeqCst) => {
                    SIGNAL.store(sig, Ordering::SeqCst);
                    STOP.store(true, Ordering::SeqCst);
                    // (On a thread of its own: a print blocked on a full pipe must not keep this
                    // one from taking a second signal.)
                    let printing = std::thread::Builder::new()
                        .name("signal notice".into())
                        .spawn(move || notice(sig));
                    *NOTICE.lock().unwrap_or_else(|e| e.into_inner()) = printing.ok();
                }
                // A hang-up comes more than once (an interactive shell forwards it to its jobs,
                // and the kernel sends it again to the terminal's foreground job as the shell
                // exits, under bash 0.2 ms apart): a repeat is no request to stop at once, and
                // taken as one it lost the checkpoint the first one asked for.
                Some(_) if sig == libc::SIGHUP => {}
                _ => end_by_signal(sig),
            }
        })
        .map_err(InterruptError::Thread)?;
    Ok(())
}

#[cfg(not(unix))]
pub fn install() -> Result<(), InterruptError> {
    Ok(())
}

/// The flag the first signal sets while a command can stop cleanly ([`set_graceful`]).
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// The signal that asked the command to stop, once one has ([`stop_flag`]).
pub fn requested() -> Option<i32> {
    STOP.load(Ordering::SeqCst)
        .then(|| SIGNAL.load(Ordering::SeqCst))
}

/// From now on the first signal asks the command to stop (sets [`stop_flag`]) and calls `notice`
/// with the signal's number (on a thread of its own), instead of ending the process; `None`
/// undoes that.
pub fn set_graceful(notice: Option<Box<dyn Fn(i32) + Send + Sync>>) {
    *GRACEFUL.lock().unwrap_or_else(|e| e.into_inner()) = notice.map(Notice::from);
}

/// What to do as the process ends by a signal (print what a command finished, say); `None`:
/// nothing. It runs on a thread of its own, for at most [`LAST_WORDS_WAIT`].
pub fn set_last_words(words: Option<Box<dyn Fn() + Send + Sync>>) {
    *LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()) = words.map(LastWords::from);
}

/// Waits (at most [`LAST_WORDS_WAIT`]) for the notice of the signal that asked the command to
/// stop to be printed, so that what the command says next follows it.
pub fn wait_notice() {
    let printing = NOTICE.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(printing) = printing {
        wait_for(&printing);
    }
}

/// Waits for `thread` to end, for at most [`LAST_WORDS_WAIT`].
fn wait_for(thread: &JoinHandle<()>) {
    let start = Instant::now();
    while !thread.is_finished() && start.elapsed() < LAST_WORDS_WAIT {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A signal's name, for messages.
pub fn signal_name(sig: i32) -> &'static str {
    #[cfg(unix)]
    {
        if sig == libc::SIGINT {
            return "SIGINT";
        }
        if sig == libc::SIGTERM {
            return "SIGTERM";
        }
        if sig == libc::SIGHUP {
            return "SIGHUP";
        }
    }
    "a signal"
}

/// Ends the process by `sig`: the temporary files of writes in progress removed, the notice
/// (if still printing) and the last words given [`LAST_WORDS_WAIT`] each, then the signal raised
/// with its default action (the process's status says it was ended by the signal). Does not
/// return.
pub fn end_by_signal(sig: i32) -> ! {
    // (Held to the end: no write starts after its temporary file is removed.)
    let _held = crate::output::abandon_writes();
    wait_notice();
    let words = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(words) = words {
        let saying = std::thread::Builder::new()
            .name("last words".into())
            .spawn(move || {
                words();
                let _ = std::io::Write::flush(&mut std::io::stdout());
            });
        if let Ok(saying) = saying {
            wait_for(&saying);
        }
    }
    #[cfg(unix)]
    // SAFETY: resets the disposition to the default, unblocks the signal in this thread only and
    // raises it there, which ends the process.
    unsafe {
        let mut one = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::signal(sig, libc::SIG_DFL);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
