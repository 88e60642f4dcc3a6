//! The Linux arm64 system call table: every number arm64 assigns
//! (`scripts/syscall.tbl` with the `common`, `64`, `renameat`, `rlimit` and
//! `memfd_secret` ABIs, as `arch/arm64/kernel/Makefile.syscalls` selects),
//! with its name, argument count and what each argument is, from the
//! prototypes in `include/linux/syscalls.h`.
//!
//! The kernel's dispatcher and `rt` take their numbers from [`nr`]; a tracer
//! (strace-like tool, `syscalls` trace events) takes names and argument
//! kinds from [`SYSCALLS`], including those of calls this kernel lacks.

/// What a system call argument is, enough to decode it for a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A plain integer (a count, command, id, or a value passed through).
    Int,
    /// A file descriptor, or `AT_FDCWD` for the `*at` directory argument.
    Fd,
    /// A process, thread or process-group id.
    Pid,
    /// A signal number.
    Signal,
    /// A bit set of flags (`O_*`, `MAP_*`, `CLONE_*`, ...).
    Flags,
    /// A file mode (`umode_t`).
    Mode,
    /// A byte or element count (`size_t` and friends).
    Size,
    /// A user address passed as a number (`brk`, `mmap`'s hint, `tls`).
    Addr,
    /// A user pointer to a NUL-terminated string (a path or a name).
    Str,
    /// A user pointer to a NULL-terminated array of string pointers (argv).
    StrArray,
    /// A user pointer the call only reads (`const` in Linux's prototype).
    PtrIn,
    /// A user pointer the call may write (and may read): buffers, results.
    Ptr,
}

/// One argument of a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    /// The parameter's name in Linux's prototype.
    pub name: &'static str,
    /// What it is.
    pub kind: ArgKind,
}

/// One system call number of Linux arm64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    /// The number user space puts in x8.
    pub nr: u32,
    /// Linux's name, as in `__NR_<name>` and `__arm64_sys_<name>`'s
    /// table entry (the number's name, e.g. `newfstatat`, `umount2`).
    pub name: &'static str,
    /// The arguments, in x0.. order; `args.len()` is the argument count.
    pub args: &'static [Arg],
    /// The number is reserved for a call Linux removed (`sys_ni_syscall`).
    pub removed: bool,
}

macro_rules! syscalls {
    ($($konst:ident = $nr:literal => $name:ident
        $(( $($aname:tt : $akind:ident),* ))? $(, $removed:ident)?;)*) => {
        /// System call numbers (`__NR_*`), by Linux's name in upper case.
        /// They are `usize`, the width of x8 and of user space's raw
        /// system call wrappers; the kernel reads only x8's low 32 bits.
        pub mod nr {
            $(#[doc = concat!("`", stringify!($name), "`")]
            pub const $konst: usize = $nr;)*
        }

        /// Every Linux arm64 system call number, in increasing order.
        pub const SYSCALLS: &[Syscall] = &[$(Syscall {
            nr: $nr,
            name: stringify!($name),
            args: &[$($(Arg { name: stringify!($aname), kind: ArgKind::$akind }),*)?],
            removed: syscalls!(@removed $($removed)?),
        },)*];
    };
    (@removed removed) => { true };
    (@removed) => { false };
}

/// One more than the highest number: the size of a dispatch table.
pub const NR_SYSCALLS: u32 = 463;

/// The system call with number `nr`, if Linux arm64 assigns it.
pub fn by_nr(nr: u32) -> Option<&'static Syscall> {
    SYSCALLS.binary_search_by_key(&nr, |s| s.nr).ok().map(|i| &SYSCALLS[i])
}

/// The system call named `name` (Linux's `__NR_` name).
pub fn by_name(name: &str) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.name == name)
}

/// Linux's name for number `nr`, if it has one.
pub fn name(nr: u32) -> Option<&'static str> {
    by_nr(nr).map(|s| s.name)
}

// Generated once from Linux 6.12's scripts/syscall.tbl and
// include/linux/syscalls.h, with names supplied where the prototype omits
// them (socket calls, ppoll, pselect6, rt_sigaction, clone, mmap).
syscalls! {
    IO_SETUP = 0 => io_setup(nr_reqs: Int, ctx: Ptr);
    IO_DESTROY = 1 => io_destroy(ctx: Int);
    IO_SUBMIT = 2 => io_submit(ctx_id: Int, nr: Size, iocbpp: Ptr);
    IO_CANCEL = 3 => io_cancel(ctx_id: Int, iocb: Ptr, result: Ptr);
    IO_GETEVENTS = 4 => io_getevents(ctx_id: Int, min_nr: Int, nr: Size, events: Ptr, timeout: Ptr);
    SETXATTR = 5 => setxattr(path: Str, name: Str, value: PtrIn, size: Size, flags: Flags);
    LSETXATTR = 6 => lsetxattr(path: Str, name: Str, value: PtrIn, size: Size, flags: Flags);
    FSETXATTR = 7 => fsetxattr(fd: Fd, name: Str, value: PtrIn, size: Size, flags: Flags);
    GETXATTR = 8 => getxattr(path: Str, name: Str, value: Ptr, size: Size);
    LGETXATTR = 9 => lgetxattr(path: Str, name: Str, value: Ptr, size: Size);
    FGETXATTR = 10 => fgetxattr(fd: Fd, name: Str, value: Ptr, size: Size);
    LISTXATTR = 11 => listxattr(path: Str, list: Ptr, size: Size);
    LLISTXATTR = 12 => llistxattr(path: Str, list: Ptr, size: Size);
    FLISTXATTR = 13 => flistxattr(fd: Fd, list: Ptr, size: Size);
    REMOVEXATTR = 14 => removexattr(path: Str, name: Str);
    LREMOVEXATTR = 15 => lremovexattr(path: Str, name: Str);
    FREMOVEXATTR = 16 => fremovexattr(fd: Fd, name: Str);
    GETCWD = 17 => getcwd(buf: Ptr, size: Size);
    LOOKUP_DCOOKIE = 18 => lookup_dcookie, removed;
    EVENTFD2 = 19 => eventfd2(count: Size, flags: Flags);
    EPOLL_CREATE1 = 20 => epoll_create1(flags: Flags);
    EPOLL_CTL = 21 => epoll_ctl(epfd: Fd, op: Int, fd: Fd, event: Ptr);
    EPOLL_PWAIT = 22 => epoll_pwait(epfd: Fd, events: Ptr, maxevents: Size, timeout: Int, sigmask: PtrIn, sigsetsize: Size);
    DUP = 23 => dup(fildes: Int);
    DUP3 = 24 => dup3(oldfd: Fd, newfd: Fd, flags: Flags);
    FCNTL = 25 => fcntl(fd: Fd, cmd: Int, arg: Int);
    INOTIFY_INIT1 = 26 => inotify_init1(flags: Flags);
    INOTIFY_ADD_WATCH = 27 => inotify_add_watch(fd: Fd, path: Str, mask: Int);
    INOTIFY_RM_WATCH = 28 => inotify_rm_watch(fd: Fd, wd: Int);
    IOCTL = 29 => ioctl(fd: Fd, cmd: Int, arg: Int);
    IOPRIO_SET = 30 => ioprio_set(which: Int, who: Pid, ioprio: Int);
    IOPRIO_GET = 31 => ioprio_get(which: Int, who: Pid);
    FLOCK = 32 => flock(fd: Fd, cmd: Int);
    MKNODAT = 33 => mknodat(dfd: Fd, filename: Str, mode: Mode, dev: Int);
    MKDIRAT = 34 => mkdirat(dfd: Fd, pathname: Str, mode: Mode);
    UNLINKAT = 35 => unlinkat(dfd: Fd, pathname: Str, flag: Flags);
    SYMLINKAT = 36 => symlinkat(oldname: Str, newdfd: Fd, newname: Str);
    LINKAT = 37 => linkat(olddfd: Fd, oldname: Str, newdfd: Fd, newname: Str, flags: Flags);
    RENAMEAT = 38 => renameat(olddfd: Fd, oldname: Str, newdfd: Fd, newname: Str);
    UMOUNT2 = 39 => umount2(name: Str, flags: Flags);
    MOUNT = 40 => mount(dev_name: Str, dir_name: Str, type: Str, flags: Flags, data: Ptr);
    PIVOT_ROOT = 41 => pivot_root(new_root: PtrIn, put_old: PtrIn);
    NFSSERVCTL = 42 => nfsservctl, removed;
    STATFS = 43 => statfs(path: Str, buf: Ptr);
    FSTATFS = 44 => fstatfs(fd: Fd, buf: Ptr);
    TRUNCATE = 45 => truncate(path: Str, length: Size);
    FTRUNCATE = 46 => ftruncate(fd: Fd, length: Size);
    FALLOCATE = 47 => fallocate(fd: Fd, mode: Mode, offset: Int, len: Size);
    FACCESSAT = 48 => faccessat(dfd: Fd, filename: Str, mode: Mode);
    CHDIR = 49 => chdir(filename: Str);
    FCHDIR = 50 => fchdir(fd: Fd);
    CHROOT = 51 => chroot(filename: Str);
    FCHMOD = 52 => fchmod(fd: Fd, mode: Mode);
    FCHMODAT = 53 => fchmodat(dfd: Fd, filename: Str, mode: Mode);
    FCHOWNAT = 54 => fchownat(dfd: Fd, filename: Str, user: Int, group: Int, flag: Flags);
    FCHOWN = 55 => fchown(fd: Fd, user: Int, group: Int);
    OPENAT = 56 => openat(dfd: Fd, filename: Str, flags: Flags, mode: Mode);
    CLOSE = 57 => close(fd: Fd);
    VHANGUP = 58 => vhangup();
    PIPE2 = 59 => pipe2(fildes: Ptr, flags: Flags);
    QUOTACTL = 60 => quotactl(cmd: Int, special: Str, id: Int, addr: Ptr);
    GETDENTS64 = 61 => getdents64(fd: Fd, dirent: Ptr, count: Size);
    LSEEK = 62 => lseek(fd: Fd, offset: Int, whence: Int);
    READ = 63 => read(fd: Fd, buf: Ptr, count: Size);
    WRITE = 64 => write(fd: Fd, buf: PtrIn, count: Size);
    READV = 65 => readv(fd: Fd, vec: PtrIn, vlen: Size);
    WRITEV = 66 => writev(fd: Fd, vec: PtrIn, vlen: Size);
    PREAD64 = 67 => pread64(fd: Fd, buf: Ptr, count: Size, pos: Int);
    PWRITE64 = 68 => pwrite64(fd: Fd, buf: PtrIn, count: Size, pos: Int);
    PREADV = 69 => preadv(fd: Fd, vec: PtrIn, vlen: Size, pos_l: Int, pos_h: Int);
    PWRITEV = 70 => pwritev(fd: Fd, vec: PtrIn, vlen: Size, pos_l: Int, pos_h: Int);
    SENDFILE = 71 => sendfile(out_fd: Fd, in_fd: Fd, offset: Ptr, count: Size);
    PSELECT6 = 72 => pselect6(n: Int, inp: Ptr, outp: Ptr, exp: Ptr, tsp: Ptr, sig: PtrIn);
    PPOLL = 73 => ppoll(ufds: Ptr, nfds: Size, tsp: Ptr, sigmask: PtrIn, sigsetsize: Size);
    SIGNALFD4 = 74 => signalfd4(ufd: Fd, user_mask: Ptr, sizemask: Size, flags: Flags);
    VMSPLICE = 75 => vmsplice(fd: Fd, iov: PtrIn, nr_segs: Size, flags: Flags);
    SPLICE = 76 => splice(fd_in: Fd, off_in: Ptr, fd_out: Fd, off_out: Ptr, len: Size, flags: Flags);
    TEE = 77 => tee(fdin: Int, fdout: Int, len: Size, flags: Flags);
    READLINKAT = 78 => readlinkat(dfd: Fd, path: Str, buf: Ptr, bufsiz: Size);
    NEWFSTATAT = 79 => newfstatat(dfd: Fd, filename: Str, statbuf: Ptr, flag: Flags);
    FSTAT = 80 => fstat(fd: Fd, statbuf: Ptr);
    SYNC = 81 => sync();
    FSYNC = 82 => fsync(fd: Fd);
    FDATASYNC = 83 => fdatasync(fd: Fd);
    SYNC_FILE_RANGE = 84 => sync_file_range(fd: Fd, offset: Int, nbytes: Size, flags: Flags);
    TIMERFD_CREATE = 85 => timerfd_create(clockid: Int, flags: Flags);
    TIMERFD_SETTIME = 86 => timerfd_settime(ufd: Fd, flags: Flags, utmr: PtrIn, otmr: Ptr);
    TIMERFD_GETTIME = 87 => timerfd_gettime(ufd: Fd, otmr: Ptr);
    UTIMENSAT = 88 => utimensat(dfd: Fd, filename: Str, utimes: Ptr, flags: Flags);
    ACCT = 89 => acct(name: Str);
    CAPGET = 90 => capget(header: Ptr, dataptr: Ptr);
    CAPSET = 91 => capset(header: Ptr, data: PtrIn);
    PERSONALITY = 92 => personality(personality: Int);
    EXIT = 93 => exit(error_code: Int);
    EXIT_GROUP = 94 => exit_group(error_code: Int);
    WAITID = 95 => waitid(which: Int, pid: Pid, infop: Ptr, options: Int, ru: Ptr);
    SET_TID_ADDRESS = 96 => set_tid_address(tidptr: Ptr);
    UNSHARE = 97 => unshare(unshare_flags: Int);
    FUTEX = 98 => futex(uaddr: Ptr, op: Int, val: Int, utime: PtrIn, uaddr2: Ptr, val3: Int);
    SET_ROBUST_LIST = 99 => set_robust_list(head: Ptr, len: Size);
    GET_ROBUST_LIST = 100 => get_robust_list(pid: Pid, head_ptr: Ptr, len_ptr: Ptr);
    NANOSLEEP = 101 => nanosleep(rqtp: Ptr, rmtp: Ptr);
    GETITIMER = 102 => getitimer(which: Int, value: Ptr);
    SETITIMER = 103 => setitimer(which: Int, value: Ptr, ovalue: Ptr);
    KEXEC_LOAD = 104 => kexec_load(entry: Int, nr_segments: Int, segments: Ptr, flags: Flags);
    INIT_MODULE = 105 => init_module(umod: Ptr, len: Size, uargs: Str);
    DELETE_MODULE = 106 => delete_module(name_user: Str, flags: Flags);
    TIMER_CREATE = 107 => timer_create(which_clock: Int, timer_event_spec: Ptr, created_timer_id: Ptr);
    TIMER_GETTIME = 108 => timer_gettime(timer_id: Int, setting: Ptr);
    TIMER_GETOVERRUN = 109 => timer_getoverrun(timer_id: Int);
    TIMER_SETTIME = 110 => timer_settime(timer_id: Int, flags: Flags, new_setting: PtrIn, old_setting: Ptr);
    TIMER_DELETE = 111 => timer_delete(timer_id: Int);
    CLOCK_SETTIME = 112 => clock_settime(which_clock: Int, tp: PtrIn);
    CLOCK_GETTIME = 113 => clock_gettime(which_clock: Int, tp: Ptr);
    CLOCK_GETRES = 114 => clock_getres(which_clock: Int, tp: Ptr);
    CLOCK_NANOSLEEP = 115 => clock_nanosleep(which_clock: Int, flags: Flags, rqtp: PtrIn, rmtp: Ptr);
    SYSLOG = 116 => syslog(type: Int, buf: Ptr, len: Size);
    PTRACE = 117 => ptrace(request: Int, pid: Pid, addr: Addr, data: Int);
    SCHED_SETPARAM = 118 => sched_setparam(pid: Pid, param: Ptr);
    SCHED_SETSCHEDULER = 119 => sched_setscheduler(pid: Pid, policy: Int, param: Ptr);
    SCHED_GETSCHEDULER = 120 => sched_getscheduler(pid: Pid);
    SCHED_GETPARAM = 121 => sched_getparam(pid: Pid, param: Ptr);
    SCHED_SETAFFINITY = 122 => sched_setaffinity(pid: Pid, len: Size, user_mask_ptr: Ptr);
    SCHED_GETAFFINITY = 123 => sched_getaffinity(pid: Pid, len: Size, user_mask_ptr: Ptr);
    SCHED_YIELD = 124 => sched_yield();
    SCHED_GET_PRIORITY_MAX = 125 => sched_get_priority_max(policy: Int);
    SCHED_GET_PRIORITY_MIN = 126 => sched_get_priority_min(policy: Int);
    SCHED_RR_GET_INTERVAL = 127 => sched_rr_get_interval(pid: Pid, interval: Ptr);
    RESTART_SYSCALL = 128 => restart_syscall();
    KILL = 129 => kill(pid: Pid, sig: Signal);
    TKILL = 130 => tkill(pid: Pid, sig: Signal);
    TGKILL = 131 => tgkill(tgid: Pid, pid: Pid, sig: Signal);
    SIGALTSTACK = 132 => sigaltstack(uss: PtrIn, uoss: Ptr);
    RT_SIGSUSPEND = 133 => rt_sigsuspend(unewset: Ptr, sigsetsize: Size);
    RT_SIGACTION = 134 => rt_sigaction(sig: Signal, act: PtrIn, oact: Ptr, sigsetsize: Size);
    RT_SIGPROCMASK = 135 => rt_sigprocmask(how: Int, set: Ptr, oset: Ptr, sigsetsize: Size);
    RT_SIGPENDING = 136 => rt_sigpending(set: Ptr, sigsetsize: Size);
    RT_SIGTIMEDWAIT = 137 => rt_sigtimedwait(uthese: PtrIn, uinfo: Ptr, uts: PtrIn, sigsetsize: Size);
    RT_SIGQUEUEINFO = 138 => rt_sigqueueinfo(pid: Pid, sig: Signal, uinfo: Ptr);
    RT_SIGRETURN = 139 => rt_sigreturn();
    SETPRIORITY = 140 => setpriority(which: Int, who: Pid, niceval: Int);
    GETPRIORITY = 141 => getpriority(which: Int, who: Pid);
    REBOOT = 142 => reboot(magic1: Int, magic2: Int, cmd: Int, arg: Ptr);
    SETREGID = 143 => setregid(rgid: Int, egid: Int);
    SETGID = 144 => setgid(gid: Int);
    SETREUID = 145 => setreuid(ruid: Int, euid: Int);
    SETUID = 146 => setuid(uid: Int);
    SETRESUID = 147 => setresuid(ruid: Int, euid: Int, suid: Int);
    GETRESUID = 148 => getresuid(ruid: Ptr, euid: Ptr, suid: Ptr);
    SETRESGID = 149 => setresgid(rgid: Int, egid: Int, sgid: Int);
    GETRESGID = 150 => getresgid(rgid: Ptr, egid: Ptr, sgid: Ptr);
    SETFSUID = 151 => setfsuid(uid: Int);
    SETFSGID = 152 => setfsgid(gid: Int);
    TIMES = 153 => times(tbuf: Ptr);
    SETPGID = 154 => setpgid(pid: Pid, pgid: Pid);
    GETPGID = 155 => getpgid(pid: Pid);
    GETSID = 156 => getsid(pid: Pid);
    SETSID = 157 => setsid();
    GETGROUPS = 158 => getgroups(gidsetsize: Int, grouplist: Ptr);
    SETGROUPS = 159 => setgroups(gidsetsize: Int, grouplist: PtrIn);
    UNAME = 160 => uname(name: Ptr);
    SETHOSTNAME = 161 => sethostname(name: PtrIn, len: Size);
    SETDOMAINNAME = 162 => setdomainname(name: PtrIn, len: Size);
    GETRLIMIT = 163 => getrlimit(resource: Int, rlim: Ptr);
    SETRLIMIT = 164 => setrlimit(resource: Int, rlim: PtrIn);
    GETRUSAGE = 165 => getrusage(who: Pid, ru: Ptr);
    UMASK = 166 => umask(mask: Int);
    PRCTL = 167 => prctl(option: Int, arg2: Int, arg3: Int, arg4: Int, arg5: Int);
    GETCPU = 168 => getcpu(cpu: Ptr, node: Ptr, cache: Ptr);
    GETTIMEOFDAY = 169 => gettimeofday(tv: Ptr, tz: Ptr);
    SETTIMEOFDAY = 170 => settimeofday(tv: Ptr, tz: Ptr);
    ADJTIMEX = 171 => adjtimex(txc_p: Ptr);
    GETPID = 172 => getpid();
    GETPPID = 173 => getppid();
    GETUID = 174 => getuid();
    GETEUID = 175 => geteuid();
    GETGID = 176 => getgid();
    GETEGID = 177 => getegid();
    GETTID = 178 => gettid();
    SYSINFO = 179 => sysinfo(info: Ptr);
    MQ_OPEN = 180 => mq_open(name: Str, oflag: Flags, mode: Mode, attr: Ptr);
    MQ_UNLINK = 181 => mq_unlink(name: Str);
    MQ_TIMEDSEND = 182 => mq_timedsend(mqdes: Int, msg_ptr: PtrIn, msg_len: Size, msg_prio: Int, abs_timeout: PtrIn);
    MQ_TIMEDRECEIVE = 183 => mq_timedreceive(mqdes: Int, msg_ptr: Ptr, msg_len: Size, msg_prio: Ptr, abs_timeout: PtrIn);
    MQ_NOTIFY = 184 => mq_notify(mqdes: Int, notification: PtrIn);
    MQ_GETSETATTR = 185 => mq_getsetattr(mqdes: Int, mqstat: PtrIn, omqstat: Ptr);
    MSGGET = 186 => msgget(key: Int, msgflg: Int);
    MSGCTL = 187 => msgctl(msqid: Int, cmd: Int, buf: Ptr);
    MSGRCV = 188 => msgrcv(msqid: Int, msgp: Ptr, msgsz: Size, msgtyp: Int, msgflg: Int);
    MSGSND = 189 => msgsnd(msqid: Int, msgp: Ptr, msgsz: Size, msgflg: Int);
    SEMGET = 190 => semget(key: Int, nsems: Int, semflg: Int);
    SEMCTL = 191 => semctl(semid: Int, semnum: Int, cmd: Int, arg: Int);
    SEMTIMEDOP = 192 => semtimedop(semid: Int, sops: Ptr, nsops: Size, timeout: PtrIn);
    SEMOP = 193 => semop(semid: Int, sops: Ptr, nsops: Size);
    SHMGET = 194 => shmget(key: Int, size: Size, flag: Flags);
    SHMCTL = 195 => shmctl(shmid: Int, cmd: Int, buf: Ptr);
    SHMAT = 196 => shmat(shmid: Int, shmaddr: Ptr, shmflg: Int);
    SHMDT = 197 => shmdt(shmaddr: Ptr);
    SOCKET = 198 => socket(family: Int, type: Int, protocol: Int);
    SOCKETPAIR = 199 => socketpair(family: Int, type: Int, protocol: Int, usockvec: Ptr);
    BIND = 200 => bind(fd: Fd, umyaddr: PtrIn, addrlen: Size);
    LISTEN = 201 => listen(fd: Fd, backlog: Int);
    ACCEPT = 202 => accept(fd: Fd, upeer_sockaddr: Ptr, upeer_addrlen: Ptr);
    CONNECT = 203 => connect(fd: Fd, uservaddr: PtrIn, addrlen: Size);
    GETSOCKNAME = 204 => getsockname(fd: Fd, usockaddr: Ptr, usockaddr_len: Ptr);
    GETPEERNAME = 205 => getpeername(fd: Fd, usockaddr: Ptr, usockaddr_len: Ptr);
    SENDTO = 206 => sendto(fd: Fd, buff: PtrIn, len: Size, flags: Flags, addr: PtrIn, addr_len: Size);
    RECVFROM = 207 => recvfrom(fd: Fd, ubuf: Ptr, size: Size, flags: Flags, addr: Ptr, addr_len: Ptr);
    SETSOCKOPT = 208 => setsockopt(fd: Fd, level: Int, optname: Int, optval: Ptr, optlen: Int);
    GETSOCKOPT = 209 => getsockopt(fd: Fd, level: Int, optname: Int, optval: Ptr, optlen: Ptr);
    SHUTDOWN = 210 => shutdown(fd: Fd, how: Int);
    SENDMSG = 211 => sendmsg(fd: Fd, msg: Ptr, flags: Flags);
    RECVMSG = 212 => recvmsg(fd: Fd, msg: Ptr, flags: Flags);
    READAHEAD = 213 => readahead(fd: Fd, offset: Int, count: Size);
    BRK = 214 => brk(brk: Addr);
    MUNMAP = 215 => munmap(addr: Addr, len: Size);
    MREMAP = 216 => mremap(addr: Addr, old_len: Int, new_len: Int, flags: Flags, new_addr: Addr);
    ADD_KEY = 217 => add_key(_type: Str, _description: Str, _payload: PtrIn, plen: Size, destringid: Int);
    REQUEST_KEY = 218 => request_key(_type: Str, _description: Str, _callout_info: Str, destringid: Int);
    KEYCTL = 219 => keyctl(cmd: Int, arg2: Int, arg3: Int, arg4: Int, arg5: Int);
    CLONE = 220 => clone(clone_flags: Flags, newsp: Addr, parent_tidptr: Ptr, tls: Addr, child_tidptr: Ptr);
    EXECVE = 221 => execve(filename: Str, argv: StrArray, envp: StrArray);
    MMAP = 222 => mmap(addr: Addr, len: Size, prot: Flags, flags: Flags, fd: Fd, off: Int);
    FADVISE64 = 223 => fadvise64(fd: Fd, offset: Int, len: Size, advice: Int);
    SWAPON = 224 => swapon(specialfile: Str, swap_flags: Int);
    SWAPOFF = 225 => swapoff(specialfile: Str);
    MPROTECT = 226 => mprotect(start: Addr, len: Size, prot: Int);
    MSYNC = 227 => msync(start: Addr, len: Size, flags: Flags);
    MLOCK = 228 => mlock(start: Addr, len: Size);
    MUNLOCK = 229 => munlock(start: Addr, len: Size);
    MLOCKALL = 230 => mlockall(flags: Flags);
    MUNLOCKALL = 231 => munlockall();
    MINCORE = 232 => mincore(start: Addr, len: Size, vec: Ptr);
    MADVISE = 233 => madvise(start: Addr, len: Size, behavior: Int);
    REMAP_FILE_PAGES = 234 => remap_file_pages(start: Addr, size: Size, prot: Int, pgoff: Int, flags: Flags);
    MBIND = 235 => mbind(start: Addr, len: Size, mode: Mode, nmask: PtrIn, maxnode: Size, flags: Flags);
    GET_MEMPOLICY = 236 => get_mempolicy(policy: Ptr, nmask: Ptr, maxnode: Size, addr: Addr, flags: Flags);
    SET_MEMPOLICY = 237 => set_mempolicy(mode: Mode, nmask: PtrIn, maxnode: Size);
    MIGRATE_PAGES = 238 => migrate_pages(pid: Pid, maxnode: Size, from: PtrIn, to: PtrIn);
    MOVE_PAGES = 239 => move_pages(pid: Pid, nr_pages: Size, pages: PtrIn, nodes: PtrIn, status: Ptr, flags: Flags);
    RT_TGSIGQUEUEINFO = 240 => rt_tgsigqueueinfo(tgid: Pid, pid: Pid, sig: Signal, uinfo: Ptr);
    PERF_EVENT_OPEN = 241 => perf_event_open(attr_uptr: Ptr, pid: Pid, cpu: Int, group_fd: Fd, flags: Flags);
    ACCEPT4 = 242 => accept4(fd: Fd, upeer_sockaddr: Ptr, upeer_addrlen: Ptr, flags: Flags);
    RECVMMSG = 243 => recvmmsg(fd: Fd, msg: Ptr, vlen: Size, flags: Flags, timeout: Ptr);
    WAIT4 = 260 => wait4(pid: Pid, stat_addr: Ptr, options: Int, ru: Ptr);
    PRLIMIT64 = 261 => prlimit64(pid: Pid, resource: Int, new_rlim: PtrIn, old_rlim: Ptr);
    FANOTIFY_INIT = 262 => fanotify_init(flags: Flags, event_f_flags: Int);
    FANOTIFY_MARK = 263 => fanotify_mark(fanotify_fd: Int, flags: Flags, mask: Flags, dfd: Fd, pathname: Str);
    NAME_TO_HANDLE_AT = 264 => name_to_handle_at(dfd: Fd, name: Str, handle: Ptr, mnt_id: Ptr, flag: Flags);
    OPEN_BY_HANDLE_AT = 265 => open_by_handle_at(mountdirfd: Int, handle: Ptr, flags: Flags);
    CLOCK_ADJTIME = 266 => clock_adjtime(which_clock: Int, tx: Ptr);
    SYNCFS = 267 => syncfs(fd: Fd);
    SETNS = 268 => setns(fd: Fd, nstype: Int);
    SENDMMSG = 269 => sendmmsg(fd: Fd, msg: Ptr, vlen: Size, flags: Flags);
    PROCESS_VM_READV = 270 => process_vm_readv(pid: Pid, lvec: PtrIn, liovcnt: Size, rvec: PtrIn, riovcnt: Size, flags: Flags);
    PROCESS_VM_WRITEV = 271 => process_vm_writev(pid: Pid, lvec: PtrIn, liovcnt: Size, rvec: PtrIn, riovcnt: Size, flags: Flags);
    KCMP = 272 => kcmp(pid1: Int, pid2: Int, type: Int, idx1: Int, idx2: Int);
    FINIT_MODULE = 273 => finit_module(fd: Fd, uargs: Str, flags: Flags);
    SCHED_SETATTR = 274 => sched_setattr(pid: Pid, attr: Ptr, flags: Flags);
    SCHED_GETATTR = 275 => sched_getattr(pid: Pid, attr: Ptr, size: Size, flags: Flags);
    RENAMEAT2 = 276 => renameat2(olddfd: Fd, oldname: Str, newdfd: Fd, newname: Str, flags: Flags);
    SECCOMP = 277 => seccomp(op: Int, flags: Flags, uargs: Ptr);
    GETRANDOM = 278 => getrandom(buf: Ptr, count: Size, flags: Flags);
    MEMFD_CREATE = 279 => memfd_create(uname_ptr: PtrIn, flags: Flags);
    BPF = 280 => bpf(cmd: Int, attr: Ptr, size: Size);
    EXECVEAT = 281 => execveat(dfd: Fd, filename: Str, argv: StrArray, envp: StrArray, flags: Flags);
    USERFAULTFD = 282 => userfaultfd(flags: Flags);
    MEMBARRIER = 283 => membarrier(cmd: Int, flags: Flags, cpu_id: Int);
    MLOCK2 = 284 => mlock2(start: Addr, len: Size, flags: Flags);
    COPY_FILE_RANGE = 285 => copy_file_range(fd_in: Fd, off_in: Ptr, fd_out: Fd, off_out: Ptr, len: Size, flags: Flags);
    PREADV2 = 286 => preadv2(fd: Fd, vec: PtrIn, vlen: Size, pos_l: Int, pos_h: Int, flags: Flags);
    PWRITEV2 = 287 => pwritev2(fd: Fd, vec: PtrIn, vlen: Size, pos_l: Int, pos_h: Int, flags: Flags);
    PKEY_MPROTECT = 288 => pkey_mprotect(start: Addr, len: Size, prot: Int, pkey: Int);
    PKEY_ALLOC = 289 => pkey_alloc(flags: Flags, init_val: Int);
    PKEY_FREE = 290 => pkey_free(pkey: Int);
    STATX = 291 => statx(dfd: Fd, path: Str, flags: Flags, mask: Int, buffer: Ptr);
    IO_PGETEVENTS = 292 => io_pgetevents(ctx_id: Int, min_nr: Int, nr: Size, events: Ptr, timeout: Ptr, sig: PtrIn);
    RSEQ = 293 => rseq(rseq: Ptr, rseq_len: Int, flags: Flags, sig: Signal);
    KEXEC_FILE_LOAD = 294 => kexec_file_load(kernel_fd: Fd, initrd_fd: Int, cmdline_len: Int, cmdline_ptr: PtrIn, flags: Flags);
    PIDFD_SEND_SIGNAL = 424 => pidfd_send_signal(pidfd: Fd, sig: Signal, info: Ptr, flags: Flags);
    IO_URING_SETUP = 425 => io_uring_setup(entries: Int, p: Ptr);
    IO_URING_ENTER = 426 => io_uring_enter(fd: Fd, to_submit: Size, min_complete: Size, flags: Flags, argp: PtrIn, argsz: Size);
    IO_URING_REGISTER = 427 => io_uring_register(fd: Fd, op: Int, arg: Ptr, nr_args: Size);
    OPEN_TREE = 428 => open_tree(dfd: Fd, path: Str, flags: Flags);
    MOVE_MOUNT = 429 => move_mount(from_dfd: Fd, from_path: Str, to_dfd: Fd, to_path: Str, ms_flags: Flags);
    FSOPEN = 430 => fsopen(fs_name: PtrIn, flags: Flags);
    FSCONFIG = 431 => fsconfig(fs_fd: Fd, cmd: Int, key: Str, value: PtrIn, aux: Int);
    FSMOUNT = 432 => fsmount(fs_fd: Fd, flags: Flags, ms_flags: Flags);
    FSPICK = 433 => fspick(dfd: Fd, path: Str, flags: Flags);
    PIDFD_OPEN = 434 => pidfd_open(pid: Pid, flags: Flags);
    CLONE3 = 435 => clone3(uargs: Ptr, size: Size);
    CLOSE_RANGE = 436 => close_range(fd: Fd, max_fd: Int, flags: Flags);
    OPENAT2 = 437 => openat2(dfd: Fd, filename: Str, how: Ptr, size: Size);
    PIDFD_GETFD = 438 => pidfd_getfd(pidfd: Fd, fd: Fd, flags: Flags);
    FACCESSAT2 = 439 => faccessat2(dfd: Fd, filename: Str, mode: Mode, flags: Flags);
    PROCESS_MADVISE = 440 => process_madvise(pidfd: Fd, vec: PtrIn, vlen: Size, behavior: Int, flags: Flags);
    EPOLL_PWAIT2 = 441 => epoll_pwait2(epfd: Fd, events: Ptr, maxevents: Size, timeout: PtrIn, sigmask: PtrIn, sigsetsize: Size);
    MOUNT_SETATTR = 442 => mount_setattr(dfd: Fd, path: Str, flags: Flags, uattr: Ptr, usize: Size);
    QUOTACTL_FD = 443 => quotactl_fd(fd: Fd, cmd: Int, id: Int, addr: Ptr);
    LANDLOCK_CREATE_RULESET = 444 => landlock_create_ruleset(attr: PtrIn, size: Size, flags: Flags);
    LANDLOCK_ADD_RULE = 445 => landlock_add_rule(ruleset_fd: Fd, rule_type: Int, rule_attr: PtrIn, flags: Flags);
    LANDLOCK_RESTRICT_SELF = 446 => landlock_restrict_self(ruleset_fd: Fd, flags: Flags);
    MEMFD_SECRET = 447 => memfd_secret(flags: Flags);
    PROCESS_MRELEASE = 448 => process_mrelease(pidfd: Fd, flags: Flags);
    FUTEX_WAITV = 449 => futex_waitv(waiters: Ptr, nr_futexes: Size, flags: Flags, timeout: Ptr, clockid: Int);
    SET_MEMPOLICY_HOME_NODE = 450 => set_mempolicy_home_node(start: Addr, len: Size, home_node: Int, flags: Flags);
    CACHESTAT = 451 => cachestat(fd: Fd, cstat_range: Ptr, cstat: Ptr, flags: Flags);
    FCHMODAT2 = 452 => fchmodat2(dfd: Fd, filename: Str, mode: Mode, flags: Flags);
    MAP_SHADOW_STACK = 453 => map_shadow_stack(addr: Addr, size: Size, flags: Flags);
    FUTEX_WAKE = 454 => futex_wake(uaddr: Ptr, mask: Int, nr: Size, flags: Flags);
    FUTEX_WAIT = 455 => futex_wait(uaddr: Ptr, val: Int, mask: Int, flags: Flags, timespec: Ptr, clockid: Int);
    FUTEX_REQUEUE = 456 => futex_requeue(waiters: Ptr, flags: Flags, nr_wake: Int, nr_requeue: Int);
    STATMOUNT = 457 => statmount(req: PtrIn, buf: Ptr, bufsize: Size, flags: Flags);
    LISTMOUNT = 458 => listmount(req: PtrIn, mnt_ids: Ptr, nr_mnt_ids: Size, flags: Flags);
    LSM_GET_SELF_ATTR = 459 => lsm_get_self_attr(attr: Int, ctx: Ptr, size: Ptr, flags: Flags);
    LSM_SET_SELF_ATTR = 460 => lsm_set_self_attr(attr: Int, ctx: Ptr, size: Size, flags: Flags);
    LSM_LIST_MODULES = 461 => lsm_list_modules(ids: Ptr, size: Ptr, flags: Flags);
    MSEAL = 462 => mseal(start: Addr, len: Size, flags: Flags);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn numbers_match_linux_asm_generic_unistd() {
        // include/uapi/asm-generic/unistd.h, as arm64 uses it.
        for (n, name) in [
            (nr::IO_SETUP, 0),
            (nr::GETCWD, 17),
            (nr::FCNTL, 25),
            (nr::OPENAT, 56),
            (nr::LSEEK, 62),
            (nr::READ, 63),
            (nr::WRITE, 64),
            (nr::NEWFSTATAT, 79),
            (nr::FSTAT, 80),
            (nr::EXIT_GROUP, 94),
            (nr::PTRACE, 117),
            (nr::RT_SIGRETURN, 139),
            (nr::GETPID, 172),
            (nr::CLONE, 220),
            (nr::EXECVE, 221),
            (nr::MMAP, 222),
            (nr::WAIT4, 260),
            (nr::GETRANDOM, 278),
            (nr::CLONE3, 435),
            (nr::MSEAL, 462),
        ] {
            assert_eq!(n, name);
            assert_eq!(by_nr(n as u32).unwrap().nr as usize, n);
        }
        assert_eq!(by_nr(79).unwrap().name, "newfstatat");
        assert_eq!(by_nr(39).unwrap().name, "umount2");
        assert_eq!(by_nr(71).unwrap().name, "sendfile");
        assert_eq!(by_nr(223).unwrap().name, "fadvise64");
        assert_eq!(by_nr(163).unwrap().name, "getrlimit");
        assert_eq!(by_nr(38).unwrap().name, "renameat");
        assert_eq!(by_nr(447).unwrap().name, "memfd_secret");
    }

    #[test]
    fn numbers_increase_and_names_are_unique() {
        let mut names = HashSet::new();
        for w in SYSCALLS.windows(2) {
            assert!(w[0].nr < w[1].nr, "{} before {}", w[0].name, w[1].name);
        }
        for s in SYSCALLS {
            assert!(names.insert(s.name), "duplicate {}", s.name);
            assert!(s.nr < NR_SYSCALLS);
            assert!(s.args.len() <= 6, "{} has {} args", s.name, s.args.len());
            assert_eq!(by_name(s.name), Some(s));
        }
        assert_eq!(SYSCALLS.last().unwrap().nr + 1, NR_SYSCALLS);
    }

    #[test]
    fn gaps_are_numbers_arm64_does_not_assign() {
        // 244..=259 are other architectures' private numbers, 295..=402
        // unused, 403..=423 time64 calls of 32-bit ABIs only, 415 unused.
        for n in (244..=259).chain(295..=423) {
            assert_eq!(by_nr(n), None, "{n}");
        }
        assert_eq!(by_nr(NR_SYSCALLS), None);
        assert!(by_nr(18).unwrap().removed, "lookup_dcookie");
        assert!(!by_nr(63).unwrap().removed);
    }

    #[test]
    fn argument_counts_and_kinds_follow_the_prototypes() {
        let kinds = |name: &str| {
            by_name(name)
                .unwrap()
                .args
                .iter()
                .map(|a| a.kind)
                .collect::<std::vec::Vec<_>>()
        };
        use ArgKind::*;
        assert_eq!(kinds("read"), [Fd, Ptr, Size]);
        assert_eq!(kinds("write"), [Fd, PtrIn, Size]);
        assert_eq!(kinds("openat"), [Fd, Str, Flags, Mode]);
        assert_eq!(kinds("execve"), [Str, StrArray, StrArray]);
        assert_eq!(kinds("kill"), [Pid, Signal]);
        assert_eq!(kinds("mmap"), [Addr, Size, Flags, Flags, Fd, Int]);
        assert_eq!(kinds("rt_sigaction"), [Signal, PtrIn, Ptr, Size]);
        assert_eq!(kinds("getpid"), []);
        assert_eq!(kinds("rt_sigreturn"), []);
        assert_eq!(by_name("clone").unwrap().args.len(), 5);
        assert_eq!(by_name("ppoll").unwrap().args[0].name, "ufds");
        assert_eq!(by_name("mount").unwrap().args[2].name, "type");
    }

    #[test]
    fn fanotify_mark_takes_its_64_bit_mask_in_one_register() {
        // SYSCALL_DEFINE5(fanotify_mark, int, fanotify_fd, unsigned int,
        // flags, __u64, mask, int, dfd, const char __user *, pathname):
        // only 32-bit ABIs split the mask over two registers.
        let call = by_name("fanotify_mark").unwrap();
        let names: std::vec::Vec<_> = call.args.iter().map(|a| a.name).collect();
        assert_eq!(names, ["fanotify_fd", "flags", "mask", "dfd", "pathname"]);
        assert_eq!(call.args[2].kind, ArgKind::Flags);
    }

    #[test]
    fn no_call_splits_a_64_bit_value_over_two_registers() {
        // arm64 passes every 64-bit argument whole, in at most six registers.
        for call in SYSCALLS {
            assert!(
                call.args.len() <= 6,
                "{} takes {} arguments",
                call.name,
                call.args.len()
            );
            for a in call.args {
                let split = ["_1", "_2", "_lo", "_hi", "_low", "_high"]
                    .iter()
                    .any(|s| a.name.ends_with(s));
                assert!(!split, "{}'s argument {} is half of a value", call.name, a.name);
            }
        }
    }
}
