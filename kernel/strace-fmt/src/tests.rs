//! strace's forms as Linux's strace 6.1 prints them (the expected strings
//! are copied from its output on reflinux where one was at hand).

use crate::decode::{self, Call, Memory, Ret};
use crate::fmt::*;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

#[test]
fn quote_escapes_as_strace() {
    assert_eq!(quote(b"child\n"), "\"child\\n\"");
    assert_eq!(
        quote(b"\ttab, quote \" and \x01\x02 bytes\n"),
        "\"\\ttab, quote \\\" and \\1\\2 bytes\\n\""
    );
    // Three octal digits only where an octal digit follows.
    assert_eq!(quote(b"\x001\x008\xff"), "\"\\0001\\08\\377\"");
    assert_eq!(quote(b"\\\x0b\x0c\r"), "\"\\\\\\v\\f\\r\"");
}

#[test]
fn buffers_and_strings_truncate_at_32_bytes() {
    let line = b"parent: a line longer than thirty-two bytes\n";
    assert_eq!(quote_buf(line, line.len()), "\"parent: a line longer than thirt\"...");
    assert_eq!(quote_buf(b"ping", 4), "\"ping\"");
    assert_eq!(quote_cstr(b"abc", true, MAX_STRLEN), "\"abc\"");
    assert_eq!(quote_cstr(b"abc", false, MAX_STRLEN), "\"abc\"...");
}

#[test]
fn open_flags_as_strace() {
    assert_eq!(open_flags(0), "O_RDONLY");
    assert_eq!(open_flags(0o2001101), "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC");
    assert_eq!(open_flags(0o20040002), "O_RDWR|O_TMPFILE");
    assert_eq!(open_flags(0o40000 | 0x8000_0000), "O_RDONLY|O_DIRECTORY|0x80000000");
}

#[test]
fn mmap_and_clone_flags_as_strace() {
    assert_eq!(prot(0), "PROT_NONE");
    assert_eq!(prot(3), "PROT_READ|PROT_WRITE");
    assert_eq!(map_flags(0x22), "MAP_PRIVATE|MAP_ANONYMOUS");
    assert_eq!(map_flags(0x812), "MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE");
    assert_eq!(
        clone_flags(0x0120_0011),
        "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD"
    );
    assert_eq!(clone_flags(0x4111), "CLONE_VM|CLONE_VFORK|SIGCHLD");
    assert_eq!(clone_flags(0), "0");
    assert_eq!(flags(0, WAIT_FLAGS), "0");
    assert_eq!(flags(0x4000_0001, WAIT_FLAGS), "WNOHANG|__WALL");
}

#[test]
fn errors_and_restarts_as_strace() {
    assert_eq!(error_result(2), "-1 ENOENT (No such file or directory)");
    assert_eq!(
        error_result(512),
        "? ERESTARTSYS (To be restarted if SA_RESTART is set)"
    );
    assert_eq!(error_result(516), "? ERESTART_RESTARTBLOCK (Interrupted by signal)");
    assert_eq!(error_result(4000), "-1 4000 (Unknown error 4000)");
}

#[test]
fn wait_statuses_as_strace() {
    assert_eq!(wait_status(0), "[{WIFEXITED(s) && WEXITSTATUS(s) == 0}]");
    assert_eq!(wait_status(3 << 8), "[{WIFEXITED(s) && WEXITSTATUS(s) == 3}]");
    assert_eq!(wait_status(9), "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}]");
    assert_eq!(
        wait_status(0x8b),
        "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV && WCOREDUMP(s)}]"
    );
    assert_eq!(wait_status(0x137f), "[{WIFSTOPPED(s) && WSTOPSIG(s) == SIGSTOP}]");
    assert_eq!(
        wait_status(0x1_057f),
        "[{WIFSTOPPED(s) && WSTOPSIG(s) == SIGTRAP}|PTRACE_EVENT_FORK << 16]"
    );
    assert_eq!(wait_status(0xffff), "[{WIFCONTINUED(s)}]");
}

#[test]
fn signals_and_sets_as_strace() {
    assert_eq!(signal(17), "SIGCHLD");
    assert_eq!(signal(32), "SIGRTMIN");
    assert_eq!(signal(34), "SIGRT_2");
    assert_eq!(signal(0), "0");
    assert_eq!(sigset(0), "[]");
    assert_eq!(sigset(1 << 16), "[CHLD]");
    assert_eq!(sigset((1 << 9) | (1 << 16)), "[USR1 CHLD]");
    assert_eq!(sigset(!0), "~[]");
    assert_eq!(sigset(!(1u64 << 8)), "~[KILL]");
}

fn siginfo_bytes(words: &[(usize, &[u8])]) -> [u8; 128] {
    let mut b = [0u8; 128];
    for (at, v) in words {
        b[*at..*at + v.len()].copy_from_slice(v);
    }
    b
}

#[test]
fn sigchld_siginfo_as_strace() {
    // From strace 6.1 on Linux 6.12.
    let b = siginfo_bytes(&[
        (0, &17i32.to_le_bytes()),
        (8, &1i32.to_le_bytes()),
        (16, &154i32.to_le_bytes()),
        (40, &6u64.to_le_bytes()),
    ]);
    assert_eq!(
        siginfo(&b),
        "{si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=154, si_uid=0, si_status=0, si_utime=0, si_stime=6 /* 0.06 s */}"
    );
    let killed = siginfo_bytes(&[
        (0, &17i32.to_le_bytes()),
        (8, &2i32.to_le_bytes()),
        (24, &9i32.to_le_bytes()),
    ]);
    assert!(siginfo(&killed).contains("si_code=CLD_KILLED, si_pid=0, si_uid=0, si_status=SIGKILL"));
}

#[test]
fn kill_and_fault_siginfo_as_strace() {
    let user = siginfo_bytes(&[(0, &10i32.to_le_bytes()), (16, &154i32.to_le_bytes())]);
    assert_eq!(
        siginfo(&user),
        "{si_signo=SIGUSR1, si_code=SI_USER, si_pid=154, si_uid=0}"
    );
    let segv = siginfo_bytes(&[
        (0, &11i32.to_le_bytes()),
        (8, &1i32.to_le_bytes()),
        (16, &0x10u64.to_le_bytes()),
    ]);
    assert_eq!(siginfo(&segv), "{si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=0x10}");
}

#[test]
fn summary_table_matches_strace() {
    // strace -f -c of tests/debian/straced.c on Linux 6.12 (reflinux).
    let rows: Vec<CallCount> = [
        ("wait4", 1, 0, 21638),
        ("brk", 5, 0, 15812),
        ("execve", 1, 0, 9256),
        ("set_robust_list", 2, 0, 7840),
        ("clone", 1, 0, 7523),
        ("openat", 1, 1, 7277),
        ("write", 2, 0, 3982),
        ("rseq", 1, 0, 3877),
        ("getrandom", 1, 0, 3850),
        ("readlinkat", 1, 0, 3848),
        ("set_tid_address", 1, 0, 3730),
        ("mprotect", 1, 0, 3680),
        ("prlimit64", 1, 0, 0),
    ]
    .iter()
    .map(|&(n, calls, errors, time_us)| CallCount {
        name: String::from(n),
        calls,
        errors,
        time_us,
    })
    .collect();
    let want = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 23.44    0.021638       21638         1           wait4
 17.13    0.015812        3162         5           brk
 10.03    0.009256        9256         1           execve
  8.49    0.007840        3920         2           set_robust_list
  8.15    0.007523        7523         1           clone
  7.88    0.007277        7277         1         1 openat
  4.31    0.003982        1991         2           write
  4.20    0.003877        3877         1           rseq
  4.17    0.003850        3850         1           getrandom
  4.17    0.003848        3848         1           readlinkat
  4.04    0.003730        3730         1           set_tid_address
  3.99    0.003680        3680         1           mprotect
  0.00    0.000000           0         1           prlimit64
------ ----------- ----------- --------- --------- ----------------
100.00    0.092313        4858        19         1 total
";
    assert_eq!(summary_table(&rows), want);
}

#[test]
fn summary_table_with_a_coarse_clock_still_counts() {
    let rows = vec![
        CallCount {
            name: String::from("write"),
            calls: 4,
            errors: 0,
            time_us: 0,
        },
        CallCount {
            name: String::from("openat"),
            calls: 1,
            errors: 1,
            time_us: 0,
        },
        CallCount {
            name: String::from("unused"),
            calls: 0,
            errors: 0,
            time_us: 0,
        },
    ];
    let t = summary_table(&rows);
    assert!(
        t.contains("  0.00    0.000000           0         1         1 openat\n"),
        "{t}"
    );
    assert!(
        t.contains("  0.00    0.000000           0         4           write\n"),
        "{t}"
    );
    assert!(!t.contains("unused"));
    assert!(
        t.ends_with("100.00    0.000000           0         5         1 total\n"),
        "{t}"
    );
}

/// A tracee's memory: bytes at addresses, nothing elsewhere.
struct FakeMem(Vec<(u64, Vec<u8>)>);

impl Memory for FakeMem {
    fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        for (at, bytes) in &self.0 {
            if addr >= *at && addr < at + bytes.len() as u64 {
                let off = (addr - at) as usize;
                return Some(bytes[off..(off + len).min(bytes.len())].to_vec());
            }
        }
        None
    }
    fn read_cstr(&self, addr: u64, max: usize) -> Option<(Vec<u8>, bool)> {
        let b = self.read(addr, max)?;
        match b.iter().position(|&c| c == 0) {
            Some(i) => Some((b[..i].to_vec(), true)),
            None => Some((b, false)),
        }
    }
}

fn line(call: Call, ret: Ret, mem: &dyn Memory) -> String {
    let mut s = decode::entry_text(&call, mem);
    s.push_str(&decode::exit_text(&call, ret, mem));
    s.push_str(" = ");
    s.push_str(&decode::result(&call, ret));
    s
}

fn ok(rval: i64) -> Ret {
    Ret { rval, is_error: false }
}

#[test]
fn openat_decodes_at_fdcwd_path_flags_and_mode_only_with_o_creat() {
    let mem = FakeMem(vec![(0x1000, b"/nonexistent/file\0".to_vec())]);
    let call = Call {
        nr: 56,
        args: [(-100i64) as u64, 0x1000, 0, 0o777, 0, 0],
    };
    assert_eq!(
        line(
            call,
            Ret {
                rval: -2,
                is_error: true
            },
            &mem
        ),
        "openat(AT_FDCWD, \"/nonexistent/file\", O_RDONLY) = -1 ENOENT (No such file or directory)"
    );
    let call = Call {
        nr: 56,
        args: [3, 0x1000, 0o1101, 0o644, 0, 0],
    };
    assert_eq!(
        line(call, ok(4), &mem),
        "openat(3, \"/nonexistent/file\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4"
    );
}

#[test]
fn read_shows_the_buffer_at_exit_and_write_at_entry() {
    let mem = FakeMem(vec![(0x2000, b"ping\0\0\0\0".to_vec())]);
    let read = Call {
        nr: 63,
        args: [3, 0x2000, 16, 0, 0, 0],
    };
    assert_eq!(decode::entry_text(&read, &mem), "read(3, ");
    assert_eq!(line(read, ok(4), &mem), "read(3, \"ping\", 16) = 4");
    assert_eq!(
        line(
            read,
            Ret {
                rval: -11,
                is_error: true
            },
            &mem
        ),
        "read(3, 0x2000, 16) = -1 EAGAIN (Resource temporarily unavailable)"
    );
    let write = Call {
        nr: 64,
        args: [4, 0x2000, 4, 0, 0, 0],
    };
    assert_eq!(decode::entry_text(&write, &mem), "write(4, \"ping\", 4");
    // An unreadable buffer is shown as its address.
    let bad = Call {
        nr: 64,
        args: [1, 0x9000, 4, 0, 0, 0],
    };
    assert_eq!(
        line(
            bad,
            Ret {
                rval: -14,
                is_error: true
            },
            &mem
        ),
        "write(1, 0x9000, 4) = -1 EFAULT (Bad address)"
    );
}

#[test]
fn wait4_shows_the_status_at_exit() {
    let mem = FakeMem(vec![(0x3000, 0x0900i32.to_le_bytes().to_vec())]);
    let call = Call {
        nr: 260,
        args: [154, 0x3000, 0, 0, 0, 0],
    };
    assert_eq!(decode::entry_text(&call, &mem), "wait4(154, ");
    assert_eq!(
        line(call, ok(154), &mem),
        "wait4(154, [{WIFEXITED(s) && WEXITSTATUS(s) == 9}], 0, NULL) = 154"
    );
}

#[test]
fn mmap_clone_execve_and_sigprocmask_as_strace() {
    let mem = FakeMem(vec![
        (0x4000, b"/bin/straced\0".to_vec()),
        (0x5000, [0x4000u64, 0].iter().flat_map(|w| w.to_le_bytes()).collect()),
        (
            0x6000,
            [0x4000u64, 0x4000, 0].iter().flat_map(|w| w.to_le_bytes()).collect(),
        ),
        (0x7000, (1u64 << 16).to_le_bytes().to_vec()),
    ]);
    let mmap = Call {
        nr: 222,
        args: [0, 4096, 3, 0x22, u64::MAX, 0],
    };
    assert_eq!(
        line(mmap, ok(0xffff_8000_0000), &mem),
        "mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0xffff80000000"
    );
    let clone = Call {
        nr: 220,
        args: [0x0120_0011, 0, 0, 0, 0x19c2_20d0, 0],
    };
    assert_eq!(
        line(clone, ok(154), &mem),
        "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x19c220d0) = 154"
    );
    let execve = Call {
        nr: 221,
        args: [0x4000, 0x5000, 0x6000, 0, 0, 0],
    };
    assert_eq!(
        line(execve, ok(0), &mem),
        "execve(\"/bin/straced\", [\"/bin/straced\"], 0x6000 /* 2 vars */) = 0"
    );
    let mask = Call {
        nr: 135,
        args: [0, 0x7000, 0, 8, 0, 0],
    };
    assert_eq!(
        line(mask, ok(0), &mem),
        "rt_sigprocmask(SIG_BLOCK, [CHLD], NULL, 8) = 0"
    );
    let kill = Call {
        nr: 129,
        args: [154, 9, 0, 0, 0, 0],
    };
    assert!(kill.syscall().is_some() && decode::entry_text(&kill, &mem) == "kill(154, SIGKILL");
    assert!(Call {
        nr: 94,
        args: [3, 0, 0, 0, 0, 0]
    }
    .decoded_at_entry());
    assert!(!read_call().decoded_at_entry());
}

fn read_call() -> Call {
    Call { nr: 63, args: [0; 6] }
}

#[test]
fn unknown_numbers_show_six_hex_arguments() {
    let mem = FakeMem(Vec::new());
    let call = Call {
        nr: 1000,
        args: [1, 2, 3, 4, 5, 6],
    };
    assert_eq!(
        line(call, ok(0), &mem),
        "syscall_0x3e8(0x1, 0x2, 0x3, 0x4, 0x5, 0x6) = 0"
    );
}

proptest! {
    #[test]
    fn quote_is_printable_and_quoted(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let q = quote(&bytes);
        prop_assert!(q.starts_with('"') && q.ends_with('"') && q.len() >= 2);
        prop_assert!(q.bytes().all(|b| (0x20..0x7f).contains(&b)));
    }

    #[test]
    fn flag_names_cover_every_bit(v in any::<u64>()) {
        let names = open_flags(v & 0xffff_ffff);
        let mut bits = 0u64;
        for part in names.split('|') {
            bits |= match part {
                "O_RDONLY" => 0,
                "O_WRONLY" => 1,
                "O_RDWR" => 2,
                "O_ACCMODE" => 3,
                p if p.starts_with("0x") => u64::from_str_radix(&p[2..], 16).unwrap_or(u64::MAX),
                p => OPEN_FLAGS.iter().find(|(_, n)| *n == p).map_or(u64::MAX, |(b, _)| *b),
            };
        }
        prop_assert_eq!(bits, v & 0xffff_ffff);
    }

    #[test]
    fn any_call_decodes_without_panicking(nr in 0u64..600, args in any::<[u64; 6]>(), rval in any::<i64>(), err in any::<bool>()) {
        let mem = FakeMem(vec![(0x1000, b"abc\0".to_vec())]);
        let call = Call { nr, args };
        let s = line(call, Ret { rval, is_error: err }, &mem);
        prop_assert!(s.contains(") = "));
    }

    #[test]
    fn wait_status_and_siginfo_never_panic(s in any::<i32>(), b in proptest::collection::vec(any::<u8>(), 0..128)) {
        let w = wait_status(s);
        let i = siginfo(&b);
        prop_assert!(w.starts_with("[{"), "{}", w);
        prop_assert!(i.starts_with("{si_signo="), "{}", i);
    }
}
