//! Test helpers: an ELF64 AArch64 file writer and a reader for stack images.

#![allow(dead_code)]

use object::elf;

/// One program header to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phdr {
    pub p_type: u32,
    pub p_flags: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
    pub p_align: u64,
}

impl Phdr {
    pub fn load(flags: u32, offset: u64, vaddr: u64, filesz: u64, memsz: u64) -> Self {
        Self {
            p_type: elf::PT_LOAD,
            p_flags: flags,
            p_offset: offset,
            p_vaddr: vaddr,
            p_filesz: filesz,
            p_memsz: memsz,
            p_align: 0x10000,
        }
    }

    pub fn other(p_type: u32, flags: u32, offset: u64, vaddr: u64, size: u64) -> Self {
        Self {
            p_type,
            p_flags: flags,
            p_offset: offset,
            p_vaddr: vaddr,
            p_filesz: size,
            p_memsz: size,
            p_align: 8,
        }
    }
}

pub const R: u32 = elf::PF_R;
pub const RW: u32 = elf::PF_R | elf::PF_W;
pub const RX: u32 = elf::PF_R | elf::PF_X;

/// An ELF file to write: the header fields tests vary, program headers at
/// `phoff`, and extra bytes so that segments have content.
#[derive(Debug, Clone)]
pub struct ElfFile {
    pub class: u8,
    pub data: u8,
    pub e_type: u16,
    pub machine: u16,
    pub entry: u64,
    pub phoff: u64,
    pub phentsize: u16,
    /// `None`: the number of `phdrs`.
    pub phnum: Option<u16>,
    pub phdrs: Vec<Phdr>,
    /// Bytes to place in the file: (offset, bytes).
    pub blobs: Vec<(u64, Vec<u8>)>,
    /// The file is at least this long.
    pub min_len: usize,
}

impl ElfFile {
    pub fn new(e_type: u16, entry: u64, phdrs: Vec<Phdr>) -> Self {
        Self {
            class: elf::ELFCLASS64,
            data: elf::ELFDATA2LSB,
            e_type,
            machine: elf::EM_AARCH64,
            entry,
            phoff: 64,
            phentsize: 56,
            phnum: None,
            phdrs,
            blobs: Vec::new(),
            min_len: 0,
        }
    }

    pub fn build(&self) -> Vec<u8> {
        // Program headers far away are not written: only e_phoff says where.
        let write_phdrs = self.phoff < 1 << 20;
        let phdrs_end = if write_phdrs {
            self.phoff as usize + self.phdrs.len() * 56
        } else {
            0
        };
        let mut len = phdrs_end.max(64).max(self.min_len);
        for ph in &self.phdrs {
            if ph.p_type == elf::PT_LOAD && ph.p_filesz < 1 << 20 && ph.p_offset < 1 << 20 {
                len = len.max((ph.p_offset + ph.p_filesz) as usize);
            }
        }
        for (off, b) in &self.blobs {
            len = len.max(*off as usize + b.len());
        }
        // A recognisable pattern in the segments' bytes.
        let mut f: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        f[..64].fill(0);
        f[0..4].copy_from_slice(&elf::ELFMAG);
        f[4] = self.class;
        f[5] = self.data;
        f[6] = elf::EV_CURRENT;
        f[16..18].copy_from_slice(&self.e_type.to_le_bytes());
        f[18..20].copy_from_slice(&self.machine.to_le_bytes());
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[24..32].copy_from_slice(&self.entry.to_le_bytes());
        f[32..40].copy_from_slice(&self.phoff.to_le_bytes());
        f[52..54].copy_from_slice(&64u16.to_le_bytes());
        f[54..56].copy_from_slice(&self.phentsize.to_le_bytes());
        let phnum = self.phnum.unwrap_or(self.phdrs.len() as u16);
        f[56..58].copy_from_slice(&phnum.to_le_bytes());
        f[58..60].copy_from_slice(&64u16.to_le_bytes());
        for (i, ph) in self.phdrs.iter().enumerate().filter(|_| write_phdrs) {
            let at = self.phoff as usize + i * 56;
            let mut w = Vec::with_capacity(56);
            w.extend_from_slice(&ph.p_type.to_le_bytes());
            w.extend_from_slice(&ph.p_flags.to_le_bytes());
            for v in [ph.p_offset, ph.p_vaddr, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_align] {
                w.extend_from_slice(&v.to_le_bytes());
            }
            f[at..at + 56].copy_from_slice(&w);
        }
        for (off, b) in &self.blobs {
            f[*off as usize..*off as usize + b.len()].copy_from_slice(b);
        }
        f
    }
}

/// A classic static executable at 0x400000, as GNU ld lays one out: headers
/// and read-only data, text, then data with bss sharing no page.
pub fn static_exec() -> ElfFile {
    let phdrs = vec![
        Phdr::other(elf::PT_PHDR, R, 64, 0x40_0040, 5 * 56),
        Phdr::load(R, 0, 0x40_0000, 0x234, 0x234),
        Phdr::load(RX, 0x1000, 0x41_1000, 0x1800, 0x1800),
        Phdr::load(RW, 0x2810, 0x42_2810, 0x100, 0x3000),
        Phdr::other(elf::PT_GNU_STACK, RW, 0, 0, 0),
    ];
    ElfFile::new(elf::ET_EXEC, 0x41_1040, phdrs)
}

/// A static-PIE linked at 0, with 64 KiB `p_align`.
pub fn static_pie() -> ElfFile {
    let phdrs = vec![
        Phdr::other(elf::PT_PHDR, R, 64, 0x40, 5 * 56),
        Phdr::load(R, 0, 0, 0x234, 0x234),
        Phdr::load(RX, 0x1000, 0x1_1000, 0x1800, 0x1800),
        Phdr::load(RW, 0x2810, 0x2_2810, 0x100, 0x3000),
        Phdr::other(elf::PT_DYNAMIC, RW, 0x2820, 0x2_2820, 0x80),
    ];
    ElfFile::new(elf::ET_DYN, 0x1_1040, phdrs)
}

/// What a stack image holds, read back as a program would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedStack {
    pub argc: u64,
    pub argv: Vec<Vec<u8>>,
    pub argv_ptrs: Vec<u64>,
    pub envp: Vec<Vec<u8>>,
    pub envp_ptrs: Vec<u64>,
    pub auxv: Vec<(u64, u64)>,
    /// Address just past the AT_NULL pair.
    pub auxv_end: u64,
}

/// Reads the stack `bytes` at `[sp, sp + bytes.len())` from `sp`.
pub fn parse_stack(sp: u64, bytes: &[u8]) -> ParsedStack {
    let word = |addr: u64| -> u64 {
        let o = (addr - sp) as usize;
        u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap())
    };
    let string = |addr: u64| -> Vec<u8> {
        let o = (addr - sp) as usize;
        let n = bytes[o..].iter().position(|&b| b == 0).expect("string without NUL");
        bytes[o..o + n].to_vec()
    };
    let argc = word(sp);
    let mut p = sp + 8;
    let mut argv_ptrs = Vec::new();
    for _ in 0..argc {
        argv_ptrs.push(word(p));
        p += 8;
    }
    assert_eq!(word(p), 0, "argv not NULL-terminated");
    p += 8;
    let mut envp_ptrs = Vec::new();
    while word(p) != 0 {
        envp_ptrs.push(word(p));
        p += 8;
    }
    p += 8;
    let mut auxv = Vec::new();
    loop {
        let (t, v) = (word(p), word(p + 8));
        auxv.push((t, v));
        p += 16;
        if t == 0 {
            break;
        }
    }
    ParsedStack {
        argc,
        argv: argv_ptrs.iter().map(|&a| string(a)).collect(),
        argv_ptrs,
        envp: envp_ptrs.iter().map(|&a| string(a)).collect(),
        envp_ptrs,
        auxv,
        auxv_end: p,
    }
}

/// The value of auxv entry `key`.
pub fn aux(parsed: &ParsedStack, key: u64) -> Option<u64> {
    parsed.auxv.iter().find(|&&(t, _)| t == key).map(|&(_, v)| v)
}

/// What a program run on Linux printed (tests/fixtures/auxdump.rs.txt).
#[derive(Debug, Clone)]
pub struct LinuxDump {
    pub sp: u64,
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
    pub auxv: Vec<(u64, u64)>,
    pub top: u64,
    pub bytes: Vec<u8>,
}

pub fn parse_linux_dump(text: &str) -> LinuxDump {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let mut d = LinuxDump {
        sp: 0,
        argv: vec![],
        envp: vec![],
        auxv: vec![],
        top: 0,
        bytes: vec![],
    };
    for line in text.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "sp" => d.sp = hex(rest),
            "argv" => d
                .argv
                .push(rest.split_once(' ').map_or("", |(_, s)| s).as_bytes().to_vec()),
            "envp" => d
                .envp
                .push(rest.split_once(' ').map_or("", |(_, s)| s).as_bytes().to_vec()),
            "auxv" => {
                let mut it = rest.split(' ');
                d.auxv.push((hex(it.next().unwrap()), hex(it.next().unwrap())));
            }
            "top" => d.top = hex(rest),
            "bytes" => {
                d.bytes = (0..rest.len() / 2)
                    .map(|i| u8::from_str_radix(&rest[2 * i..2 * i + 2], 16).unwrap())
                    .collect()
            }
            _ => {}
        }
    }
    d
}
