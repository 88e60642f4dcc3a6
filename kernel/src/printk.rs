//! The console and kernel log lines (Linux's `printk`): each line is
//! prefixed with the time since kernel entry, `[    0.012345] `.

crate::notrace_module!();

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
    let freq = arch::timer::frequency().max(1);
    NS_PER_TICK.store(1_000_000_000 / freq, Ordering::Relaxed);
    // The rest of a tick's nanoseconds as a 64-bit binary fraction, rounded
    // up: a time is then its exact value or 1 ns more (for any count of
    // ticks), never less, so a timer armed by `ns_to_counter` never reads
    // as early; 0 for QEMU virt's 62.5 MHz (16 ns a tick).
    let rest = u128::from(1_000_000_000 % freq);
    NS_PER_TICK_FRAC.store(((rest << 64).div_ceil(u128::from(freq))) as u64, Ordering::Relaxed);
}

/// Nanoseconds per counter tick, whole and fraction ([`set_boot_counter`]),
/// computed once at boot: the frequency does not change, and every trace
/// event reads this clock, where a 128-bit division (a call) or a read of
/// `CNTFRQ_EL0` costs more than the rest of the read under emulation.
static NS_PER_TICK: AtomicU64 = AtomicU64::new(0);
static NS_PER_TICK_FRAC: AtomicU64 = AtomicU64::new(0);

/// The virtual counter's value at `ns` since boot, rounded up, so that a
/// timer armed for it never fires before that time.
pub fn ns_to_counter(ns: u64) -> u64 {
    let freq = arch::timer::frequency().max(1) as u128;
    let ticks = (ns as u128 * freq).div_ceil(1_000_000_000);
    BOOT_COUNTER
        .load(Ordering::Relaxed)
        .saturating_add(ticks.min(u64::MAX as u128) as u64)
}

/// Starts console output on `uart`.
pub fn register_console(uart: Pl011) {
    UART.call_once(|| uart);
}

/// The console UART, if registered.
pub fn console_uart() -> Option<Pl011> {
    UART.get().copied()
}

/// Nanoseconds since kernel entry. Inlined: every trace event reads it.
#[inline(always)]
pub fn uptime_ns() -> u64 {
    let ticks = arch::timer::counter().wrapping_sub(BOOT_COUNTER.load(Ordering::Relaxed));
    // Two multiplies, no branch and no call: ticks times the whole
    // nanoseconds, plus the high half of ticks times the fraction.
    let whole = ticks.wrapping_mul(NS_PER_TICK.load(Ordering::Relaxed));
    let part = (u128::from(ticks) * u128::from(NS_PER_TICK_FRAC.load(Ordering::Relaxed))) >> 64;
    whole.wrapping_add(part as u64)
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

/// The console lock, held: released through Linux's traceable
/// `console_unlock` unless an oops took it.
struct ConsoleGuard {
    guard: Option<crate::sync::IrqSpinLockGuard<'static, ()>>,
    oops: bool,
}

impl Drop for ConsoleGuard {
    fn drop(&mut self) {
        if let Some(g) = self.guard.take() {
            if !self.oops {
                crate::locking::console_unlock(g);
            }
        }
    }
}

fn lock_console() -> Option<ConsoleGuard> {
    if OOPS_IN_PROGRESS.load(Ordering::Relaxed) {
        // Give a CPU in the middle of a line a moment, then go ahead,
        // without the traceable console_lock/console_unlock.
        (0..100_000)
            .find_map(|_| CONSOLE_LOCK.try_lock())
            .map(|g| ConsoleGuard {
                guard: Some(g),
                oops: true,
            })
    } else {
        Some(ConsoleGuard {
            guard: Some(crate::locking::console_lock(&CONSOLE_LOCK)),
            oops: false,
        })
    }
}

/// Log levels (Linux's KERN_*).
pub mod level {
    /// System is unusable.
    pub const EMERG: u8 = 0;
    /// Error conditions.
    pub const ERR: u8 = 3;
    /// Warnings.
    pub const WARNING: u8 = 4;
    /// Informational.
    pub const INFO: u8 = 6;
}

/// Messages below this level reach the console (Linux's
/// console_loglevel; `quiet` makes it 4, `loglevel=N` sets it, syslog(2)
/// changes it at run time).
static CONSOLE_LOGLEVEL: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(7);

/// The console log level.
pub fn console_loglevel() -> u8 {
    CONSOLE_LOGLEVEL.load(Ordering::Relaxed)
}

/// Sets the console log level (1..=8).
pub fn set_console_loglevel(level: u8) {
    CONSOLE_LOGLEVEL.store(level.clamp(1, 8), Ordering::Relaxed);
}

/// Size of the kernel log buffer (Linux's default, 1 << 17).
pub const LOG_BUF_LEN: usize = 1 << 17;

/// The kernel log: lines as syslog(2) returns them, `<level>[time] text`,
/// oldest first; the oldest are dropped when it is full.
struct LogBuf {
    data: [u8; LOG_BUF_LEN],
    start: usize,
    len: usize,
    /// Bytes not yet read by SYSLOG_ACTION_READ.
    unread: usize,
}

static LOG: IrqSpinLock<LogBuf> = IrqSpinLock::new(LogBuf {
    data: [0; LOG_BUF_LEN],
    start: 0,
    len: 0,
    unread: 0,
});

impl LogBuf {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let end = (self.start + self.len) % LOG_BUF_LEN;
            self.data[end] = b;
            if self.len == LOG_BUF_LEN {
                self.start = (self.start + 1) % LOG_BUF_LEN;
            } else {
                self.len += 1;
            }
            self.unread = (self.unread + 1).min(self.len);
        }
    }

    fn tail(&self, n: usize) -> alloc::vec::Vec<u8> {
        let n = n.min(self.len);
        (self.len - n..self.len)
            .map(|i| self.data[(self.start + i) % LOG_BUF_LEN])
            .collect()
    }
}

/// The whole kernel log (SYSLOG_ACTION_READ_ALL).
pub fn log_read_all() -> alloc::vec::Vec<u8> {
    let log = LOG.lock();
    log.tail(log.len)
}

/// Takes up to `max` unread bytes (SYSLOG_ACTION_READ).
pub fn log_read_unread(max: usize) -> alloc::vec::Vec<u8> {
    let mut log = LOG.lock();
    let n = log.unread.min(max);
    let out = log.tail(log.unread);
    log.unread -= n;
    out[..n].to_vec()
}

/// Bytes in the log, and bytes not yet read.
pub fn log_sizes() -> (usize, usize) {
    let log = LOG.lock();
    (log.len, log.unread)
}

/// Empties the log (SYSLOG_ACTION_CLEAR).
pub fn log_clear() {
    let mut log = LOG.lock();
    log.start = 0;
    log.len = 0;
    log.unread = 0;
}

/// Appends a line to the log, formatted as syslog(2) reads it.
struct LogRecord<'a> {
    log: &'a mut LogBuf,
    level: u8,
    at_line_start: bool,
}

impl Write for LogRecord<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for line in s.split_inclusive('\n') {
            if self.at_line_start {
                let ns = uptime_ns();
                let mut head = heapless_fmt::Buf::<40>::new();
                let _ = write!(
                    head,
                    "<{}>[{:5}.{:06}] ",
                    self.level,
                    ns / 1_000_000_000,
                    ns % 1_000_000_000 / 1000
                );
                self.log.push(head.as_bytes());
            }
            self.log.push(line.as_bytes());
            self.at_line_start = line.ends_with('\n');
        }
        Ok(())
    }
}

/// A small formatting buffer on the stack (the log works before the heap).
mod heapless_fmt {
    /// `N` bytes of formatted text.
    pub struct Buf<const N: usize> {
        data: [u8; N],
        len: usize,
    }
    impl<const N: usize> Buf<N> {
        pub fn new() -> Self {
            Buf { data: [0; N], len: 0 }
        }
        pub fn as_bytes(&self) -> &[u8] {
            &self.data[..self.len]
        }
    }
    impl<const N: usize> core::fmt::Write for Buf<N> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let n = s.len().min(N - self.len);
            self.data[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }
}

/// Writes `args` as log lines at `level`: into the kernel log, and to the
/// console (timestamp before each line) if the level is below the console
/// log level.
pub fn printk_level(level: u8, args: fmt::Arguments) {
    crate::trace::tracepoint::printk::trace_console(args);
    {
        let mut log = LOG.lock();
        let mut rec = LogRecord {
            log: &mut log,
            level,
            at_line_start: true,
        };
        let _ = rec.write_fmt(args);
        if !rec.at_line_start {
            rec.log.push(b"\n");
        }
    }
    if level >= console_loglevel() {
        return;
    }
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

/// Writes `args` as informational log lines.
pub fn printk(args: fmt::Arguments) {
    printk_level(level::INFO, args)
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
    ($($arg:tt)*) => { $crate::printk::printk_level($crate::printk::level::WARNING, format_args!($($arg)*)) };
}

/// Prints an error log line.
#[macro_export]
macro_rules! pr_err {
    ($($arg:tt)*) => { $crate::printk::printk_level($crate::printk::level::ERR, format_args!($($arg)*)) };
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
