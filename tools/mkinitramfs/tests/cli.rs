//! The tool as a user runs it: byte-identical to `mkcpio.pl`, readable by
//! GNU `cpio`, and failing with the line at fault.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;

const BIN: &str = env!("CARGO_BIN_EXE_mkinitramfs");

/// `kernel/cpio/testdata`: a list, the file it names, and the archive
/// `mkcpio.pl` made from it.
fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernel/cpio/testdata")
}

/// The reference writer: `$MKCPIO_PL`, or `shared/reflinux/mkcpio.pl`
/// beside the work tree; `None`, with the reason printed, if it cannot run.
fn mkcpio_pl() -> Option<PathBuf> {
    let script = std::env::var_os("MKCPIO_PL")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reflinux/mkcpio.pl"));
    if !script.is_file() {
        println!("skipped: {} not found", script.display());
        return None;
    }
    if !program_runs("perl", &["-e", "1"]) {
        println!("skipped: perl is not installed");
        return None;
    }
    Some(script)
}

fn program_runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program args` in `dir` with `stdin` as standard input.
fn run_in(dir: &Path, program: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // A program that fails before reading may close its input early.
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    child.wait_with_output().expect("wait")
}

fn mkinitramfs(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    run_in(dir, Path::new(BIN), args, stdin)
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("mkinitramfs-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A list exercising padding: names of every length mod 4, files of every
/// size mod 4 (with binary contents), and all four entry types.
fn padding_list(dir: &Path) -> String {
    let mut list = String::from("# every padding case\n\ndir / 755 0 0\ndir /d 0700 1 2\n");
    for size in 0..9usize {
        let data: Vec<u8> = (0..size).map(|i| (i * 37 + 200) as u8).collect();
        fs::write(dir.join(format!("f{size}")), &data).unwrap();
        let name = "n".repeat(size + 1);
        list.push_str(&format!("file /d/{name} f{size} {:o} {size} 0\n", 0o600 + size));
    }
    list.push_str("slink /d/l1 a 777 0 0\n\tslink d/l2 ab 777 0 0\nslink ///d/l3 abc/ 777 0 0\n");
    list.push_str("nod /d/c 620 0 5 c 4 64\nnod ./d/b 4660 0 6 b 259 4294967295\r\n");
    list.push_str("file /d/empty f0 6755 4294967295 4294967295");
    list
}

#[test]
fn archive_of_the_sample_list_is_mkcpio_golden_file() {
    let out = mkinitramfs(&testdata(), &["sample.list"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, fs::read(testdata().join("sample.cpio")).unwrap());
}

#[test]
fn archive_is_byte_identical_to_mkcpio_pl() {
    let Some(script) = mkcpio_pl() else { return };
    let dir = TempDir::new("pl");
    let list = padding_list(&dir.0);
    let perl = run_in(&dir.0, Path::new("perl"), &[script.to_str().unwrap()], list.as_bytes());
    assert!(perl.status.success(), "{}", String::from_utf8_lossy(&perl.stderr));
    let ours = mkinitramfs(&dir.0, &[], list.as_bytes());
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    assert_eq!(ours.stdout, perl.stdout);
}

#[test]
fn gnu_cpio_lists_the_same_names() {
    if !program_runs("cpio", &["--version"]) {
        println!("skipped: cpio is not installed (apt-get install cpio)");
        return;
    }
    let dir = TempDir::new("cpio");
    let list = padding_list(&dir.0);
    let ours = mkinitramfs(&dir.0, &["-o", "out.cpio"], list.as_bytes());
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    let archive = fs::read(dir.0.join("out.cpio")).unwrap();
    let listed = run_in(&dir.0, Path::new("cpio"), &["-it", "--quiet"], &archive);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let names: Vec<&str> = std::str::from_utf8(&listed.stdout).unwrap().lines().collect();
    let want: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).filter(|_| !l.starts_with('#')))
        .map(|n| match n.trim_start_matches('/') {
            // Written as an empty name, which GNU cpio shows as ".".
            "" => ".".to_string(),
            n => n.to_string(),
        })
        .collect();
    assert_eq!(names, want);
    // Our reader agrees with GNU cpio too, before normalising names.
    let ours: Vec<&str> = cpio::Archive::new(&archive)
        .entries()
        .map(|e| e.map(|e| if e.raw_name.is_empty() { e.name } else { e.raw_name }))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ours, names);
}

#[test]
fn reads_list_from_file_or_stdin_and_writes_stdout_or_file() {
    let dir = TempDir::new("io");
    let list = b"dir /a 755 0 0\n";
    fs::write(dir.0.join("l"), list).unwrap();
    let from_stdin = mkinitramfs(&dir.0, &[], list);
    let from_dash = mkinitramfs(&dir.0, &["-"], list);
    let from_file = mkinitramfs(&dir.0, &["l"], b"");
    let to_file = mkinitramfs(&dir.0, &["-o", "out", "l"], b"");
    for out in [&from_stdin, &from_dash, &from_file, &to_file] {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(from_stdin.stdout.starts_with(b"070701"));
    assert_eq!(from_dash.stdout, from_stdin.stdout);
    assert_eq!(from_file.stdout, from_stdin.stdout);
    assert!(to_file.stdout.is_empty());
    assert_eq!(fs::read(dir.0.join("out")).unwrap(), from_stdin.stdout);
}

#[test]
fn malformed_lines_fail_with_their_number_and_write_nothing() {
    let dir = TempDir::new("err");
    fs::write(dir.0.join("data"), b"x").unwrap();
    for (list, want) in [
        (
            "dir /a 755 0 0\nfile /b nosuch 644 0 0\n",
            "l:2: cannot read file 'nosuch': ",
        ),
        ("# c\n\nbogus /a\n", "l:3: unknown entry type 'bogus'"),
        ("dir /a 755 0\n", "l:1: expected 4 fields after the type, found 3"),
        ("file /a data 644 0 0 /b\n", "l:1: unexpected extra field '/b'"),
        ("dir /a 755 0 0\n\n\nnod /c 600 0 0 x 1 1\n", "l:4: device type 'x'"),
        ("slink /a b 999 0 0\n", "l:1: MODE '999'"),
        ("file /a . 644 0 0\n", "l:1: cannot read file '.': "),
    ] {
        fs::write(dir.0.join("l"), list).unwrap();
        let out = mkinitramfs(&dir.0, &["-o", "out", "l"], b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{list:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("mkinitramfs: {want}")),
            "{list:?}: {stderr}"
        );
        assert!(out.stdout.is_empty());
        assert!(!dir.0.join("out").exists(), "a failed run left output");
    }
    let out = mkinitramfs(&dir.0, &[], b"\n\ndir /a x 0 0\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("mkinitramfs: <stdin>:3: MODE 'x'"));
}

#[test]
fn bad_command_lines_exit_2() {
    let dir = TempDir::new("usage");
    for args in [&["-q"][..], &["a", "b"], &["-o"]] {
        let out = mkinitramfs(&dir.0, args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage: mkinitramfs"));
    }
    let out = mkinitramfs(&dir.0, &["missing.list"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read list 'missing.list'"));
    let out = mkinitramfs(&dir.0, &["--help"], b"");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nod   NAME MODE UID GID c|b MAJOR MINOR"));
}

/// One random list line and, for `file`, the contents of its source.
fn arb_line() -> impl Strategy<Value = (String, Vec<u8>)> {
    let name = "/{0,2}(\\./)?[a-z0-9_.é-]{1,9}(/[A-Za-z0-9]{1,5}){0,2}";
    let mode =
        (0..=0o7777u32, any::<bool>()).prop_map(|(m, zero)| if zero { format!("0{m:o}") } else { format!("{m:o}") });
    let id = prop_oneof![0..2000u32, any::<u32>()];
    let ws = "[ \t]{1,2}";
    prop_oneof![
        (name, mode.clone(), id.clone(), id.clone(), ws)
            .prop_map(|(n, m, u, g, w)| (format!("dir{w}{n} {m} {u}{w}{g}"), vec![])),
        (
            name,
            mode.clone(),
            id.clone(),
            id.clone(),
            prop::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(n, m, u, g, data)| (format!("file {n} SRC {m} {u} {g}"), data)),
        (name, "[!-~]{1,20}", mode.clone(), id.clone(), id.clone())
            .prop_map(|(n, t, m, u, g)| (format!("slink {n} {t} {m} {u} {g}"), vec![])),
        (name, mode, id.clone(), id.clone(), "[cb]", id.clone(), id)
            .prop_map(|(n, m, u, g, k, ma, mi)| (format!("nod {n} {m} {u} {g} {k} {ma} {mi}"), vec![])),
        Just(("  # a comment".to_string(), vec![])),
        Just((String::new(), vec![])),
    ]
}

#[test]
fn random_lists_match_mkcpio_pl() {
    let Some(script) = mkcpio_pl() else { return };
    let script = script.to_str().expect("UTF-8 script path");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(32));
    let lists = prop::collection::vec(arb_line(), 0..10);
    let result = runner.run(&lists, |lines| {
        let dir = TempDir::new("prop");
        let mut list = String::new();
        for (i, (line, data)) in lines.iter().enumerate() {
            let src = format!("src{i}");
            fs::write(dir.0.join(&src), data).unwrap();
            list.push_str(&line.replace("SRC", &src));
            list.push('\n');
        }
        let perl = run_in(&dir.0, Path::new("perl"), &[script], list.as_bytes());
        prop_assert!(perl.status.success());
        let ours = mkinitramfs(&dir.0, &[], list.as_bytes());
        prop_assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
        prop_assert_eq!(ours.stdout, perl.stdout);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn reader_reads_gnu_cpio_newc_with_hard_links() {
    if !program_runs("cpio", &["--version"]) {
        println!("skipped: cpio is not installed (apt-get install cpio)");
        return;
    }
    let dir = TempDir::new("gnu");
    let tree = dir.0.join("tree");
    fs::create_dir_all(tree.join("bin")).unwrap();
    fs::write(tree.join("bin/busybox"), b"#!busybox\n").unwrap();
    fs::hard_link(tree.join("bin/busybox"), tree.join("bin/ls")).unwrap();
    fs::write(tree.join("plain"), b"1234567").unwrap();
    std::os::unix::fs::symlink("bin/busybox", tree.join("sh")).unwrap();
    // `find . | cpio -o -H newc`, the usual way to make an initramfs by hand:
    // "./"-prefixed names, "." for the root, hard links with the data on the
    // last one, and the archive padded to 512 bytes after the trailer.
    let names = b".\n./bin\n./bin/busybox\n./bin/ls\n./plain\n./sh\n";
    let out = run_in(&tree, Path::new("cpio"), &["-o", "-H", "newc", "--quiet"], names);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout.len() % 512, 0);

    let archive = cpio::Archive::new(&out.stdout);
    let entries: Vec<cpio::Entry<'_>> = archive.entries().collect::<Result<_, _>>().unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
    assert_eq!(names, [".", "bin", "bin/busybox", "bin/ls", "plain", "sh"]);
    let (busybox, ls) = (&entries[2], &entries[3]);
    assert!(busybox.is_hard_link() && ls.is_hard_link());
    assert_eq!(busybox.ino, ls.ino);
    assert_eq!((busybox.data, ls.data), (&b""[..], &b"#!busybox\n"[..]));
    assert_eq!(archive.link_data(busybox).unwrap(), b"#!busybox\n");
    assert_eq!(archive.link_data(&entries[4]).unwrap(), b"1234567");
    assert_eq!(entries[5].symlink_target(), Some("bin/busybox"));
    assert_eq!(entries[0].file_type(), cpio::FileType::Directory);
}
