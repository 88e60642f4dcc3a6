//! kbuild: builds the kernel image.
//!
//! 1. `cargo build` the kernel crate (a static library) for
//!    aarch64-unknown-none-softfloat;
//! 2. link it with an empty kallsyms table;
//! 3. extract the function symbols of that link and build the table, and
//!    from its DWARF the functions' prototypes (`btf.rs`, Linux's BTF);
//! 4. link again with both tables (placed after all code, so no function
//!    moves) and check that every function kept its address;
//! 5. write `kernel.elf` and the flat `kernel8.img` that QEMU's `-kernel`
//!    and the Pi firmware load.
//!
//! The kernel is compiled (flags in .cargo/config.toml, so that clippy
//! and this build share their artefacts) with ftrace patch sites, as Linux
//! arm64 with DYNAMIC_FTRACE_WITH_CALL_OPS: two NOPs before each function
//! (an 8-byte aligned literal for the site's ftrace_ops) and two at its
//! entry (`mov x9, x30; bl ftrace_caller` when traced). LLVM records every
//! site in `__patchable_function_entries`, which linker.ld gathers between
//! `__start_mcount_loc` and `__stop_mcount_loc`; `#[notrace]` functions
//! are built without one.
//!
//! Usage: `kbuild [--test | [--no-trace-sites] [--no-tracepoints]] [--out DIR]`.
//! `--test` builds the in-kernel test kernel (feature `ktest`). The other
//! two build the baselines of the off-cost benchmark (`bench/ftrace.py
//! --nop-cost`): `--no-trace-sites` without ftrace patch sites (Linux
//! without CONFIG_FUNCTION_TRACER), into `target/kernel-nosites`;
//! `--no-tracepoints` without static-key sites, so without tracepoints
//! and the latency tracers' hooks (feature `no_tracepoints`, Linux without
//! CONFIG_TRACEPOINTS), into `target/kernel-notp`; both, into
//! `target/kernel-notrace`. Prints the image path on stdout.
//!
//! `kbuild initramfs -o FILE [--rc FILE] [--cmd FILE] [--root PATH]... [EXTRA...]`
//! builds the user programs and packs them, the EXTRA files (into /bin) and
//! an /etc/rc, into a newc archive for QEMU's `-initrd`; `--cmd` becomes
//! /etc/cmd.sh. Each `--root` directory or .tar/.tar.gz/.cpio archive is
//! merged in at `/`, later ones winning (see rootfs.rs).

mod btf;
mod image;
mod initramfs;
mod rootfs;
mod symbols;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const TARGET: &str = "aarch64-unknown-none-softfloat";

const USAGE: &str = "usage: kbuild [--test | [--no-trace-sites] [--no-tracepoints]] [--out DIR]";

struct Options {
    test: bool,
    /// Build without ftrace patch sites (no -Zpatchable-function-entry).
    no_trace_sites: bool,
    /// Build without static-key sites (feature `no_tracepoints`).
    no_tracepoints: bool,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        test: false,
        no_trace_sites: false,
        no_tracepoints: false,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--test" => o.test = true,
            "--no-trace-sites" => o.no_trace_sites = true,
            "--no-tracepoints" => o.no_tracepoints = true,
            "--out" => o.out = Some(args.next().ok_or("--out needs a directory")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.test && (o.no_trace_sites || o.no_tracepoints) {
        return Err(format!("--test builds the full kernel\n{USAGE}"));
    }
    Ok(o)
}

fn workspace_root() -> PathBuf {
    // `cargo run` names the package's directory at run time too: that one
    // wins, so that a binary built in a copy of another checkout's target/
    // (cargo does not rebuild it) builds this checkout, not the other.
    let dir =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    dir.join("../..").canonicalize().expect("workspace root")
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

/// The rust-lld shipped with the toolchain (component llvm-tools / rustc).
fn rust_lld() -> Result<PathBuf, String> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| e.to_string())?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let host = Command::new("rustc")
        .args(["-vV"])
        .output()
        .map_err(|e| e.to_string())?;
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or("cannot tell the host triple")?;
    let lld = Path::new(&sysroot).join("lib/rustlib").join(host).join("bin/rust-lld");
    if lld.exists() {
        Ok(lld)
    } else {
        Err(format!(
            "{} not found (is the pinned toolchain installed?)",
            lld.display()
        ))
    }
}

fn link(root: &Path, lib: &Path, objs: &[&Path], out: &Path) -> Result<(), String> {
    run(Command::new(rust_lld()?)
        .args([
            "-flavor",
            "gnu",
            "--gc-sections",
            "-nostdlib",
            "-static",
            "--no-undefined",
            "-z",
            "norelro",
        ])
        .arg("-T")
        .arg(root.join("linker.ld"))
        .args(objs)
        .arg(lib)
        .arg("-o")
        .arg(out))
}

fn build(o: &Options) -> Result<PathBuf, String> {
    let root = workspace_root();
    let kind = match (o.test, o.no_trace_sites, o.no_tracepoints) {
        (true, _, _) => "ktest",
        (false, false, false) => "kernel",
        (false, true, false) => "kernel-nosites",
        (false, false, true) => "kernel-notp",
        (false, true, true) => "kernel-notrace",
    };
    // Separate target directories, so that switching between the two
    // builds does not rebuild each time.
    let target_dir = root.join("target").join(kind);
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(&root)
        .args(["build", "--quiet", "--release", "-p", "kernel", "--target", TARGET])
        .arg("--target-dir")
        .arg(&target_dir)
        // Full debug information (types and parameters) for btf.rs; it
        // stays in kernel.elf and costs the image nothing.
        .env("CARGO_PROFILE_RELEASE_DEBUG", "2");
    if o.test {
        cargo.args(["--features", "ktest"]);
    }
    if o.no_tracepoints {
        cargo.args(["--features", "no_tracepoints"]);
    }
    if o.no_trace_sites {
        // RUSTFLAGS replaces the target's rustflags of .cargo/config.toml:
        // the same flags without -Zpatchable-function-entry.
        cargo.env(
            "RUSTFLAGS",
            "-C force-frame-pointers=yes -C relocation-model=static -C code-model=small \
             -Zmin-function-alignment=8",
        );
    }
    run(&mut cargo)?;
    let lib = target_dir.join(TARGET).join("release/libkernel.a");
    let out = o.out.clone().unwrap_or_else(|| root.join("target").join(kind));
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;

    let empty_obj = out.join("kallsyms-empty.o");
    std::fs::write(&empty_obj, symbols::kallsyms_object(&kallsyms::build::<&str>(0, &[]))?)
        .map_err(|e| e.to_string())?;
    let empty_data_obj = out.join("kallsyms-data-empty.o");
    std::fs::write(
        &empty_data_obj,
        symbols::kallsyms_data_object(&kallsyms::build::<&str>(0, &[]))?,
    )
    .map_err(|e| e.to_string())?;
    let pass1 = out.join("kernel.pass1.elf");
    link(&root, &lib, &[&empty_obj, &empty_data_obj], &pass1)?;
    let elf1 = std::fs::read(&pass1).map_err(|e| e.to_string())?;
    let syms1 = symbols::function_symbols(&elf1)?;
    let text_base = image::symbol_address(&elf1, "_text")?;
    let table: Vec<(&str, u64, u64)> = syms1.iter().map(|s| (s.name.as_str(), s.addr, s.size)).collect();
    let blob = kallsyms::build(text_base, &table);
    let btf_start = std::time::Instant::now();
    let (btf_blob, btf_stats) = btf::build(&elf1, &syms1)?;
    let btf_obj = out.join("btf.o");
    std::fs::write(&btf_obj, btf::btf_object(&btf_blob)?).map_err(|e| e.to_string())?;
    eprintln!(
        "kbuild: BTF: {} functions, {} parameters, {} structures, {} bytes, {:.2} s",
        btf_stats.funcs,
        btf_stats.params,
        btf_stats.structs,
        btf_blob.len(),
        btf_start.elapsed().as_secs_f64()
    );

    let obj = out.join("kallsyms.o");
    std::fs::write(&obj, symbols::kallsyms_object(&blob)?).map_err(|e| e.to_string())?;
    // The tables grow read-only data, which moves the data objects after
    // them: their table is made from a link that already holds tables of
    // the final size (the objects' names and count do not change, only
    // their addresses), and a last link proves nothing moved.
    let data_obj = out.join("kallsyms-data.o");
    let data_table = |objs: &[symbols::FuncSym]| {
        let t: Vec<(&str, u64, u64)> = objs.iter().map(|s| (s.name.as_str(), s.addr, s.size)).collect();
        symbols::kallsyms_data_object(&kallsyms::build(text_base, &t))
    };
    std::fs::write(&data_obj, data_table(&symbols::object_symbols(&elf1)?)?).map_err(|e| e.to_string())?;
    let elf_path = out.join("kernel.elf");
    link(&root, &lib, &[&obj, &data_obj, &btf_obj], &elf_path)?;
    let objs2 = symbols::object_symbols(&std::fs::read(&elf_path).map_err(|e| e.to_string())?)?;
    std::fs::write(&data_obj, data_table(&objs2)?).map_err(|e| e.to_string())?;
    link(&root, &lib, &[&obj, &data_obj, &btf_obj], &elf_path)?;
    let elf2 = std::fs::read(&elf_path).map_err(|e| e.to_string())?;
    symbols::same_function_addresses(&syms1, &symbols::function_symbols(&elf2)?)
        .map_err(|e| format!("the second link moved code: {e}"))?;
    symbols::same_function_addresses(&objs2, &symbols::object_symbols(&elf2)?)
        .map_err(|e| format!("the last link moved data: {e}"))?;
    image::same_page(&elf2, "ftrace_caller", "ftrace_hot_func")?;
    image::same_page(&elf2, "el0t_64_sync_handler", "invoke_syscall")?;
    image::makes_no_call(&elf2, "ftrace_hot_func")?;

    let img = image::flat_binary(&elf2)?;
    let img_path = out.join("kernel8.img");
    std::fs::write(&img_path, &img).map_err(|e| e.to_string())?;
    std::fs::write(
        out.join("System.map"),
        syms1
            .iter()
            .map(|s| format!("{:016x} T {}\n", s.addr, s.name))
            .collect::<String>(),
    )
    .map_err(|e| e.to_string())?;
    eprintln!(
        "kbuild: {} ({} bytes, {} symbols)",
        img_path.display(),
        img.len(),
        syms1.len()
    );
    Ok(img_path)
}

fn initramfs_main(args: &[String]) -> Result<PathBuf, String> {
    let mut out = None;
    let mut rc = None;
    let mut cmd = None;
    let mut extra = Vec::new();
    let mut roots = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" => out = Some(PathBuf::from(it.next().ok_or("-o needs a file")?)),
            "--rc" => rc = Some(std::fs::read(it.next().ok_or("--rc needs a file")?).map_err(|e| e.to_string())?),
            "--cmd" => cmd = Some(std::fs::read(it.next().ok_or("--cmd needs a file")?).map_err(|e| e.to_string())?),
            "--root" => roots.push(PathBuf::from(
                it.next().ok_or("--root needs a directory or an archive")?,
            )),
            f => extra.push(PathBuf::from(f)),
        }
    }
    let out = out.ok_or("usage: kbuild initramfs -o FILE [--rc FILE] [--cmd FILE] [--root PATH]... [EXTRA...]")?;
    let bin = initramfs::build_userland(&workspace_root())?;
    let archive = initramfs::pack(&bin, &extra, &roots, rc.as_deref(), cmd.as_deref())?;
    std::fs::write(&out, archive).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("initramfs") {
        initramfs_main(&args[1..])
    } else {
        parse_args().and_then(|o| build(&o))
    };
    match result {
        Ok(path) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kbuild: error: {e}");
            ExitCode::FAILURE
        }
    }
}
