//! The flat image: the loadable segments of the linked ELF laid out by
//! address, as `objcopy -O binary` would, starting at the Image header.

use object::read::elf::{ElfFile64, ProgramHeader};
use object::{elf, Endianness, Object, ObjectSymbol};

/// Address of the symbol `name` in `elf`.
pub fn symbol_address(elf: &[u8], name: &str) -> Result<u64, String> {
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .ok_or_else(|| format!("no symbol {name}"))
}

/// The bytes of every PT_LOAD segment with file contents, placed at its
/// virtual address relative to the first one; gaps are zero. BSS (beyond a
/// segment's file size) is not included: the Image header's `image_size`
/// tells the loader to leave room for it.
pub fn flat_binary(data: &[u8]) -> Result<Vec<u8>, String> {
    let file = ElfFile64::<Endianness>::parse(data).map_err(|e| e.to_string())?;
    let endian = file.endian();
    let mut segs: Vec<(u64, &[u8])> = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != elf::PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let bytes = ph
            .data(endian, data)
            .map_err(|_| "segment outside the file".to_string())?;
        segs.push((ph.p_vaddr(endian), bytes));
    }
    segs.sort_by_key(|s| s.0);
    let base = segs.first().ok_or("no loadable segment")?.0;
    let end = segs.iter().map(|(a, b)| a + b.len() as u64).max().unwrap_or(base);
    let mut out = vec![0u8; (end - base) as usize];
    for (addr, bytes) in segs {
        let off = (addr - base) as usize;
        out[off..off + bytes.len()].copy_from_slice(bytes);
    }
    Ok(out)
}
