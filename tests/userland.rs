//! User programs run through `scripts/qemu-run.sh -- 'commands'` on every
//! configuration: the shell, pipes, redirection, fork/exec/wait, /proc,
//! exit statuses; and extra files land in /bin.

use e2e::{kernel_image, root};
use std::process::Command;

fn run(args: &[&str], cmds: &str) -> (String, i32) {
    let out = Command::new(root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(kernel_image())
        .args(args)
        .args(["--timeout", "120", "--", cmds])
        .output()
        .expect("run qemu-run.sh");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

const SCRIPT: &str = "echo hello; echo one two | cat; ls /bin | cat > /tmp/l; cat /tmp/l; \
                      ls /nope; echo status=$?; cat /proc/self/stat > /dev/null && echo proc-ok; exit 7";

fn runs_commands(args: &[&str]) {
    let (out, code) = run(args, SCRIPT);
    assert_eq!(code, 7, "exit status\n{out}");
    let want = "hello\none two\ncat\nchrt\ndmesg\necho\nfalse\nls\nmount\npoweroff\nsh\ntrue\numount\nls: cannot access '/nope': No such file or directory\nstatus=2\nproc-ok\n";
    assert_eq!(out, want);
}

#[test]
fn commands_run_on_virt_smp1() {
    runs_commands(&["--smp", "1"]);
}

#[test]
fn commands_run_on_virt_smp4() {
    runs_commands(&["--smp", "4"]);
}

#[test]
fn commands_run_on_raspi4b() {
    runs_commands(&["--machine", "raspi4b"]);
}

#[test]
fn files_are_copied_into_bin() {
    let dir = std::env::temp_dir().join(format!("e2e-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("greet");
    std::fs::write(&script, "#!/bin/sh\necho greetings $1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(kernel_image())
        .args(["--smp", "2", "--timeout", "120"])
        .arg(&script)
        .args(["--", "greet world"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "greetings world\n");
    assert_eq!(out.status.code(), Some(0));
}

/// mount(2)/umount2(2) through `mount`/`umount`: tmpfs, bind mounts and the
/// errors, with the same output as busybox's tools on real Linux.
const MOUNT_SCRIPT: &str =
    "mount -t tmpfs none /tmp; echo hi > /tmp/f; cat /tmp/f; umount /tmp; cat /tmp/f 2>/dev/null || echo gone; \
    mount -t bogus none /tmp; echo rc=$?; mount -o bind /proc /root; ls /root/self > /dev/null && echo bind-ok; \
    umount /root; umount /root; mount -t proc proc /nonexistent; echo rc=$?";

const MOUNT_WANT: &str = "hi\ngone\n\
    mount: mounting none on /tmp failed: No such device\nrc=255\nbind-ok\n\
    umount: can't unmount /root: Invalid argument\n\
    mount: mounting proc on /nonexistent failed: No such file or directory\nrc=255\n";

#[test]
fn mount_and_umount_work_as_on_linux() {
    let (out, code) = run(&["--smp", "2"], MOUNT_SCRIPT);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, MOUNT_WANT);
    let Some(reflinux) = e2e::reflinux() else { return };
    let linux = Command::new(&reflinux)
        .args(["--timeout", "120", "--", MOUNT_SCRIPT])
        .output()
        .expect("reflinux");
    assert_eq!(String::from_utf8_lossy(&linux.stdout), MOUNT_WANT, "real Linux differs");
}

#[test]
fn proc_describes_the_cpus_and_interrupts() {
    let (out, code) = run(
        &["--smp", "4"],
        "cat /proc/cpuinfo; cat /proc/interrupts; cat /proc/version",
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("processor\t: ").count(), 4, "{out}");
    assert!(out.contains("BogoMIPS\t: 125.00"), "{out}");
    assert!(out.contains("CPU part\t: 0xd08"), "cortex-a72:\n{out}");
    let timer = out.lines().find(|l| l.ends_with("arch_timer")).expect("the timer line");
    let counts: Vec<u64> = timer
        .split_whitespace()
        .skip(1)
        .take(4)
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(counts.iter().all(|&n| n > 0), "a CPU took no timer tick: {timer}");
    assert!(out.contains("Linux version "), "{out}");
}
