//! SVR4 "newc" cpio archives: the format of the initramfs, read in place
//! without allocating, and (with the `writer` feature) built on the host.
//!
//! The kernel hands the initramfs blob to [`Archive::new`] and walks its
//! [`Entries`]; every entry borrows its name and data from the blob. The
//! format is the one Linux's `usr/gen_init_cpio` writes and
//! `init/initramfs.c` unpacks (and `cpio -H newc` reads and writes).
//!
//! # Format
//!
//! An archive is a sequence of entries, each a 110-byte ASCII header, the
//! entry's name, and its data, ended by an entry named `TRAILER!!!`:
//!
//! ```text
//! offset  size  field
//! 0       6     magic: "070701", or "070702" when c_check holds a checksum
//! 6       8     c_ino        inode number (hard links share one)
//! 14      8     c_mode       file type (S_IFMT bits) and permissions
//! 22      8     c_uid
//! 30      8     c_gid
//! 38      8     c_nlink
//! 46      8     c_mtime      seconds since the epoch
//! 54      8     c_filesize   size of the data
//! 62      8     c_devmajor   device holding the file (with c_ino, the link key)
//! 70      8     c_devminor
//! 78      8     c_rdevmajor  device number of a character or block node
//! 86      8     c_rdevminor
//! 94      8     c_namesize   length of the name including its NUL
//! 102     8     c_check      "070702": sum of the data bytes, else unused
//! 110           name, NUL-terminated, then NULs up to a multiple of 4
//!               data (c_filesize bytes), then NULs up to a multiple of 4
//! ```
//!
//! Every field is eight hexadecimal digits. Offsets and padding are counted
//! from the start of the archive, so the blob given to [`Archive::new`] must
//! start at the archive's first header. A symbolic link's data is its
//! target. Hard links to one regular file are entries with the same
//! `c_ino`/`c_devmajor`/`c_devminor` and `c_nlink` > 1, of which only the
//! last carries the data ([`Archive::link_data`] finds it). Bytes after the
//! trailer (tape-block padding, a further concatenated archive) are not
//! read; [`Entries::offset`] says where they start.

#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(any(feature = "writer", test))]
extern crate alloc;

mod reader;
#[cfg(any(feature = "writer", test))]
mod writer;

#[cfg(test)]
mod tests;

pub use reader::{Archive, Entries, Entry, Error, ErrorKind};
#[cfg(any(feature = "writer", test))]
pub use writer::{DeviceKind, Metadata, WriteError, Writer};

/// Magic of an entry whose `c_check` field is unused.
pub const MAGIC_NEWC: [u8; 6] = *b"070701";

/// Magic of an entry whose `c_check` field is the sum of its data bytes.
pub const MAGIC_NEWC_CRC: [u8; 6] = *b"070702";

/// Size of an entry header in bytes: the magic and thirteen 8-digit fields.
pub const HEADER_LEN: usize = 110;

/// Name of the entry that ends an archive.
pub const TRAILER_NAME: &str = "TRAILER!!!";

/// Mask of the file type bits in a mode (`S_IFMT`).
pub const S_IFMT: u32 = 0o170000;

/// Mask of the permission bits in a mode, with set-uid, set-gid and sticky.
pub const PERMISSION_MASK: u32 = 0o7777;

/// The type of file an entry describes, from the `S_IFMT` bits of its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A regular file (`S_IFREG`); the data is its contents.
    Regular,
    /// A directory (`S_IFDIR`).
    Directory,
    /// A symbolic link (`S_IFLNK`); the data is its target.
    Symlink,
    /// A character device node (`S_IFCHR`), numbered by the rdev fields.
    CharDevice,
    /// A block device node (`S_IFBLK`), numbered by the rdev fields.
    BlockDevice,
    /// A named pipe (`S_IFIFO`).
    Fifo,
    /// A Unix domain socket (`S_IFSOCK`).
    Socket,
}

impl FileType {
    /// Decodes the `S_IFMT` bits of `mode`, or `None` for a type no Linux
    /// file system has.
    pub const fn from_mode(mode: u32) -> Option<FileType> {
        match mode & S_IFMT {
            0o100000 => Some(FileType::Regular),
            0o040000 => Some(FileType::Directory),
            0o120000 => Some(FileType::Symlink),
            0o020000 => Some(FileType::CharDevice),
            0o060000 => Some(FileType::BlockDevice),
            0o010000 => Some(FileType::Fifo),
            0o140000 => Some(FileType::Socket),
            _ => None,
        }
    }

    /// The `S_IFMT` bits of this type, to be or-ed with the permissions.
    pub const fn mode_bits(self) -> u32 {
        match self {
            FileType::Regular => 0o100000,
            FileType::Directory => 0o040000,
            FileType::Symlink => 0o120000,
            FileType::CharDevice => 0o020000,
            FileType::BlockDevice => 0o060000,
            FileType::Fifo => 0o010000,
            FileType::Socket => 0o140000,
        }
    }
}

/// Rounds `n` up to the next multiple of 4, the alignment of names and data,
/// or `None` if that does not fit in a `usize`.
const fn align4(n: usize) -> Option<usize> {
    match n.checked_add(3) {
        Some(m) => Some(m & !3),
        None => None,
    }
}
