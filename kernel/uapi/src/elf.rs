//! ELF64 numbers and layouts, Linux's `include/uapi/linux/elf.h` (with
//! `EM_AARCH64` from `elf-em.h`): what a user program needs to read its own
//! file or the vDSO the kernel maps for it. The note types a regset uses
//! (`NT_PRSTATUS`, `NT_ARM_*`...) live in [`crate::ptrace::regset`].
//!
//! The structures are little-endian images (arm64 is little-endian); each
//! has `SIZE` and `from_bytes`, plus `from_prefix` for a parser that holds
//! a whole file and must not trust its offsets.

/// `e_ident[]` indexes.
pub mod ident {
    /// First magic byte (`ELFMAG0`); magic runs to `EI_MAG3`.
    pub const EI_MAG0: usize = 0;
    /// File class: `ELFCLASS32` or `ELFCLASS64`.
    pub const EI_CLASS: usize = 4;
    /// Data encoding: `ELFDATA2LSB` or `ELFDATA2MSB`.
    pub const EI_DATA: usize = 5;
    /// ELF version (`EV_CURRENT`).
    pub const EI_VERSION: usize = 6;
    /// OS ABI (`ELFOSABI_*`).
    pub const EI_OSABI: usize = 7;
    /// Start of the padding (the gABI's `EI_ABIVERSION`, which Linux's
    /// header does not name).
    pub const EI_PAD: usize = 8;
    /// Length of `e_ident`.
    pub const EI_NIDENT: usize = 16;
}
pub use ident::*;

/// The magic at the start of every ELF file (`ELFMAG`).
pub const ELFMAG: [u8; 4] = *b"\x7fELF";
/// Length of the magic (`SELFMAG`).
pub const SELFMAG: usize = 4;
/// `EI_CLASS`: 32-bit objects.
pub const ELFCLASS32: u8 = 1;
/// `EI_CLASS`: 64-bit objects.
pub const ELFCLASS64: u8 = 2;
/// `EI_DATA`: two's complement, little-endian.
pub const ELFDATA2LSB: u8 = 1;
/// `EI_DATA`: two's complement, big-endian.
pub const ELFDATA2MSB: u8 = 2;
/// `e_version` and `EI_VERSION`: the current version.
pub const EV_CURRENT: u8 = 1;
/// `EI_OSABI`: System V (what Linux writes, `ELF_OSABI`).
pub const ELFOSABI_NONE: u8 = 0;
/// `EI_OSABI`: Linux (GNU).
pub const ELFOSABI_LINUX: u8 = 3;

/// `e_type`: no file type.
pub const ET_NONE: u16 = 0;
/// `e_type`: relocatable object.
pub const ET_REL: u16 = 1;
/// `e_type`: executable at a fixed address.
pub const ET_EXEC: u16 = 2;
/// `e_type`: shared object or position-independent executable.
pub const ET_DYN: u16 = 3;
/// `e_type`: core dump.
pub const ET_CORE: u16 = 4;

/// `e_machine`: ARM 64-bit.
pub const EM_AARCH64: u16 = 183;

/// `p_type`: unused entry.
pub const PT_NULL: u32 = 0;
/// `p_type`: loadable segment.
pub const PT_LOAD: u32 = 1;
/// `p_type`: the dynamic section.
pub const PT_DYNAMIC: u32 = 2;
/// `p_type`: the interpreter's path.
pub const PT_INTERP: u32 = 3;
/// `p_type`: notes.
pub const PT_NOTE: u32 = 4;
/// `p_type`: reserved.
pub const PT_SHLIB: u32 = 5;
/// `p_type`: the program header table itself.
pub const PT_PHDR: u32 = 6;
/// `p_type`: thread-local storage template.
pub const PT_TLS: u32 = 7;
/// Start of the OS-specific `p_type`s.
pub const PT_LOOS: u32 = 0x6000_0000;
/// `p_type`: `.eh_frame_hdr`.
pub const PT_GNU_EH_FRAME: u32 = PT_LOOS + 0x474e550;
/// `p_type`: the stack's permissions (executable or not).
pub const PT_GNU_STACK: u32 = PT_LOOS + 0x474e551;
/// `p_type`: read-only after relocation.
pub const PT_GNU_RELRO: u32 = PT_LOOS + 0x474e552;
/// `p_type`: `.note.gnu.property` (arm64 BTI).
pub const PT_GNU_PROPERTY: u32 = PT_LOOS + 0x474e553;
/// Start of the processor-specific `p_type`s.
pub const PT_LOPROC: u32 = 0x7000_0000;
/// `p_type`: MTE memory tags of the segments (arm64 core dumps).
pub const PT_AARCH64_MEMTAG_MTE: u32 = PT_LOPROC + 0x2;

/// `p_flags`: executable.
pub const PF_X: u32 = 0x1;
/// `p_flags`: writable.
pub const PF_W: u32 = 0x2;
/// `p_flags`: readable.
pub const PF_R: u32 = 0x4;

/// `sh_type`: inactive section header.
pub const SHT_NULL: u32 = 0;
/// `sh_type`: contents defined by the program.
pub const SHT_PROGBITS: u32 = 1;
/// `sh_type`: full symbol table.
pub const SHT_SYMTAB: u32 = 2;
/// `sh_type`: string table.
pub const SHT_STRTAB: u32 = 3;
/// `sh_type`: relocations with addends.
pub const SHT_RELA: u32 = 4;
/// `sh_type`: symbol hash table.
pub const SHT_HASH: u32 = 5;
/// `sh_type`: dynamic linking information.
pub const SHT_DYNAMIC: u32 = 6;
/// `sh_type`: notes.
pub const SHT_NOTE: u32 = 7;
/// `sh_type`: occupies no file space (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// `sh_type`: relocations without addends.
pub const SHT_REL: u32 = 9;
/// `sh_type`: dynamic linking symbol table.
pub const SHT_DYNSYM: u32 = 11;

/// `sh_flags`: writable.
pub const SHF_WRITE: u64 = 0x1;
/// `sh_flags`: occupies memory at run time.
pub const SHF_ALLOC: u64 = 0x2;
/// `sh_flags`: executable.
pub const SHF_EXECINSTR: u64 = 0x4;

/// `st_shndx` (and `sh_link`): undefined section.
pub const SHN_UNDEF: u16 = 0;
/// `st_shndx`: absolute value, not relocated.
pub const SHN_ABS: u16 = 0xfff1;
/// `st_shndx`: common block.
pub const SHN_COMMON: u16 = 0xfff2;

/// Symbol binding (`ELF64_ST_BIND`): local to the object.
pub const STB_LOCAL: u8 = 0;
/// Symbol binding: visible to every object.
pub const STB_GLOBAL: u8 = 1;
/// Symbol binding: global, of lower precedence.
pub const STB_WEAK: u8 = 2;

/// Symbol type (`ELF64_ST_TYPE`): unspecified.
pub const STT_NOTYPE: u8 = 0;
/// Symbol type: data object.
pub const STT_OBJECT: u8 = 1;
/// Symbol type: function.
pub const STT_FUNC: u8 = 2;
/// Symbol type: a section.
pub const STT_SECTION: u8 = 3;
/// Symbol type: the source file.
pub const STT_FILE: u8 = 4;
/// Symbol type: common block.
pub const STT_COMMON: u8 = 5;
/// Symbol type: thread-local.
pub const STT_TLS: u8 = 6;

/// The binding of an `st_info` (`ELF64_ST_BIND`).
pub const fn elf64_st_bind(info: u8) -> u8 {
    info >> 4
}

/// The type of an `st_info` (`ELF64_ST_TYPE`).
pub const fn elf64_st_type(info: u8) -> u8 {
    info & 0xf
}

/// `st_info` from a binding and a type (`ELF64_ST_INFO` of the gABI; Linux's
/// header has only the two getters).
pub const fn elf64_st_info(bind: u8, kind: u8) -> u8 {
    (bind << 4) | (kind & 0xf)
}

/// `d_tag` values. `d_tag` is an `Elf64_Sxword`, but every tag is
/// non-negative, so they are kept as the `u64` a reader loads.
pub mod dt {
    /// End of the dynamic array.
    pub const DT_NULL: u64 = 0;
    /// A needed library (string table offset).
    pub const DT_NEEDED: u64 = 1;
    /// Address of the SysV symbol hash table.
    pub const DT_HASH: u64 = 4;
    /// Address of the dynamic string table.
    pub const DT_STRTAB: u64 = 5;
    /// Address of the dynamic symbol table.
    pub const DT_SYMTAB: u64 = 6;
    /// Address of the `Elf64_Rela` relocations.
    pub const DT_RELA: u64 = 7;
    /// Size of `DT_RELA` in bytes.
    pub const DT_RELASZ: u64 = 8;
    /// Size of one `Elf64_Rela`.
    pub const DT_RELAENT: u64 = 9;
    /// Size of the string table in bytes.
    pub const DT_STRSZ: u64 = 10;
    /// Size of one symbol table entry.
    pub const DT_SYMENT: u64 = 11;
    /// The object's name (string table offset).
    pub const DT_SONAME: u64 = 14;
    /// Relocations may write read-only segments.
    pub const DT_TEXTREL: u64 = 22;
    /// Address of the `.gnu.version` (symbol version index) table.
    pub const DT_VERSYM: u64 = 0x6fff_fff0;
    /// Count of relative relocations at the start of `DT_RELA`.
    pub const DT_RELACOUNT: u64 = 0x6fff_fff9;
    /// `DF_1_*` flags.
    pub const DT_FLAGS_1: u64 = 0x6fff_fffb;
    /// Address of the version definitions.
    pub const DT_VERDEF: u64 = 0x6fff_fffc;
    /// Number of version definitions.
    pub const DT_VERDEFNUM: u64 = 0x6fff_fffd;
    /// Address of the needed versions.
    pub const DT_VERNEED: u64 = 0x6fff_fffe;
    /// Number of needed versions.
    pub const DT_VERNEEDNUM: u64 = 0x6fff_ffff;
}
pub use dt::*;

/// The header of a SysV `DT_HASH` table (gABI "Hash Table"): `nbucket` and
/// `nchain` words, then the buckets and chains. `nchain` equals the number
/// of symbols in the dynamic symbol table.
pub mod hash {
    /// Offset of `nbucket`.
    pub const NBUCKET: usize = 0;
    /// Offset of `nchain`.
    pub const NCHAIN: usize = 4;
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes([
        b[o],
        b[o + 1],
        b[o + 2],
        b[o + 3],
        b[o + 4],
        b[o + 5],
        b[o + 6],
        b[o + 7],
    ])
}

/// `Elf64_Ehdr`: the file header, at offset 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elf64Ehdr {
    /// Magic, class, data encoding, version, OS ABI.
    pub e_ident: [u8; EI_NIDENT],
    /// `ET_*`.
    pub e_type: u16,
    /// `EM_*`.
    pub e_machine: u16,
    /// `EV_CURRENT`.
    pub e_version: u32,
    /// Entry point address.
    pub e_entry: u64,
    /// File offset of the program header table.
    pub e_phoff: u64,
    /// File offset of the section header table.
    pub e_shoff: u64,
    /// Processor-specific flags.
    pub e_flags: u32,
    /// Size of this header.
    pub e_ehsize: u16,
    /// Size of one program header.
    pub e_phentsize: u16,
    /// Number of program headers.
    pub e_phnum: u16,
    /// Size of one section header.
    pub e_shentsize: u16,
    /// Number of section headers.
    pub e_shnum: u16,
    /// Index of the section holding section names.
    pub e_shstrndx: u16,
}

impl Elf64Ehdr {
    /// Its size in the file.
    pub const SIZE: usize = 64;

    /// Reads the header's image.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Elf64Ehdr {
        let mut e_ident = [0u8; EI_NIDENT];
        e_ident.copy_from_slice(&b[..EI_NIDENT]);
        Elf64Ehdr {
            e_ident,
            e_type: u16_at(b, 16),
            e_machine: u16_at(b, 18),
            e_version: u32_at(b, 20),
            e_entry: u64_at(b, 24),
            e_phoff: u64_at(b, 32),
            e_shoff: u64_at(b, 40),
            e_flags: u32_at(b, 48),
            e_ehsize: u16_at(b, 52),
            e_phentsize: u16_at(b, 54),
            e_phnum: u16_at(b, 56),
            e_shentsize: u16_at(b, 58),
            e_shnum: u16_at(b, 60),
            e_shstrndx: u16_at(b, 62),
        }
    }

    /// Reads the header at the start of `b`, if `b` holds all of it.
    pub fn from_prefix(b: &[u8]) -> Option<Elf64Ehdr> {
        Some(Self::from_bytes(b.get(..Self::SIZE)?.try_into().ok()?))
    }

    /// Whether `e_ident` says ELF64, little-endian: the only kind arm64
    /// Linux runs and the layouts here describe.
    pub fn is_elf64_lsb(&self) -> bool {
        self.e_ident[..SELFMAG] == ELFMAG
            && self.e_ident[EI_CLASS] == ELFCLASS64
            && self.e_ident[EI_DATA] == ELFDATA2LSB
    }
}

/// `Elf64_Phdr`: one program header (segment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elf64Phdr {
    /// `PT_*`.
    pub p_type: u32,
    /// `PF_*`.
    pub p_flags: u32,
    /// File offset of the segment.
    pub p_offset: u64,
    /// Virtual address.
    pub p_vaddr: u64,
    /// Physical address (unused).
    pub p_paddr: u64,
    /// Bytes in the file.
    pub p_filesz: u64,
    /// Bytes in memory.
    pub p_memsz: u64,
    /// Alignment.
    pub p_align: u64,
}

impl Elf64Phdr {
    /// Its size in the file.
    pub const SIZE: usize = 56;

    /// Reads the header's image.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Elf64Phdr {
        Elf64Phdr {
            p_type: u32_at(b, 0),
            p_flags: u32_at(b, 4),
            p_offset: u64_at(b, 8),
            p_vaddr: u64_at(b, 16),
            p_paddr: u64_at(b, 24),
            p_filesz: u64_at(b, 32),
            p_memsz: u64_at(b, 40),
            p_align: u64_at(b, 48),
        }
    }

    /// Reads the header at the start of `b`, if `b` holds all of it.
    pub fn from_prefix(b: &[u8]) -> Option<Elf64Phdr> {
        Some(Self::from_bytes(b.get(..Self::SIZE)?.try_into().ok()?))
    }
}

/// `Elf64_Shdr`: one section header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elf64Shdr {
    /// Name (offset in the `e_shstrndx` section).
    pub sh_name: u32,
    /// `SHT_*`.
    pub sh_type: u32,
    /// `SHF_*`.
    pub sh_flags: u64,
    /// Address at run time.
    pub sh_addr: u64,
    /// File offset of the contents.
    pub sh_offset: u64,
    /// Size of the contents.
    pub sh_size: u64,
    /// A related section (a symbol table's string table).
    pub sh_link: u32,
    /// Type-dependent (a symbol table's first non-local symbol).
    pub sh_info: u32,
    /// Alignment.
    pub sh_addralign: u64,
    /// Size of one entry, for a table.
    pub sh_entsize: u64,
}

impl Elf64Shdr {
    /// Its size in the file.
    pub const SIZE: usize = 64;

    /// Reads the header's image.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Elf64Shdr {
        Elf64Shdr {
            sh_name: u32_at(b, 0),
            sh_type: u32_at(b, 4),
            sh_flags: u64_at(b, 8),
            sh_addr: u64_at(b, 16),
            sh_offset: u64_at(b, 24),
            sh_size: u64_at(b, 32),
            sh_link: u32_at(b, 40),
            sh_info: u32_at(b, 44),
            sh_addralign: u64_at(b, 48),
            sh_entsize: u64_at(b, 56),
        }
    }

    /// Reads the header at the start of `b`, if `b` holds all of it.
    pub fn from_prefix(b: &[u8]) -> Option<Elf64Shdr> {
        Some(Self::from_bytes(b.get(..Self::SIZE)?.try_into().ok()?))
    }
}

/// `Elf64_Sym`: one symbol table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elf64Sym {
    /// Name (offset in the linked string table).
    pub st_name: u32,
    /// Binding and type (`elf64_st_bind`, `elf64_st_type`).
    pub st_info: u8,
    /// Visibility.
    pub st_other: u8,
    /// Section it is defined in (`SHN_UNDEF` if undefined).
    pub st_shndx: u16,
    /// Value (an address for functions and objects).
    pub st_value: u64,
    /// Size of the object.
    pub st_size: u64,
}

impl Elf64Sym {
    /// Its size in the table.
    pub const SIZE: usize = 24;

    /// Reads the entry's image.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Elf64Sym {
        Elf64Sym {
            st_name: u32_at(b, 0),
            st_info: b[4],
            st_other: b[5],
            st_shndx: u16_at(b, 6),
            st_value: u64_at(b, 8),
            st_size: u64_at(b, 16),
        }
    }

    /// Reads the entry at the start of `b`, if `b` holds all of it.
    pub fn from_prefix(b: &[u8]) -> Option<Elf64Sym> {
        Some(Self::from_bytes(b.get(..Self::SIZE)?.try_into().ok()?))
    }

    /// `STB_*` of `st_info`.
    pub fn st_bind(&self) -> u8 {
        elf64_st_bind(self.st_info)
    }

    /// `STT_*` of `st_info`.
    pub fn st_type(&self) -> u8 {
        elf64_st_type(self.st_info)
    }
}

/// `Elf64_Dyn`: one entry of the dynamic section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elf64Dyn {
    /// `DT_*`.
    pub d_tag: u64,
    /// `d_un`: a value or an address, by the tag.
    pub d_val: u64,
}

impl Elf64Dyn {
    /// Its size in the section.
    pub const SIZE: usize = 16;

    /// Reads the entry's image.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Elf64Dyn {
        Elf64Dyn {
            d_tag: u64_at(b, 0),
            d_val: u64_at(b, 8),
        }
    }

    /// Reads the entry at the start of `b`, if `b` holds all of it.
    pub fn from_prefix(b: &[u8]) -> Option<Elf64Dyn> {
        Some(Self::from_bytes(b.get(..Self::SIZE)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use object::elf as o;
    use object::endian::{LittleEndian as LE, U16, U32, U64};
    use object::pod::bytes_of;

    #[test]
    fn numbers_are_those_of_the_object_crate() {
        assert_eq!(ELFMAG, o::ELFMAG);
        assert_eq!(
            (ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFDATA2MSB),
            (o::ELFCLASS32, o::ELFCLASS64, o::ELFDATA2LSB, o::ELFDATA2MSB)
        );
        assert_eq!(
            (EV_CURRENT, ELFOSABI_NONE, ELFOSABI_LINUX),
            (o::EV_CURRENT, o::ELFOSABI_NONE, o::ELFOSABI_LINUX)
        );
        assert_eq!(
            [ET_NONE, ET_REL, ET_EXEC, ET_DYN, ET_CORE],
            [o::ET_NONE, o::ET_REL, o::ET_EXEC, o::ET_DYN, o::ET_CORE]
        );
        assert_eq!(EM_AARCH64, o::EM_AARCH64);
        assert_eq!(
            [PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_SHLIB, PT_PHDR, PT_TLS, PT_LOOS, PT_LOPROC],
            [
                o::PT_NULL,
                o::PT_LOAD,
                o::PT_DYNAMIC,
                o::PT_INTERP,
                o::PT_NOTE,
                o::PT_SHLIB,
                o::PT_PHDR,
                o::PT_TLS,
                o::PT_LOOS,
                o::PT_LOPROC
            ]
        );
        assert_eq!(
            [PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_PROPERTY],
            [o::PT_GNU_EH_FRAME, o::PT_GNU_STACK, o::PT_GNU_RELRO, o::PT_GNU_PROPERTY]
        );
        // Not in the object crate: Linux's value, PT_LOPROC + 2.
        assert_eq!(PT_AARCH64_MEMTAG_MTE, 0x7000_0002);
        assert_eq!([PF_X, PF_W, PF_R], [o::PF_X, o::PF_W, o::PF_R]);
        assert_eq!(
            [
                SHT_NULL,
                SHT_PROGBITS,
                SHT_SYMTAB,
                SHT_STRTAB,
                SHT_RELA,
                SHT_HASH,
                SHT_DYNAMIC,
                SHT_NOTE,
                SHT_NOBITS,
                SHT_REL,
                SHT_DYNSYM
            ],
            [
                o::SHT_NULL,
                o::SHT_PROGBITS,
                o::SHT_SYMTAB,
                o::SHT_STRTAB,
                o::SHT_RELA,
                o::SHT_HASH,
                o::SHT_DYNAMIC,
                o::SHT_NOTE,
                o::SHT_NOBITS,
                o::SHT_REL,
                o::SHT_DYNSYM
            ]
        );
        assert_eq!(
            [SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR],
            [o::SHF_WRITE, o::SHF_ALLOC, o::SHF_EXECINSTR].map(u64::from)
        );
        assert_eq!(
            [SHN_UNDEF, SHN_ABS, SHN_COMMON],
            [o::SHN_UNDEF, o::SHN_ABS, o::SHN_COMMON]
        );
        assert_eq!(
            [STB_LOCAL, STB_GLOBAL, STB_WEAK],
            [o::STB_LOCAL, o::STB_GLOBAL, o::STB_WEAK]
        );
        assert_eq!(
            [
                STT_NOTYPE,
                STT_OBJECT,
                STT_FUNC,
                STT_SECTION,
                STT_FILE,
                STT_COMMON,
                STT_TLS
            ],
            [
                o::STT_NOTYPE,
                o::STT_OBJECT,
                o::STT_FUNC,
                o::STT_SECTION,
                o::STT_FILE,
                o::STT_COMMON,
                o::STT_TLS
            ]
        );
        assert_eq!(
            [
                DT_NULL,
                DT_NEEDED,
                DT_HASH,
                DT_STRTAB,
                DT_SYMTAB,
                DT_RELA,
                DT_RELASZ,
                DT_RELAENT,
                DT_STRSZ,
                DT_SYMENT,
                DT_SONAME,
                DT_TEXTREL,
                DT_VERSYM,
                DT_RELACOUNT,
                DT_FLAGS_1,
                DT_VERDEF,
                DT_VERDEFNUM,
                DT_VERNEED,
                DT_VERNEEDNUM
            ],
            [
                o::DT_NULL,
                o::DT_NEEDED,
                o::DT_HASH,
                o::DT_STRTAB,
                o::DT_SYMTAB,
                o::DT_RELA,
                o::DT_RELASZ,
                o::DT_RELAENT,
                o::DT_STRSZ,
                o::DT_SYMENT,
                o::DT_SONAME,
                o::DT_TEXTREL,
                o::DT_VERSYM,
                o::DT_RELACOUNT,
                o::DT_FLAGS_1,
                o::DT_VERDEF,
                o::DT_VERDEFNUM,
                o::DT_VERNEED,
                o::DT_VERNEEDNUM
            ]
            .map(u64::from)
        );
    }

    #[test]
    fn st_info_splits_into_binding_and_type_as_the_object_crate_does() {
        for info in 0..=u8::MAX {
            let sym = o::Sym64::<LE> {
                st_name: U32::new(LE, 0),
                st_info: info,
                st_other: 0,
                st_shndx: U16::new(LE, 0),
                st_value: U64::new(LE, 0),
                st_size: U64::new(LE, 0),
            };
            assert_eq!(
                (elf64_st_bind(info), elf64_st_type(info)),
                (sym.st_bind(), sym.st_type())
            );
            assert_eq!(elf64_st_info(elf64_st_bind(info), elf64_st_type(info)), info);
        }
        assert_eq!(elf64_st_info(STB_GLOBAL, STT_FUNC), 0x12);
    }

    #[test]
    fn ident_indexes_are_those_of_the_object_crate_ident() {
        use core::mem::offset_of;
        assert_eq!(
            (EI_MAG0, EI_CLASS, EI_DATA, EI_VERSION, EI_OSABI, EI_PAD),
            (
                offset_of!(o::Ident, magic),
                offset_of!(o::Ident, class),
                offset_of!(o::Ident, data),
                offset_of!(o::Ident, version),
                offset_of!(o::Ident, os_abi),
                // Linux's EI_PAD covers the gABI's EI_ABIVERSION byte.
                offset_of!(o::Ident, abi_version),
            )
        );
    }

    #[test]
    fn sizes_are_those_of_the_object_crate() {
        use core::mem::size_of;
        assert_eq!(EI_NIDENT, size_of::<o::Ident>());
        assert_eq!(Elf64Ehdr::SIZE, size_of::<o::FileHeader64<LE>>());
        assert_eq!(Elf64Phdr::SIZE, size_of::<o::ProgramHeader64<LE>>());
        assert_eq!(Elf64Shdr::SIZE, size_of::<o::SectionHeader64<LE>>());
        assert_eq!(Elf64Sym::SIZE, size_of::<o::Sym64<LE>>());
        assert_eq!(Elf64Dyn::SIZE, size_of::<o::Dyn64<LE>>());
    }

    // Each field gets a distinct value, so a field read at another's
    // offset (or with the wrong width) cannot pass.

    #[test]
    fn ehdr_fields_are_read_at_the_object_crate_offsets() {
        let h = o::FileHeader64::<LE> {
            e_ident: o::Ident {
                magic: o::ELFMAG,
                class: o::ELFCLASS64,
                data: o::ELFDATA2LSB,
                version: o::EV_CURRENT,
                os_abi: o::ELFOSABI_LINUX,
                abi_version: 9,
                padding: [0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6],
            },
            e_type: U16::new(LE, 0x1112),
            e_machine: U16::new(LE, 0x1314),
            e_version: U32::new(LE, 0x1516_1718),
            e_entry: U64::new(LE, 0x2122_2324_2526_2728),
            e_phoff: U64::new(LE, 0x3132_3334_3536_3738),
            e_shoff: U64::new(LE, 0x4142_4344_4546_4748),
            e_flags: U32::new(LE, 0x5152_5354),
            e_ehsize: U16::new(LE, 0x6162),
            e_phentsize: U16::new(LE, 0x6364),
            e_phnum: U16::new(LE, 0x6566),
            e_shentsize: U16::new(LE, 0x6768),
            e_shnum: U16::new(LE, 0x696a),
            e_shstrndx: U16::new(LE, 0x6b6c),
        };
        let ours = Elf64Ehdr::from_prefix(bytes_of(&h)).unwrap();
        assert_eq!(&ours.e_ident[..SELFMAG], &ELFMAG);
        assert_eq!(ours.e_ident[EI_OSABI], ELFOSABI_LINUX);
        assert_eq!(ours.e_ident[EI_PAD..], [9, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6]);
        assert!(ours.is_elf64_lsb());
        assert_eq!(
            (
                ours.e_type,
                ours.e_machine,
                ours.e_version,
                ours.e_entry,
                ours.e_phoff,
                ours.e_shoff,
                ours.e_flags
            ),
            (
                0x1112,
                0x1314,
                0x1516_1718,
                0x2122_2324_2526_2728,
                0x3132_3334_3536_3738,
                0x4142_4344_4546_4748,
                0x5152_5354
            )
        );
        assert_eq!(
            (
                ours.e_ehsize,
                ours.e_phentsize,
                ours.e_phnum,
                ours.e_shentsize,
                ours.e_shnum,
                ours.e_shstrndx
            ),
            (0x6162, 0x6364, 0x6566, 0x6768, 0x696a, 0x6b6c)
        );
        assert_eq!(Elf64Ehdr::from_prefix(&bytes_of(&h)[..Elf64Ehdr::SIZE - 1]), None);
    }

    #[test]
    fn ehdr_of_another_class_or_byte_order_is_not_elf64_lsb() {
        let mut b = [0u8; Elf64Ehdr::SIZE];
        b[..SELFMAG].copy_from_slice(&ELFMAG);
        b[EI_CLASS] = ELFCLASS64;
        b[EI_DATA] = ELFDATA2LSB;
        assert!(Elf64Ehdr::from_bytes(&b).is_elf64_lsb());
        for (at, v) in [(EI_CLASS, ELFCLASS32), (EI_DATA, ELFDATA2MSB), (EI_MAG0, 0x7e)] {
            let mut bad = b;
            bad[at] = v;
            assert!(!Elf64Ehdr::from_bytes(&bad).is_elf64_lsb());
        }
    }

    #[test]
    fn phdr_fields_are_read_at_the_object_crate_offsets() {
        let p = o::ProgramHeader64::<LE> {
            p_type: U32::new(LE, 0x1112_1314),
            p_flags: U32::new(LE, 0x2122_2324),
            p_offset: U64::new(LE, 0x3132_3334_3536_3738),
            p_vaddr: U64::new(LE, 0x4142_4344_4546_4748),
            p_paddr: U64::new(LE, 0x5152_5354_5556_5758),
            p_filesz: U64::new(LE, 0x6162_6364_6566_6768),
            p_memsz: U64::new(LE, 0x7172_7374_7576_7778),
            p_align: U64::new(LE, 0x8182_8384_8586_8788),
        };
        let ours = Elf64Phdr::from_prefix(bytes_of(&p)).unwrap();
        assert_eq!(
            ours,
            Elf64Phdr {
                p_type: 0x1112_1314,
                p_flags: 0x2122_2324,
                p_offset: 0x3132_3334_3536_3738,
                p_vaddr: 0x4142_4344_4546_4748,
                p_paddr: 0x5152_5354_5556_5758,
                p_filesz: 0x6162_6364_6566_6768,
                p_memsz: 0x7172_7374_7576_7778,
                p_align: 0x8182_8384_8586_8788,
            }
        );
    }

    #[test]
    fn shdr_fields_are_read_at_the_object_crate_offsets() {
        let s = o::SectionHeader64::<LE> {
            sh_name: U32::new(LE, 0x1112_1314),
            sh_type: U32::new(LE, 0x2122_2324),
            sh_flags: U64::new(LE, 0x3132_3334_3536_3738),
            sh_addr: U64::new(LE, 0x4142_4344_4546_4748),
            sh_offset: U64::new(LE, 0x5152_5354_5556_5758),
            sh_size: U64::new(LE, 0x6162_6364_6566_6768),
            sh_link: U32::new(LE, 0x7172_7374),
            sh_info: U32::new(LE, 0x7576_7778),
            sh_addralign: U64::new(LE, 0x8182_8384_8586_8788),
            sh_entsize: U64::new(LE, 0x9192_9394_9596_9798),
        };
        let ours = Elf64Shdr::from_prefix(bytes_of(&s)).unwrap();
        assert_eq!(
            ours,
            Elf64Shdr {
                sh_name: 0x1112_1314,
                sh_type: 0x2122_2324,
                sh_flags: 0x3132_3334_3536_3738,
                sh_addr: 0x4142_4344_4546_4748,
                sh_offset: 0x5152_5354_5556_5758,
                sh_size: 0x6162_6364_6566_6768,
                sh_link: 0x7172_7374,
                sh_info: 0x7576_7778,
                sh_addralign: 0x8182_8384_8586_8788,
                sh_entsize: 0x9192_9394_9596_9798,
            }
        );
    }

    #[test]
    fn sym_and_dyn_fields_are_read_at_the_object_crate_offsets() {
        let s = o::Sym64::<LE> {
            st_name: U32::new(LE, 0x1112_1314),
            st_info: 0x21,
            st_other: 0x22,
            st_shndx: U16::new(LE, 0x2324),
            st_value: U64::new(LE, 0x3132_3334_3536_3738),
            st_size: U64::new(LE, 0x4142_4344_4546_4748),
        };
        let ours = Elf64Sym::from_prefix(bytes_of(&s)).unwrap();
        assert_eq!(
            ours,
            Elf64Sym {
                st_name: 0x1112_1314,
                st_info: 0x21,
                st_other: 0x22,
                st_shndx: 0x2324,
                st_value: 0x3132_3334_3536_3738,
                st_size: 0x4142_4344_4546_4748,
            }
        );
        assert_eq!((ours.st_bind(), ours.st_type()), (s.st_bind(), s.st_type()));
        let d = o::Dyn64::<LE> {
            d_tag: U64::new(LE, 0x1112_1314_1516_1718),
            d_val: U64::new(LE, 0x2122_2324_2526_2728),
        };
        assert_eq!(
            Elf64Dyn::from_prefix(bytes_of(&d)),
            Some(Elf64Dyn {
                d_tag: 0x1112_1314_1516_1718,
                d_val: 0x2122_2324_2526_2728,
            })
        );
        assert_eq!(Elf64Dyn::from_prefix(&[0; Elf64Dyn::SIZE - 1]), None);
    }
}
