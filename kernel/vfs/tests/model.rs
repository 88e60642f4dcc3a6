//! Random sequences of create/write/read/unlink/mkdir/rmdir/rename on ramfs
//! agree with a simple model of a tree.

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use uapi::fcntl::*;
use vfs::Errno;

#[derive(Clone, Debug, PartialEq)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// Paths ("/a", "/a/b") to nodes; the root is implicit.
type Model = BTreeMap<String, Node>;

#[derive(Clone, Debug)]
enum Op {
    Create(String),
    Write(String, u16, Vec<u8>),
    Read(String),
    Unlink(String),
    Mkdir(String),
    Rmdir(String),
    Rename(String, String),
}

fn path() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["a", "b", "c"]);
    prop::collection::vec(name, 1..=3).prop_map(|parts| format!("/{}", parts.join("/")))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        path().prop_map(Op::Create),
        (path(), 0u16..9000, prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(p, o, d)| Op::Write(p, o, d)),
        path().prop_map(Op::Read),
        path().prop_map(Op::Unlink),
        path().prop_map(Op::Mkdir),
        path().prop_map(Op::Rmdir),
        (path(), path()).prop_map(|(a, b)| Op::Rename(a, b)),
    ]
}

/// The errno Linux gives for walking to `p`'s parent, if any.
fn parent_error(m: &Model, p: &str) -> Option<Errno> {
    let mut prefix = String::new();
    let parts: Vec<&str> = p[1..].split('/').collect();
    for part in &parts[..parts.len() - 1] {
        prefix.push('/');
        prefix.push_str(part);
        match m.get(&prefix) {
            None => return Some(Errno::ENOENT),
            Some(Node::File(_)) => return Some(Errno::ENOTDIR),
            Some(Node::Dir) => {}
        }
    }
    None
}

fn children<'a>(m: &'a Model, dir: &'a str) -> impl Iterator<Item = &'a String> + 'a {
    m.keys()
        .filter(move |k| k.starts_with(dir) && k[dir.len()..].starts_with('/'))
}

fn apply(m: &mut Model, op: &Op) -> Result<Option<Vec<u8>>, Errno> {
    let check = |m: &Model, p: &str| parent_error(m, p).map_or(Ok(()), Err);
    match op {
        Op::Create(p) => {
            check(m, p)?;
            match m.get(p) {
                Some(Node::Dir) => Err(Errno::EISDIR),
                Some(Node::File(_)) => Ok(None),
                None => {
                    m.insert(p.clone(), Node::File(Vec::new()));
                    Ok(None)
                }
            }
        }
        Op::Write(p, off, data) => {
            check(m, p)?;
            match m.get_mut(p) {
                None => Err(Errno::ENOENT),
                Some(Node::Dir) => Err(Errno::EISDIR),
                Some(Node::File(content)) => {
                    let end = *off as usize + data.len();
                    if !data.is_empty() {
                        if content.len() < end {
                            content.resize(end, 0);
                        }
                        content[*off as usize..end].copy_from_slice(data);
                    }
                    Ok(None)
                }
            }
        }
        Op::Read(p) => {
            check(m, p)?;
            match m.get(p) {
                None => Err(Errno::ENOENT),
                Some(Node::Dir) => Err(Errno::EISDIR),
                Some(Node::File(c)) => Ok(Some(c.clone())),
            }
        }
        Op::Unlink(p) => {
            check(m, p)?;
            match m.get(p) {
                None => Err(Errno::ENOENT),
                Some(Node::Dir) => Err(Errno::EISDIR),
                Some(Node::File(_)) => {
                    m.remove(p);
                    Ok(None)
                }
            }
        }
        Op::Mkdir(p) => {
            check(m, p)?;
            if m.contains_key(p) {
                return Err(Errno::EEXIST);
            }
            m.insert(p.clone(), Node::Dir);
            Ok(None)
        }
        Op::Rmdir(p) => {
            check(m, p)?;
            match m.get(p) {
                None => Err(Errno::ENOENT),
                Some(Node::File(_)) => Err(Errno::ENOTDIR),
                Some(Node::Dir) if children(m, p).next().is_some() => Err(Errno::ENOTEMPTY),
                Some(Node::Dir) => {
                    m.remove(p);
                    Ok(None)
                }
            }
        }
        Op::Rename(from, to) => {
            check(m, from)?;
            check(m, to)?;
            let src = m.get(from).cloned().ok_or(Errno::ENOENT)?;
            if from == to {
                return Ok(None);
            }
            if src == Node::Dir && to.starts_with(from.as_str()) && to[from.len()..].starts_with('/') {
                return Err(Errno::EINVAL);
            }
            match (&src, m.get(to)) {
                (Node::Dir, Some(Node::File(_))) => return Err(Errno::ENOTDIR),
                (Node::File(_), Some(Node::Dir)) => return Err(Errno::EISDIR),
                (Node::Dir, Some(Node::Dir)) if children(m, to).next().is_some() => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
            let moved: Vec<(String, Node)> = children(m, from).map(|k| (k.clone(), m[k].clone())).collect();
            for (k, _) in &moved {
                m.remove(k);
            }
            m.remove(from);
            m.remove(to);
            m.insert(to.clone(), src);
            for (k, v) in moved {
                m.insert(format!("{to}{}", &k[from.len()..]), v);
            }
            Ok(None)
        }
    }
}

fn run(w: &World, op: &Op) -> Result<Option<Vec<u8>>, Errno> {
    let (cred, cwd) = (&w.root, w.cwd());
    match op {
        Op::Create(p) => w.open(p, O_CREAT | O_WRONLY).map(|_| None),
        Op::Write(p, off, data) => {
            let f = w.open(p, O_WRONLY)?;
            assert_eq!(f.pwrite(data, *off as i64)?, data.len());
            Ok(None)
        }
        Op::Read(p) => Ok(Some(w.open(p, O_RDONLY)?.read_to_end()?)),
        Op::Unlink(p) => w.vfs.unlinkat(cred, &cwd, p.as_bytes(), 0).map(|_| None),
        Op::Mkdir(p) => w.vfs.mkdirat(cred, &cwd, p.as_bytes(), 0o755, 0).map(|_| None),
        Op::Rmdir(p) => w.vfs.unlinkat(cred, &cwd, p.as_bytes(), AT_REMOVEDIR).map(|_| None),
        Op::Rename(a, b) => w
            .vfs
            .renameat2(cred, &cwd, a.as_bytes(), &cwd, b.as_bytes(), 0)
            .map(|_| None),
    }
}

/// The whole tree as the VFS shows it.
fn snapshot(w: &World, dir: &str, out: &mut Model) {
    let shown = if dir.is_empty() { "/" } else { dir };
    for name in list(w, shown) {
        let p = format!("{dir}/{name}");
        let m = w.vfs.fstatat(&w.root, &w.cwd(), p.as_bytes(), 0).unwrap();
        if m.is_dir() {
            out.insert(p.clone(), Node::Dir);
            snapshot(w, &p, out);
            assert_eq!(
                m.nlink as usize,
                2 + list(w, &p)
                    .iter()
                    .filter(|n| out.get(&format!("{p}/{n}")) == Some(&Node::Dir))
                    .count()
            );
        } else {
            out.insert(p.clone(), Node::File(w.read(&p).unwrap()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn ramfs_agrees_with_the_model(ops in prop::collection::vec(op(), 1..60)) {
        let w = world();
        let mut model = Model::new();
        for op in &ops {
            let want = apply(&mut model, op);
            let got = run(&w, op);
            prop_assert_eq!(&got, &want, "op {:?}", op);
        }
        let mut seen = Model::new();
        snapshot(&w, "", &mut seen);
        prop_assert_eq!(seen, model);
    }
}
