//! The kernel's function symbols, read from the linked ELF, and the object
//! file that carries the encoded kallsyms table into the second link.
//!
//! The build links the kernel with an empty table, reads the function
//! symbols of that image ([`function_symbols`]), encodes them with
//! [`kallsyms::build`], wraps the blob in a relocatable object
//! ([`kallsyms_object`]) and links again. The table sits in read-only data
//! after the text, so it can grow without moving code;
//! [`same_function_addresses`] proves that it did not.

use std::collections::HashMap;
use std::fmt;

use object::elf;
use object::read::elf::ElfFile64;
use object::write;
use object::{
    Architecture, BinaryFormat, Endianness, Object, ObjectSection, ObjectSymbol, SectionIndex, SectionKind,
    SymbolSection,
};

/// A function of the kernel image, as it goes into kallsyms.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FuncSym {
    /// Start address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// The kallsyms name: demangled without the Rust hash and spelled as
    /// one token by [`kallsyms::name::render`], e.g.
    /// `kernel__mm__frame__alloc`; `#[no_mangle]` and assembly names as
    /// written, e.g. `start_kernel`; `.N` added to names several functions
    /// share.
    pub name: String,
}

impl fmt::Display for FuncSym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {:#x}, size {:#x}", self.name, self.addr, self.size)
    }
}

/// The name under which kallsyms lists the symbol `raw`, before
/// duplicates are numbered.
///
/// Rust names are demangled in the alternate form, which drops the hash,
/// then rendered as one token ([`kallsyms::name::render`]).
/// A `.llvm.<n>` suffix, added when LTO promotes a local symbol, is cut
/// first, as Linux's `cleanup_symbol_name()` does, so that the function is
/// found under the name its source gives it.
fn kallsyms_name(raw: &str) -> String {
    let raw = raw.find(".llvm.").map_or(raw, |at| &raw[..at]);
    kallsyms::name::render(&format!("{:#}", rustc_demangle::demangle(raw)))
}

/// True for ELF symbols that only annotate code: the AArch64 mapping
/// symbols (`$x`, `$d`, and their `$x.<n>` forms, AAELF64 5.5.4).
fn is_mapping_symbol(name: &[u8]) -> bool {
    name.first() == Some(&b'$')
}

/// Every function symbol of an AArch64 ELF64 little-endian image, sorted by
/// address then name, each under a name no other holds.
///
/// Takes the defined `STT_FUNC` symbols. Those of size 0 (assembly without
/// a `.size` directive) are given the distance to the next symbol in their
/// section, or to the section's end. Mapping, section and file symbols are
/// never functions and are skipped. Works on relocatable objects too, where
/// addresses are offsets into each section.
pub fn function_symbols(elf: &[u8]) -> Result<Vec<FuncSym>, String> {
    let file = ElfFile64::<Endianness>::parse(elf).map_err(|e| format!("not an ELF64 file: {e}"))?;
    if file.architecture() != Architecture::Aarch64 {
        return Err(format!("not an AArch64 ELF file: {:?}", file.architecture()));
    }
    if !file.is_little_endian() {
        return Err("not a little-endian ELF file".to_string());
    }

    // Where each section's symbols start, to bound functions of unknown
    // size: any named symbol marks where the previous code ends.
    let mut starts: HashMap<SectionIndex, Vec<u64>> = HashMap::new();
    let mut funcs = Vec::new();
    for sym in file.symbols() {
        let SymbolSection::Section(section) = sym.section() else {
            continue;
        };
        let st_type = sym.elf_symbol().st_type();
        if st_type == elf::STT_SECTION || st_type == elf::STT_FILE {
            continue;
        }
        let name = sym.name_bytes().map_err(|e| format!("symbol {}: {e}", sym.index().0))?;
        if name.is_empty() || is_mapping_symbol(name) {
            continue;
        }
        starts.entry(section).or_default().push(sym.address());
        if st_type == elf::STT_FUNC {
            funcs.push((section, sym.address(), sym.size(), name));
        }
    }
    for addrs in starts.values_mut() {
        addrs.sort_unstable();
        addrs.dedup();
    }

    let mut out = Vec::with_capacity(funcs.len());
    for (section, addr, size, name) in funcs {
        let size = if size > 0 {
            size
        } else {
            let sec = file
                .section_by_index(section)
                .map_err(|e| format!("section {}: {e}", section.0))?;
            let section_end = sec.address().saturating_add(sec.size());
            let next = starts[&section]
                .iter()
                .copied()
                .find(|&a| a > addr)
                .unwrap_or(section_end);
            next.min(section_end).saturating_sub(addr)
        };
        out.push(FuncSym {
            addr,
            size,
            name: kallsyms_name(&String::from_utf8_lossy(name)),
        });
    }
    // A size-0 object is a linker-script alias (`jiffies = jiffies_64;`):
    // it takes the size of the object it names, and is left out if it
    // names none.
    let sized: std::collections::HashMap<u64, u64> =
        out.iter().filter(|f| f.size != 0).map(|f| (f.addr, f.size)).collect();
    out.retain_mut(|f| {
        if f.size == 0 {
            f.size = sized.get(&f.addr).copied().unwrap_or(0);
        }
        f.size != 0
    });
    out.sort_unstable();
    out.dedup();
    let mut names: Vec<String> = out.iter_mut().map(|f| std::mem::take(&mut f.name)).collect();
    kallsyms::name::make_unique(&mut names);
    for (f, name) in out.iter_mut().zip(names) {
        f.name = name;
    }
    Ok(out)
}

/// An ELF64 little-endian AArch64 relocatable object whose only content is
/// a section `.kallsyms` (allocated, read-only, not executable, 8-aligned)
/// holding `blob`.
///
/// The kernel's linker script places `*(.kallsyms)` between
/// `__kallsyms_start` and `__kallsyms_end` in its read-only data.
pub fn kallsyms_object(blob: &[u8]) -> Result<Vec<u8>, String> {
    table_object(".kallsyms", blob)
}

/// The same for the table of data objects, in section `.kallsyms_data`.
pub fn kallsyms_data_object(blob: &[u8]) -> Result<Vec<u8>, String> {
    table_object(".kallsyms_data", blob)
}

fn table_object(name: &str, blob: &[u8]) -> Result<Vec<u8>, String> {
    let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
    let section = obj.add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::ReadOnlyData);
    // Stated rather than left to SectionKind, since W^X depends on it.
    obj.section_mut(section).flags = write::SectionFlags::Elf {
        sh_flags: u64::from(elf::SHF_ALLOC),
    };
    obj.set_section_data(section, blob.to_vec(), 8);
    obj.write().map_err(|e| format!("writing the kallsyms object: {e}"))
}

/// Every data object of the image (defined `STT_OBJECT` symbols of
/// non-zero size in allocated sections), sorted by address then name,
/// each under a name no other object holds: what Linux's kallsyms lists
/// with CONFIG_KALLSYMS_ALL (`D`, `R`, `B` in `/proc/kallsyms`), and what
/// `@SYM` fetch arguments name.
pub fn object_symbols(elf: &[u8]) -> Result<Vec<FuncSym>, String> {
    let file = ElfFile64::<Endianness>::parse(elf).map_err(|e| format!("not an ELF64 file: {e}"))?;
    let mut out = Vec::new();
    for sym in file.symbols() {
        let SymbolSection::Section(section) = sym.section() else {
            continue;
        };
        if sym.elf_symbol().st_type() != elf::STT_OBJECT {
            continue;
        }
        let sec = file
            .section_by_index(section)
            .map_err(|e| format!("section {}: {e}", section.0))?;
        if sec.address() == 0 {
            continue;
        }
        let name = sym.name_bytes().map_err(|e| format!("symbol {}: {e}", sym.index().0))?;
        if name.is_empty() || is_mapping_symbol(name) {
            continue;
        }
        out.push(FuncSym {
            addr: sym.address(),
            size: sym.size(),
            name: kallsyms_name(&String::from_utf8_lossy(name)),
        });
    }
    // A size-0 object is a linker-script alias (`jiffies = jiffies_64;`):
    // it takes the size of the object it names, and is left out if it
    // names none.
    let sized: std::collections::HashMap<u64, u64> =
        out.iter().filter(|f| f.size != 0).map(|f| (f.addr, f.size)).collect();
    out.retain_mut(|f| {
        if f.size == 0 {
            f.size = sized.get(&f.addr).copied().unwrap_or(0);
        }
        f.size != 0
    });
    out.sort_unstable();
    out.dedup();
    let mut names: Vec<String> = out.iter_mut().map(|f| std::mem::take(&mut f.name)).collect();
    kallsyms::name::make_unique(&mut names);
    for (f, name) in out.iter_mut().zip(names) {
        f.name = name;
    }
    Ok(out)
}

/// Checks that two links placed every function at the same address with
/// the same size, as the second link (with the real table) must not move
/// code that the first link's table describes.
pub fn same_function_addresses(a: &[FuncSym], b: &[FuncSym]) -> Result<(), String> {
    if let Some((x, y)) = a.iter().zip(b).find(|(x, y)| x != y) {
        return Err(format!(
            "functions moved between links: {x} in the first, {y} in the second"
        ));
    }
    match (a.get(b.len()), b.get(a.len())) {
        (Some(x), _) => Err(format!("function {x} missing from the second link")),
        (_, Some(y)) => Err(format!("function {y} missing from the first link")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Symbol, SymbolFlags, SymbolSection};
    use object::{SymbolKind, SymbolScope};

    const RUST_ALLOC: &str = "_ZN6kernel2mm5frame5alloc17h0123456789abcdefE";

    fn add(obj: &mut write::Object<'_>, name: &str, value: u64, size: u64, kind: SymbolKind, section: SymbolSection) {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size,
            kind,
            scope: SymbolScope::Linkage,
            weak: false,
            section,
            flags: SymbolFlags::None,
        });
    }

    /// A small AArch64 object: Rust and C-named functions with sizes,
    /// assembly entry points without, and symbols that are not functions.
    fn sample_elf(arch: Architecture) -> Vec<u8> {
        let mut obj = write::Object::new(BinaryFormat::Elf, arch, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0u8; 0x100], 4);
        let rodata = obj.add_section(Vec::new(), b".rodata".to_vec(), SectionKind::ReadOnlyData);
        obj.set_section_data(rodata, vec![0u8; 0x40], 8);
        let in_text = SymbolSection::Section(text);

        add(&mut obj, RUST_ALLOC, 0x0, 0x40, SymbolKind::Text, in_text);
        add(&mut obj, "start_kernel", 0x40, 0x20, SymbolKind::Text, in_text);
        add(
            &mut obj,
            "_ZN6kernel5sched8schedule17h00112233445566ffE.llvm.1234567",
            0x60,
            0x20,
            SymbolKind::Text,
            in_text,
        );
        // Assembly: no sizes. `_start` ends where `vectors` begins, and the
        // mapping symbols inside it do not cut it short.
        add(&mut obj, "_start", 0x80, 0, SymbolKind::Text, in_text);
        add(&mut obj, "$x", 0x80, 0, SymbolKind::Label, in_text);
        add(&mut obj, "$d.1", 0xa0, 0, SymbolKind::Label, in_text);
        add(&mut obj, "vectors", 0xc0, 0, SymbolKind::Text, in_text);
        add(
            &mut obj,
            "SOME_TABLE",
            0x0,
            0x10,
            SymbolKind::Data,
            SymbolSection::Section(rodata),
        );
        add(&mut obj, "memcpy", 0, 0, SymbolKind::Text, SymbolSection::Undefined);
        obj.add_file_symbol(b"head.S".to_vec());
        obj.section_symbol(text);
        obj.write().unwrap()
    }

    fn sym(name: &str, addr: u64, size: u64) -> FuncSym {
        FuncSym {
            name: name.to_string(),
            addr,
            size,
        }
    }

    #[test]
    fn extracts_functions_demangled_with_sizes() {
        let funcs = function_symbols(&sample_elf(Architecture::Aarch64)).unwrap();
        assert_eq!(
            funcs,
            [
                sym("kernel__mm__frame__alloc", 0x0, 0x40),
                sym("start_kernel", 0x40, 0x20),
                sym("kernel__sched__schedule", 0x60, 0x20),
                sym("_start", 0x80, 0x40),
                sym("vectors", 0xc0, 0x40),
            ]
        );
    }

    #[test]
    fn rust_impl_methods_get_one_token_and_copies_are_numbered() {
        let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0u8; 0x100], 4);
        let in_text = SymbolSection::Section(text);
        // `<&str as core::fmt::Display>::fmt`, instantiated by two crates.
        let fmt_in_core = "_RNvXs1i_NtCs1lTbRNNTcXx_4core3fmtReNtB6_7Display3fmtB8_";
        let fmt_in_vfs = "_RNvXs1i_NtCs1lTbRNNTcXx_4core3fmtReNtB6_7Display3fmtCs2Fxu2M2vDmD_3vfs";
        let read_at = "_RNvXs7_NtCs2Fxu2M2vDmD_3vfs5ramfsNtB5_8RamInodeNtNtB7_5inode5Inode7read_at";
        add(&mut obj, fmt_in_vfs, 0x40, 0x20, SymbolKind::Text, in_text);
        add(&mut obj, read_at, 0x80, 0x20, SymbolKind::Text, in_text);
        add(&mut obj, fmt_in_core, 0x0, 0x20, SymbolKind::Text, in_text);
        let funcs = function_symbols(&obj.write().unwrap()).unwrap();
        assert_eq!(
            funcs,
            [
                sym("ref_str__Display__fmt.1", 0x0, 0x20),
                sym("ref_str__Display__fmt.2", 0x40, 0x20),
                sym("vfs__ramfs__RamInode__Inode__read_at", 0x80, 0x20),
            ]
        );
    }

    #[test]
    fn refuses_other_architectures_and_non_elf() {
        let err = function_symbols(&sample_elf(Architecture::X86_64)).unwrap_err();
        assert!(err.contains("AArch64"), "{err}");
        assert!(function_symbols(b"\x7fELF").is_err());
        assert!(function_symbols(b"").is_err());
    }

    #[test]
    fn kallsyms_name_keeps_plain_names() {
        assert_eq!(kallsyms_name("start_kernel"), "start_kernel");
        assert_eq!(kallsyms_name("__arm64_sys_getpid"), "__arm64_sys_getpid");
        assert_eq!(kallsyms_name(RUST_ALLOC), "kernel__mm__frame__alloc");
        assert_eq!(kallsyms_name("vfs_read.llvm.42"), "vfs_read");
    }

    #[test]
    fn kallsyms_object_holds_the_blob_read_only() {
        let blob: Vec<u8> = (0..=200u8).collect();
        let bytes = kallsyms_object(&blob).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        assert_eq!(file.format(), BinaryFormat::Elf);
        assert_eq!(file.architecture(), Architecture::Aarch64);
        assert!(file.is_little_endian() && file.is_64());
        assert_eq!(file.kind(), object::ObjectKind::Relocatable);
        let section = file.section_by_name(".kallsyms").unwrap();
        assert_eq!(section.data().unwrap(), &blob[..]);
        assert_eq!(section.align(), 8);
        assert_eq!(section.kind(), SectionKind::ReadOnlyData);
        let object::SectionFlags::Elf { sh_flags } = section.flags() else {
            panic!("not ELF flags");
        };
        assert_eq!(sh_flags, u64::from(elf::SHF_ALLOC));
    }

    #[test]
    fn extracted_symbols_round_trip_through_the_kallsyms_section() {
        let funcs = function_symbols(&sample_elf(Architecture::Aarch64)).unwrap();
        let table: Vec<(&str, u64, u64)> = funcs.iter().map(|f| (f.name.as_str(), f.addr, f.size)).collect();
        let bytes = kallsyms_object(&kallsyms::build(0, &table)).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let data = file.section_by_name(".kallsyms").unwrap().data().unwrap();
        let ksyms = kallsyms::Kallsyms::new(data).unwrap();
        assert_eq!(ksyms.symbolize(0x4c).to_string(), "start_kernel+0xc/0x20");
        assert_eq!(ksyms.lookup_name("kernel__mm__frame__alloc").unwrap().addr, 0);
        assert_eq!(ksyms.symbolize(0x9c).to_string(), "_start+0x1c/0x40");
    }

    #[test]
    fn same_function_addresses_accepts_identical_links() {
        let funcs = function_symbols(&sample_elf(Architecture::Aarch64)).unwrap();
        assert_eq!(same_function_addresses(&funcs, &funcs.clone()), Ok(()));
        assert_eq!(same_function_addresses(&[], &[]), Ok(()));
    }

    #[test]
    fn same_function_addresses_names_the_first_moved_function() {
        let a = [sym("a", 0x0, 0x10), sym("b", 0x10, 0x10), sym("c", 0x20, 4)];
        let b = [sym("a", 0x0, 0x10), sym("b", 0x18, 0x10), sym("c", 0x28, 4)];
        let err = same_function_addresses(&a, &b).unwrap_err();
        assert!(err.contains("b at 0x10") && err.contains("b at 0x18"), "{err}");
        assert!(!err.contains("c at"), "{err}");
    }

    #[test]
    fn same_function_addresses_names_a_missing_function() {
        let a = [sym("a", 0x0, 0x10), sym("b", 0x10, 0x10)];
        let err = same_function_addresses(&a, &a[..1]).unwrap_err();
        assert!(err.contains("b at 0x10") && err.contains("second"), "{err}");
        let err = same_function_addresses(&a[..1], &a).unwrap_err();
        assert!(err.contains("b at 0x10") && err.contains("first"), "{err}");
    }
}
