//! `execve` (Linux's fs/exec.c + binfmt_elf): build a new address space
//! from an ELF executable (and its PT_INTERP interpreter, or a `#!`
//! script's interpreter), lay out the initial stack, and switch the calling
//! process to it. Segments are private mappings of the file, as Linux's
//! `elf_map`.

use crate::errno::Errno;
use crate::mm::vm::{Mm, Placement, Prot, VmFile, VmaKind, STACK_SIZE, STACK_TOP};
use crate::process::{self, current_process};
use crate::sched;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::addr::UserVirtAddr;
use arch::ptrace::PtRegs;
use core::sync::atomic::Ordering;

/// Most nested `#!` interpreters (Linux allows 4 levels).
const MAX_INTERP_DEPTH: usize = 4;

/// A loaded program, ready to start.
pub struct Image {
    /// Its address space.
    pub mm: Arc<Mm>,
    /// Entry point.
    pub entry: u64,
    /// Initial stack pointer.
    pub sp: u64,
    /// Name for `comm`.
    pub comm: Vec<u8>,
}

/// The `#!` line of a script: interpreter and optional single argument.
fn parse_shebang(data: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let rest = data.strip_prefix(b"#!")?;
    // Linux reads at most BINPRM_BUF_SIZE (256) bytes of the first line.
    let line = &rest[..rest.len().min(254)];
    let line = line.split(|&b| b == b'\n').next()?;
    let line: &[u8] = trim(line);
    if line.is_empty() {
        return None;
    }
    let split = line.iter().position(|&b| b == b' ' || b == b'\t');
    let (interp, arg) = match split {
        Some(i) => (&line[..i], Some(trim(&line[i..]))),
        None => (line, None),
    };
    Some((interp.to_vec(), arg.filter(|a| !a.is_empty()).map(|a| a.to_vec())))
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// AT_HWCAP: what the CPU offers user programs.
pub fn hwcap() -> u64 {
    // HWCAP_FP | HWCAP_ASIMD, plus the crypto and CRC32 extensions the CPU
    // reports in ID_AA64ISAR0_EL1.
    let isar0 = arch::cpu::id_aa64isar0();
    let field = |shift: u32| (isar0 >> shift) & 0xf;
    let mut h = 0b11;
    if field(4) >= 1 {
        h |= 1 << 3; // AES
    }
    if field(4) >= 2 {
        h |= 1 << 4; // PMULL
    }
    if field(8) >= 1 {
        h |= 1 << 5; // SHA1
    }
    if field(12) >= 1 {
        h |= 1 << 6; // SHA2
    }
    if field(16) >= 1 {
        h |= 1 << 7; // CRC32
    }
    h
}

/// Loads the program at `path` with `argv`/`envp` into a new address space.
pub fn load(path: &str, argv: Vec<Vec<u8>>, envp: &[Vec<u8>]) -> Result<Image, Errno> {
    let mut argv = argv;
    let mut path_bytes: Vec<u8> = path.as_bytes().to_vec();
    let execfn = path.as_bytes().to_vec();
    let mut depth = 0;
    let (data, file) = loop {
        let (data, file) = crate::fs::open_exec(&path_bytes)?;
        match parse_shebang(&data) {
            Some((interp, arg)) => {
                depth += 1;
                if depth > MAX_INTERP_DEPTH {
                    return Err(Errno::ELOOP);
                }
                // argv becomes: interp [arg] path argv[1..]
                let mut new = alloc::vec![interp.clone()];
                new.extend(arg);
                new.push(path_bytes.clone());
                new.extend(argv.iter().skip(1).cloned());
                argv = new;
                path_bytes = interp;
            }
            None => break (data, file),
        }
    };
    let plan = exec::load_plan_head(&data, plan_file_len(&file)).map_err(|e| e.errno())?;
    drop(data);
    let mm = Mm::new()?;
    mm.set_exe_file(&file.name);
    map_segments(&mm, &plan, &file, plan_file_len(&file))?;
    mm.set_brk_start(plan.brk_start);
    // A dynamically linked program starts in its interpreter, placed where
    // mmap would put it (Linux's load_elf_interp), which finds the program
    // through AT_PHDR and AT_ENTRY and itself through AT_BASE.
    let (entry, interp_base) = match &plan.interp {
        Some(interp) => {
            let (idata, ifile) = crate::fs::open_exec(interp)?;
            let span = exec::image_span(&idata).map_err(|e| e.errno())?;
            let base = mm.get_unmapped_area(span)?.as_u64();
            let iplan = exec::load_interp_plan_head(&idata, plan_file_len(&ifile), base).map_err(|e| e.errno())?;
            drop(idata);
            map_segments(&mm, &iplan, &ifile, plan_file_len(&ifile))?;
            (iplan.entry, iplan.bias)
        }
        None => (plan.entry, 0),
    };
    mm.add_region(
        STACK_TOP - STACK_SIZE,
        STACK_TOP,
        Prot {
            read: true,
            write: true,
            exec: false,
        },
        VmaKind::Stack,
    )?;
    // [vvar] and [vdso]; the vDSO's __kernel_rt_sigreturn is also where
    // handlers without SA_RESTORER return (see signal::frame).
    let vdso = crate::vdso::arch_setup_additional_pages(&mm)?;

    let mut random = [0u8; 16];
    crate::random::fill(&mut random);
    let aux = exec::AuxParams {
        hwcap: hwcap(),
        random,
        // Linux's signal_minsigstksz: the frame, the {x29, x30} frame
        // record above it (16) and the worst-case 16-byte alignment.
        minsigstksz: crate::signal::frame::FRAME_SIZE as u64 + 16 + 16,
        vdso: Some(vdso),
        interp_base,
        rseq_feature_size: Some(crate::rseq::RSEQ_FEATURE_SIZE.into()),
        ..Default::default()
    };
    let argv_refs: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
    let envp_refs: Vec<&[u8]> = envp.iter().map(|a| a.as_slice()).collect();
    let stack = exec::build_stack(STACK_TOP, &argv_refs, &envp_refs, &execfn, &plan, aux).map_err(|e| e.errno())?;
    mm.write_bytes(UserVirtAddr::new(stack.sp).ok_or(Errno::EFAULT)?, &stack.bytes)?;
    mm.set_arg_range(stack.arg_start, stack.arg_end);
    mm.set_saved_auxv(&stack.auxv);
    let base = path_bytes.rsplit(|&b| b == b'/').next().unwrap_or(&path_bytes).to_vec();
    Ok(Image {
        mm,
        entry,
        sp: stack.sp,
        comm: base,
    })
}

/// The size of an executable's file, for the segment mapping's padzero.
fn plan_file_len(file: &VmFile) -> u64 {
    file.inode.metadata().size
}

/// Maps the PT_LOAD segments of `plan` as Linux's `elf_load`: the file's
/// pages privately (copy-on-write), the rest of the last file page zeroed
/// when the segment has .bss (`padzero`), anonymous zero pages for the rest
/// of the .bss. A segment may share its first page with the previous one;
/// the later one replaces it, as MAP_FIXED does.
fn map_segments(mm: &Mm, plan: &exec::LoadPlan, file: &Arc<VmFile>, file_size: u64) -> Result<(), Errno> {
    const PAGE: u64 = 4096;
    for seg in &plan.segments {
        let prot = Prot {
            read: seg.prot.read,
            write: seg.prot.write,
            exec: seg.prot.exec,
        };
        let file_len = seg.file.end - seg.file.start;
        let file_map_end = (seg.vaddr.start + file_len.div_ceil(PAGE) * PAGE).min(seg.vaddr.end);
        if file_len > 0 {
            let backing = Some((file.clone(), seg.file.start));
            mm.mmap_region(
                seg.vaddr.start,
                file_map_end - seg.vaddr.start,
                prot,
                Placement::Fixed,
                false,
                backing,
            )?;
            // Past the end of the file the page reads as zeros already.
            let copied_end = seg.vaddr.start + file_len;
            if copied_end < file_map_end && seg.file.end < file_size {
                let zeros = alloc::vec![0u8; (file_map_end - copied_end) as usize];
                mm.write_bytes(UserVirtAddr::new(copied_end).ok_or(Errno::EFAULT)?, &zeros)?;
            }
        }
        if file_map_end < seg.vaddr.end {
            mm.mmap_region(
                file_map_end,
                seg.vaddr.end - file_map_end,
                prot,
                Placement::Fixed,
                false,
                None,
            )?;
        }
    }
    Ok(())
}

/// `execve` for the current task: on success the caller returns to the new
/// program with `regs` reset. Under Linux's name, for the function tracer.
#[allow(unsafe_code)] // exported under Linux's name
#[no_mangle]
#[inline(never)]
pub fn do_execve(path: &str, argv: Vec<Vec<u8>>, envp: Vec<Vec<u8>>, regs: &mut PtRegs) -> Result<(), Errno> {
    let image = load(path, argv, &envp)?;
    // Point of no return.
    let me = sched::current();
    let old_pid = me.tid() as i32;
    let p = current_process();
    if !de_thread(&me, &p) {
        // Nothing may stay referenced from this frame: it never returns.
        drop((me, p, image));
        process::do_group_exit(crate::signal::SIGKILL as i32);
    }
    image.mm.activate();
    // Linux's begin_new_exec: the new space is dumpable unless the caller
    // runs with effective IDs other than its real ones; then the exec's
    // credentials (no set-ID or file-capability programs here, so the IDs
    // stay) are installed, which may close it again (commit_creds).
    let cred = crate::cred::task_cred(&me);
    image.mm.set_dumpable(if cred.exec_dumpable() {
        uapi::capability::SUID_DUMP_USER
    } else {
        uapi::capability::SUID_DUMP_DISABLE
    });
    let old = me.mm.lock().replace(image.mm);
    drop(old);
    crate::cred::commit_creds(cred.for_exec());
    drop(cred);
    crate::trace::tracepoint::task::trace_task_rename(&me, &image.comm);
    me.set_comm(&image.comm);
    p.fs.lock().close_on_exec();
    // Handlers do not survive exec; a shared table is unshared first.
    p.sighand.reset_for_exec();
    *me.sas.lock() = crate::signal::frame::AltStack::DISABLED;
    me.rseq.execve();
    arch::context::fpsimd_load(&arch::context::FpsimdState::default());
    arch::context::set_tls(0);
    crate::debug::hw_breakpoint::flush_ptrace_hw_breakpoint(&me);
    // The system call number survives, as Linux's start_thread_common
    // keeps it: execve's exit is still execve's (its events, ptrace).
    let syscallno = regs.syscallno;
    *regs = crate::process::regs::start_thread(image.entry, image.sp);
    regs.syscallno = syscallno;
    process::vfork_release(&me);
    crate::trace::tracepoint::sched::trace_sched_process_exec(&me, old_pid, path.as_bytes());
    Ok(())
}

/// Linux's de_thread: the exec'ing thread kills the others and waits until
/// they are gone. `exiting` set under `threads` makes concurrent clones
/// fail (see do_clone) and makes the killed threads' group exits plain
/// thread exits, so this thread survives. If a group exit (or another
/// thread's exec) started first, this thread has been killed too: it
/// loses (returns false) and must die.
fn de_thread(me: &Arc<sched::Task>, p: &Arc<process::Process>) -> bool {
    {
        let threads = p.threads.lock();
        if p.exiting.swap(true, Ordering::AcqRel) {
            return false;
        }
        for t in threads.iter().filter(|t| !Arc::ptr_eq(t, me)) {
            t.sig_pending
                .fetch_or(crate::signal::sigmask(crate::signal::SIGKILL), Ordering::AcqRel);
            sched::wake_up(t);
        }
    }
    while p.threads.lock().len() > 1 {
        sched::yield_now();
    }
    p.exiting.store(false, Ordering::Release);
    process::take_leader_id(me, p);
    true
}

/// Starts PID 1 from `path` (`init=` on the command line, else the usual
/// places).
pub fn run_init(candidates: &[&str]) -> Result<(), Errno> {
    let envp: Vec<Vec<u8>> = alloc::vec![b"HOME=/".to_vec(), b"TERM=linux".to_vec()];
    let mut last = Errno::ENOENT;
    for path in candidates {
        match load(path, alloc::vec![path.as_bytes().to_vec()], &envp) {
            Ok(img) => {
                crate::pr_info!("Run {} as init process", path);
                let fs = crate::fs::init_process_fs()?;
                process::spawn_init(img.mm, img.entry, img.sp, fs, &img.comm)?;
                return Ok(());
            }
            Err(e) => {
                if e != Errno::ENOENT {
                    crate::pr_warn!(
                        "Starting init: {} exists but couldn't execute it (error {})",
                        path,
                        -e.as_neg()
                    );
                }
                last = e;
            }
        }
    }
    Err(last)
}
