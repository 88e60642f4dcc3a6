//! Walking an archive in place: headers are checked field by field and every
//! length against the end of the blob before anything is sliced.

use core::fmt;
use core::iter::FusedIterator;

use crate::{align4, FileType, HEADER_LEN, MAGIC_NEWC, MAGIC_NEWC_CRC, PERMISSION_MASK, TRAILER_NAME};

/// What is wrong with an archive; see [`Error`] for where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The entry does not start with `070701` or `070702`.
    BadMagic,
    /// A header field is not eight hexadecimal digits.
    BadField {
        /// The field's name in the format description, e.g. `c_filesize`.
        field: &'static str,
    },
    /// The archive ends inside an entry header.
    TruncatedHeader,
    /// The archive ends inside an entry name or the padding after it.
    TruncatedName,
    /// The archive ends inside an entry's data or the padding after it.
    TruncatedData,
    /// `c_namesize` is 0, or the last byte of the name is not a NUL.
    NameNotTerminated,
    /// The name has a NUL before its terminating one.
    NameHasNul,
    /// The name is not valid UTF-8.
    NameNotUtf8,
    /// The file type bits of `c_mode` name no known type.
    UnknownFileType {
        /// The entry's whole `c_mode`.
        mode: u32,
    },
    /// A `070702` entry's data does not sum to its `c_check`.
    BadChecksum {
        /// The sum recorded in `c_check`.
        expected: u32,
        /// The sum of the data bytes as read.
        computed: u32,
    },
    /// A symbolic link's target is empty, not UTF-8, or has a NUL inside.
    BadSymlinkTarget,
    /// The archive ends, at an entry boundary, without a `TRAILER!!!`.
    MissingTrailer,
    /// An entry's name or data would end beyond the address space.
    LengthOverflow,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::BadMagic => f.write_str("bad magic (expected \"070701\" or \"070702\")"),
            ErrorKind::BadField { field } => {
                write!(f, "header field {field} is not 8 hexadecimal digits")
            }
            ErrorKind::TruncatedHeader => f.write_str("archive ends inside an entry header"),
            ErrorKind::TruncatedName => f.write_str("archive ends inside an entry name"),
            ErrorKind::TruncatedData => f.write_str("archive ends inside an entry's data"),
            ErrorKind::NameNotTerminated => f.write_str("entry name is not NUL-terminated"),
            ErrorKind::NameHasNul => f.write_str("entry name contains a NUL byte"),
            ErrorKind::NameNotUtf8 => f.write_str("entry name is not valid UTF-8"),
            ErrorKind::UnknownFileType { mode } => {
                write!(f, "unknown file type in mode {mode:#o}")
            }
            ErrorKind::BadChecksum { expected, computed } => {
                write!(f, "data checksum is {computed:#010x}, header says {expected:#010x}")
            }
            ErrorKind::BadSymlinkTarget => {
                f.write_str("symbolic link target is empty, not UTF-8, or contains a NUL byte")
            }
            ErrorKind::MissingTrailer => f.write_str("archive ends without a TRAILER!!! entry"),
            ErrorKind::LengthOverflow => f.write_str("entry name or data size overflows"),
        }
    }
}

/// Why an archive could not be read, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    offset: usize,
    kind: ErrorKind,
}

impl Error {
    /// Byte offset, from the start of the archive, of the header of the entry
    /// at fault (for [`ErrorKind::MissingTrailer`], the end of the archive).
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// What is wrong.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpio: {} (entry at offset {:#x})", self.kind, self.offset)
    }
}

impl core::error::Error for Error {}

/// One member of an archive, borrowing its name and data from the blob.
///
/// The trailer is never returned as an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry<'a> {
    /// The name, normalised to a path relative to the archive root: leading
    /// `/` and `./` are removed, and the root itself (`.`, `/`, `./`, or an
    /// empty name) is `.`. Other components are left as they are.
    pub name: &'a str,
    /// The name exactly as the archive has it, without the NUL.
    pub raw_name: &'a str,
    /// Inode number; hard links share one (with `dev_major`/`dev_minor`).
    pub ino: u32,
    /// File type bits and permissions, as in `st_mode`.
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Number of links; above 1 on a regular file, the entry is a hard link.
    pub nlink: u32,
    /// Modification time, seconds since the epoch.
    pub mtime: u32,
    /// Major number of the device the file was on.
    pub dev_major: u32,
    /// Minor number of the device the file was on.
    pub dev_minor: u32,
    /// Major number of a character or block device node.
    pub rdev_major: u32,
    /// Minor number of a character or block device node.
    pub rdev_minor: u32,
    /// The contents of a regular file, or the target of a symbolic link.
    /// Empty on all but the last entry of a set of hard links.
    pub data: &'a [u8],
    /// Byte offset of this entry's header from the start of the archive.
    pub offset: usize,
    file_type: FileType,
}

impl<'a> Entry<'a> {
    /// The type of file, decoded (and checked) when the entry was read.
    pub const fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The permission bits of the mode, set-uid, set-gid and sticky included.
    pub const fn permissions(&self) -> u32 {
        self.mode & PERMISSION_MASK
    }

    /// Whether this entry is one of several names of one regular file, whose
    /// data only the last of them carries (see [`Archive::link_data`]).
    pub fn is_hard_link(&self) -> bool {
        self.file_type == FileType::Regular && self.nlink >= 2
    }

    /// A symbolic link's target, without the NUL some writers append
    /// (`gen_init_cpio` does), or `None` for any other type.
    pub fn symlink_target(&self) -> Option<&'a str> {
        if self.file_type != FileType::Symlink {
            return None;
        }
        core::str::from_utf8(strip_one_nul(self.data)).ok()
    }

    /// Whether `other` is another name of the same hard-linked file.
    fn same_inode(&self, other: &Entry<'_>) -> bool {
        other.file_type == FileType::Regular
            && other.ino == self.ino
            && other.dev_major == self.dev_major
            && other.dev_minor == self.dev_minor
    }
}

/// A newc archive in memory, which is only read.
#[derive(Debug, Clone, Copy)]
pub struct Archive<'a> {
    bytes: &'a [u8],
}

impl<'a> Archive<'a> {
    /// Wraps `bytes`, which must start with the archive's first header.
    /// Nothing is checked until the entries are read.
    pub const fn new(bytes: &'a [u8]) -> Self {
        Archive { bytes }
    }

    /// The blob this archive reads.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The entries in archive order, up to (not including) the trailer.
    pub const fn entries(&self) -> Entries<'a> {
        Entries {
            bytes: self.bytes,
            pos: 0,
            done: false,
        }
    }

    /// The data of the file `entry` names: for a hard link, the data of the
    /// last entry from `entry` on that shares its inode and has any, as newc
    /// writers put it on the last link only; otherwise `entry.data`.
    ///
    /// `entry` must come from this archive. Scanning stops at the trailer,
    /// so an error is reported only if one lies before it.
    pub fn link_data(&self, entry: &Entry<'a>) -> Result<&'a [u8], Error> {
        if !entry.is_hard_link() {
            return Ok(entry.data);
        }
        let mut data = entry.data;
        let rest = Entries {
            bytes: self.bytes,
            pos: entry.offset,
            done: false,
        };
        for other in rest {
            let other = other?;
            if entry.same_inode(&other) && !other.data.is_empty() {
                data = other.data;
            }
        }
        Ok(data)
    }
}

impl<'a> IntoIterator for Archive<'a> {
    type Item = Result<Entry<'a>, Error>;
    type IntoIter = Entries<'a>;

    fn into_iter(self) -> Entries<'a> {
        self.entries()
    }
}

/// Iterator over the entries of an [`Archive`].
///
/// It yields `Err` once for a malformed entry and then ends, and ends
/// without an item at the trailer.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    bytes: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Entries<'a> {
    /// Byte offset of the next header to read; once the trailer has been
    /// read, the offset just past it (and its padding).
    pub const fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match parse_entry(self.bytes, self.pos) {
            Ok(Parsed::Entry(entry, next)) => {
                self.pos = next;
                Some(Ok(entry))
            }
            Ok(Parsed::Trailer(next)) => {
                self.pos = next;
                self.done = true;
                None
            }
            Err(kind) => {
                self.done = true;
                Some(Err(Error { offset: self.pos, kind }))
            }
        }
    }
}

impl FusedIterator for Entries<'_> {}

/// The outcome of reading one header and what follows it.
enum Parsed<'a> {
    /// An entry, and the offset of the next header.
    Entry(Entry<'a>, usize),
    /// The trailer, and the offset just past it.
    Trailer(usize),
}

/// Field names in header order, after the magic; used in error messages.
const FIELDS: [&str; 13] = [
    "c_ino",
    "c_mode",
    "c_uid",
    "c_gid",
    "c_nlink",
    "c_mtime",
    "c_filesize",
    "c_devmajor",
    "c_devminor",
    "c_rdevmajor",
    "c_rdevminor",
    "c_namesize",
    "c_check",
];

/// Reads the entry whose header starts at `pos`, which is at most
/// `bytes.len()`.
fn parse_entry(bytes: &[u8], pos: usize) -> Result<Parsed<'_>, ErrorKind> {
    let rest = bytes.get(pos..).unwrap_or(&[]);
    if rest.is_empty() {
        return Err(ErrorKind::MissingTrailer);
    }
    // Checking what is there of the magic first makes garbage after the
    // last entry a bad magic rather than a truncated header.
    let seen = rest.len().min(MAGIC_NEWC.len());
    let with_crc = if rest[..seen] == MAGIC_NEWC[..seen] {
        false
    } else if rest[..seen] == MAGIC_NEWC_CRC[..seen] {
        true
    } else {
        return Err(ErrorKind::BadMagic);
    };
    let Some(header) = rest.get(..HEADER_LEN) else {
        return Err(ErrorKind::TruncatedHeader);
    };

    let mut fields = [0u32; 13];
    for (i, (value, name)) in fields.iter_mut().zip(FIELDS).enumerate() {
        let start = MAGIC_NEWC.len() + 8 * i;
        *value = parse_hex(&header[start..start + 8]).ok_or(ErrorKind::BadField { field: name })?;
    }
    let [ino, mode, uid, gid, nlink, mtime, filesize, dev_major, dev_minor, rdev_major, rdev_minor, namesize, check] =
        fields;

    let name_start = pos.checked_add(HEADER_LEN).ok_or(ErrorKind::LengthOverflow)?;
    let name_end = name_start
        .checked_add(namesize as usize)
        .ok_or(ErrorKind::LengthOverflow)?;
    let name_bytes = bytes.get(name_start..name_end).ok_or(ErrorKind::TruncatedName)?;
    let raw_name = match name_bytes.split_last() {
        Some((0, name)) => name,
        _ => return Err(ErrorKind::NameNotTerminated),
    };
    if raw_name.contains(&0) {
        return Err(ErrorKind::NameHasNul);
    }
    let raw_name = core::str::from_utf8(raw_name).map_err(|_| ErrorKind::NameNotUtf8)?;

    let data_start = align4(name_end).ok_or(ErrorKind::LengthOverflow)?;
    if data_start > bytes.len() {
        return Err(ErrorKind::TruncatedName);
    }
    let data_end = data_start
        .checked_add(filesize as usize)
        .ok_or(ErrorKind::LengthOverflow)?;
    let data = bytes.get(data_start..data_end).ok_or(ErrorKind::TruncatedData)?;
    let next = align4(data_end).ok_or(ErrorKind::LengthOverflow)?;
    if next > bytes.len() {
        return Err(ErrorKind::TruncatedData);
    }

    if with_crc {
        let computed = data.iter().fold(0u32, |sum, &b| sum.wrapping_add(u32::from(b)));
        if computed != check {
            return Err(ErrorKind::BadChecksum {
                expected: check,
                computed,
            });
        }
    }

    // As Linux's initramfs unpacker, the name alone marks the end; the
    // trailer's mode is 0 and so has no file type.
    if raw_name == TRAILER_NAME {
        return Ok(Parsed::Trailer(next));
    }

    let file_type = FileType::from_mode(mode).ok_or(ErrorKind::UnknownFileType { mode })?;
    if file_type == FileType::Symlink {
        let target = strip_one_nul(data);
        if target.is_empty() || target.contains(&0) || core::str::from_utf8(target).is_err() {
            return Err(ErrorKind::BadSymlinkTarget);
        }
    }

    let entry = Entry {
        name: normalise_name(raw_name),
        raw_name,
        ino,
        mode,
        uid,
        gid,
        nlink,
        mtime,
        dev_major,
        dev_minor,
        rdev_major,
        rdev_minor,
        data,
        offset: pos,
        file_type,
    };
    Ok(Parsed::Entry(entry, next))
}

/// Parses eight hexadecimal digits, either case, and nothing else.
fn parse_hex(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &c| {
        let digit = (c as char).to_digit(16)?;
        Some((value << 4) | digit)
    })
}

/// Removes the leading `/` and `./` that archives made from absolute paths
/// or by `find . | cpio -o` carry, so every name is relative to the root.
fn normalise_name(raw: &str) -> &str {
    let mut name = raw;
    loop {
        if let Some(rest) = name.strip_prefix('/') {
            name = rest;
        } else if let Some(rest) = name.strip_prefix("./") {
            name = rest;
        } else {
            break;
        }
    }
    if name.is_empty() {
        "."
    } else {
        name
    }
}

/// `data` without one trailing NUL, if it has one.
fn strip_one_nul(data: &[u8]) -> &[u8] {
    match data.split_last() {
        Some((0, rest)) => rest,
        _ => data,
    }
}
