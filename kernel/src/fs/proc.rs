//! What /proc shows: per-process `stat`, and `kallsyms` in Linux's format;
//! `mem`, the process's memory at offsets that are its addresses.

use crate::process::{self, Process};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use vfs::procfs::{ProcEntry, ProcProvider, ProcScope};

/// The kernel's procfs content.
pub struct Provider;

/// A thread's state letter (Linux's task_state_index): its own, whatever
/// the other threads of its process do.
fn task_state_char(t: &crate::sched::Task) -> char {
    if t.ptrace.in_stop() {
        return 't';
    }
    match t.state() {
        crate::sched::TaskState::Running => 'R',
        crate::sched::TaskState::Uninterruptible => 'D',
        crate::sched::TaskState::Stopped => 'T',
        crate::sched::TaskState::Zombie => 'Z',
        crate::sched::TaskState::Dead => 'X',
        _ => 'S',
    }
}

/// Whether `p`'s leader (the thread whose ID is the PID) has exited while
/// other threads run: Linux keeps it as a zombie until the group ends,
/// and shows the process through it.
fn leader_exited(p: &Process) -> bool {
    let threads = p.threads.lock();
    !threads.is_empty() && !threads.iter().any(|t| t.tid() == p.pid)
}

/// Threads of `p`, a zombie leader included (Linux's `nr_threads`).
fn thread_count(p: &Process) -> usize {
    let live = p.threads.lock().len();
    (live + usize::from(leader_exited(p))).max(1)
}

/// The state letter of thread `t` of `p`, or of the process (the
/// leader's, as Linux shows it: `Z` once the leader exited, whatever the
/// other threads do).
fn state_char(p: &Process, t: Option<&crate::sched::Task>) -> char {
    if p.is_zombie() {
        return 'Z';
    }
    if let Some(t) = t {
        // The exited leader, kept listed while other threads live.
        if t.tid() == p.pid && leader_exited(p) {
            return 'Z';
        }
        return task_state_char(t);
    }
    if leader_exited(p) {
        return 'Z';
    }
    let leader = p.main_thread();
    if leader.as_ref().is_some_and(|t| t.ptrace.in_stop()) {
        return 't';
    }
    if p.stopped.load(Ordering::Relaxed) {
        return 'T';
    }
    leader.map_or('S', |t| task_state_char(&t))
}

/// The name of `p`'s leader once every thread exited.
fn zombie_comm(p: &Process) -> String {
    let c = *p.zombie_comm.lock();
    let n = c.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&c[..n]).into_owned()
}

/// `/proc/<pid>/stat` (of the process, through its first thread) and
/// `/proc/<pid>/task/<tid>/stat` (of thread `t`): Linux's 52 fields, those
/// the kernel does not track 0. Debuggers read `processor` (field 39), the
/// CPU the thread last ran on.
fn stat(p: &Arc<Process>, t: Option<Arc<crate::sched::Task>>) -> Vec<u8> {
    let state = state_char(p, t.as_deref());
    let tid = t.as_ref().map_or(p.pid, |t| t.tid());
    let t = t.or_else(|| p.main_thread());
    let comm = t.as_ref().map_or_else(|| zombie_comm(p), |t| t.comm_string());
    let threads = thread_count(p);
    let (vsize, rss) = p
        .main_thread()
        .and_then(|t| t.mm.lock().clone())
        .map_or((0, 0), |mm| (mm.resident_pages() * 4096, mm.resident_pages()));
    let mut s = format!(
        "{} ({}) {} {} {} {} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 {} 0 0 {} {}",
        tid,
        comm,
        state,
        p.ppid.load(Ordering::Relaxed),
        p.pgid.load(Ordering::Relaxed),
        p.sid.load(Ordering::Relaxed),
        threads,
        vsize,
        rss
    );
    // rsslim (25), then startcode .. nswap, cnswap (26-37).
    s.push_str(" 18446744073709551615");
    for _ in 26..=37 {
        s.push_str(" 0");
    }
    let cpu = t.as_ref().map_or(0, |t| t.last_cpu.load(Ordering::Relaxed));
    s.push_str(&format!(
        " {} {}",
        p.exit_signal(),
        if cpu == u32::MAX { 0 } else { cpu }
    ));
    // rt_priority .. exit_code (40-52).
    for _ in 40..=52 {
        s.push_str(" 0");
    }
    s.push('\n');
    s.into_bytes()
}

/// `/proc/<pid>/status` (of the process, through its first thread) and
/// `/proc/<pid>/task/<tid>/status` (of thread `t`): the fields Linux
/// prints first, in its format.
fn status(p: &Arc<Process>, t: Option<Arc<crate::sched::Task>>) -> Vec<u8> {
    let state = state_char(p, t.as_deref());
    let tid = t.as_ref().map_or(p.pid, |t| t.tid());
    let t = t.or_else(|| p.main_thread());
    let comm = t.as_ref().map_or_else(|| zombie_comm(p), |t| t.comm_string());
    let state = match state {
        'R' => "R (running)",
        'D' => "D (disk sleep)",
        'T' => "T (stopped)",
        't' => "t (tracing stop)",
        'Z' => "Z (zombie)",
        'X' => "X (dead)",
        _ => "S (sleeping)",
    };
    let blocked = t.as_ref().map_or(0, |t| t.sig_blocked.load(Ordering::Relaxed));
    let pending = t.as_ref().map_or(0, |t| t.sig_pending.load(Ordering::Relaxed));
    let (mut ign, mut cgt) = (0u64, 0u64);
    for sig in 1..=crate::signal::NSIG as u32 {
        match p.sighand.get(sig).handler {
            crate::signal::SIG_DFL => {}
            crate::signal::SIG_IGN => ign |= crate::signal::sigmask(sig),
            _ => cgt |= crate::signal::sigmask(sig),
        }
    }
    let c = t
        .as_ref()
        .map_or_else(|| p.leader_cred(), |t| crate::cred::task_cred(t));
    // Linux ends the list with a space, even an empty one.
    let mut groups: String = c.groups.iter().map(|g| format!("{g} ")).collect();
    if groups.is_empty() {
        groups.push(' ');
    }
    format!(
        "Name:\t{comm}\nUmask:\t{:04o}\nState:\t{state}\nTgid:\t{pid}\nNgid:\t0\nPid:\t{tid}\nPPid:\t{}\nTracerPid:\t{}\n\
         Uid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t64\nGroups:\t{groups}\nThreads:\t{}\n\
         SigPnd:\t{pending:016x}\nShdPnd:\t{:016x}\nSigBlk:\t{blocked:016x}\nSigIgn:\t{ign:016x}\nSigCgt:\t{cgt:016x}\n\
         CapInh:\t{:016x}\nCapPrm:\t{:016x}\nCapEff:\t{:016x}\nCapBnd:\t{:016x}\nCapAmb:\t{:016x}\n",
        p.umask.load(Ordering::Relaxed),
        p.ppid.load(Ordering::Relaxed),
        t.as_ref().map_or(0, |t| t.ptrace.tracer_tid()),
        c.uid,
        c.euid,
        c.suid,
        c.fsuid,
        c.gid,
        c.egid,
        c.sgid,
        c.fsgid,
        thread_count(p),
        p.shared_pending.load(Ordering::Relaxed),
        c.cap_inheritable,
        c.cap_permitted,
        c.cap_effective,
        c.cap_bset,
        c.cap_ambient,
        pid = p.pid,
    )
    .into_bytes()
}

/// `/proc/cpuinfo` as arm64 Linux prints it.
fn cpuinfo() -> Vec<u8> {
    const NAMES: [&str; 8] = ["fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32"];
    let hwcap = crate::exec::hwcap();
    let features: Vec<&str> = NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| hwcap & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    let midr = arch::cpu::midr();
    let freq = arch::timer::frequency();
    let mut s = alloc::string::String::new();
    for cpu in crate::smp::online_cpus() {
        s.push_str(&format!(
            "processor\t: {cpu}\nBogoMIPS\t: {}.{:02}\nFeatures\t: {}\nCPU implementer\t: 0x{:02x}\n\
             CPU architecture: 8\nCPU variant\t: 0x{:x}\nCPU part\t: 0x{:03x}\nCPU revision\t: {}\n\n",
            2 * freq / 1_000_000,
            2 * freq / 10_000 % 100,
            features.join(" "),
            (midr >> 24) & 0xff,
            (midr >> 20) & 0xf,
            (midr >> 4) & 0xfff,
            midr & 0xf,
        ));
    }
    s.into_bytes()
}

/// `/proc/interrupts`: per-CPU counts of every interrupt with a handler.
fn interrupts() -> Vec<u8> {
    let cpus: Vec<usize> = crate::smp::online_cpus().collect();
    let mut s = alloc::string::String::from("     ");
    for c in &cpus {
        s.push_str(&format!("      CPU{c:<4}"));
    }
    s.push('\n');
    for (irq, name) in crate::irq::registered() {
        let label = if irq < 16 {
            format!("IPI{irq}")
        } else {
            format!("{irq}")
        };
        s.push_str(&format!("{label:>4}:"));
        for &c in &cpus {
            s.push_str(&format!(" {:>10}", crate::irq::irq_stat(irq, c)));
        }
        let kind = if irq < 16 {
            String::new()
        } else {
            format!("     GIC {irq:>3} Level     ")
        };
        s.push_str(&format!("{kind} {name}\n"));
    }
    s.into_bytes()
}

/// `/proc/mounts`: `source mountpoint type options 0 0`, the root first.
fn mounts() -> Vec<u8> {
    let v = crate::fs::vfs();
    let mut s = String::new();
    for m in v.mounts() {
        let fs_type = m.fs().fs_type();
        let at = match m.mountpoint() {
            Some(p) => v.getcwd(&p).unwrap_or_else(|_| b"?".to_vec()),
            None => b"/".to_vec(),
        };
        s.push_str(&format!(
            "{fs_type} {} {fs_type} rw,relatime{} 0 0\n",
            String::from_utf8_lossy(&at),
            m.fs().show_options()
        ));
    }
    s.into_bytes()
}

/// `/proc/kallsyms`: `address type name`, text symbols as `T`.
/// `/proc/sys/kernel/kptr_restrict`: 0 and 1 show kernel addresses to
/// root (every task here has CAP_SYSLOG), 2 hides them from everyone, as
/// Linux's kallsyms_show_value().
static KPTR_RESTRICT: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

fn kallsyms() -> Vec<u8> {
    let hide = KPTR_RESTRICT.load(Ordering::Relaxed) >= 2;
    let mut out = Vec::new();
    for sym in crate::kallsyms::table().iter() {
        let addr = if hide { 0 } else { sym.addr };
        out.extend_from_slice(format!("{:016x} T {}\n", addr, sym.name).as_bytes());
    }
    // Data objects follow (CONFIG_KALLSYMS_ALL), typed by section as nm
    // types them: read-only data, data, bss.
    let l = arch::mmu::image_layout();
    for sym in crate::kallsyms::data_table().iter() {
        let a = sym.addr as usize;
        let kind = if a >= l.bss {
            'B'
        } else if a >= l.data {
            'D'
        } else {
            'R'
        };
        out.extend_from_slice(format!("{:016x} {kind} {}\n", sym.addr, sym.name).as_bytes());
    }
    out
}

/// The integer a sysctl write holds, parsed as Linux's proc_dointvec does
/// (surrounding white space allowed); EINVAL for anything else.
fn sysctl_int(data: &[u8]) -> vfs::Result<i64> {
    let text = core::str::from_utf8(data).map_err(|_| uapi::Errno::EINVAL)?;
    text.trim().parse::<i64>().map_err(|_| uapi::Errno::EINVAL)
}

/// `sched_rt_period_us` and `sched_rt_runtime_us` (Linux's real-time
/// bandwidth: real-time tasks may run `runtime` of every `period` µs, -1
/// for no limit). This kernel has no real-time scheduling class, so the
/// limit always holds; the pair keeps Linux's defaults and checks, so that
/// tools that save, change and restore it (ftracetest sets the runtime to
/// -1 while it runs) behave as on Linux.
static SCHED_RT: crate::sync::IrqSpinLock<(i32, i32)> = crate::sync::IrqSpinLock::new((1_000_000, 950_000));

/// Writes the period (`period`) or the runtime: EINVAL for a period
/// below 1, a runtime below -1, or a runtime above the period (Linux's
/// `sched_rt_handler` and `sched_rt_global_validate`).
fn sched_rt_write(period: bool, data: &[u8]) -> vfs::Result<usize> {
    let v = i32::try_from(sysctl_int(data)?).map_err(|_| uapi::Errno::EINVAL)?;
    let mut rt = SCHED_RT.lock();
    let (p, r) = if period { (v, rt.1) } else { (rt.0, v) };
    if p < 1 || r < -1 || (r != -1 && r > p) {
        return Err(uapi::Errno::EINVAL);
    }
    *rt = (p, r);
    Ok(data.len())
}

/// Whether `drop_caches` stays quiet (Linux's `stfu`, set by writing 4).
static DROP_CACHES_QUIET: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `/proc/sys/vm/drop_caches` (Linux's `drop_caches_sysctl_handler`):
/// 1..=4, EINVAL outside. Bit 1 drops clean page cache: this kernel's
/// file pages are ramfs data, never clean copies of a backing store, so
/// there is none to drop; bit 2 gives the slab caches' spare slabs back
/// to the frame allocator (this VFS keeps no dentry or inode cache beyond
/// the files themselves); 4 silences the log line Linux prints.
fn drop_caches_write(data: &[u8]) -> vfs::Result<usize> {
    let v = sysctl_int(data)?;
    if !(1..=4).contains(&v) {
        return Err(uapi::Errno::EINVAL);
    }
    if v & 2 != 0 {
        crate::mm::slab::shrink_all();
    }
    if !DROP_CACHES_QUIET.load(Ordering::Relaxed) {
        let (comm, pid) = crate::sched::try_current().map_or((String::new(), 0), |t| (t.comm_string(), t.tid()));
        crate::pr_info!("{} ({}): drop_caches: {}", comm, pid, v);
    }
    if v & 4 != 0 {
        DROP_CACHES_QUIET.store(true, Ordering::Relaxed);
    }
    Ok(data.len())
}

/// The descriptor table of process `pid` (ESRCH if it is gone).
fn files_of(pid: u32) -> vfs::Result<Arc<vfs::fdtable::FdTable>> {
    Ok(process::find_process(pid)
        .ok_or(uapi::Errno::ESRCH)?
        .fs
        .lock()
        .files
        .clone())
}

/// The descriptor `name` of `fd/<name>`: decimal, no sign or leading zero,
/// as Linux's `name_to_int`.
fn fd_number(name: &[u8]) -> Option<i32> {
    if name.is_empty() || (name.len() > 1 && name[0] == b'0') || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(name).ok()?.parse().ok()
}

/// An `fd/N` link's mode as Linux's `tid_fd_update_inode` gives it: r-x
/// for reading, -wx for writing (an O_PATH descriptor has neither).
fn fd_link_perm(f: &vfs::OpenFile) -> u32 {
    use uapi::fcntl::{O_ACCMODE, O_RDONLY, O_RDWR, O_WRONLY};
    if f.is_path_only() {
        return 0;
    }
    match f.flags() & O_ACCMODE {
        O_RDONLY => 0o500,
        O_WRONLY => 0o300,
        O_RDWR => 0o700,
        _ => 0,
    }
}

/// What `readlink("/proc/<pid>/fd/N")` gives, as Linux's `d_path`: the
/// file's path (`" (deleted)"` appended once it is unlinked), or for a
/// file outside the tree `pipe:[ino]` / `socket:[ino]` (Linux's pipefs and
/// sockfs dentry names).
fn fd_link_target(f: &vfs::OpenFile) -> Vec<u8> {
    let meta = f.inode().metadata();
    match f.path() {
        Some(path) => {
            let mut name = match f.name() {
                Some(name) => name,
                None => crate::fs::vfs().getcwd(path).unwrap_or_else(|_| b"/".to_vec()),
            };
            if !meta.is_dir() && meta.nlink == 0 {
                name.extend_from_slice(b" (deleted)");
            }
            name
        }
        None => {
            let kind = match meta.file_type() {
                vfs::FileType::Socket => "socket",
                vfs::FileType::Fifo => "pipe",
                _ => "anon_inode",
            };
            format!("{kind}:[{}]", f.inode().ino()).into_bytes()
        }
    }
}

/// An open `/proc/<pid>/mem` or `/proc/<pid>/task/<tid>/mem`: the address
/// space the thread had at open (Linux's proc_mem_open keeps the mm, so
/// the file follows it, not a later exec). It is held weakly, as Linux's
/// mmgrab holds the structure but not the memory: once no task uses the
/// space (its owner died, or exec'd), reads and writes transfer nothing.
/// Reads and writes go through the tracer's path (Linux's
/// access_remote_vm with FOLL_FORCE): past protections, writes to
/// read-only text by copy-on-write with the instruction cache kept
/// coherent; an unmapped address ends the transfer there, EIO if nothing
/// was transferred.
struct MemFile {
    mm: alloc::sync::Weak<crate::mm::vm::Mm>,
}

impl MemFile {
    /// Linux's mem_rw: page by page from `*pos`, which ends past the last
    /// byte transferred; nothing once the space has no user
    /// (`mmget_not_zero` fails).
    fn rw(&self, buf: &mut [u8], pos: &mut u64, write: bool) -> vfs::Result<usize> {
        let Some(mm) = self.mm.upgrade() else { return Ok(0) };
        const PAGE: u64 = arch::memory::PAGE_SIZE as u64;
        let mut done = 0;
        while done < buf.len() {
            let addr = *pos;
            let n = (buf.len() - done).min((PAGE - addr % PAGE) as usize);
            if addr.checked_add(n as u64).is_none() {
                break;
            }
            let Some(addr) = arch::addr::UserVirtAddr::new(addr) else {
                break;
            };
            if mm.access_remote(addr, &mut buf[done..done + n], write).is_err() {
                break;
            }
            done += n;
            *pos += n as u64;
        }
        if done == 0 && !buf.is_empty() {
            return Err(uapi::Errno::EIO);
        }
        Ok(done)
    }
}

impl vfs::file::FileOps for MemFile {
    fn read(&self, _: &vfs::OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        self.rw(buf, pos, false)
    }

    fn write(&self, _: &vfs::OpenFile, buf: &[u8], pos: &mut u64) -> vfs::Result<usize> {
        let mut copy = buf.to_vec();
        self.rw(&mut copy, pos, true)
    }

    /// Linux's mem_lseek: SEEK_SET and SEEK_CUR to any address.
    fn llseek(&self, _: &vfs::OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> vfs::Result<u64> {
        match whence {
            uapi::fcntl::SEEK_SET => Ok(offset as u64),
            uapi::fcntl::SEEK_CUR => Ok(pos.wrapping_add(offset as u64)),
            _ => Err(uapi::Errno::EINVAL),
        }
    }
}

/// The thread `task/<tid>` of `rel` names in process `pid`, and what
/// follows its directory (`b""`, `b"mem"`); `None` if `rel` is no such
/// path or `tid` is not a thread of `pid`. The thread is `None` for the
/// leader of a process all of whose threads have exited (a zombie not yet
/// reaped), which Linux still lists: its task is gone here, and the
/// process stands for it.
fn task_path(pid: u32, rel: &[u8]) -> Option<(Option<Arc<crate::sched::Task>>, &[u8])> {
    let rest = rel.strip_prefix(b"task/")?;
    let (tid, tail) = match rest.iter().position(|&b| b == b'/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let tid = u32::try_from(fd_number(tid)?).ok()?;
    let p = process::find_process(pid)?;
    // Under `threads`, where the exiting leader moves to `exited_leader`.
    let threads = p.threads.lock();
    if threads.is_empty() {
        return (tid == pid).then_some((None, tail));
    }
    let t = threads.iter().find(|t| t.tid() == tid).cloned();
    let t = t.or_else(|| p.exited_leader.lock().clone().filter(|t| t.tid() == tid));
    drop(threads);
    Some((Some(t?), tail))
}

/// Linux's `comm_write`: the first 15 bytes, as they are (a newline
/// included; a 0-byte write empties the name), become the name of a
/// thread of the writer's own thread group; any other task's is EINVAL,
/// one that is gone ESRCH. Every byte counts as written.
fn comm_write(pid: u32, task: Option<Arc<crate::sched::Task>>, data: &[u8]) -> vfs::Result<usize> {
    let task = task.ok_or(uapi::Errno::ESRCH)?;
    let me = crate::sched::try_current().and_then(|t| t.process.get().map(|p| p.pid));
    if me != Some(pid) {
        return Err(uapi::Errno::EINVAL);
    }
    let n = data.len().min(uapi::prctl::TASK_COMM_LEN - 1);
    // set_task_comm copies up to the first NUL (strscpy).
    let name = data[..n].split(|&b| b == 0).next().unwrap_or_default();
    crate::trace::tracepoint::task::trace_task_rename(&task, name);
    task.set_comm(name);
    Ok(data.len())
}

impl ProcProvider for Provider {
    fn pids(&self) -> Vec<u32> {
        process::all_processes().iter().map(|p| p.pid).collect()
    }

    fn current_pid(&self) -> Option<u32> {
        crate::sched::try_current().and_then(|t| t.process.get().map(|p| p.pid))
    }

    fn pid_owner(&self, pid: u32) -> Option<(u32, u32)> {
        process::find_process(pid).map(|_| (0, 0))
    }

    fn list(&self, scope: ProcScope, rel: &[u8]) -> vfs::Result<Vec<ProcEntry>> {
        match (scope, rel) {
            (ProcScope::Root, b"sys") => return Ok(alloc::vec![ProcEntry::dir(b"kernel"), ProcEntry::dir(b"vm")]),
            (ProcScope::Root, b"sys/vm") => return Ok(alloc::vec![ProcEntry::file(b"drop_caches", 0o200)]),
            (ProcScope::Root, b"sys/kernel") => {
                return Ok(alloc::vec![
                    ProcEntry::file(b"ftrace_enabled", 0o644),
                    ProcEntry::file(b"kptr_restrict", 0o644),
                    ProcEntry::file(b"sched_rt_period_us", 0o644),
                    ProcEntry::file(b"sched_rt_runtime_us", 0o644),
                    ProcEntry::file(b"stack_tracer_enabled", 0o644)
                ])
            }
            (ProcScope::Pid(pid), b"fd") => {
                let files = files_of(pid)?;
                return Ok(files
                    .fds()
                    .into_iter()
                    .filter_map(|fd| {
                        let f = files.get(fd).ok()?;
                        Some(ProcEntry {
                            name: fd.to_string().into_bytes(),
                            kind: vfs::procfs::ProcKind::Symlink,
                            perm: fd_link_perm(&f),
                        })
                    })
                    .collect());
            }
            (ProcScope::Pid(pid), b"task") => {
                let p = process::find_process(pid).ok_or(uapi::Errno::ESRCH)?;
                // A zombie leader stays listed, first, as on Linux (looked
                // at under `threads`, where the exiting leader moves); with
                // every thread gone, the process's zombie leader alone.
                let threads = p.threads.lock();
                if threads.is_empty() {
                    return Ok(alloc::vec![ProcEntry::dir(p.pid.to_string().as_bytes())]);
                }
                let leader = p.exited_leader.lock().clone();
                let entries = leader
                    .iter()
                    .chain(threads.iter())
                    .map(|t| ProcEntry::dir(t.tid().to_string().as_bytes()))
                    .collect();
                drop(threads);
                return Ok(entries);
            }
            (ProcScope::Pid(pid), rel) if rel.starts_with(b"task/") => {
                return match task_path(pid, rel) {
                    // Of a thread's entries, those debuggers use.
                    Some((_, b"")) => Ok(alloc::vec![
                        ProcEntry::file(b"stat", 0o444),
                        ProcEntry::file(b"status", 0o444),
                        ProcEntry::file(b"comm", 0o644),
                        ProcEntry::file(b"mem", 0o600)
                    ]),
                    _ => Err(uapi::Errno::ENOENT),
                };
            }
            (_, b"") => {}
            _ => return Err(uapi::Errno::ENOENT),
        }
        Ok(match scope {
            ProcScope::Root => alloc::vec![
                ProcEntry::file(b"cpuinfo", 0o444),
                ProcEntry::file(b"interrupts", 0o444),
                ProcEntry::file(b"kallsyms", 0o444),
                ProcEntry::file(b"mounts", 0o444),
                // Root only, as Linux's SLABINFO_RIGHTS.
                ProcEntry::file(b"slabinfo", 0o400),
                ProcEntry::dir(b"sys"),
                ProcEntry::file(b"version", 0o444),
                ProcEntry::file(b"meminfo", 0o444),
                ProcEntry::file(b"uptime", 0o444),
                ProcEntry::file(b"loadavg", 0o444)
            ],
            ProcScope::Pid(_) => {
                alloc::vec![
                    ProcEntry::file(b"stat", 0o444),
                    ProcEntry::file(b"status", 0o444),
                    ProcEntry::file(b"auxv", 0o400),
                    ProcEntry::file(b"cmdline", 0o444),
                    ProcEntry::file(b"comm", 0o644),
                    ProcEntry::file(b"maps", 0o444),
                    ProcEntry::file(b"mem", 0o600),
                    ProcEntry::dir(b"task"),
                    ProcEntry::symlink(b"exe"),
                    ProcEntry::symlink(b"cwd"),
                    ProcEntry::symlink(b"root"),
                    // dr-x------, as Linux's proc_fd_inode_operations dir.
                    ProcEntry {
                        name: b"fd".to_vec(),
                        kind: vfs::procfs::ProcKind::Dir,
                        perm: 0o500,
                    }
                ]
            }
        })
    }

    fn read(&self, scope: ProcScope, rel: &[u8]) -> vfs::Result<Vec<u8>> {
        match (scope, rel) {
            (ProcScope::Root, b"kallsyms") => Ok(kallsyms()),
            // Write-only: opened for writing, it has nothing to read.
            (ProcScope::Root, b"sys/vm/drop_caches") => Ok(Vec::new()),
            (ProcScope::Root, b"mounts") => Ok(mounts()),
            // The sysctls tracing users read: Linux's defaults (kallsyms
            // shows addresses to root; kprobes are always on).
            (ProcScope::Root, b"sys/kernel/ftrace_enabled") => Ok(b"1\n".to_vec()),
            (ProcScope::Root, b"sys/kernel/kptr_restrict") => {
                Ok(format!("{}\n", KPTR_RESTRICT.load(Ordering::Relaxed)).into_bytes())
            }
            (ProcScope::Root, b"sys/kernel/stack_tracer_enabled") => {
                Ok(format!("{}\n", u8::from(crate::trace::trace_stack::stack_tracer_enabled())).into_bytes())
            }
            (ProcScope::Root, b"sys/kernel/sched_rt_period_us") => Ok(format!("{}\n", SCHED_RT.lock().0).into_bytes()),
            (ProcScope::Root, b"sys/kernel/sched_rt_runtime_us") => Ok(format!("{}\n", SCHED_RT.lock().1).into_bytes()),
            (ProcScope::Root, b"slabinfo") => Ok(crate::mm::slab::slabinfo().into_bytes()),
            (ProcScope::Root, b"version") => Ok(crate::version::proc_version().into_bytes()),
            (ProcScope::Root, b"cpuinfo") => Ok(cpuinfo()),
            (ProcScope::Root, b"interrupts") => Ok(interrupts()),
            (ProcScope::Root, b"meminfo") => {
                let f = crate::mm::frame::stats();
                let line = |k: &str, v: usize| format!("{:<16}{:>8} kB\n", format!("{k}:"), v * 4);
                let mut s = line("MemTotal", f.total);
                s.push_str(&line("MemFree", f.free));
                s.push_str(&line("MemAvailable", f.free));
                // The kernel heap is this kernel's slab: all of it unreclaimable.
                let heap_pages = crate::mm::heap::stats().0 / arch::memory::PAGE_SIZE;
                s.push_str(&line("Slab", heap_pages));
                s.push_str(&line("SReclaimable", 0));
                s.push_str(&line("SUnreclaim", heap_pages));
                // Task stacks alive, as Linux's NR_KERNEL_STACK_KB counts them (in pages here).
                let stack_pages = crate::sched::task::live_kernel_stacks() as usize * crate::sched::task::THREAD_SIZE
                    / arch::memory::PAGE_SIZE;
                s.push_str(&line("KernelStack", stack_pages));
                Ok(s.into_bytes())
            }
            (ProcScope::Root, b"loadavg") => {
                use crate::sched::loadavg;
                let threads: usize = process::all_processes().iter().map(|p| p.threads.lock().len()).sum();
                Ok(format!(
                    "{} {}/{} {}\n",
                    loadavg::proc_figures(),
                    loadavg::nr_running(),
                    threads,
                    crate::sched::Task::last_tid()
                )
                .into_bytes())
            }
            (ProcScope::Root, b"uptime") => {
                let ns = crate::time::ktime_get_ns();
                Ok(format!("{}.{:02} 0.00\n", ns / 1_000_000_000, ns / 10_000_000 % 100).into_bytes())
            }
            (ProcScope::Pid(pid), b"stat") => process::find_process(pid)
                .map(|p| stat(&p, None))
                .ok_or(uapi::Errno::ESRCH),
            (ProcScope::Pid(pid), b"auxv") => Ok(process::find_process(pid)
                .ok_or(uapi::Errno::ESRCH)?
                .main_thread()
                .and_then(|t| t.mm.lock().clone())
                .map(|mm| mm.saved_auxv())
                .unwrap_or_default()),
            // The zombie leader's (no task): the process's, as Linux's
            // files of the leader are.
            (ProcScope::Pid(pid), rel) if rel.starts_with(b"task/") => match task_path(pid, rel) {
                Some((t, b"stat")) => process::find_process(pid)
                    .map(|p| stat(&p, t))
                    .ok_or(uapi::Errno::ESRCH),
                Some((t, b"status")) => process::find_process(pid)
                    .map(|p| status(&p, t))
                    .ok_or(uapi::Errno::ESRCH),
                Some((Some(t), b"comm")) => Ok(format!("{}\n", t.comm_string()).into_bytes()),
                Some((None, b"comm")) => process::find_process(pid)
                    .map(|p| format!("{}\n", zombie_comm(&p)).into_bytes())
                    .ok_or(uapi::Errno::ESRCH),
                _ => Err(uapi::Errno::ENOENT),
            },
            (ProcScope::Pid(pid), b"cmdline") => Ok(process::find_process(pid)
                .ok_or(uapi::Errno::ESRCH)?
                .main_thread()
                .and_then(|t| t.mm.lock().clone())
                .map(|mm| mm.cmdline())
                .unwrap_or_default()),
            (ProcScope::Pid(pid), b"status") => process::find_process(pid)
                .map(|p| status(&p, None))
                .ok_or(uapi::Errno::ESRCH),
            (ProcScope::Pid(pid), b"maps") => Ok(process::find_process(pid)
                .ok_or(uapi::Errno::ESRCH)?
                .main_thread()
                .and_then(|t| t.mm.lock().clone())
                .map(|mm| mm.maps().into_bytes())
                .unwrap_or_default()),
            (ProcScope::Pid(pid), b"comm") => process::find_process(pid)
                .map(|p| {
                    let name = p.main_thread().map_or_else(|| zombie_comm(&p), |t| t.comm_string());
                    format!("{name}\n").into_bytes()
                })
                .ok_or(uapi::Errno::ESRCH),
            _ => Err(uapi::Errno::ENOENT),
        }
    }

    /// The writable sysctls: `stack_tracer_enabled`, and those trace-cmd
    /// sets while it records. `ftrace_enabled`: keeping it on succeeds,
    /// while 0 (switching the function tracer off system-wide) is not
    /// supported here and is refused with EINVAL. `kptr_restrict`: 0..=2 as
    /// Linux's proc_dointvec_minmax, EINVAL outside.
    fn write(&self, scope: ProcScope, rel: &[u8], data: &[u8]) -> vfs::Result<usize> {
        match (scope, rel) {
            // A sysctl reads the bytes as a list of numbers: none is no
            // change (proc_sys_call_handler passes an empty buffer to the
            // handler, which parses nothing).
            (ProcScope::Root, rel) if data.is_empty() && rel.starts_with(b"sys/") => Ok(0),
            (ProcScope::Root, b"sys/kernel/stack_tracer_enabled") => {
                crate::trace::trace_stack::stack_trace_sysctl(data)
            }
            (ProcScope::Root, b"sys/kernel/sched_rt_period_us") => sched_rt_write(true, data),
            (ProcScope::Root, b"sys/vm/drop_caches") => drop_caches_write(data),
            (ProcScope::Root, b"sys/kernel/sched_rt_runtime_us") => sched_rt_write(false, data),
            (ProcScope::Root, b"sys/kernel/ftrace_enabled") => match sysctl_int(data)? {
                0 => Err(uapi::Errno::EINVAL),
                _ => Ok(data.len()),
            },
            (ProcScope::Root, b"sys/kernel/kptr_restrict") => {
                let v = u8::try_from(sysctl_int(data)?)
                    .ok()
                    .filter(|v| *v <= 2)
                    .ok_or(uapi::Errno::EINVAL)?;
                KPTR_RESTRICT.store(v, Ordering::Relaxed);
                Ok(data.len())
            }
            (ProcScope::Pid(pid), b"comm") => {
                comm_write(pid, process::find_process(pid).and_then(|p| p.main_thread()), data)
            }
            (ProcScope::Pid(pid), rel) if rel.starts_with(b"task/") && rel.ends_with(b"/comm") => {
                match task_path(pid, rel) {
                    Some((t, b"comm")) => comm_write(pid, t, data),
                    _ => Err(uapi::Errno::ESRCH),
                }
            }
            // A read-only file root opened for writing: a per-process file
            // has no write method (vfs_write's EINVAL), a /proc entry has
            // proc_reg_write, which fails without a proc_write (EIO); a
            // read-only sysctl refuses the open itself (EACCES).
            (ProcScope::Pid(_), _) => Err(uapi::Errno::EINVAL),
            (ProcScope::Root, rel) if !rel.starts_with(b"sys/") => Err(uapi::Errno::EIO),
            _ => Err(uapi::Errno::EACCES),
        }
    }

    /// `exe`: the program's file, as exec found it (ENOENT for a process
    /// without one, a kernel thread or a zombie, as Linux).
    fn readlink(&self, scope: ProcScope, rel: &[u8]) -> vfs::Result<Vec<u8>> {
        match (scope, rel) {
            (ProcScope::Pid(pid), b"exe") => process::find_process(pid)
                .ok_or(uapi::Errno::ESRCH)?
                .main_thread()
                .and_then(|t| t.mm.lock().clone())
                .map(|mm| mm.exe_file())
                .filter(|name| !name.is_empty())
                .ok_or(uapi::Errno::ENOENT),
            (ProcScope::Pid(pid), b"cwd") => {
                let p = process::find_process(pid).ok_or(uapi::Errno::ESRCH)?;
                let cwd = p.fs.lock().cwd.lock().clone();
                crate::fs::vfs().getcwd(&cwd)
            }
            (ProcScope::Pid(pid), b"root") => process::find_process(pid)
                .map(|_| b"/".to_vec())
                .ok_or(uapi::Errno::ESRCH),
            (ProcScope::Pid(pid), rel) if rel.starts_with(b"fd/") => {
                let fd = fd_number(&rel[3..]).ok_or(uapi::Errno::ENOENT)?;
                let f = files_of(pid)?.get(fd).map_err(|_| uapi::Errno::ENOENT)?;
                Ok(fd_link_target(&f))
            }
            _ => Err(uapi::Errno::EINVAL),
        }
    }

    /// `mem` of a process (its first thread's) or of one of its threads.
    /// Opening needs ptrace-attach access with the caller's filesystem IDs
    /// (Linux's proc_mem_open: mm_access with PTRACE_MODE_ATTACH_FSCREDS,
    /// EACCES when refused, ESRCH for a zombie).
    fn open_file(&self, scope: ProcScope, rel: &[u8], flags: u32) -> vfs::Result<Option<Arc<dyn vfs::file::FileOps>>> {
        // A write-only sysctl cannot be opened for reading, by root either
        // (Linux's proc_sys_permission checks the mode alone).
        if (scope, rel) == (ProcScope::Root, &b"sys/vm/drop_caches"[..])
            && flags & uapi::fcntl::O_ACCMODE != uapi::fcntl::O_WRONLY
        {
            return Err(uapi::Errno::EACCES);
        }
        let ProcScope::Pid(pid) = scope else { return Ok(None) };
        let task = match rel {
            b"mem" => process::find_process(pid).ok_or(uapi::Errno::ESRCH)?.main_thread(),
            rel => match task_path(pid, rel) {
                Some((t, b"mem")) => t,
                _ => return Ok(None),
            },
        };
        // A zombie (no thread, or one without an address space) is ESRCH,
        // as Linux's __mem_open answers a task mm_access finds no mm for.
        let task = task.ok_or(uapi::Errno::ESRCH)?;
        let mm = crate::ptrace::access::mm_access(&task, crate::ptrace::access::PtraceMode::AttachFsCreds)?;
        Ok(Some(Arc::new(MemFile {
            mm: Arc::downgrade(&mm),
        })))
    }
}
