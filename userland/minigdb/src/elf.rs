//! The symbol table (`.symtab` and its string table) of a static ELF64
//! little-endian executable, read from the file as gdb does for a program
//! without debug information.

use alloc::string::String;
use alloc::vec::Vec;

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

const SHT_SYMTAB: u32 = 2;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STT_NOTYPE: u8 = 0;

fn u16_at(b: &[u8], o: usize) -> Result<u16, ElfError> {
    let s = b.get(o..o + 2).ok_or(ElfError::Truncated)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], o: usize) -> Result<u32, ElfError> {
    let s = b.get(o..o + 4).ok_or(ElfError::Truncated)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], o: usize) -> Result<u64, ElfError> {
    let s = b.get(o..o + 8).ok_or(ElfError::Truncated)?;
    let mut w = [0u8; 8];
    w.copy_from_slice(s);
    Ok(u64::from_le_bytes(w))
}

fn usize_at(b: &[u8], o: usize) -> Result<usize, ElfError> {
    usize::try_from(u64_at(b, o)?).map_err(|_| ElfError::Truncated)
}

impl Symbols {
    /// Parses the section headers of `file` and its `.symtab`.
    pub fn parse(file: &[u8]) -> Result<Symbols, ElfError> {
        if file.get(..6) != Some(b"\x7fELF\x02\x01") {
            return Err(ElfError::NotElf);
        }
        let shoff = usize_at(file, 0x28)?;
        let shentsize = usize::from(u16_at(file, 0x3a)?);
        let shnum = usize::from(u16_at(file, 0x3c)?);
        if shentsize < 64 {
            return Err(ElfError::Truncated);
        }
        let section = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
        let mut syms = Vec::new();
        let mut found = false;
        for i in 0..shnum {
            let sh = section(i).ok_or(ElfError::Truncated)?;
            if u32_at(file, sh + 4)? != SHT_SYMTAB {
                continue;
            }
            found = true;
            let off = usize_at(file, sh + 0x18)?;
            let size = usize_at(file, sh + 0x20)?;
            let link = u32_at(file, sh + 0x28)? as usize;
            let strsh = section(link).ok_or(ElfError::Truncated)?;
            let stroff = usize_at(file, strsh + 0x18)?;
            let strsize = usize_at(file, strsh + 0x20)?;
            let strtab = file
                .get(stroff..stroff.checked_add(strsize).ok_or(ElfError::Truncated)?)
                .ok_or(ElfError::Truncated)?;
            let table = file
                .get(off..off.checked_add(size).ok_or(ElfError::Truncated)?)
                .ok_or(ElfError::Truncated)?;
            for ent in table.chunks_exact(24) {
                let kind = ent[4] & 0xf;
                if !matches!(kind, STT_FUNC | STT_OBJECT | STT_NOTYPE) {
                    continue;
                }
                let name_off = u32_at(ent, 0)? as usize;
                let value = u64_at(ent, 8)?;
                let size = u64_at(ent, 16)?;
                let shndx = u16_at(ent, 6)?;
                let name = strtab.get(name_off..).unwrap_or(&[]);
                let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                let name = &name[..end];
                // Undefined symbols, local labels and mapping symbols ($x, $d)
                // name no place a user asks for.
                if shndx == 0 || value == 0 || name.is_empty() || name[0] == b'$' {
                    continue;
                }
                if kind == STT_NOTYPE && name.starts_with(b".L") {
                    continue;
                }
                syms.push(Symbol {
                    name: String::from_utf8_lossy(name).into_owned(),
                    addr: value,
                    size,
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
