//! Helpers for the end-to-end tests: build the images once, boot them with
//! `scripts/qemu-run.sh`, and read the console until an expected line.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    // As kbuild's workspace_root: cargo's run-time value first, so that a
    // test binary copied with another checkout's target/ tests this one.
    let dir =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    dir.join("..").canonicalize().unwrap()
}

/// `../shared/reflinux/run.sh`, which runs commands on real Linux, or
/// None when it is not there: the caller then skips its comparison with
/// Linux (`scripts/test.sh` says so on the console). With
/// `REQUIRE_REFLINUX=1` a missing reflinux fails the test instead.
pub fn reflinux() -> Option<PathBuf> {
    let p = root().join("../shared/reflinux/run.sh");
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("REQUIRE_REFLINUX").is_none(),
        "REQUIRE_REFLINUX is set but {} is missing",
        p.display()
    );
    None
}

fn build(test: bool) -> PathBuf {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root())
        .args(["run", "--quiet", "--release", "-p", "kbuild", "--"]);
    if test {
        cmd.arg("--test");
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run kbuild");
    assert!(out.status.success(), "kbuild failed");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// The normal kernel image (`$KERNEL_IMAGE`, or built now).
pub fn kernel_image() -> &'static Path {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        std::env::var_os("KERNEL_IMAGE")
            .map(PathBuf::from)
            .unwrap_or_else(|| build(false))
    })
}

/// The in-kernel test image (`$KTEST_IMAGE`, or built now).
pub fn ktest_image() -> &'static Path {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        std::env::var_os("KTEST_IMAGE")
            .map(PathBuf::from)
            .unwrap_or_else(|| build(true))
    })
}

/// What a boot printed, and how it ended.
#[derive(Debug)]
pub struct Boot {
    /// Console output, `\r` removed.
    pub output: String,
    /// QEMU's exit status, or None if it was stopped by us.
    pub status: Option<i32>,
    /// Whether the `until` line was seen.
    pub reached: bool,
}

impl Boot {
    /// Whether any line contains `s`.
    pub fn has(&self, s: &str) -> bool {
        self.output.contains(s)
    }

    /// Lines containing `s`.
    pub fn count(&self, s: &str) -> usize {
        self.output.lines().filter(|l| l.contains(s)).count()
    }
}

/// Boots `image` with `args` for scripts/qemu-run.sh. Stops QEMU once a line
/// contains `until` (if given) or after `limit`.
pub fn boot(image: &Path, args: &[&str], until: Option<&str>, limit: Duration) -> Boot {
    let mut child = Command::new(root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(image)
        .args(args)
        .args(["--timeout", &(limit.as_secs() + 5).to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start qemu-run.sh");
    let pgid = child.id() as i32;
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        // Bytes, not UTF-8 lines: a garbled console byte must not end the read.
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            if tx
                .send(String::from_utf8_lossy(&buf).trim_end_matches('\n').to_string())
                .is_err()
            {
                break;
            }
            buf.clear();
        }
    });
    let deadline = Instant::now() + limit;
    let mut output = String::new();
    let mut reached = false;
    let mut ended = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let line = line.replace('\r', "");
                output.push_str(&line);
                output.push('\n');
                if until.is_some_and(|u| line.contains(u)) {
                    reached = true;
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                ended = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => break,
        }
    }
    let status = match if ended {
        Some(child.wait().unwrap())
    } else {
        child.try_wait().unwrap()
    } {
        Some(s) => s.code(),
        None => {
            // Signal the whole process group (qemu-run.sh, timeout, qemu).
            // `--` matters: without it kill(1) may read `-PGID` as an option.
            assert!(pgid > 1, "bad process group {pgid}");
            let _ = Command::new("kill")
                .args(["-s", "TERM", "--", &format!("-{pgid}")])
                .status();
            let _ = child.wait();
            None
        }
    };
    Boot {
        output,
        status,
        reached,
    }
}

/// Boots the normal kernel in command mode (`-- cmds`), and returns the
/// boot log (console output, `\r` removed) and the commands' exit status.
pub fn boot_log(args: &[&str], cmds: &str) -> Boot {
    let log = std::env::temp_dir().join(format!(
        "e2e-boot-{}-{:?}.log",
        std::process::id(),
        std::thread::current().id()
    ));
    let out = Command::new(root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(kernel_image())
        .args(args)
        .arg("--log")
        .arg(&log)
        .args(["--timeout", "120", "--", cmds])
        .stdin(Stdio::null())
        .output()
        .expect("run qemu-run.sh");
    let output = std::fs::read(&log)
        .map(|b| String::from_utf8_lossy(&b).replace('\r', ""))
        .unwrap_or_default();
    std::fs::remove_file(&log).ok();
    Boot {
        output,
        status: out.status.code(),
        reached: true,
    }
}

/// A program of `userland/proof`, `userland/usertests` or
/// `userland/kprobetests` (built once, without debug info).
pub fn proof_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let st = Command::new(env!("CARGO"))
            .current_dir(root())
            .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
            .args([
                "build",
                "--quiet",
                "--release",
                "-p",
                "proof",
                "-p",
                "usertests",
                "-p",
                "kprobetests",
                "-p",
                "ptracetests",
                "-p",
                "ptrace-tools",
                "-p",
                "minigdb",
            ])
            .args(["--target", "aarch64-unknown-none", "--target-dir", "target/user"])
            .status()
            .expect("cargo build the userland test programs");
        assert!(st.success(), "building the test programs failed");
    });
    root().join("target/user/aarch64-unknown-none/release").join(name)
}

/// Runs `cmds` on the kernel with `files` copied into /bin; (stdout, status).
pub fn run_commands(args: &[&str], files: &[PathBuf], cmds: &str, timeout_s: u32) -> (String, i32) {
    run_commands_with_roots(args, &[], files, cmds, timeout_s)
}

/// [`run_commands`] with each of `roots` (a directory or archive) added at
/// the guest's `/` by `qemu-run.sh --root`, packed on the host.
pub fn run_commands_with_roots(
    args: &[&str],
    roots: &[PathBuf],
    files: &[PathBuf],
    cmds: &str,
    timeout_s: u32,
) -> (String, i32) {
    let out = Command::new(root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(kernel_image())
        .args(args)
        .args(["--timeout", &timeout_s.to_string()])
        .args(
            roots
                .iter()
                .flat_map(|r| [std::ffi::OsStr::new("--root"), r.as_os_str()]),
        )
        .args(files)
        .args(["--", cmds])
        .stdin(Stdio::null())
        .output()
        .expect("run qemu-run.sh");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The files and commands that give reflinux the root `roots` (tar
/// archives) which this kernel gets through `qemu-run.sh --root`:
/// reflinux's runner only copies files into /bin, so the archives go there
/// and the commands first unpack them at `/` with busybox tar (busybox must
/// be among `files`), exiting 125 if that fails.
pub fn reflinux_unpacking(roots: &[PathBuf], files: &[PathBuf], cmds: &str) -> (Vec<PathBuf>, String) {
    let mut all = files.to_vec();
    let mut unpack = String::new();
    for r in roots {
        let name = r.file_name().and_then(|n| n.to_str()).expect("an archive's file name");
        unpack.push_str(&format!("busybox tar -xf /bin/{name} -C / || exit 125; "));
        all.push(r.clone());
    }
    (all, format!("{unpack}{cmds}"))
}

/// What `scripts/setup.sh FLAG` prints: the path of something setup
/// fetched into the cache (`--print-busybox`, `--print-debian`).
pub fn setup_path(flag: &str) -> PathBuf {
    let out = Command::new(root().join("scripts/setup.sh"))
        .arg(flag)
        .output()
        .expect("run scripts/setup.sh");
    assert!(
        out.status.success(),
        "scripts/setup.sh {flag} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Debian's static busybox, as setup fetched it.
pub fn busybox() -> PathBuf {
    setup_path("--print-busybox")
}

/// What `cmds` print on real Linux (../shared/reflinux) on `smp` CPUs
/// with `files` in `/bin`; `None` when reflinux is not there.
pub fn reflinux_stdout(smp: &str, timeout_s: u32, files: &[PathBuf], cmds: &str) -> Option<String> {
    let reflinux = reflinux()?;
    let out = Command::new(reflinux)
        .args(["--smp", smp, "--timeout", &timeout_s.to_string()])
        .args(files)
        .args(["--", cmds])
        .output()
        .expect("run reflinux");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A check program's report (`PASS NAME` / `FAIL NAME: WHY` lines, then
/// `N passed, M failed`, as kprobetests and ptracetests print it) says
/// every check passed, at least `min` of them ran, and it exited with 0.
pub fn assert_checks_pass(out: &str, code: i32, min: usize) {
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "failing checks:\n{}\n\n{out}", fails.join("\n"));
    let summary = out
        .lines()
        .find(|l| l.ends_with(" passed, 0 failed"))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= min, "only {passed} checks ran:\n{out}");
    let passes = out.lines().filter(|l| l.starts_with("PASS ")).count();
    assert_eq!(passes, passed, "PASS lines against the summary:\n{out}");
    assert_eq!(code, 0, "{out}");
}
