//! The flat image: the loadable segments of the linked ELF laid out by
//! address, as `objcopy -O binary` would, starting at the Image header.

use object::read::elf::{ElfFile64, ProgramHeader};
use object::{elf, Endianness, Object, ObjectSection, ObjectSymbol};

/// Address of the symbol `name` in `elf`.
pub fn symbol_address(elf: &[u8], name: &str) -> Result<u64, String> {
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .ok_or_else(|| format!("no symbol {name}"))
}

/// Checks that function `b` lies, whole, in the 4 KiB page where `a`
/// starts: `a` calls `b` with a direct branch that QEMU's TCG chains only
/// within a page (`ftrace_caller` and `ftrace_hot_func`, see
/// arch/aarch64/src/ftrace.rs; `el0t_64_sync_handler` and
/// `invoke_syscall`, see kernel/src/traps.rs).
/// A kernel whose function outgrew the page still works, only slower, so
/// the build says so rather than letting a benchmark find out.
pub fn same_page(elf: &[u8], a: &str, b: &str) -> Result<(), String> {
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    let find = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address(), s.size()))
            .ok_or_else(|| format!("no symbol {name}"))
    };
    let (a_addr, _) = find(a)?;
    let (b_addr, b_size) = find(b)?;
    let page = |x: u64| x >> 12;
    if page(b_addr) != page(a_addr) || page(b_addr + b_size.max(1) - 1) != page(a_addr) {
        return Err(format!(
            "{b} ({b_addr:#x}, {b_size} bytes) is not inside the 4 KiB page of {a} ({a_addr:#x}): \
             shrink them or move code out of their section (see its comment in linker.ld)"
        ));
    }
    Ok(())
}

/// Checks that function `name` makes no call (no BL, no BLR, plain or
/// authenticated): `ftrace_hot_func`'s common path is written to call
/// nothing, so that it saves no callee-saved register (its rare cases are
/// tail calls, B). A call that creeps in (a closure not inlined, say)
/// costs the hit a fifth of its time without failing anything, so the
/// build says so.
pub fn makes_no_call(elf: &[u8], name: &str) -> Result<(), String> {
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .ok_or_else(|| format!("no symbol {name}"))?;
    let section = sym
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .ok_or_else(|| format!("{name} has no section"))?;
    let data = section.data().map_err(|e| e.to_string())?;
    let start = sym.address() - section.address();
    let code = usize::try_from(start)
        .ok()
        .and_then(|s| data.get(s..s + sym.size() as usize))
        .ok_or_else(|| format!("{name} lies outside its section"))?;
    match call_offsets(code).first() {
        Some(off) => Err(format!(
            "{name}+{off:#x} is a call: its common path must call nothing (see kernel/src/kprobes/ftrace.rs)"
        )),
        None => Ok(()),
    }
}

/// Offsets of the calls (BL, BLR, BLRAA...) in `code`, little-endian A64.
fn call_offsets(code: &[u8]) -> Vec<usize> {
    code.chunks_exact(4)
        .enumerate()
        .filter_map(|(i, w)| {
            let insn = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let call = insn::decode::is_bl(insn) || insn::decode::is_blr(insn) || insn::decode::is_blr_auth(insn);
            call.then_some(4 * i)
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::call_offsets;

    #[test]
    fn calls_are_found_and_branches_are_not() {
        let words = [
            insn::encode::b(0x1000, 0x2000).unwrap(),
            insn::encode::bl(0x1004, 0x2000).unwrap(),
            insn::encode::ret_reg(30).unwrap(),
            insn::encode::blr(8).unwrap(),
            insn::encode::br(16).unwrap(),
        ];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(call_offsets(&code), [4, 12]);
    }
}
