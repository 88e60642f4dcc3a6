//! The decoded prototypes drive `trace_probe`'s parser as Linux's BTF
//! drives `trace_probe.c`: `$arg*` expands to the parameter names, names
//! and `->field` chains compile to typed fetches.

use std::sync::Arc;

use btf::{Btf, Builder, CType, FuncProto, Member, Pointee, StructCache, StructType};
use trace_probe::{parse_command, Command, FetchEnv, ProbeContext, ProbeSite, Reg};

fn m(name: &str, byte: u32, ty: CType) -> Member {
    Member {
        name: name.to_string(),
        bit_offset: byte * 8,
        bitfield_size: 0,
        ty,
    }
}

/// A kernel whose only symbols are `vfs_read` and `schedule`, with their
/// prototypes read back from an encoded table.
struct Kernel {
    protos: Vec<(String, FuncProto)>,
}

impl Kernel {
    fn new() -> Self {
        let path = Arc::new(StructType {
            name: "path".into(),
            members: vec![
                m("mnt", 0, CType::Ptr(Pointee::Other)),
                m("dentry", 8, CType::Ptr(Pointee::Other)),
            ],
        });
        let file = Arc::new(StructType {
            name: "file".into(),
            members: vec![
                m(
                    "f_mode",
                    4,
                    CType::Int {
                        bytes: 4,
                        signed: false,
                    },
                ),
                m("f_path", 16, CType::Struct(path)),
                m("f_pos", 40, CType::Int { bytes: 8, signed: true }),
            ],
        });
        let vfs_read = FuncProto {
            ret: CType::Int { bytes: 8, signed: true },
            params: vec![
                ("file".into(), CType::Ptr(Pointee::Struct(file))),
                ("buf".into(), CType::Ptr(Pointee::Char)),
                (
                    "count".into(),
                    CType::Int {
                        bytes: 8,
                        signed: false,
                    },
                ),
                ("pos".into(), CType::Ptr(Pointee::Other)),
            ],
        };
        let schedule = FuncProto {
            ret: CType::Void,
            params: vec![],
        };
        let mut b = Builder::new(3);
        b.add_proto("vfs_read", &vfs_read);
        b.add_proto("schedule", &schedule);
        let blob = b.finish().encode();
        let table = Btf::parse(&blob).unwrap();
        let mut cache = StructCache::new();
        let protos = ["vfs_read", "schedule"]
            .iter()
            .map(|n| (n.to_string(), table.func_proto(n, &mut cache).unwrap()))
            .collect();
        Kernel { protos }
    }
}

impl ProbeContext for Kernel {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        match name {
            "vfs_read" => Some(0xffff_ffff_8010_0000),
            "schedule" => Some(0xffff_ffff_8020_0000),
            _ => None,
        }
    }
    fn count_symbols(&self, name: &str) -> usize {
        usize::from(self.lookup_name(name).is_some())
    }
    fn func_proto(&self, name: &str) -> Option<&FuncProto> {
        self.protos.iter().find(|p| p.0 == name).map(|p| &p.1)
    }
}

fn define(cmd: &str) -> trace_probe::ProbeDef {
    match parse_command(cmd, &Kernel::new()) {
        Ok(Command::Define(d)) => d,
        other => panic!("{cmd}: {other:?}"),
    }
}

#[test]
fn args_star_expands_to_the_parameter_names() {
    let d = define("p:myprobe vfs_read $arg*");
    assert_eq!(
        d.render(),
        "p:kprobes/myprobe vfs_read file=file buf=buf count=count pos=pos"
    );
    let types: Vec<&str> = d.args.iter().map(|a| a.ty.name).collect();
    assert_eq!(types, ["x64", "x64", "u64", "x64"]);
}

#[test]
fn fields_behind_pointers_compile_with_their_types() {
    let d = define("p:myprobe vfs_read file->f_pos file->f_mode pos=file->f_path.dentry $arg3");
    let args: Vec<(&str, &str)> = d.args.iter().map(|a| (a.name.as_str(), a.ty.name)).collect();
    assert_eq!(
        args,
        // As Linux, a chain is no name: the field is called argN.
        [("arg1", "s64"), ("arg2", "u32"), ("pos", "x64"), ("count", "u64")]
    );
}

/// x0 points at a `struct file` (a kernel address) whose bytes say where each
/// member is; x2 is the count.
struct Hit;

const FILE: u64 = 0xffff_8000_0000_1000;

impl FetchEnv for Hit {
    fn register(&self, reg: Reg) -> u64 {
        match reg {
            Reg::X(0) => FILE,
            Reg::X(2) => 99,
            _ => 0,
        }
    }
    fn kernel_stack_nth(&self, _: u32) -> u64 {
        0
    }
    fn read_kernel(&self, addr: u64, dst: &mut [u8]) -> bool {
        // Each 4-byte word of the file holds its own offset from FILE.
        for (i, b) in dst.iter_mut().enumerate() {
            let at = addr + i as u64 - FILE;
            *b = ((at / 4 * 4) >> (8 * (at % 4))) as u8;
        }
        addr >= FILE
    }
    fn read_user(&self, _: u64, _: &mut [u8]) -> bool {
        false
    }
    fn comm(&self) -> &[u8] {
        b"test"
    }
    fn sprint_symbol(&self, _: u64, _: &mut [u8]) -> usize {
        0
    }
}

#[test]
fn fields_are_fetched_at_their_member_offsets() {
    let d = define("p:myprobe vfs_read file->f_pos file->f_mode pos=file->f_path.dentry $arg3");
    let mut rec = [0u8; 256];
    let n = d.fetch(&Hit, ProbeSite::Entry { ip: 0 }, &[], &mut rec).unwrap();
    let rec = &rec[..n];
    let field = |i: usize, size: usize| {
        let at = d.args_offset() + d.args[i].offset as usize;
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(&rec[at..at + size]);
        u64::from_le_bytes(v)
    };
    // f_pos at 40: the words at 40 and 44.
    assert_eq!(field(0, 8), 40 | 44 << 32);
    assert_eq!(field(1, 4), 4, "f_mode at 4");
    assert_eq!(field(2, 8), 24 | 28 << 32, "f_path (16) + dentry (8)");
    assert_eq!(field(3, 8), 99, "$arg3 is x2");
}

#[test]
fn a_void_function_has_no_typed_retval() {
    let e = match parse_command("r:myret schedule $retval", &Kernel::new()) {
        Err(e) => e,
        Ok(c) => panic!("accepted: {c:?}"),
    };
    assert_eq!(e.errno, uapi::Errno::ENOENT);
    let d = define("r:myret vfs_read $retval");
    assert_eq!(d.args[0].ty.name, "s64");
}
