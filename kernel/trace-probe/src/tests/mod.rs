//! Tests against what Linux 6.12.117 arm64 (Debian's, with BTF) answered
//! through reflinux, plus the interpreter and the printed text.

extern crate std;

mod eprobe_tests;
mod fetch_tests;
mod fprobe_tests;
mod grammar_tests;
mod proptests;
mod synth_tests;

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use crate::*;

/// Counts the allocations of the current thread, so that a test can show
/// that `fetch` makes none (the kernel runs it in its BRK handler).
#[allow(unsafe_code)]
pub(crate) mod alloc_count {
    extern crate std;
    use core::cell::Cell;
    use std::alloc::{GlobalAlloc, Layout, System};

    std::thread_local!(static COUNT: Cell<usize> = const { Cell::new(0) });

    struct Counting;

    // SAFETY: every call is forwarded unchanged to the system allocator;
    // the counter is thread-local and never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            // SAFETY: the caller's contract for `alloc` is passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System.alloc` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Allocations made by this thread so far.
    pub fn count() -> usize {
        COUNT.with(|c| c.get())
    }
}

/// The kernel as the tests see it: a few of Linux's symbols and the
/// prototypes BTF gives them.
pub(crate) struct MockKernel {
    pub syms: Vec<(&'static str, u64, u64)>,
    pub protos: Vec<(&'static str, FuncProto)>,
    pub dentry: Option<DentryLayout>,
}

fn int(bytes: u8, signed: bool) -> CType {
    CType::Int { bytes, signed }
}

fn member(name: &str, byte_offset: u32, ty: CType) -> Member {
    Member {
        name: name.to_string(),
        bit_offset: byte_offset * 8,
        bitfield_size: 0,
        ty,
    }
}

impl MockKernel {
    pub fn new() -> MockKernel {
        let qstr = Arc::new(StructType {
            name: "qstr".into(),
            members: vec![
                Member {
                    name: String::new(),
                    bit_offset: 0,
                    bitfield_size: 0,
                    ty: CType::Struct(Arc::new(StructType {
                        name: String::new(),
                        members: vec![
                            Member {
                                name: String::new(),
                                bit_offset: 0,
                                bitfield_size: 0,
                                ty: CType::Struct(Arc::new(StructType {
                                    name: String::new(),
                                    members: vec![member("hash", 0, int(4, false)), member("len", 4, int(4, false))],
                                })),
                            },
                            member("hash_len", 0, int(8, false)),
                        ],
                    })),
                },
                member("name", 8, CType::Ptr(Pointee::Char)),
            ],
        });
        let dentry = Arc::new(StructType {
            name: "dentry".into(),
            members: vec![
                member("d_flags", 0, int(4, false)),
                member("d_name", 0x20, CType::Struct(qstr)),
                Member {
                    name: "d_bits".into(),
                    bit_offset: 0x30 * 8 + 3,
                    bitfield_size: 5,
                    ty: int(4, false),
                },
            ],
        });
        let path = Arc::new(StructType {
            name: "path".into(),
            members: vec![
                member("mnt", 0, CType::Ptr(Pointee::Other)),
                member("dentry", 8, CType::Ptr(Pointee::Struct(dentry))),
            ],
        });
        let file = Arc::new(StructType {
            name: "file".into(),
            members: vec![
                member("f_mode", 0x10, int(4, false)),
                member("f_flags", 0x14, int(4, false)),
                member("f_path", 0x40, CType::Struct(path)),
                member("f_name", 0x60, CType::CharArray(16)),
            ],
        });
        let how = Arc::new(StructType {
            name: "open_how".into(),
            members: vec![
                member("flags", 0, int(8, false)),
                member("mode", 8, int(8, false)),
                member("resolve", 16, int(8, false)),
            ],
        });
        let p = |n: &str, t: CType| (n.to_string(), t);
        let file_ptr = CType::Ptr(Pointee::Struct(file));
        MockKernel {
            syms: vec![
                ("vfs_read", 0xffff_8000_8030_0000, 0x120),
                ("vfs_write", 0xffff_8000_8030_1000, 0x140),
                ("vfs_open", 0xffff_8000_8030_2000, 0x40),
                ("do_sys_openat2", 0xffff_8000_8031_0000, 0x100),
                ("schedule", 0xffff_8000_8040_0000, 0x80),
                ("kfree", 0xffff_8000_8050_0000, 0x200),
                ("jiffies", 0xffff_8000_8200_0000, 8),
                ("dup_sym", 0xffff_8000_8060_0000, 0x10),
                ("dup_sym", 0xffff_8000_8060_1000, 0x10),
            ],
            protos: vec![
                (
                    "vfs_read",
                    FuncProto {
                        ret: int(8, true),
                        params: vec![
                            p("file", file_ptr.clone()),
                            p("buf", CType::Ptr(Pointee::Char)),
                            p("count", int(8, false)),
                            p("pos", CType::Ptr(Pointee::Other)),
                        ],
                    },
                ),
                (
                    "do_sys_openat2",
                    FuncProto {
                        ret: int(8, true),
                        params: vec![
                            p("dfd", int(4, true)),
                            p("filename", CType::Ptr(Pointee::Char)),
                            p("how", CType::Ptr(Pointee::Struct(how))),
                        ],
                    },
                ),
                (
                    "kfree",
                    FuncProto {
                        ret: CType::Void,
                        params: vec![p("objp", CType::Ptr(Pointee::Other))],
                    },
                ),
                (
                    "schedule",
                    FuncProto {
                        ret: CType::Void,
                        params: vec![],
                    },
                ),
            ],
            dentry: Some(DentryLayout {
                d_name_name: 0x28,
                f_path_dentry: 0x40,
            }),
        }
    }
}

impl ProbeContext for MockKernel {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| s.0 == name).map(|s| s.1)
    }
    fn count_symbols(&self, name: &str) -> usize {
        self.syms.iter().filter(|s| s.0 == name).count()
    }
    fn func_proto(&self, name: &str) -> Option<&FuncProto> {
        self.protos.iter().find(|p| p.0 == name).map(|p| &p.1)
    }
    fn dentry_layout(&self) -> Option<DentryLayout> {
        self.dentry
    }
}

impl Symbolizer for MockKernel {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        self.syms
            .iter()
            .find(|s| addr >= s.1 && addr < s.1 + s.2)
            .map(|s| (s.0, addr - s.1, s.2))
    }
}

/// Parses one line as the kernel would, the way a write to
/// `kprobe_events` goes: split, comment removed.
pub(crate) fn parse_line(line: &str) -> Result<Command, CmdError> {
    let mut buf = Vec::from(line.as_bytes());
    buf.push(b'\n');
    let mut it = split_commands(&buf);
    let first = it.next().expect("one command");
    let (cmd, _) = first.map_err(|e| CmdError::new(e, "", 0))?;
    parse_command(cmd, &MockKernel::new())
}

pub(crate) fn define(line: &str) -> ProbeDef {
    match parse_line(line) {
        Ok(Command::Define(d)) => d,
        other => panic!("{line}: {other:?}"),
    }
}
