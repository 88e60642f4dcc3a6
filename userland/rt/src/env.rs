//! Arguments, environment and auxiliary vector, as `_start` found them.

use core::ffi::CStr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

static ARGC: AtomicUsize = AtomicUsize::new(0);
static ARGV: AtomicPtr<*const u8> = AtomicPtr::new(core::ptr::null_mut());
static ENVP: AtomicPtr<*const u8> = AtomicPtr::new(core::ptr::null_mut());
static AUXV: AtomicPtr<usize> = AtomicPtr::new(core::ptr::null_mut());

/// Records where argv, envp and auxv are.
///
/// # Safety
/// `sp` must be the initial stack pointer of the process.
pub(crate) unsafe fn init(sp: *const usize) {
    // SAFETY: the caller guarantees the Linux initial stack layout.
    unsafe {
        let argc = *sp;
        let argv = sp.add(1) as *mut *const u8;
        let envp = argv.add(argc + 1);
        let mut p = envp;
        while !(*p).is_null() {
            p = p.add(1);
        }
        ARGC.store(argc, Ordering::Relaxed);
        ARGV.store(argv, Ordering::Relaxed);
        ENVP.store(envp, Ordering::Relaxed);
        AUXV.store(p.add(1) as *mut usize, Ordering::Relaxed);
    }
}

/// The command-line arguments, `argv[0]` first, as bytes without the NUL.
#[derive(Clone, Copy)]
pub struct Args {
    argv: &'static [*const u8],
}

impl Args {
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    pub fn is_empty(&self) -> bool {
        self.argv.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&'static [u8]> {
        // SAFETY: argv entries are NUL-terminated strings that live as long
        // as the process (see `init`).
        self.argv
            .get(i)
            .map(|&p| unsafe { CStr::from_ptr(p.cast()) }.to_bytes())
    }

    pub fn first(&self) -> Option<&'static [u8]> {
        self.get(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static [u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// The process's arguments.
pub fn args() -> Args {
    let argv = ARGV.load(Ordering::Relaxed);
    if argv.is_null() {
        return Args { argv: &[] };
    }
    // SAFETY: `init` stored argv and argc from the initial stack.
    let argv = unsafe { core::slice::from_raw_parts(argv, ARGC.load(Ordering::Relaxed)) };
    Args { argv }
}

/// The environment as `NAME=value` entries.
pub fn vars() -> impl Iterator<Item = &'static [u8]> {
    let mut p = ENVP.load(Ordering::Relaxed) as *const *const u8;
    core::iter::from_fn(move || {
        // SAFETY: envp is a NULL-terminated array of NUL-terminated strings
        // that live as long as the process.
        unsafe {
            if p.is_null() || (*p).is_null() {
                return None;
            }
            let s = CStr::from_ptr((*p).cast()).to_bytes();
            p = p.add(1);
            Some(s)
        }
    })
}

/// The value of environment variable `name`.
pub fn var(name: &[u8]) -> Option<&'static [u8]> {
    vars().find_map(|kv| {
        let rest = kv.strip_prefix(name)?;
        rest.strip_prefix(b"=")
    })
}

/// An auxiliary vector entry (`AT_PAGESZ` = 6, ...).
pub fn auxv(key: usize) -> Option<usize> {
    let mut p = AUXV.load(Ordering::Relaxed) as *const usize;
    if p.is_null() {
        return None;
    }
    loop {
        // SAFETY: auxv is a list of (key, value) pairs ending with AT_NULL.
        let (k, v) = unsafe { (*p, *p.add(1)) };
        if k == 0 {
            return None;
        }
        if k == key {
            return Some(v);
        }
        // SAFETY: not at the AT_NULL terminator yet.
        p = unsafe { p.add(2) };
    }
}
