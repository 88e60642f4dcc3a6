//! Builds the vDSO image when this crate is built for AArch64 (that is, as
//! the kernel's dependency; host builds only test the shared code):
//!
//! 1. compile image/vdso.rs with the toolchain's rustc for
//!    `aarch64-unknown-none`, position-independent, into one object file;
//! 2. link it with the toolchain's rust-lld as a shared object, by
//!    image/vdso.lds, with `-z defs` so that nothing outside the object (no
//!    panic machinery, no library call) can be needed;
//! 3. check the result: an AArch64 `ET_DYN` with one read+execute segment,
//!    no dynamic relocations, no writable or GOT sections, and the four
//!    exported functions versioned `LINUX_2.6.39`;
//! 4. write `vdso.so` and `__kernel_rt_sigreturn`'s offset to `OUT_DIR`.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol};
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = "LINUX_2.6.39";
const SYMBOLS: [&str; 4] = [
    "__kernel_rt_sigreturn",
    "__kernel_gettimeofday",
    "__kernel_clock_gettime",
    "__kernel_clock_getres",
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=image/vdso.rs");
    println!("cargo::rerun-if-changed=image/vdso.lds");
    println!("cargo::rerun-if-changed=src/datapage.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("aarch64") {
        return;
    }
    if let Err(e) = build() {
        eprintln!("vdso: {e}");
        std::process::exit(1);
    }
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

fn build() -> Result<(), String> {
    let dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let out = PathBuf::from(env("OUT_DIR")?);
    let rustc = env("RUSTC")?;
    let obj = out.join("vdso.o");
    run(Command::new(&rustc)
        .args([
            "--edition=2021",
            "--crate-type=staticlib",
            "--crate-name=vdso_image",
            "--target=aarch64-unknown-none",
            "-Crelocation-model=pic",
            "-Copt-level=2",
            "-Cpanic=abort",
            "-Cdebuginfo=0",
            "-Ccodegen-units=1",
            // As Linux's -ffixed-x18: the platform register is left alone.
            "-Ctarget-feature=+reserve-x18",
        ])
        .arg(format!("--emit=obj={}", obj.display()))
        .arg(dir.join("image/vdso.rs")))?;

    let so = out.join("vdso.so");
    run(Command::new(rust_lld(&rustc)?)
        .args([
            "-flavor",
            "gnu",
            "-shared",
            "-soname=linux-vdso.so.1",
            "-Bsymbolic",
            "--build-id=sha1",
            "--hash-style=both",
            "-n",
            "-z",
            "defs",
            "-z",
            "noexecstack",
            "--strip-all",
            "--gc-sections",
            "-T",
        ])
        .arg(dir.join("image/vdso.lds"))
        .arg(&obj)
        .arg("-o")
        .arg(&so))?;

    let image = std::fs::read(&so).map_err(|e| format!("{}: {e}", so.display()))?;
    let sigreturn = check(&image).map_err(|e| format!("{}: {e}", so.display()))?;
    std::fs::write(out.join("sigreturn_offset.rs"), format!("{sigreturn:#x}")).map_err(|e| e.to_string())?;
    Ok(())
}

/// The toolchain's rust-lld (component llvm-tools / rustc).
fn rust_lld(rustc: &str) -> Result<PathBuf, String> {
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| e.to_string())?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let lld = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(env("HOST")?)
        .join("bin/rust-lld");
    if lld.exists() {
        Ok(lld)
    } else {
        Err(format!("{} not found", lld.display()))
    }
}

/// Checks the linked image; returns `__kernel_rt_sigreturn`'s offset.
fn check(image: &[u8]) -> Result<u64, String> {
    let file = ElfFile64::<Endianness>::parse(image).map_err(|e| e.to_string())?;
    let header = file.elf_header();
    let e = file.endian();
    if header.e_type(e) != elf::ET_DYN || header.e_machine(e) != elf::EM_AARCH64 {
        return Err("not an AArch64 shared object".into());
    }
    let loads: Vec<_> = file
        .elf_program_headers()
        .iter()
        .filter(|p| p.p_type(e) == elf::PT_LOAD)
        .collect();
    if loads.len() != 1 || loads[0].p_flags(e) != elf::PF_R | elf::PF_X || loads[0].p_vaddr(e) != 0 {
        return Err("wants exactly one read+execute PT_LOAD at address 0".into());
    }
    for s in file.sections() {
        let name = s.name().unwrap_or("?");
        let flags = s.elf_section_header().sh_flags(e);
        let size = s.size();
        if size == 0 {
            continue;
        }
        if matches!(
            name,
            ".rela.dyn" | ".rel.dyn" | ".relr.dyn" | ".got" | ".got.plt" | ".plt"
        ) {
            return Err(format!("{name} is not empty: the code needs a loader"));
        }
        if flags & u64::from(elf::SHF_WRITE) != 0 && name != ".dynamic" {
            return Err(format!("writable section {name}"));
        }
    }
    if file.dynamic_relocations().is_some_and(|mut r| r.next().is_some()) {
        return Err("dynamic relocations".into());
    }
    if !file.sections().any(|s| s.name() == Ok(".note")) {
        return Err("no .note section".into());
    }
    // Symbol versions: .gnu.version (one u16 per dynamic symbol) indexes
    // the definitions in .gnu.version_d.
    let tables = file.elf_section_table();
    let versions = tables
        .versions(e, image)
        .map_err(|err| err.to_string())?
        .ok_or("no symbol versions")?;
    let mut sigreturn = None;
    for want in SYMBOLS {
        let sym = file
            .dynamic_symbols()
            .find(|s| s.name() == Ok(want))
            .ok_or(format!("{want} is not exported"))?;
        // The trampoline is an untyped code label, as in Linux.
        let kind = if want == "__kernel_rt_sigreturn" {
            object::SymbolKind::Unknown
        } else {
            object::SymbolKind::Text
        };
        if sym.is_undefined() || sym.kind() != kind {
            return Err(format!("{want} is {:?}, not a defined {kind:?} symbol", sym.kind()));
        }
        let index = versions.version_index(e, sym.index());
        let name = versions
            .version(index)
            .map_err(|err| err.to_string())?
            .map(|v| String::from_utf8_lossy(v.name()).into_owned());
        if name.as_deref() != Some(VERSION) {
            return Err(format!("{want} has version {name:?}, not {VERSION}"));
        }
        if want == "__kernel_rt_sigreturn" {
            sigreturn = Some(sym.address());
        }
    }
    if let Some(s) = file.dynamic_symbols().find(|s| s.is_undefined() && s.index().0 != 0) {
        return Err(format!("undefined dynamic symbol {:?}", s.name()));
    }
    sigreturn.ok_or_else(|| "no __kernel_rt_sigreturn".into())
}
