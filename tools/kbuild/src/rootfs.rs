//! The guest's root as a tree of entries, merged from the initramfs the
//! runner builds and the trees and archives of `qemu-run.sh --root`, then
//! written as one newc archive. QEMU loads that archive with the kernel, so
//! nothing is unpacked in the guest.
//!
//! Modes and modification times are kept, as `tar -x` and `cp -a` keep
//! them. Sources: a host directory (walked without following symbolic links;
//! every entry owned by root, as gen_init_cpio lists make it, since the
//! host's owner means nothing in the guest), a tar archive (ustar, GNU long
//! names, pax `path`/`linkpath`/`size`; `.tar.gz`/`.tgz` through the host's
//! `gzip -dc`, as no inflate crate is vendored), or a newc cpio archive. A
//! hard link (tar `1`, or a cpio inode with several names) becomes its own
//! copy of the data, as the kernel's cpio reader and Writer know no links.
//!
//! Merging: a later entry replaces an earlier one of the same path (the
//! last `--root` wins over the ones before it and over the runner's own
//! files), as `tar -x` over an existing tree or Linux's initramfs unpacking
//! of a later entry does. A directory met again keeps its contents and
//! takes the later mode and owner. A directory and a non-directory at one
//! path, a path below something that is not a directory (through a symbolic
//! link, for one), a name with `..`, an absolute name, FIFOs and sockets
//! are errors naming the source and the path.

use cpio::{DeviceKind, FileType, Metadata, Writer};
use std::collections::BTreeMap;
use std::path::Path;

/// What one path of the tree is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file and its contents.
    File(Vec<u8>),
    /// A symbolic link and its target.
    Symlink(String),
    /// A device node: kind, major, minor.
    Device(DeviceKind, u32, u32),
}

/// One path's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What it is.
    pub kind: Kind,
    /// Permissions and owner.
    pub meta: Metadata,
}

/// Paths relative to `/` (no leading `/`, no `.` or `..`), in byte order,
/// which puts every directory before what it holds.
#[derive(Debug, Default, Clone)]
pub struct Tree {
    nodes: BTreeMap<String, Node>,
}

/// Checks and normalises an archive or tree name to a path relative to `/`:
/// leading `./` and empty or `.` components go; `..` and an absolute name
/// are refused. `None` for the root itself.
pub fn normalize(name: &str) -> Result<Option<String>, String> {
    if name.starts_with('/') {
        return Err(format!(
            "'{name}' is an absolute name; names must be relative to the root"
        ));
    }
    let mut parts = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(format!("'{name}' has a '..' component, which would leave the root")),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        Ok(None)
    } else {
        Ok(Some(parts.join("/")))
    }
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Self {
        Tree::default()
    }

    /// The entry at `path` (normalised), if any.
    #[cfg(test)]
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Adds `node` at `name` by the merging rules of the module; missing
    /// parent directories are made (0755, root's).
    pub fn insert(&mut self, name: &str, node: Node) -> Result<(), String> {
        let Some(path) = normalize(name)? else {
            // The root itself (`.` in most archives): the guest's / stays
            // as the kernel makes it.
            return match node.kind {
                Kind::Dir => Ok(()),
                _ => Err(format!("'{name}' names the root but is not a directory")),
            };
        };
        let mut at = 0;
        while let Some(i) = path[at..].find('/') {
            let parent = &path[..at + i];
            match self.nodes.get(parent) {
                Some(Node { kind: Kind::Dir, .. }) => {}
                Some(_) => return Err(format!("'{path}' lies below '{parent}', which is not a directory")),
                None => {
                    self.nodes.insert(
                        parent.to_string(),
                        Node {
                            kind: Kind::Dir,
                            meta: Metadata::new(0o755, 0, 0),
                        },
                    );
                }
            }
            at += i + 1;
        }
        if let Some(old) = self.nodes.get(&path) {
            let (was_dir, is_dir) = (old.kind == Kind::Dir, node.kind == Kind::Dir);
            if was_dir != is_dir {
                let what = |d| if d { "a directory" } else { "not a directory" };
                return Err(format!(
                    "'{path}' is {} here but {} before",
                    what(is_dir),
                    what(was_dir)
                ));
            }
        }
        self.nodes.insert(path, node);
        Ok(())
    }

    /// Adds what `source` holds: a directory, or a `.tar`, `.tar.gz`,
    /// `.tgz` or `.cpio` archive (by name, else by content).
    pub fn add_source(&mut self, source: &Path) -> Result<(), String> {
        let at = |e: String| format!("{}: {e}", source.display());
        let meta = std::fs::metadata(source).map_err(|e| at(e.to_string()))?;
        if meta.is_dir() {
            return self.add_dir(source, source).map_err(at);
        }
        let name = source.to_string_lossy();
        let bytes = if name.ends_with(".gz") || name.ends_with(".tgz") {
            gunzip(source).map_err(at)?
        } else {
            std::fs::read(source).map_err(|e| at(e.to_string()))?
        };
        if bytes.starts_with(b"070701") || bytes.starts_with(b"070702") {
            self.add_cpio(&bytes).map_err(at)
        } else {
            self.add_tar(&bytes).map_err(at)
        }
    }

    /// Adds the tree under `dir` (the walk started at `top`).
    fn add_dir(&mut self, top: &Path, dir: &Path) -> Result<(), String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .map(|d| d.map(|d| d.path()))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        names.sort();
        for path in names {
            let rel = path.strip_prefix(top).expect("a path under the walk's top");
            let rel = rel
                .to_str()
                .ok_or_else(|| format!("'{}' is not valid UTF-8", rel.display()))?;
            let m = std::fs::symlink_metadata(&path).map_err(|e| format!("{rel}: {e}"))?;
            let meta = Metadata {
                mtime: clamp_time(m.mtime()),
                ..Metadata::new(m.mode() & 0o7777, 0, 0)
            };
            let t = m.file_type();
            let kind = if t.is_dir() {
                Kind::Dir
            } else if t.is_file() {
                Kind::File(std::fs::read(&path).map_err(|e| format!("{rel}: {e}"))?)
            } else if t.is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| format!("{rel}: {e}"))?;
                Kind::Symlink(
                    target
                        .to_str()
                        .ok_or_else(|| format!("{rel}: link target is not valid UTF-8"))?
                        .to_string(),
                )
            } else if t.is_char_device() || t.is_block_device() {
                let dev = if t.is_char_device() {
                    DeviceKind::Char
                } else {
                    DeviceKind::Block
                };
                let rdev = m.rdev();
                Kind::Device(dev, major(rdev), minor(rdev))
            } else {
                return Err(format!("{rel}: FIFOs and sockets are not supported"));
            };
            let is_dir = kind == Kind::Dir;
            self.insert(rel, Node { kind, meta })?;
            if is_dir {
                self.add_dir(top, &path)?;
            }
        }
        Ok(())
    }

    /// Adds the entries of a newc archive.
    pub fn add_cpio(&mut self, bytes: &[u8]) -> Result<(), String> {
        let archive = cpio::Archive::new(bytes);
        for e in archive.entries() {
            let e = e.map_err(|e| e.to_string())?;
            let meta = Metadata {
                mtime: e.mtime,
                ..Metadata::new(e.permissions(), e.uid, e.gid)
            };
            let kind = match e.file_type() {
                FileType::Directory => Kind::Dir,
                FileType::Regular => Kind::File(archive.link_data(&e).map_err(|e| e.to_string())?.to_vec()),
                FileType::Symlink => Kind::Symlink(
                    e.symlink_target()
                        .ok_or_else(|| format!("'{}': link target is not valid UTF-8", e.name))?
                        .to_string(),
                ),
                FileType::CharDevice => Kind::Device(DeviceKind::Char, e.rdev_major, e.rdev_minor),
                FileType::BlockDevice => Kind::Device(DeviceKind::Block, e.rdev_major, e.rdev_minor),
                FileType::Fifo | FileType::Socket => {
                    return Err(format!("'{}': FIFOs and sockets are not supported", e.raw_name))
                }
            };
            // The reader has removed leading `/`; refuse them as tar names are.
            let name = if e.raw_name.starts_with('/') {
                e.raw_name
            } else {
                e.name
            };
            self.insert(name, Node { kind, meta })?;
        }
        Ok(())
    }

    /// Adds the entries of a tar archive.
    pub fn add_tar(&mut self, bytes: &[u8]) -> Result<(), String> {
        let mut pos = 0;
        // Names and sizes that a GNU `L`/`K` or pax `x` header gives the
        // next entry.
        let (mut long_name, mut long_link, mut pax_size) = (None::<String>, None::<String>, None::<usize>);
        loop {
            let header = bytes
                .get(pos..pos + 512)
                .ok_or_else(|| format!("truncated tar header at offset {pos:#x}"))?;
            if header.iter().all(|&b| b == 0) {
                return Ok(());
            }
            let here = pos;
            let at = |m: String| format!("tar entry at offset {here:#x}: {m}");
            let sum: u32 = header
                .iter()
                .enumerate()
                .map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u32::from(b) })
                .sum();
            if octal(&header[148..156]) != Ok(u64::from(sum)) {
                return Err(at("bad header checksum (not a tar archive?)".into()));
            }
            let size = match pax_size.take() {
                Some(s) => s,
                None => {
                    usize::try_from(number(&header[124..136]).map_err(at)?).map_err(|_| at("size too large".into()))?
                }
            };
            let data_at = pos + 512;
            let data = bytes
                .get(data_at..data_at + size)
                .ok_or_else(|| at(format!("data of {size} bytes runs past the end")))?;
            pos = data_at + size.div_ceil(512) * 512;
            let typeflag = header[156];
            match typeflag {
                b'L' => {
                    long_name = Some(text(strip_nul(data)).map_err(at)?);
                    continue;
                }
                b'K' => {
                    long_link = Some(text(strip_nul(data)).map_err(at)?);
                    continue;
                }
                b'x' => {
                    for (key, value) in pax_records(data).map_err(at)? {
                        match key.as_str() {
                            "path" => long_name = Some(value),
                            "linkpath" => long_link = Some(value),
                            "size" => pax_size = Some(value.parse().map_err(|_| at(format!("pax size '{value}'")))?),
                            _ => {}
                        }
                    }
                    continue;
                }
                // Global pax headers say nothing about paths or sizes here.
                b'g' => continue,
                _ => {}
            }
            let name = match long_name.take() {
                Some(n) => n,
                None => {
                    let base = text(strip_nul(&header[0..100])).map_err(at)?;
                    let prefix = if &header[257..262] == b"ustar" {
                        text(strip_nul(&header[345..500])).map_err(at)?
                    } else {
                        String::new()
                    };
                    if prefix.is_empty() {
                        base
                    } else {
                        format!("{prefix}/{base}")
                    }
                }
            };
            let link = match long_link.take() {
                Some(l) => l,
                None => text(strip_nul(&header[157..257])).map_err(at)?,
            };
            let mode = u32::try_from(number(&header[100..108]).map_err(at)? & 0o7777).expect("masked");
            let id = |r: std::ops::Range<usize>| -> Result<u32, String> {
                u32::try_from(number(&header[r]).map_err(at)?).map_err(|_| at("owner id too large".into()))
            };
            let mtime = i64::try_from(number(&header[136..148]).map_err(at)?).unwrap_or(i64::MAX);
            let meta = Metadata {
                mtime: clamp_time(mtime),
                ..Metadata::new(mode, id(108..116)?, id(116..124)?)
            };
            let at = |m: String| format!("'{name}': {m}");
            let kind = match typeflag {
                b'0' | 0 | b'7' => Kind::File(data.to_vec()),
                b'5' => Kind::Dir,
                b'2' => Kind::Symlink(link),
                b'1' => {
                    let target = normalize(&link)
                        .map_err(at)?
                        .ok_or_else(|| at("hard link to the root".into()))?;
                    match self.nodes.get(&target) {
                        Some(Node {
                            kind: Kind::File(d), ..
                        }) => Kind::File(d.clone()),
                        _ => return Err(at(format!("hard link to '{link}', which is no regular file before it"))),
                    }
                }
                b'3' | b'4' => {
                    let dev = if typeflag == b'3' {
                        DeviceKind::Char
                    } else {
                        DeviceKind::Block
                    };
                    let num = |r: std::ops::Range<usize>| -> Result<u32, String> {
                        u32::try_from(number(&header[r]).map_err(at)?).map_err(|_| at("device number too large".into()))
                    };
                    Kind::Device(dev, num(329..337)?, num(337..345)?)
                }
                b'6' => return Err(at("FIFOs are not supported".into())),
                t => return Err(at(format!("unsupported tar entry type '{}'", t.escape_ascii()))),
            };
            self.insert(&name, Node { kind, meta })?;
        }
    }

    /// Writes every entry, parents first, into `w`.
    pub fn write(&self, w: &mut Writer) -> Result<(), String> {
        for (path, node) in &self.nodes {
            let r = match &node.kind {
                Kind::Dir => w.dir(path, node.meta),
                Kind::File(data) => w.file(path, node.meta, data),
                Kind::Symlink(target) => w.symlink(path, target, node.meta),
                Kind::Device(kind, major, minor) => w.device(path, *kind, *major, *minor, node.meta),
            };
            r.map_err(|e| format!("'{path}': {e}"))?;
        }
        Ok(())
    }
}

/// A modification time as newc's 32-bit field holds it (before 1970 is
/// 0, after 2106 the field's largest).
fn clamp_time(t: i64) -> u32 {
    u32::try_from(t.max(0)).unwrap_or(u32::MAX)
}

/// Linux's `MAJOR()` of a 64-bit `dev_t` as glibc encodes it.
fn major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

/// Linux's `MINOR()` of a 64-bit `dev_t` as glibc encodes it.
fn minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

fn gunzip(path: &Path) -> Result<Vec<u8>, String> {
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gzip -dc failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

fn strip_nul(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("name '{}' is not valid UTF-8", bytes.escape_ascii()))
}

/// An octal header field (spaces and NULs around it allowed).
fn octal(field: &[u8]) -> Result<u64, String> {
    let t = strip_nul(field);
    let t = std::str::from_utf8(t).map_err(|_| "numeric field is not ASCII".to_string())?;
    let t = t.trim_matches(' ');
    if t.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(t, 8).map_err(|_| format!("'{t}' is not an octal number"))
}

/// A numeric field: octal, or GNU's base-256 with the top bit set.
fn number(field: &[u8]) -> Result<u64, String> {
    match field.first() {
        Some(&b) if b & 0x80 != 0 => {
            if b & 0x40 != 0 {
                return Err("negative base-256 number".into());
            }
            let mut v: u64 = u64::from(b & 0x3f);
            for &b in &field[1..] {
                v = v
                    .checked_mul(256)
                    .and_then(|v| v.checked_add(u64::from(b)))
                    .ok_or("base-256 number too large")?;
            }
            Ok(v)
        }
        _ => octal(field),
    }
}

/// The `LEN key=value\n` records of a pax extended header.
fn pax_records(mut data: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    while !data.is_empty() && data[0] != 0 {
        let sp = data
            .iter()
            .position(|&b| b == b' ')
            .ok_or("pax record without length")?;
        let len: usize = std::str::from_utf8(&data[..sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("bad pax record length")?;
        let rec = data.get(sp + 1..len).ok_or("pax record runs past the header")?;
        let rec = rec.strip_suffix(b"\n").ok_or("pax record does not end in a newline")?;
        let eq = rec.iter().position(|&b| b == b'=').ok_or("pax record without '='")?;
        out.push((text(&rec[..eq])?, text(&rec[eq + 1..])?));
        data = &data[len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn file(data: &[u8], mode: u32) -> Node {
        Node {
            kind: Kind::File(data.to_vec()),
            meta: Metadata::new(mode, 0, 0),
        }
    }

    fn dir(mode: u32) -> Node {
        Node {
            kind: Kind::Dir,
            meta: Metadata::new(mode, 0, 0),
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kbuild-rootfs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A tree like Debian's archive: a directory, an executable, a library
    /// symlink, a setuid file and an empty directory.
    fn sample_tree(d: &Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let top = d.join("tree");
        std::fs::create_dir_all(top.join("usr/bin")).unwrap();
        std::fs::create_dir_all(top.join("var/empty")).unwrap();
        std::fs::write(top.join("usr/bin/tool"), b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(top.join("usr/bin/tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(top.join("usr/bin/su"), b"su").unwrap();
        std::fs::set_permissions(top.join("usr/bin/su"), std::fs::Permissions::from_mode(0o4750)).unwrap();
        std::fs::set_permissions(top.join("var/empty"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink("usr/bin/tool", top.join("tool")).unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(top.join("usr/bin/tool"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        top
    }

    fn check_sample(t: &Tree) {
        assert_eq!(t.get("usr/bin/tool").unwrap().kind, Kind::File(b"#!/bin/sh\n".to_vec()));
        assert_eq!(t.get("usr/bin/tool").unwrap().meta.mode, 0o755);
        assert_eq!(t.get("usr/bin/tool").unwrap().meta.mtime, 1_000_000_000);
        assert_eq!(t.get("usr/bin/su").unwrap().meta.mode, 0o4750);
        assert_eq!(t.get("var/empty").unwrap().kind, Kind::Dir);
        assert_eq!(t.get("var/empty").unwrap().meta.mode, 0o700);
        assert_eq!(t.get("tool").unwrap().kind, Kind::Symlink("usr/bin/tool".into()));
        assert_eq!(t.get("usr").unwrap().kind, Kind::Dir);
    }

    #[test]
    fn a_directory_keeps_paths_modes_times_and_symlinks() {
        let d = scratch("dir");
        let top = sample_tree(&d);
        let mut t = Tree::new();
        t.add_source(&top).unwrap();
        check_sample(&t);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Archives written by the host's GNU tar (plain and gzipped), with
    /// `./` names as `tar -C DIR .` writes them, read as the tree itself.
    #[test]
    fn tar_and_tar_gz_archives_read_as_the_tree() {
        let d = scratch("tar");
        let top = sample_tree(&d);
        for (name, flags) in [("t.tar", "-cf"), ("t.tar.gz", "-czf")] {
            let st = Command::new("tar")
                .args(["--owner=0", "--group=0", flags])
                .arg(d.join(name))
                .arg("-C")
                .arg(&top)
                .arg(".")
                .status()
                .unwrap();
            assert!(st.success());
            let mut t = Tree::new();
            t.add_source(&d.join(name)).unwrap();
            check_sample(&t);
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn long_names_hard_links_and_pax_headers_of_tar() {
        let d = scratch("long");
        let top = d.join("tree");
        let deep = format!("{}/{}", "a".repeat(90), "b".repeat(90));
        std::fs::create_dir_all(top.join(&deep)).unwrap();
        std::fs::write(top.join(&deep).join("f"), b"deep").unwrap();
        std::fs::hard_link(top.join(&deep).join("f"), top.join("link")).unwrap();
        for format in ["gnu", "pax"] {
            let tar = d.join(format!("{format}.tar"));
            let st = Command::new("tar")
                .args([&format!("--format={format}"), "-cf"])
                .arg(&tar)
                .arg("-C")
                .arg(&top)
                .args([&deep, "link"])
                .status()
                .unwrap();
            assert!(st.success());
            let mut t = Tree::new();
            t.add_source(&tar).unwrap();
            assert_eq!(
                t.get(&format!("{deep}/f")).unwrap().kind,
                Kind::File(b"deep".to_vec()),
                "{format}"
            );
            assert_eq!(t.get("link").unwrap().kind, Kind::File(b"deep".to_vec()), "{format}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cpio_archive_reads_back_what_was_written() {
        let mut w = Writer::new();
        w.dir("etc", Metadata::new(0o750, 1, 2)).unwrap();
        let dated = Metadata {
            mtime: 1_700_000_000,
            ..Metadata::new(0o644, 0, 0)
        };
        w.file("etc/motd", dated, b"hi").unwrap();
        w.symlink("motd", "etc/motd", Metadata::new(0o777, 0, 0)).unwrap();
        w.device("null", DeviceKind::Char, 1, 3, Metadata::new(0o666, 0, 0))
            .unwrap();
        let mut t = Tree::new();
        t.add_cpio(&w.finish()).unwrap();
        assert_eq!(t.get("etc").unwrap().meta, Metadata::new(0o750, 1, 2));
        assert_eq!(t.get("etc/motd").unwrap().meta, dated);
        assert_eq!(t.get("motd").unwrap().kind, Kind::Symlink("etc/motd".into()));
        assert_eq!(t.get("null").unwrap().kind, Kind::Device(DeviceKind::Char, 1, 3));
    }

    /// The documented choice: the later source wins for a file in both; a
    /// directory in both keeps what either put in it.
    #[test]
    fn a_later_source_replaces_a_file_and_merges_a_directory() {
        let mut t = Tree::new();
        t.insert("bin", dir(0o755)).unwrap();
        t.insert("bin/sh", file(b"ours", 0o755)).unwrap();
        t.insert("bin/cat", file(b"cat", 0o755)).unwrap();
        t.insert("./bin/", dir(0o700)).unwrap();
        t.insert("bin/sh", file(b"theirs", 0o700)).unwrap();
        assert_eq!(t.get("bin/sh"), Some(&file(b"theirs", 0o700)));
        assert_eq!(t.get("bin/cat"), Some(&file(b"cat", 0o755)));
        assert_eq!(t.get("bin"), Some(&dir(0o700)));
    }

    #[test]
    fn escaping_names_and_type_clashes_are_refused_clearly() {
        let mut t = Tree::new();
        let e = t.insert("../etc/passwd", file(b"", 0o644)).unwrap_err();
        assert!(e.contains("'..' component"), "{e}");
        let e = t.insert("usr/../../x", file(b"", 0o644)).unwrap_err();
        assert!(e.contains("'..' component"), "{e}");
        let e = t.insert("/etc/passwd", file(b"", 0o644)).unwrap_err();
        assert!(e.contains("absolute name"), "{e}");
        t.insert("bin", dir(0o755)).unwrap();
        let e = t.insert("bin", file(b"", 0o644)).unwrap_err();
        assert!(
            e.contains("'bin' is not a directory here but a directory before"),
            "{e}"
        );
        t.insert(
            "lib",
            Node {
                kind: Kind::Symlink("usr/lib".into()),
                meta: Metadata::new(0o777, 0, 0),
            },
        )
        .unwrap();
        let e = t.insert("lib/libc.so", file(b"", 0o644)).unwrap_err();
        assert!(e.contains("lies below 'lib', which is not a directory"), "{e}");
        assert!(t.insert(".", dir(0o755)).is_ok());
        assert!(t.insert("./", file(b"", 0o644)).is_err());
    }

    #[test]
    fn tar_names_with_dot_dot_are_refused_with_the_source_named() {
        let d = scratch("evil");
        // GNU tar keeps a '..' name with -P.
        std::fs::write(d.join("x"), b"x").unwrap();
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let st = Command::new("tar")
            .args(["-P", "-cf", "evil.tar", "sub/../x"])
            .current_dir(&d)
            .status();
        assert!(st.unwrap().success());
        let e = Tree::new().add_source(&d.join("evil.tar")).unwrap_err();
        assert!(e.contains("evil.tar") && e.contains("'..' component"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn written_archive_puts_parents_first_and_reads_back() {
        let mut t = Tree::new();
        t.insert("usr/lib/x.so", file(b"so", 0o644)).unwrap();
        t.insert("bin", dir(0o755)).unwrap();
        let mut w = Writer::new();
        t.write(&mut w).unwrap();
        let bytes = w.finish();
        let names: Vec<_> = cpio::Archive::new(&bytes).entries().map(|e| e.unwrap().name).collect();
        assert_eq!(names, ["bin", "usr", "usr/lib", "usr/lib/x.so"]);
        let mut back = Tree::new();
        back.add_cpio(&bytes).unwrap();
        assert_eq!(back.get("usr/lib/x.so"), Some(&file(b"so", 0o644)));
    }

    #[test]
    fn garbage_is_no_tar_archive() {
        let e = Tree::new().add_tar(&[b'x'; 1024]).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        let e = Tree::new().add_tar(&[0; 100]).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }
}
