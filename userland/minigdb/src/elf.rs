//! The symbol table (`.symtab` and its string table) of a static ELF64
//! little-endian executable, read from the file as gdb does for a program
//! without debug information.

use alloc::string::String;
use alloc::vec::Vec;
use uapi::elf::{
    Elf64Ehdr, Elf64Shdr, Elf64Sym, EI_CLASS, EI_DATA, ELFCLASS64, ELFDATA2LSB, ELFMAG, SELFMAG, SHN_UNDEF, SHT_SYMTAB,
    STT_FUNC, STT_NOTYPE, STT_OBJECT,
};

/// One function or object symbol.
#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub addr: u64,
    pub size: u64,
}

/// Why a file's symbols could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfError {
    /// Not an ELF64 little-endian file.
    NotElf,
    /// A header or table lies outside the file.
    Truncated,
    /// No `.symtab` (the file was stripped).
    NoSymtab,
}

/// The symbols of a program, sorted by address.
#[derive(Default)]
pub struct Symbols {
    syms: Vec<Symbol>,
}

fn section_header(file: &[u8], at: Option<usize>) -> Result<Elf64Shdr, ElfError> {
    at.and_then(|at| file.get(at..))
        .and_then(Elf64Shdr::from_prefix)
        .ok_or(ElfError::Truncated)
}

fn slice(file: &[u8], off: u64, size: u64) -> Result<&[u8], ElfError> {
    let off = usize::try_from(off).map_err(|_| ElfError::Truncated)?;
    let size = usize::try_from(size).map_err(|_| ElfError::Truncated)?;
    file.get(off..off.checked_add(size).ok_or(ElfError::Truncated)?)
        .ok_or(ElfError::Truncated)
}

impl Symbols {
    /// Parses the section headers of `file` and its `.symtab`.
    pub fn parse(file: &[u8]) -> Result<Symbols, ElfError> {
        let ident = file.get(..EI_DATA + 1).ok_or(ElfError::NotElf)?;
        if ident[..SELFMAG] != ELFMAG || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB {
            return Err(ElfError::NotElf);
        }
        let ehdr = Elf64Ehdr::from_prefix(file).ok_or(ElfError::Truncated)?;
        let shoff = usize::try_from(ehdr.e_shoff).map_err(|_| ElfError::Truncated)?;
        let shentsize = usize::from(ehdr.e_shentsize);
        if shentsize < Elf64Shdr::SIZE {
            return Err(ElfError::Truncated);
        }
        let section = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
        let mut syms = Vec::new();
        let mut found = false;
        for i in 0..usize::from(ehdr.e_shnum) {
            let sh = section_header(file, section(i))?;
            if sh.sh_type != SHT_SYMTAB {
                continue;
            }
            found = true;
            let strsh = section_header(file, section(sh.sh_link as usize))?;
            let strtab = slice(file, strsh.sh_offset, strsh.sh_size)?;
            let table = slice(file, sh.sh_offset, sh.sh_size)?;
            for ent in table.chunks_exact(Elf64Sym::SIZE) {
                let sym = Elf64Sym::from_prefix(ent).ok_or(ElfError::Truncated)?;
                let kind = sym.st_type();
                if !matches!(kind, STT_FUNC | STT_OBJECT | STT_NOTYPE) {
                    continue;
                }
                let name = strtab.get(sym.st_name as usize..).unwrap_or(&[]);
                let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                let name = &name[..end];
                // Undefined symbols, local labels and mapping symbols ($x, $d)
                // name no place a user asks for.
                if sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || name.is_empty() || name[0] == b'$' {
                    continue;
                }
                if kind == STT_NOTYPE && name.starts_with(b".L") {
                    continue;
                }
                syms.push(Symbol {
                    name: String::from_utf8_lossy(name).into_owned(),
                    addr: sym.st_value,
                    size: sym.st_size,
                });
            }
        }
        if !found {
            return Err(ElfError::NoSymtab);
        }
        syms.sort_by_key(|s| (s.addr, core::cmp::Reverse(s.size)));
        Ok(Symbols { syms })
    }

    /// The symbol called `name`.
    pub fn lookup(&self, name: &str) -> Option<&Symbol> {
        self.syms.iter().find(|s| s.name == name)
    }

    /// The symbol covering `addr` (or, for a sized-0 symbol, starting at
    /// it), and the offset of `addr` in it.
    pub fn covering(&self, addr: u64) -> Option<(&Symbol, u64)> {
        let i = self.syms.partition_point(|s| s.addr <= addr);
        self.syms[..i]
            .iter()
            .rev()
            .find(|s| addr < s.addr.saturating_add(s.size.max(1)))
            .map(|s| (s, addr - s.addr))
    }
}
