//! File-backed and shared memory (what a dynamic linker and its programs
//! use): mmap of a file private and shared, shared anonymous memory across
//! fork, SIGBUS past the end of the file, Linux's mmap errors, the file's
//! name in /proc/self/maps, and madvise, mincore and mremap.

use alloc::vec;

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    mmap_private_file_reads_file_and_writes_stay_private,
    mmap_shared_file_writes_reach_read_and_read_sees_writes,
    mmap_shared_anonymous_is_shared_across_fork,
    mmap_past_end_of_file_is_sigbus,
    mmap_file_errors_as_linux,
    maps_names_the_mapped_file,
    madvise_dontneed_zaps_and_refaults,
    madvise_advice_values_and_errors,
    madvise_dontneed_of_vvar_is_einval_and_vdso_survives_it,
    mincore_reports_resident_pages,
    mremap_shrinks_grows_and_moves,
    mprotect_munmap_and_mremap_split_and_move_file_mappings,
];

const MAP_SHARED: usize = 0x01;
const MAP_FIXED_NOREPLACE: usize = 0x10_0000;
const MADVISE: usize = 233;
const MINCORE: usize = 232;
const MREMAP: usize = 216;
const MREMAP_MAYMOVE: usize = 1;
const MREMAP_FIXED: usize = 2;
const PREAD64: usize = 67;
const PWRITE64: usize = 68;

fn mmap(addr: usize, len: usize, prot: usize, flags: usize, fd: i32, off: usize) -> Result<usize, Errno> {
    call(nr::MMAP, &[addr, len, prot, flags, fd as usize, off])
}

/// A scratch file of `pages` pages, page `i` filled with byte `i + 1`.
fn pattern_file(name: &str, pages: usize) -> Result<(alloc::vec::Vec<u8>, i32), Errno> {
    let path = super::scratch(name);
    let mut data = vec![0u8; pages * PAGE];
    for (i, page) in data.chunks_mut(PAGE).enumerate() {
        page.fill(i as u8 + 1);
    }
    write_file(&path, &data, 0o644)?;
    let fd = open(&path, O_RDWR, 0)?;
    Ok((path, fd))
}

/// The whole contents of `path`.
fn read_all(path: &[u8]) -> Result<alloc::vec::Vec<u8>, Errno> {
    let fd = open(path, O_RDONLY, 0)?;
    let mut out = alloc::vec::Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => {
                close(fd);
                return Err(e);
            }
        }
    }
    close(fd);
    Ok(out)
}

/// A `/proc/self/maps` line: (permissions, offset, end, last field).
type MapsLine = (
    alloc::string::String,
    alloc::string::String,
    usize,
    alloc::string::String,
);

/// The `/proc/self/maps` line of the region starting at `addr`.
fn maps_line(addr: usize) -> Result<MapsLine, crate::Fail> {
    let maps = read_all(b"/proc/self/maps").ctx("read maps")?;
    let maps = alloc::string::String::from_utf8_lossy(&maps);
    let start = alloc::format!("{addr:08x}-");
    let line = maps.lines().find(|l| l.starts_with(&start));
    let line = line.ok_or_else(|| crate::Fail(alloc::format!("no line for {addr:#x} in:\n{maps}")))?;
    let fields: alloc::vec::Vec<&str> = line.split_whitespace().collect();
    let end = fields
        .first()
        .and_then(|r| r.split_once('-'))
        .and_then(|(_, e)| usize::from_str_radix(e, 16).ok())
        .unwrap_or(0);
    let field = |i: usize| fields.get(i).copied().unwrap_or("").into();
    Ok((field(1), field(2), end, fields.last().copied().unwrap_or("").into()))
}

fn byte(addr: usize) -> u8 {
    // SAFETY: callers pass addresses inside live mappings.
    (unsafe { load(addr & !7) } >> ((addr & 7) * 8)) as u8
}

fn mmap_private_file_reads_file_and_writes_stay_private() -> Outcome {
    let (path, fd) = pattern_file("mpriv", 3).ctx("file")?;
    let a = mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0).ctx("mmap")?;
    check_eq!(
        (byte(a), byte(a + PAGE), byte(a + 2 * PAGE + 5)),
        (1, 2, 3),
        "file bytes"
    );
    // An offset maps from there.
    let b = mmap(0, PAGE, PROT_READ, MAP_PRIVATE, fd, 2 * PAGE).ctx("mmap at offset")?;
    check_eq!(byte(b), 3, "byte at offset 2 pages");
    // SAFETY: inside the private mapping.
    unsafe { store(a, 0x7777) };
    let mut buf = [0u8; 2];
    check_eq!(
        call(PREAD64, &[fd as usize, buf.as_mut_ptr() as usize, 2, 0]),
        Ok(2),
        "pread"
    );
    check_eq!(buf, [1, 1], "a private write does not reach the file");
    // A child's write does not reach the parent either (copy-on-write).
    let pid = spawn(|| {
        // SAFETY: the child's copy of the mapping.
        unsafe { store(a + PAGE, 0x5555) };
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(0), "child status");
    check_eq!(byte(a + PAGE), 2, "the child's write stayed in the child");
    munmap(a, 3 * PAGE).ctx("munmap")?;
    munmap(b, PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}

fn mmap_shared_file_writes_reach_read_and_read_sees_writes() -> Outcome {
    let (path, fd) = pattern_file("mshared", 2).ctx("file")?;
    let a = mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0).ctx("mmap")?;
    // SAFETY: inside the shared mapping.
    unsafe { store(a + PAGE, 0x4847_4645_4443_4241) };
    let mut buf = [0u8; 8];
    check_eq!(
        call(PREAD64, &[fd as usize, buf.as_mut_ptr() as usize, 8, PAGE]),
        Ok(8),
        "pread"
    );
    check_eq!(&buf, b"ABCDEFGH", "read(2) sees the store through MAP_SHARED");
    check_eq!(
        call(PWRITE64, &[fd as usize, b"xyz".as_ptr() as usize, 3, 0]),
        Ok(3),
        "pwrite"
    );
    check_eq!((byte(a), byte(a + 2)), (b'x', b'z'), "the mapping sees write(2)");
    // A child writes through its inherited mapping: the parent sees it.
    let pid = spawn(|| {
        // SAFETY: the inherited shared mapping.
        unsafe { store(a + 8, 0x2a) };
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(0), "child status");
    check_eq!(byte(a + 8), 0x2a, "a child's store through MAP_SHARED");
    munmap(a, 2 * PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}

fn mmap_shared_anonymous_is_shared_across_fork() -> Outcome {
    let a = mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0).ctx("mmap")?;
    check_eq!(byte(a + PAGE), 0, "zeroed");
    let pid = spawn(|| {
        // SAFETY: the inherited shared mapping.
        unsafe { store(a + PAGE, 99) };
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(0), "child status");
    check_eq!(byte(a + PAGE), 99, "the child's store is seen by the parent");
    // MAP_PRIVATE|MAP_ANONYMOUS stays private.
    let p = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap private")?;
    let pid = spawn(|| {
        // SAFETY: the child's copy.
        unsafe { store(p, 1) };
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(0), "child status");
    check_eq!(byte(p), 0, "private anonymous memory is not shared");
    munmap(a, 2 * PAGE).ctx("munmap")?;
    munmap(p, PAGE).ctx("munmap")?;
    Ok(())
}

fn mmap_past_end_of_file_is_sigbus() -> Outcome {
    let path = super::scratch("mbus");
    write_file(&path, b"short", 0o644).ctx("file")?;
    let fd = open(&path, O_RDONLY, 0).ctx("open")?;
    let a = mmap(0, 3 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0).ctx("mmap")?;
    check_eq!(
        (byte(a), byte(a + 5), byte(a + PAGE - 1)),
        (b's', 0, 0),
        "the last page: file then zeros"
    );
    let pid = spawn(|| {
        // SAFETY: past the end of the file: SIGBUS kills the child.
        unsafe { load(a + PAGE) };
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid).map(|s| s & 0x7f), Ok(SIGBUS), "a page past EOF");
    munmap(a, 3 * PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}

fn mmap_file_errors_as_linux() -> Outcome {
    let (path, fd) = pattern_file("merr", 1).ctx("file")?;
    let ro = open(&path, O_RDONLY, 0).ctx("open O_RDONLY")?;
    let wo = open(&path, O_WRONLY, 0).ctx("open O_WRONLY")?;
    let rw = PROT_READ | PROT_WRITE;
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, 1000, 0),
        Err(Errno::EBADF),
        "bad fd"
    );
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, -1, 0),
        Err(Errno::EBADF),
        "fd -1 without MAP_ANONYMOUS"
    );
    check_eq!(
        mmap(0, PAGE, rw, MAP_SHARED, ro, 0),
        Err(Errno::EACCES),
        "shared writable of O_RDONLY"
    );
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, wo, 0),
        Err(Errno::EACCES),
        "O_WRONLY"
    );
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, fd, 100),
        Err(Errno::EINVAL),
        "unaligned offset"
    );
    check_eq!(
        mmap(0, 0, PROT_READ, MAP_PRIVATE, fd, 0),
        Err(Errno::EINVAL),
        "length 0"
    );
    check_eq!(
        mmap(0, PAGE, PROT_READ, 0, fd, 0),
        Err(Errno::EINVAL),
        "neither shared nor private"
    );
    let dir = open(b"/tmp", O_RDONLY | O_DIRECTORY, 0).ctx("open /tmp")?;
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, dir, 0),
        Err(Errno::ENODEV),
        "a directory"
    );
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(
        mmap(0, PAGE, PROT_READ, MAP_PRIVATE, r, 0),
        Err(Errno::ENODEV),
        "a pipe"
    );
    // Read-only shared and private writable of O_RDONLY are fine.
    let a = mmap(0, PAGE, PROT_READ, MAP_SHARED, ro, 0).ctx("shared read-only")?;
    let b = mmap(0, PAGE, rw, MAP_PRIVATE, ro, 0).ctx("private writable of O_RDONLY")?;
    // MAP_FIXED_NOREPLACE over a mapping.
    check_eq!(
        mmap(a, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0),
        Err(Errno::EEXIST),
        "MAP_FIXED_NOREPLACE over a mapping"
    );
    for m in [a, b] {
        munmap(m, PAGE).ctx("munmap")?;
    }
    for f in [fd, ro, wo, dir, r, w] {
        close(f);
    }
    remove(&path);
    Ok(())
}

fn maps_names_the_mapped_file() -> Outcome {
    let (path, fd) = pattern_file("mname", 2).ctx("file")?;
    let a = mmap(0, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, PAGE).ctx("mmap")?;
    let maps = read_all(b"/proc/self/maps").ctx("read maps")?;
    let maps = alloc::string::String::from_utf8_lossy(&maps);
    let start = alloc::format!("{a:08x}-");
    let line = maps.lines().find(|l| l.starts_with(&start));
    let line = line.ok_or_else(|| crate::Fail(alloc::format!("no line for {a:#x} in:\n{maps}")))?;
    let fields: alloc::vec::Vec<&str> = line.split_whitespace().collect();
    check_eq!(fields.get(1).copied(), Some("r--p"), "permissions in {line:?}");
    check_eq!(fields.get(2).copied(), Some("00001000"), "offset in {line:?}");
    let name = core::str::from_utf8(&path).unwrap_or_default();
    check_eq!(fields.last().copied(), Some(name), "file name in {line:?}");
    ensure!(line.find('/') == Some(73), "the name starts at column 73: {line:?}");
    munmap(a, 2 * PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}

fn madvise_dontneed_zaps_and_refaults() -> Outcome {
    let a = mmap_anon(2 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: inside the mapping.
    unsafe { store(a, 5) };
    check_eq!(call(MADVISE, &[a, 2 * PAGE, 4]), Ok(0), "MADV_DONTNEED");
    check_eq!(byte(a), 0, "anonymous memory reads zeros after MADV_DONTNEED");
    let (path, fd) = pattern_file("mzap", 1).ctx("file")?;
    let f = mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0).ctx("mmap file")?;
    // SAFETY: inside the private file mapping.
    unsafe { store(f, 0) };
    check_eq!(call(MADVISE, &[f, PAGE, 4]), Ok(0), "MADV_DONTNEED on a file mapping");
    check_eq!(byte(f), 1, "a private file page comes back from the file");
    check_eq!(
        call(MADVISE, &[f, PAGE, 8]),
        Err(Errno::EINVAL),
        "MADV_FREE on a file mapping"
    );
    munmap(a, 2 * PAGE).ctx("munmap")?;
    munmap(f, PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}

fn madvise_advice_values_and_errors() -> Outcome {
    let a = mmap_anon(2 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    for advice in [0, 1, 2, 3, 14, 15, 8] {
        check_eq!(call(MADVISE, &[a, 2 * PAGE, advice]), Ok(0), "advice {advice}");
    }
    check_eq!(call(MADVISE, &[a, PAGE, 999]), Err(Errno::EINVAL), "unknown advice");
    check_eq!(call(MADVISE, &[a + 1, PAGE, 0]), Err(Errno::EINVAL), "unaligned start");
    check_eq!(call(MADVISE, &[a, 0, 0]), Ok(0), "length 0");
    munmap(a + PAGE, PAGE).ctx("munmap")?;
    check_eq!(
        call(MADVISE, &[a, 2 * PAGE, 0]),
        Err(Errno::ENOMEM),
        "range with a hole"
    );
    // MADV_POPULATE_WRITE on read-only memory.
    mprotect(a, PAGE, PROT_READ).ctx("mprotect")?;
    check_eq!(
        call(MADVISE, &[a, PAGE, 23]),
        Err(Errno::EINVAL),
        "POPULATE_WRITE of read-only memory"
    );
    munmap(a, PAGE).ctx("munmap")?;
    Ok(())
}

/// The start of the line of /proc/self/maps naming `name`.
fn maps_start(name: &str) -> Result<usize, crate::Fail> {
    let maps = read_all(b"/proc/self/maps").ctx("read maps")?;
    let maps = alloc::string::String::from_utf8_lossy(&maps);
    maps.lines()
        .find(|l| l.ends_with(name))
        .and_then(|l| usize::from_str_radix(l.split('-').next()?, 16).ok())
        .ok_or_else(|| crate::Fail(alloc::format!("no {name} in:\n{maps}")))
}

fn madvise_dontneed_of_vvar_is_einval_and_vdso_survives_it() -> Outcome {
    let vvar = maps_start("[vvar]")?;
    let vdso = maps_start("[vdso]")?;
    check_eq!(
        call(MADVISE, &[vvar, PAGE, 4]),
        Err(Errno::EINVAL),
        "MADV_DONTNEED of [vvar]"
    );
    check_eq!(call(MADVISE, &[vdso, PAGE, 4]), Ok(0), "MADV_DONTNEED of [vdso]");
    // SAFETY: the vDSO's first page is mapped readable.
    let magic = unsafe { load(vdso) } as u32;
    check_eq!(magic, 0x464c_457f, "the vDSO still starts with its ELF header");
    Ok(())
}

fn mincore_reports_resident_pages() -> Outcome {
    let a = mmap_anon(3 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: inside the mapping.
    unsafe { store(a + PAGE, 1) };
    let mut vec = [0xffu8; 3];
    check_eq!(
        call(MINCORE, &[a, 3 * PAGE, vec.as_mut_ptr() as usize]),
        Ok(0),
        "mincore"
    );
    check_eq!(vec, [0, 1, 0], "only the touched page is resident");
    check_eq!(
        call(MINCORE, &[a + 1, PAGE, vec.as_mut_ptr() as usize]),
        Err(Errno::EINVAL),
        "unaligned"
    );
    check_eq!(call(MINCORE, &[a, PAGE, BAD_LOW]), Err(Errno::EFAULT), "bad vector");
    munmap(a, 3 * PAGE).ctx("munmap")?;
    check_eq!(
        call(MINCORE, &[a, PAGE, vec.as_mut_ptr() as usize]),
        Err(Errno::ENOMEM),
        "unmapped"
    );
    Ok(())
}

fn mremap_shrinks_grows_and_moves() -> Outcome {
    let rw = PROT_READ | PROT_WRITE;
    let a = mmap_anon(4 * PAGE, rw).ctx("mmap")?;
    // SAFETY: inside the mapping.
    unsafe { store(a, 0x11) };
    check_eq!(call(MREMAP, &[a, 4 * PAGE, 2 * PAGE, 0, 0]), Ok(a), "shrink in place");
    check_eq!(
        call(MREMAP, &[a, 2 * PAGE, 3 * PAGE, 0, 0]),
        Ok(a),
        "grow in place into the freed page"
    );
    // Block the growth with a mapping right above, then move.
    let blocker = mmap(a + 3 * PAGE, PAGE, rw, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0).ctx("blocker")?;
    check_eq!(
        call(MREMAP, &[a, 3 * PAGE, 8 * PAGE, 0, 0]),
        Err(Errno::ENOMEM),
        "no room, no MAYMOVE"
    );
    let b = call(MREMAP, &[a, 3 * PAGE, 8 * PAGE, MREMAP_MAYMOVE, 0]).ctx("mremap MAYMOVE")?;
    ensure!(b != a, "moved");
    check_eq!(byte(b), 0x11, "the data moved with the mapping");
    check_eq!(byte(b + 7 * PAGE), 0, "the grown part is zeroed");
    check_eq!(
        call(MINCORE, &[a, PAGE, [0u8; 1].as_ptr() as usize]),
        Err(Errno::ENOMEM),
        "the old range is gone"
    );
    check_eq!(
        call(MREMAP, &[b + 1, PAGE, PAGE, 0, 0]),
        Err(Errno::EINVAL),
        "unaligned"
    );
    check_eq!(
        call(MREMAP, &[b, PAGE, PAGE, MREMAP_FIXED, a]),
        Err(Errno::EINVAL),
        "FIXED without MAYMOVE"
    );
    check_eq!(call(MREMAP, &[b, PAGE, 0, 0, 0]), Err(Errno::EINVAL), "new length 0");
    let c = call(MREMAP, &[b, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, a]).ctx("mremap FIXED")?;
    check_eq!((c, byte(a)), (a, 0x11), "moved to the address asked");
    check_eq!(
        call(MREMAP, &[a + PAGE, PAGE, PAGE, 0, 0]),
        Err(Errno::EFAULT),
        "nothing mapped there"
    );
    for (m, len) in [(a, PAGE), (b, 8 * PAGE), (blocker, PAGE)] {
        let _ = munmap(m, len);
    }
    Ok(())
}

/// mprotect, munmap and mremap over a private file mapping split and move
/// it as Linux does: each piece keeps its file offset and name, a page
/// written (copied on write) moves with its mapping, and growing maps the
/// file's next pages.
fn mprotect_munmap_and_mremap_split_and_move_file_mappings() -> Outcome {
    let (path, fd) = pattern_file("mremapf", 6).ctx("file")?;
    let name: alloc::string::String = core::str::from_utf8(&path).unwrap_or_default().into();
    let rw = PROT_READ | PROT_WRITE;
    // File pages 1, 2 and 3 (bytes 2, 3, 4).
    let a = mmap(0, 3 * PAGE, rw, MAP_PRIVATE, fd, PAGE).ctx("mmap")?;
    // SAFETY: inside the private mapping.
    unsafe { store(a, 0x77) };
    mprotect(a + PAGE, PAGE, PROT_READ).ctx("mprotect the middle page")?;
    munmap(a + 2 * PAGE, PAGE).ctx("munmap the last page")?;
    let (perm, off, end, last) = maps_line(a)?;
    check_eq!(
        (perm.as_str(), off.as_str(), end, last.as_str()),
        ("rw-p", "00001000", a + PAGE, name.as_str()),
        "first piece"
    );
    let (perm, off, end, last) = maps_line(a + PAGE)?;
    check_eq!(
        (perm.as_str(), off.as_str(), end, last.as_str()),
        ("r--p", "00002000", a + 2 * PAGE, name.as_str()),
        "read-only piece"
    );
    // The first piece cannot grow in place (the read-only one is above):
    // it moves, with its written page, and its new pages are the file's.
    let b = call(MREMAP, &[a, PAGE, 3 * PAGE, MREMAP_MAYMOVE, 0]).ctx("mremap grow")?;
    ensure!(b != a, "moved");
    check_eq!(
        (byte(b), byte(b + PAGE), byte(b + 2 * PAGE + 9)),
        (0x77, 3, 4),
        "the written page moved, the file's next pages follow"
    );
    let (perm, off, end, last) = maps_line(b)?;
    check_eq!(
        (perm.as_str(), off.as_str(), end, last.as_str()),
        ("rw-p", "00001000", b + 3 * PAGE, name.as_str()),
        "moved piece"
    );
    // The read-only piece moves back to where the mapping began.
    check_eq!(
        call(MREMAP, &[a + PAGE, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, a]),
        Ok(a),
        "mremap FIXED"
    );
    check_eq!(byte(a), 3, "file page 2 at the old start");
    let (perm, off, end, last) = maps_line(a)?;
    check_eq!(
        (perm.as_str(), off.as_str(), end, last.as_str()),
        ("r--p", "00002000", a + PAGE, name.as_str()),
        "piece moved back"
    );
    check_eq!(
        call(MINCORE, &[a + PAGE, PAGE, [0u8; 1].as_ptr() as usize]),
        Err(Errno::ENOMEM),
        "nothing left after it"
    );
    munmap(a, PAGE).ctx("munmap")?;
    munmap(b, 3 * PAGE).ctx("munmap")?;
    close(fd);
    remove(&path);
    Ok(())
}
