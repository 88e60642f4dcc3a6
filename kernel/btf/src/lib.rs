//! The kernel's function prototypes: the part of Linux's BTF that probe
//! arguments need (`$argN`, `$arg*`, `<argname>`, `->field`, a typed
//! `$retval`), in a compact binary form of this kernel's own.
//!
//! The build tool reads the linked kernel's DWARF, describes every function
//! that has a kallsyms symbol with a [`Builder`], and embeds the encoded
//! [`Table`] in the image (as it embeds kallsyms). The kernel parses that
//! blob with [`Btf::parse`] and turns one function at a time into
//! `trace_probe`'s [`FuncProto`] with [`Btf::func_proto`].
//!
//! # Binary format (version 1)
//!
//! Integers are unsigned LEB128 (`uleb`) unless a width is given; a type
//! reference is an index into the type table, a string reference an index
//! into the string table.
//!
//! ```text
//! magic          4 bytes "KBTF"
//! version        u8 (1)
//! max_ptr_depth  u8: how many `->` the table describes (at most MAX_PTR_DEPTH)
//! body_len       u32 little-endian: bytes after this field that belong to
//!                the table (the section may be padded after it)
//! strings        uleb count, then per string: uleb length, UTF-8 bytes
//! types          uleb count, then per type a kind byte and its payload:
//!                  0 void   1 other   2 pointer to char   3 pointer to other
//!                  4 int:         u8 size in bytes, u8 signed (0/1)
//!                  5 enum:        u8 size in bytes
//!                  6 ptr struct:  uleb type (a struct)
//!                  7 struct:      uleb name, uleb member count, then per
//!                                 member: uleb name, uleb bit offset,
//!                                 u8 bitfield size, uleb type
//!                  8 char array:  uleb length
//! functions      uleb count, then per function, sorted by name bytes and
//!                unique: its name front-coded against the previous one
//!                (uleb bytes shared, uleb length of the rest, the rest),
//!                uleb return type, uleb parameter count, then per
//!                parameter: uleb name, uleb type
//! ```
//!
//! Structures are stored once and referenced by index, so a type graph
//! with cycles (`struct list_head`) costs one entry per structure. A
//! structure may not contain itself by value, nor nest structures by value
//! more than [`MAX_NEST`] deep, so that turning the graph into
//! `FuncProto`'s trees always ends.

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::arithmetic_side_effects,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::unwrap_used
    )
)]

extern crate alloc;

mod decode;
mod encode;

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

pub use decode::{Btf, StructCache};
pub use encode::Builder;
pub use trace_probe::proto::{CType, FuncProto, Member, Pointee, StructType};

/// The first four bytes of every table.
pub const MAGIC: [u8; 4] = *b"KBTF";

/// The format version this crate reads and writes.
pub const VERSION: u8 = 1;

/// Size of the fixed header (magic, version, depth, body length).
pub const HEADER_LEN: usize = 10;

/// The most `->` dereferences a table may describe: each level is kept in
/// the kernel's memory for every structure reached, so it stays small.
pub const MAX_PTR_DEPTH: u8 = 4;

/// The deepest nesting of structures held by value inside one another.
pub const MAX_NEST: u32 = 10;

/// An index into a [`Table`]'s types.
pub type TypeId = u32;

/// One entry of the type table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TypeEntry {
    /// No value (a function returning nothing).
    Void,
    /// A type that probes cannot use by name (fetched as `x64`/default).
    Other,
    /// A pointer to a byte-sized character (`:string` follows it).
    PtrChar,
    /// A pointer to anything without members.
    PtrOther,
    /// An integer, `bool` or `char`.
    Int {
        /// Size in bytes.
        bytes: u8,
        /// Signed encoding.
        signed: bool,
    },
    /// A C-like enumeration.
    Enum {
        /// Size in bytes.
        bytes: u8,
    },
    /// A pointer to the structure at this index.
    PtrStruct(TypeId),
    /// A structure or union and its members.
    Struct {
        /// Its name, for diagnostics.
        name: String,
        /// Its members, in order.
        members: Vec<MemberEntry>,
    },
    /// An array of `N` byte-sized characters.
    CharArray(u32),
}

/// One member of a [`TypeEntry::Struct`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemberEntry {
    /// Its name (empty for an anonymous member searched through).
    pub name: String,
    /// Offset from the start of the structure, in bits.
    pub bit_offset: u32,
    /// Width in bits for a bitfield, 0 otherwise.
    pub bitfield_size: u8,
    /// Its type.
    pub ty: TypeId,
}

/// One function of a [`Table`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncEntry {
    /// Its kallsyms name.
    pub name: String,
    /// Its return type.
    pub ret: TypeId,
    /// Its parameters: parameter `i` is in register `x<i>` at entry.
    pub params: Vec<(String, TypeId)>,
}

/// A whole table, as the encoder writes it and [`Btf::to_table`] reads it
/// back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// How many `->` the structures describe (see [`MAX_PTR_DEPTH`]).
    pub max_ptr_depth: u8,
    /// The types, referenced by index.
    pub types: Vec<TypeEntry>,
    /// The functions, sorted by name, unique.
    pub funcs: Vec<FuncEntry>,
}

/// Why a blob was refused by [`Btf::parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The first bytes are not [`MAGIC`].
    BadMagic,
    /// A version this crate does not read.
    BadVersion(u8),
    /// The blob ends inside the table.
    Truncated,
    /// A number does not fit, or a count exceeds what the bytes can hold.
    BadNumber,
    /// A name is not UTF-8.
    BadString,
    /// An unknown type kind byte.
    BadKind(u8),
    /// A string or type index out of range, or a pointer to a non-struct.
    BadReference,
    /// A structure contains itself by value, or nests more than
    /// [`MAX_NEST`] deep, or the depth exceeds [`MAX_PTR_DEPTH`].
    TooDeep,
    /// Functions are not sorted by name, or a name repeats.
    Unsorted,
    /// Bytes left over inside the body.
    TrailingBytes,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadMagic => f.write_str("not a BTF table (bad magic)"),
            Error::BadVersion(v) => write!(f, "BTF table version {v} is not supported"),
            Error::Truncated => f.write_str("BTF table truncated"),
            Error::BadNumber => f.write_str("BTF table has an out-of-range number"),
            Error::BadString => f.write_str("BTF table has a name that is not UTF-8"),
            Error::BadKind(k) => write!(f, "BTF table has an unknown type kind {k}"),
            Error::BadReference => f.write_str("BTF table has a dangling reference"),
            Error::TooDeep => f.write_str("BTF table nests structures too deeply"),
            Error::Unsorted => f.write_str("BTF table functions are not sorted and unique"),
            Error::TrailingBytes => f.write_str("BTF table has trailing bytes"),
        }
    }
}

/// Type kind bytes of the format.
mod kind {
    pub const VOID: u8 = 0;
    pub const OTHER: u8 = 1;
    pub const PTR_CHAR: u8 = 2;
    pub const PTR_OTHER: u8 = 3;
    pub const INT: u8 = 4;
    pub const ENUM: u8 = 5;
    pub const PTR_STRUCT: u8 = 6;
    pub const STRUCT: u8 = 7;
    pub const CHAR_ARRAY: u8 = 8;
}
