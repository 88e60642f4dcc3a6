//! The console and kernel log lines (Linux's `printk`): each line is
//! prefixed with the time since kernel entry, `[    0.012345] `.

use crate::drivers::pl011::Pl011;
use crate::sync::IrqSpinLock;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static UART: spin::Once<Pl011> = spin::Once::new();
static CONSOLE_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());
/// Counter value at kernel entry: time zero of the log.
static BOOT_COUNTER: AtomicU64 = AtomicU64::new(0);
/// Set by an oops: the console is then used without waiting for its lock,
/// which the dying CPU may hold.
static OOPS_IN_PROGRESS: AtomicBool = AtomicBool::new(false);

/// Records the counter value at kernel entry.
pub fn set_boot_counter(c: u64) {
    BOOT_COUNTER.store(c, Ordering::Relaxed);
}

/// Starts console output on `uart`.
pub fn register_console(uart: Pl011) {
    UART.call_once(|| uart);
}

/// The console UART, if registered.
pub fn console_uart() -> Option<Pl011> {
    UART.get().copied()
}

/// Nanoseconds since kernel entry.
pub fn uptime_ns() -> u64 {
    let freq = arch::timer::frequency().max(1);
    let ticks = arch::timer::counter().wrapping_sub(BOOT_COUNTER.load(Ordering::Relaxed));
    (ticks as u128 * 1_000_000_000 / freq as u128) as u64
}

/// From now on, console output never waits for the console lock.
pub fn set_oops_in_progress() {
    OOPS_IN_PROGRESS.store(true, Ordering::SeqCst);
}

struct Uart(Pl011);

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.putc(b'\r');
            }
            self.0.putc(b);
        }
        Ok(())
    }
}

/// Writes to the console with no prefix.
pub fn console_write(args: fmt::Arguments) {
    let Some(uart) = console_uart() else { return };
    let _guard = lock_console();
    let _ = Uart(uart).write_fmt(args);
}

fn lock_console() -> Option<crate::sync::IrqSpinLockGuard<'static, ()>> {
    if OOPS_IN_PROGRESS.load(Ordering::Relaxed) {
        // Give a CPU in the middle of a line a moment, then go ahead.
        (0..100_000).find_map(|_| CONSOLE_LOCK.try_lock())
    } else {
        Some(CONSOLE_LOCK.lock())
    }
}

/// Writes `args` as log lines: the timestamp prefix before each line.
pub fn printk(args: fmt::Arguments) {
    let Some(uart) = console_uart() else { return };
    let _guard = lock_console();
    let mut w = LogLines {
        out: Uart(uart),
        at_line_start: true,
    };
    let _ = w.write_fmt(args);
    if !w.at_line_start {
        let _ = w.out.write_str("\n");
    }
}

/// Adds the `[seconds.micros] ` prefix at each line start.
pub struct LogLines<W: Write> {
    out: W,
    at_line_start: bool,
}

impl<W: Write> LogLines<W> {
    /// Wraps `out`.
    pub fn new(out: W) -> Self {
        LogLines {
            out,
            at_line_start: true,
        }
    }
}

impl<W: Write> Write for LogLines<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for line in s.split_inclusive('\n') {
            if self.at_line_start {
                let ns = uptime_ns();
                write!(self.out, "[{:5}.{:06}] ", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)?;
            }
            self.out.write_str(line)?;
            self.at_line_start = line.ends_with('\n');
        }
        Ok(())
    }
}

/// A sink for oops text: the console, with log prefixes, ignoring its lock
/// once an oops is in progress.
pub fn console_log_sink() -> impl Write {
    struct Sink;
    impl Write for Sink {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            if let Some(uart) = console_uart() {
                let _ = Uart(uart).write_str(s);
            }
            Ok(())
        }
    }
    LogLines::new(Sink)
}

/// Prints a log line (`pr_info!` in Linux).
#[macro_export]
macro_rules! pr_info {
    ($($arg:tt)*) => { $crate::printk::printk(format_args!($($arg)*)) };
}

/// Prints a warning log line.
#[macro_export]
macro_rules! pr_warn {
    ($($arg:tt)*) => { $crate::printk::printk(format_args!($($arg)*)) };
}

/// Prints an error log line.
#[macro_export]
macro_rules! pr_err {
    ($($arg:tt)*) => { $crate::printk::printk(format_args!($($arg)*)) };
}

/// Prints to the console with no prefix.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::printk::console_write(format_args!($($arg)*)) };
}

/// Prints a line to the console with no prefix.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::printk::console_write(format_args!("{}\n", format_args!($($arg)*))) };
}
