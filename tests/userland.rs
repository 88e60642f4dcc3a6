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
    let want = "hello\none two\ncat\necho\nfalse\nls\npoweroff\nsh\ntrue\nls: cannot access '/nope': No such file or directory\nstatus=2\nproc-ok\n";
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
