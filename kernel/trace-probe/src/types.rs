//! The fetch types (Linux's `probe_fetch_types[]`): what a `:TYPE` suffix
//! means for the stored size, the `format` file and the printed text.

/// How a stored value is printed (Linux's `print_type_*` functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintKind {
    /// `%u` / `%Lu`.
    Unsigned,
    /// `%d` / `%Ld`: sign-extended from the stored size.
    Signed,
    /// `0x%x` / `0x%Lx`.
    Hex,
    /// `'%c'`.
    Char,
    /// `%pS`: `sym+0xoff/0xsize`.
    Symbol,
    /// `"%s"` from a `__data_loc`, `(fault)` if its length is 0.
    String,
}

/// One fetch type.
#[derive(Debug, PartialEq, Eq)]
pub struct FetchType {
    /// Its name in a definition (`u32`, `string`, ...).
    pub name: &'static str,
    /// Bytes stored in the record's fixed part (4 for a `__data_loc`).
    pub size: u8,
    /// `signed:` in the format file.
    pub is_signed: bool,
    /// Stored as a `__data_loc` with the bytes after the fixed fields.
    pub is_string: bool,
    /// How `trace` prints it.
    pub print: PrintKind,
    /// The printf format in `print fmt:`.
    pub fmt: &'static str,
    /// The C type name in the `format` file.
    pub fmttype: &'static str,
}

const fn basic(
    name: &'static str,
    size: u8,
    is_signed: bool,
    print: PrintKind,
    fmt: &'static str,
    fmttype: &'static str,
) -> FetchType {
    FetchType {
        name,
        size,
        is_signed,
        is_string: false,
        print,
        fmt,
        fmttype,
    }
}

const fn string(name: &'static str) -> FetchType {
    FetchType {
        name,
        size: 4,
        is_signed: true,
        is_string: true,
        print: PrintKind::String,
        fmt: "\\\"%s\\\"",
        fmttype: "__data_loc char[]",
    }
}

use PrintKind::*;

/// Linux's table, in Linux's order.
pub static FETCH_TYPES: [FetchType; 17] = [
    string("string"),
    string("ustring"),
    string("symstr"),
    basic("u8", 1, false, Unsigned, "%u", "u8"),
    basic("u16", 2, false, Unsigned, "%u", "u16"),
    basic("u32", 4, false, Unsigned, "%u", "u32"),
    basic("u64", 8, false, Unsigned, "%Lu", "u64"),
    basic("s8", 1, true, Signed, "%d", "s8"),
    basic("s16", 2, true, Signed, "%d", "s16"),
    basic("s32", 4, true, Signed, "%d", "s32"),
    basic("s64", 8, true, Signed, "%Ld", "s64"),
    basic("x8", 1, false, Hex, "0x%x", "u8"),
    basic("x16", 2, false, Hex, "0x%x", "u16"),
    basic("x32", 4, false, Hex, "0x%x", "u32"),
    basic("x64", 8, false, Hex, "0x%Lx", "u64"),
    basic("char", 1, false, Char, "'%c'", "u8"),
    basic("symbol", 8, false, Symbol, "%pS", "u64"),
];

/// The type of an argument written without `:TYPE` and without a typed
/// source (Linux's `DEFAULT_FETCH_TYPE`, `x64` on a 64-bit kernel).
pub const DEFAULT_FETCH_TYPE: &str = "x64";

/// Linux's `find_fetch_type()` for a kernel probe: `None` is the default
/// type; `b<w>@<o>/<c>` is the container type `u<c>`.
pub fn find_fetch_type(name: Option<&str>) -> Option<&'static FetchType> {
    let name = name.unwrap_or(DEFAULT_FETCH_TYPE);
    if name.starts_with('b') {
        let slash = name.find('/')?;
        let bits = crate::num::kstrtoul(&name[slash + 1..], 0).ok()?;
        return match bits {
            8 => find_fetch_type(Some("u8")),
            16 => find_fetch_type(Some("u16")),
            32 => find_fetch_type(Some("u32")),
            64 => find_fetch_type(Some("u64")),
            _ => None,
        };
    }
    FETCH_TYPES.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_type_is_x64_printed_as_u64() {
        let t = find_fetch_type(None).unwrap();
        assert_eq!((t.name, t.size, t.fmttype, t.fmt), ("x64", 8, "u64", "0x%Lx"));
    }

    #[test]
    fn bitfield_container_picks_unsigned_type() {
        assert_eq!(find_fetch_type(Some("b3@4/32")).unwrap().name, "u32");
        assert_eq!(find_fetch_type(Some("b3@4/0x10")).unwrap().name, "u16");
        assert!(find_fetch_type(Some("b3@4/31")).is_none());
        assert!(find_fetch_type(Some("b3")).is_none());
        // Only the container is checked here; the rest is checked when the
        // bitfield is compiled.
        assert_eq!(find_fetch_type(Some("bogus/8")).unwrap().name, "u8");
    }

    #[test]
    fn strings_are_signed_data_locs() {
        for n in ["string", "ustring", "symstr"] {
            let t = find_fetch_type(Some(n)).unwrap();
            assert!(t.is_string && t.is_signed && t.size == 4);
            assert_eq!(t.fmttype, "__data_loc char[]");
        }
        assert!(find_fetch_type(Some("%pd")).is_none());
        assert!(find_fetch_type(Some("u128")).is_none());
    }
}
