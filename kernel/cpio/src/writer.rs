//! Building an archive on the host, byte for byte as
//! `shared/reflinux/mkcpio.pl` writes it: consecutive inode numbers from 721,
//! `c_nlink` 1, device and check fields 0, leading `/` removed from names,
//! and a trailer with inode 0 and mode 0.

use alloc::vec::Vec;
use core::fmt;

use crate::{align4, FileType, HEADER_LEN, MAGIC_NEWC, PERMISSION_MASK, TRAILER_NAME};

/// Ownership, permissions and time of an entry to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Permission bits, set-uid, set-gid and sticky included; at most
    /// `0o7777`, as the file type comes from the kind of entry.
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Modification time, seconds since the epoch; 0 keeps archives
    /// reproducible, as `mkcpio.pl` does.
    pub mtime: u32,
}

impl Metadata {
    /// Permissions and owner, with an mtime of 0.
    pub const fn new(mode: u32, uid: u32, gid: u32) -> Self {
        Metadata {
            mode,
            uid,
            gid,
            mtime: 0,
        }
    }
}

/// Which kind of device node [`Writer::device`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A character device (`S_IFCHR`), `c` in a list file.
    Char,
    /// A block device (`S_IFBLK`), `b` in a list file.
    Block,
}

/// Why [`Writer`] refused an entry; the archive is left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// The name contains a NUL byte, which would end it early.
    NameHasNul,
    /// The name, once leading `/` are removed, is `TRAILER!!!`, which would
    /// end the archive early.
    NameIsTrailer,
    /// The name or data is longer than a 32-bit header field can say.
    TooLong,
    /// The mode has bits outside the permissions (`0o7777`).
    BadMode(u32),
    /// A symbolic link's target is empty or contains a NUL byte.
    BadSymlinkTarget,
    /// A file to be written under several names was given none.
    NoNames,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::NameHasNul => f.write_str("name contains a NUL byte"),
            WriteError::NameIsTrailer => {
                write!(f, "name {TRAILER_NAME} is reserved for the archive's end")
            }
            WriteError::TooLong => f.write_str("name or data longer than 4 GiB"),
            WriteError::BadMode(mode) => {
                write!(f, "mode {mode:#o} has bits outside the permissions 07777")
            }
            WriteError::BadSymlinkTarget => f.write_str("symbolic link target is empty or contains a NUL byte"),
            WriteError::NoNames => f.write_str("no name given for the file"),
        }
    }
}

impl core::error::Error for WriteError {}

/// Builds a newc archive in memory; [`Writer::finish`] adds the trailer.
#[derive(Debug, Clone)]
pub struct Writer {
    buf: Vec<u8>,
    next_ino: u32,
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

/// The header fields of one entry, before the name.
struct Header {
    ino: u32,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    mtime: u32,
    rdev_major: u32,
    rdev_minor: u32,
}

impl Writer {
    /// The inode number of the first entry, as in `mkcpio.pl`.
    pub const FIRST_INO: u32 = 721;

    /// An empty archive whose entries are numbered from [`Writer::FIRST_INO`].
    pub const fn new() -> Self {
        Writer::with_first_ino(Writer::FIRST_INO)
    }

    /// An empty archive whose entries are numbered from `first_ino`.
    pub const fn with_first_ino(first_ino: u32) -> Self {
        Writer {
            buf: Vec::new(),
            next_ino: first_ino,
        }
    }

    /// Adds a directory.
    pub fn dir(&mut self, name: &str, meta: Metadata) -> Result<(), WriteError> {
        self.single(name, FileType::Directory, meta, (0, 0), b"")
    }

    /// Adds a regular file holding `data`.
    pub fn file(&mut self, name: &str, meta: Metadata, data: &[u8]) -> Result<(), WriteError> {
        self.single(name, FileType::Regular, meta, (0, 0), data)
    }

    /// Adds a regular file under several names (hard links): one entry per
    /// name, sharing an inode number, with `c_nlink` the number of names and
    /// the data on the last entry only, as `gen_init_cpio` writes them.
    pub fn file_with_links(&mut self, names: &[&str], meta: Metadata, data: &[u8]) -> Result<(), WriteError> {
        let nlink = u32::try_from(names.len()).map_err(|_| WriteError::TooLong)?;
        if nlink == 0 {
            return Err(WriteError::NoNames);
        }
        check_mode(meta.mode)?;
        check_len(data.len())?;
        let mut stripped = Vec::with_capacity(names.len());
        for name in names {
            stripped.push(check_name(name)?);
        }
        let ino = self.take_ino();
        let last = stripped.len() - 1;
        for (i, name) in stripped.into_iter().enumerate() {
            let header = Header {
                ino,
                mode: FileType::Regular.mode_bits() | meta.mode,
                uid: meta.uid,
                gid: meta.gid,
                nlink,
                mtime: meta.mtime,
                rdev_major: 0,
                rdev_minor: 0,
            };
            let data: &[u8] = if i == last { data } else { b"" };
            self.push(&header, name, data);
        }
        Ok(())
    }

    /// Adds a symbolic link to `target`; the data is the target without a
    /// NUL, as `mkcpio.pl` writes it.
    pub fn symlink(&mut self, name: &str, target: &str, meta: Metadata) -> Result<(), WriteError> {
        if target.is_empty() || target.contains('\0') {
            return Err(WriteError::BadSymlinkTarget);
        }
        self.single(name, FileType::Symlink, meta, (0, 0), target.as_bytes())
    }

    /// Adds a device node numbered `major`:`minor`.
    pub fn device(
        &mut self,
        name: &str,
        kind: DeviceKind,
        major: u32,
        minor: u32,
        meta: Metadata,
    ) -> Result<(), WriteError> {
        let file_type = match kind {
            DeviceKind::Char => FileType::CharDevice,
            DeviceKind::Block => FileType::BlockDevice,
        };
        self.single(name, file_type, meta, (major, minor), b"")
    }

    /// Ends the archive with its trailer and returns it.
    pub fn finish(mut self) -> Vec<u8> {
        // mkcpio.pl's trailer: inode 0, mode 0, one link, like gen_init_cpio's.
        let header = Header {
            ino: 0,
            mode: 0,
            uid: 0,
            gid: 0,
            nlink: 1,
            mtime: 0,
            rdev_major: 0,
            rdev_minor: 0,
        };
        self.push(&header, TRAILER_NAME, b"");
        self.buf
    }

    /// Checks and adds one entry with a fresh inode number.
    fn single(
        &mut self,
        name: &str,
        file_type: FileType,
        meta: Metadata,
        (rdev_major, rdev_minor): (u32, u32),
        data: &[u8],
    ) -> Result<(), WriteError> {
        check_mode(meta.mode)?;
        check_len(data.len())?;
        let name = check_name(name)?;
        let header = Header {
            ino: self.take_ino(),
            mode: file_type.mode_bits() | meta.mode,
            uid: meta.uid,
            gid: meta.gid,
            nlink: 1,
            mtime: meta.mtime,
            rdev_major,
            rdev_minor,
        };
        self.push(&header, name, data);
        Ok(())
    }

    fn take_ino(&mut self) -> u32 {
        let ino = self.next_ino;
        self.next_ino = ino.wrapping_add(1);
        ino
    }

    /// Appends a header, name and data, each padded; all lengths have been
    /// checked to fit their fields.
    fn push(&mut self, h: &Header, name: &str, data: &[u8]) {
        let namesize = name.len() as u32 + 1;
        self.buf.extend_from_slice(&MAGIC_NEWC);
        let fields = [
            h.ino,
            h.mode,
            h.uid,
            h.gid,
            h.nlink,
            h.mtime,
            data.len() as u32,
            0, // c_devmajor
            0, // c_devminor
            h.rdev_major,
            h.rdev_minor,
            namesize,
            0, // c_check
        ];
        for field in fields {
            push_hex(&mut self.buf, field);
        }
        debug_assert_eq!(HEADER_LEN, MAGIC_NEWC.len() + 8 * fields.len());
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
        self.buf.extend_from_slice(data);
        self.pad();
    }

    /// Appends NULs up to a multiple of 4 bytes.
    fn pad(&mut self) {
        let end = align4(self.buf.len()).unwrap_or(self.buf.len());
        self.buf.resize(end, 0);
    }
}

/// Eight upper-case hexadecimal digits, as `%08X` prints them.
fn push_hex(buf: &mut Vec<u8>, value: u32) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    for shift in (0..8).rev() {
        buf.push(DIGITS[((value >> (shift * 4)) & 0xf) as usize]);
    }
}

fn check_mode(mode: u32) -> Result<(), WriteError> {
    if mode & !PERMISSION_MASK != 0 {
        return Err(WriteError::BadMode(mode));
    }
    Ok(())
}

fn check_len(len: usize) -> Result<(), WriteError> {
    u32::try_from(len).map(|_| ()).map_err(|_| WriteError::TooLong)
}

/// The name as it will be written: leading `/` removed, as `mkcpio.pl` does.
fn check_name(name: &str) -> Result<&str, WriteError> {
    let name = name.trim_start_matches('/');
    if name.contains('\0') {
        return Err(WriteError::NameHasNul);
    }
    if name == TRAILER_NAME {
        return Err(WriteError::NameIsTrailer);
    }
    // The field holds the length plus the NUL.
    if name.len() >= u32::MAX as usize {
        return Err(WriteError::TooLong);
    }
    Ok(name)
}
