//! The central kernel paths under Linux's names, with Linux's argument
//! registers: probes on them, by name, see a small user program's own
//! system calls with the arguments it passed.
//!
//! The program (built here from A64 words, since the test kernel has no
//! initramfs) opens a file, reads 37 bytes, writes 11, forks a child that
//! exits with 9, sleeps 1 ms, waits for the child and exits with 7.

use super::*;
use crate::mm::vm::{Mm, Prot, VmaKind};
use crate::sched::TaskState;
use core::sync::atomic::AtomicI64;
use ktest_macros::kernel_test;

const CODE: u64 = 0x40_0000;
const DATA: u64 = 0x41_0000;
const STACK_TOP: u64 = 0x43_0000;
/// The file name, at `DATA`.
const PATH: &[u8] = b"/tmp/kprobe-names\0";
/// The nanosleep request, at `DATA + TIMESPEC`.
const TIMESPEC: u64 = 0x40;
/// The read and write buffer, at `DATA + BUF`.
const BUF: u64 = 0x100;
const READ_COUNT: u64 = 37;
const WRITE_COUNT: u64 = 11;
const AT_FDCWD: i64 = uapi::fcntl::AT_FDCWD as i64;
const SIGCHLD: u64 = uapi::signal::SIGCHLD as u64;
const O_RDWR: u64 = uapi::fcntl::O_RDWR as u64;
const PARENT_EXIT: u64 = 7;
const CHILD_EXIT: u64 = 9;

/// `mov xD, #v` as movz and the movk its other halfwords need.
fn mov_imm(code: &mut Vec<u32>, rd: u8, v: u64) {
    code.push(insn::encode::movz(rd, v as u16, 0, true).unwrap());
    for shift in [16, 32, 48] {
        let half = (v >> shift) as u16;
        if half != 0 {
            code.push(insn::encode::movk(rd, half, shift, true).unwrap());
        }
    }
}

/// `svc #0` for system call `nr`, after setting the given registers
/// (others keep their values).
fn syscall(code: &mut Vec<u32>, nr: usize, args: &[(u8, u64)]) {
    for &(reg, v) in args {
        mov_imm(code, reg, v);
    }
    mov_imm(code, 8, nr as u64);
    code.push(0xd400_0001);
}

/// The test program's text, to be mapped at `CODE`.
fn program() -> Vec<u32> {
    use insn::encode::{b, cbz, mov_reg};
    use uapi::syscalls::nr;
    let mut c = Vec::new();
    // fd = openat(AT_FDCWD, PATH, O_RDWR, 0), kept in x19.
    syscall(
        &mut c,
        nr::OPENAT,
        &[(0, AT_FDCWD as u64), (1, DATA), (2, O_RDWR), (3, 0)],
    );
    c.push(mov_reg(19, 0).unwrap());
    syscall(&mut c, nr::READ, &[(1, DATA + BUF), (2, READ_COUNT)]);
    c.push(mov_reg(0, 19).unwrap());
    syscall(&mut c, nr::WRITE, &[(1, DATA + BUF), (2, WRITE_COUNT)]);
    // fork: clone(SIGCHLD, 0, 0, 0, 0).
    syscall(&mut c, nr::CLONE, &[(0, SIGCHLD), (1, 0), (2, 0), (3, 0), (4, 0)]);
    // The child (x0 == 0) exits at once; the parent branches past that.
    let cbnz_at = c.len();
    c.push(0);
    syscall(&mut c, nr::EXIT, &[(0, CHILD_EXIT)]);
    let parent = c.len();
    c[cbnz_at] = cbz(CODE + 4 * cbnz_at as u64, CODE + 4 * parent as u64, 0, true, true).unwrap();
    syscall(&mut c, nr::NANOSLEEP, &[(0, DATA + TIMESPEC), (1, 0)]);
    syscall(&mut c, nr::WAIT4, &[(0, u64::MAX), (1, 0), (2, 0), (3, 0)]);
    syscall(&mut c, nr::EXIT, &[(0, PARENT_EXIT)]);
    let here = CODE + 4 * c.len() as u64;
    c.push(b(here, here).unwrap());
    c
}

/// The program's name (its tasks' comm), by which the handlers pick its
/// hits: it may run before `spawn_init` returns its TID.
const COMM: &[u8] = b"kprobe-names";
/// Address of the program's first task (the `Task` inside its `Arc`).
static OUR_TASK: AtomicUsize = AtomicUsize::new(0);

fn ours() -> bool {
    crate::sched::try_current().is_some_and(|t| t.comm.get().starts_with(COMM))
}

/// What one probe saw: all hits, and hits with the expected arguments.
struct Seen {
    hits: AtomicUsize,
    matched: AtomicUsize,
}

impl Seen {
    const fn new() -> Seen {
        Seen {
            hits: AtomicUsize::new(0),
            matched: AtomicUsize::new(0),
        }
    }

    fn record(&self, matched: bool) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        if matched {
            self.matched.fetch_add(1, Ordering::Relaxed);
        }
    }
}

static VFS_READ: Seen = Seen::new();
static VFS_WRITE: Seen = Seen::new();
static OPENAT2: Seen = Seen::new();
static VFS_OPEN: Seen = Seen::new();
static SYS_OPENAT: Seen = Seen::new();
static CLONE: Seen = Seen::new();
static SCHEDULE: Seen = Seen::new();
static KFREE: Seen = Seen::new();
static DPUT: Seen = Seen::new();
static NANOSLEEP: Seen = Seen::new();
static WAKE: Seen = Seen::new();
static EXIT_CODES: [AtomicI64; 2] = [AtomicI64::new(-1), AtomicI64::new(-1)];

fn user_bytes_are(addr: u64, want: &[u8]) -> bool {
    let mut buf = [0u8; 32];
    let got = &mut buf[..want.len()];
    crate::uaccess::copy_from_user(got, crate::uaccess::UserPtr::new(addr)).is_ok() && got == want
}

fn kernel_u64(addr: u64) -> Option<u64> {
    arch::nofault::read_u64_nofault(addr as usize).ok()
}

type Check = fn(&PtRegs) -> bool;

/// Linux's probe definitions, as a user copies them, and what each must
/// see in its registers.
fn probes() -> [(&'static str, &'static Seen, Check); 11] {
    [
        // p vfs_read count=%x2 buf=%x1
        ("vfs_read", &VFS_READ, |r| {
            ours() && r.regs[1] == DATA + BUF && r.regs[2] == READ_COUNT && r.regs[0] != 0
        }),
        ("vfs_write", &VFS_WRITE, |r| {
            ours() && r.regs[1] == DATA + BUF && r.regs[2] == WRITE_COUNT && r.regs[0] != 0
        }),
        // p do_sys_openat2 dfd=%x0:s32 filename=+0(%x1):ustring flags=+0(%x2):x64
        ("do_sys_openat2", &OPENAT2, |r| {
            let flags = u64::from(uapi::fcntl::O_RDWR | uapi::fcntl::O_LARGEFILE);
            ours()
                && r.regs[0] as i32 == AT_FDCWD as i32
                && user_bytes_are(r.regs[1], PATH)
                && kernel_u64(r.regs[2]) == Some(flags)
        }),
        ("vfs_open", &VFS_OPEN, |r| ours() && r.regs[0] != 0),
        // p __arm64_sys_openat nr=+64(%x0):u64
        ("__arm64_sys_openat", &SYS_OPENAT, |r| {
            ours() && kernel_u64(r.regs[0] + 8 * 8) == Some(uapi::syscalls::nr::OPENAT as u64)
        }),
        // p kernel_clone flags=+0(%x0):x64 exit_signal=+40(%x0):s32
        ("kernel_clone", &CLONE, |r| {
            ours()
                && kernel_u64(r.regs[0]) == Some(0)
                && kernel_u64(r.regs[0] + 40).map(|v| v as u32) == Some(SIGCHLD as u32)
        }),
        ("schedule", &SCHEDULE, |_| ours()),
        ("kfree", &KFREE, |r| ours() && r.regs[0] != 0),
        ("dput", &DPUT, |r| ours() && r.regs[0] != 0),
        // x0 is the 1 ms sleep's deadline in ns: within a second of now
        // (a slow machine may pass a 1 ms deadline before the probe hits).
        ("do_nanosleep", &NANOSLEEP, |r| {
            let now = crate::time::ktime_get_ns();
            ours() && r.regs[0].abs_diff(now) < 1_000_000_000
        }),
        // The child's exit wakes its parent, sleeping in wait4: x0 points
        // at the parent's `Arc<Task>`, whose pointer leads to `ArcInner`
        // (two counts, then the task).
        // Whether the parent sleeps in wait4 at all depends on timing (the
        // child may be gone first, the 1 ms sleep may end before it
        // sleeps): any woken task's reference qualifies, ours by name.
        ("wake_up_process", &WAKE, |r| {
            let off = 16usize.next_multiple_of(core::mem::align_of::<crate::sched::Task>()) as u64;
            kernel_u64(r.regs[0])
                .is_some_and(|inner| inner + off == OUR_TASK.load(Ordering::Acquire) as u64 || inner >> 48 == 0xffff)
        }),
    ]
}

/// Creates the file the program opens, and the program's address space.
fn setup() -> Arc<Mm> {
    if crate::fs::mount_root(None).is_err() {
        panic!("no root filesystem");
    }
    let v = crate::fs::vfs();
    let f = v
        .openat(
            &crate::fs::cred(),
            &v.root(),
            &PATH[..PATH.len() - 1],
            uapi::fcntl::O_CREAT | uapi::fcntl::O_RDWR | uapi::fcntl::O_TRUNC,
            0o644,
            0,
        )
        .expect("create the test file");
    assert_eq!(f.write(&[b'k'; 64]), Ok(64));

    let mm = Mm::new().expect("an mm");
    let uva = |a| arch::addr::UserVirtAddr::new(a).expect("a user address");
    let text: Vec<u8> = program().iter().flat_map(|w| w.to_le_bytes()).collect();
    let (rx, rw) = (
        Prot {
            read: true,
            write: false,
            exec: true,
        },
        Prot {
            read: true,
            write: true,
            exec: false,
        },
    );
    mm.add_region(CODE, CODE + 0x1000, rx, VmaKind::Anon).unwrap();
    mm.write_bytes(uva(CODE), &text).unwrap();
    mm.add_region(DATA, DATA + 0x1000, rw, VmaKind::Anon).unwrap();
    mm.write_bytes(uva(DATA), PATH).unwrap();
    // struct timespec { 0 s, 1 ms }
    let ts: Vec<u8> = [0u64, 1_000_000].iter().flat_map(|v| v.to_le_bytes()).collect();
    mm.write_bytes(uva(DATA + TIMESPEC), &ts).unwrap();
    mm.write_bytes(uva(DATA + BUF), &[0; 64]).unwrap();
    mm.add_region(STACK_TOP - 0x1000, STACK_TOP, rw, VmaKind::Stack)
        .unwrap();
    mm.write_bytes(uva(STACK_TOP - 8), &[0; 8]).unwrap();
    mm
}

#[kernel_test]
fn linux_named_paths_see_a_user_programs_system_calls_in_linuxs_registers() {
    let mm = setup();
    let kps: Vec<Arc<Kprobe>> = probes()
        .into_iter()
        .map(|(name, seen, check)| {
            Arc::new(Kprobe::symbol(name, 0).pre(move |_, regs| {
                seen.record(check(regs));
                0
            }))
        })
        .collect();
    let exits = Arc::new(Kprobe::symbol("do_exit", 0).pre(|_, regs| {
        // Only the program's two tasks exit during the test.
        for slot in &EXIT_CODES {
            if slot
                .compare_exchange(-1, regs.regs[0] as i64, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                break;
            }
        }
        0
    }));
    for kp in kps.iter().chain(core::iter::once(&exits)) {
        let name = kp.symbol_name.clone().unwrap_or_default();
        register_kprobe(kp).unwrap_or_else(|e| panic!("probe on {name}: {e:?}"));
        assert_eq!(
            Some(kp.addr()),
            crate::kallsyms::lookup_name(&name),
            "{name} is not its kallsyms entry"
        );
    }

    // PID 1 ending would power the machine off: make sure it is not ours.
    while crate::sched::Task::alloc_tid() < 2 {}
    // No descriptors (the test kernel has no /dev/console); / as cwd.
    let fs = crate::fs::ProcessFs {
        files: Arc::new(vfs::FdTable::new()),
        cwd: Arc::new(crate::sync::IrqSpinLock::new(crate::fs::vfs().root())),
    };
    let task = crate::process::spawn_init(mm, CODE, STACK_TOP - 16, fs, COMM).expect("spawn");
    OUR_TASK.store(Arc::as_ptr(&task) as usize, Ordering::Release);
    let mut waited = 0;
    while task.state() != TaskState::Dead && waited < 5000 {
        let _ = crate::sched::wait::sleep_ns(1_000_000);
        waited += 1;
    }
    for kp in kps.iter().chain(core::iter::once(&exits)) {
        unregister_kprobe(kp);
    }
    assert_eq!(task.state(), TaskState::Dead, "the program did not finish");

    for (name, seen, _) in probes() {
        let (hits, matched) = (seen.hits.load(Ordering::Relaxed), seen.matched.load(Ordering::Relaxed));
        assert!(matched > 0, "{name}: no hit with Linux's arguments ({hits} hits)");
    }
    // One read, one write, one open: the program made each call once.
    assert_eq!(VFS_READ.matched.load(Ordering::Relaxed), 1);
    assert_eq!(VFS_WRITE.matched.load(Ordering::Relaxed), 1);
    assert_eq!(OPENAT2.matched.load(Ordering::Relaxed), 1);
    let mut codes: Vec<i64> = EXIT_CODES.iter().map(|c| c.load(Ordering::Acquire)).collect();
    codes.sort_unstable();
    // do_exit's x0 is the wait status, `exit(n)` giving `n << 8`.
    assert_eq!(codes, [(PARENT_EXIT << 8) as i64, (CHILD_EXIT << 8) as i64]);
}
