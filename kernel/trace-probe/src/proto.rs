//! What the kernel knows about a function's parameters and the structures
//! they point to: the part of BTF that `$argN`, `$arg*`, `<argname>`,
//! `->field` and a typed `$retval` need. The kernel builds these from its
//! own debug information; a function it knows nothing about behaves as a
//! function without BTF does on Linux (Debian's 6.12 has BTF, so that is
//! the yardstick).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// A C type, reduced to what probe arguments can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CType {
    /// `void` (only meaningful as a return type).
    Void,
    /// An integer of `bytes` bytes (1, 2, 4, 8), or `_Bool`/`char`.
    Int {
        /// Size in bytes.
        bytes: u8,
        /// Signed encoding.
        signed: bool,
    },
    /// An enum: fetched as `s32` (`s64` for an 8-byte enum), as Linux does.
    Enum {
        /// Size in bytes.
        bytes: u8,
    },
    /// A pointer; what it points to decides `->` and `:string`.
    Ptr(Pointee),
    /// A structure or union held by value (only as a member, for `.`).
    Struct(Arc<StructType>),
    /// `char name[N]`: usable with `:string` without a dereference.
    CharArray(u32),
    /// Anything else (arrays of other types, function pointers, ...).
    Other,
}

/// What a pointer points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pointee {
    /// `char` (unsigned or plain): `:string` dereferences it.
    Char,
    /// A structure or union: `->field` reads its members.
    Struct(Arc<StructType>),
    /// Anything else.
    Other,
}

/// A structure or union with its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructType {
    /// Its name (for diagnostics only).
    pub name: String,
    /// Its members; an unnamed member of struct type is searched through,
    /// as BTF's anonymous structs and unions are.
    pub members: Vec<Member>,
}

/// One member of a structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its name, empty for an anonymous struct/union.
    pub name: String,
    /// Offset from the start of the structure, in bits.
    pub bit_offset: u32,
    /// Width in bits for a bitfield, 0 otherwise.
    pub bitfield_size: u8,
    /// Its type.
    pub ty: CType,
}

impl StructType {
    /// Finds `name` among the members, looking inside anonymous members;
    /// returns the member and the bit offset of its enclosing anonymous
    /// members (Linux's `btf_find_struct_member`).
    pub fn find_member(&self, name: &str) -> Option<(&Member, u32)> {
        self.find_member_depth(name, 0)
    }

    fn find_member_depth(&self, name: &str, depth: u32) -> Option<(&Member, u32)> {
        if depth > 16 {
            return None;
        }
        for m in &self.members {
            if m.name.is_empty() {
                if let CType::Struct(inner) = &m.ty {
                    if let Some((found, off)) = inner.find_member_depth(name, depth + 1) {
                        return Some((found, off.wrapping_add(m.bit_offset)));
                    }
                }
            } else if m.name == name {
                return Some((m, 0));
            }
        }
        None
    }
}

/// A function's prototype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncProto {
    /// The return type (`CType::Void` for none).
    pub ret: CType,
    /// The parameters in order, with their names.
    pub params: Vec<(String, CType)>,
}

/// The fetch type Linux picks for a BTF type when the user gives none
/// (`fetch_type_from_btf_type`); `None` means the default type. The bit
/// width is returned for an unsigned integer of unusual width (a bitfield).
pub(crate) fn fetch_type_name(ty: &CType, bitfield: u8) -> (Option<&'static str>, Option<u8>) {
    match ty {
        CType::Enum { bytes: 8 } => (Some("s64"), None),
        CType::Enum { .. } => (Some("s32"), None),
        CType::Ptr(_) => (Some("x64"), None),
        CType::Int { bytes, signed } => {
            let bits = if bitfield != 0 {
                bitfield
            } else {
                bytes.saturating_mul(8)
            };
            let name = match (signed, bits) {
                (true, 8) => "s8",
                (true, 16) => "s16",
                (true, 32) => "s32",
                (true, 64) => "s64",
                (true, _) => return (None, None),
                (false, 8) => "u8",
                (false, 16) => "u16",
                (false, 32) => "u32",
                (false, 64) => "u64",
                (false, _) => return (Some("u64"), Some(bits)),
            };
            (Some(name), None)
        }
        _ => (None, None),
    }
}
