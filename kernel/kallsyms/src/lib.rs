//! The kernel symbol table: a compact binary form that the kernel reads in
//! place, address → `symbol+0xoff/0xsize` and name → address lookups, and
//! (with the `builder` feature) its construction by the host build tool.
//!
//! The build links the kernel once, collects its function symbols, encodes
//! them with `build` (feature `builder`), and links again with the table in
//! a `.kallsyms` section. The kernel hands that section to [`Kallsyms::new`] as a
//! `&'static [u8]`; nothing is copied and no lookup allocates, because the
//! table is needed in an oops, long before or long after the heap is usable.
//!
//! # Binary format (version 1, all integers little-endian)
//!
//! ```text
//! offset  size        field
//! 0       4           magic, the bytes "KSYM"
//! 4       4           version (1)
//! 8       4           count: number of symbols, n
//! 12      4           strings_len: size of the string area in bytes
//! 16      8           base: the address of `_text`; every address is base + offset
//! 24      4n          offsets: symbol start - base, u32, ascending (ties allowed)
//! ..      4n          sizes: symbol size in bytes, u32
//! ..      4(n+1)      name_offsets: name i is strings[name_offsets[i]..name_offsets[i+1]],
//!                     non-decreasing, starting at 0, the last equal to strings_len
//! ..      4n          name_index: symbol indices sorted by (name bytes, offset, index)
//! ..      strings_len string area: the UTF-8 names, in address order, not terminated
//! ```
//!
//! Symbol `i` (in address order) is `offsets[i]`, `sizes[i]`, and name `i`.
//! Every array starts 4-aligned within the blob, but the reader never relies
//! on that: it reads integers byte-wise. Bytes after the string area are
//! ignored, since the linker may pad the section that holds the table.
//! Among symbols that share a start address, `build` puts the largest
//! first, and that is the one an address lookup reports.

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(any(feature = "builder", test))]
extern crate alloc;

#[cfg(any(feature = "builder", test))]
pub mod name;
#[cfg(test)]
mod tests;

use core::cmp::Ordering;
use core::fmt;

/// The first four bytes of every table.
pub const MAGIC: [u8; 4] = *b"KSYM";

/// The format version this crate reads and writes.
pub const VERSION: u32 = 1;

/// Size of the fixed header in bytes.
pub const HEADER_LEN: usize = 24;

/// Why a blob was refused by [`Kallsyms::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The blob is shorter than the header.
    TooShort,
    /// The blob does not start with [`MAGIC`].
    BadMagic,
    /// The blob is of a format version this kernel does not read.
    UnsupportedVersion(u32),
    /// The arrays or the string area announced by the header run past the
    /// end of the blob.
    Truncated,
    /// Symbol start offsets are not in ascending order at this index.
    UnsortedAddresses {
        /// Index of the first symbol whose offset is below its predecessor's.
        index: u32,
    },
    /// A symbol's end address does not fit in 64 bits.
    AddressOverflow {
        /// Index of the symbol, in address order.
        index: u32,
    },
    /// A name offset is decreasing or outside the string area, or the
    /// offsets do not cover the string area exactly.
    BadNameOffset {
        /// Index of the offending entry in `name_offsets`.
        index: u32,
    },
    /// A name is not valid UTF-8.
    NameNotUtf8 {
        /// Index of the symbol, in address order.
        index: u32,
    },
    /// The name index refers to a symbol that does not exist.
    BadNameIndex {
        /// Position in the name index.
        position: u32,
    },
    /// The name index is not sorted by (name, address, index), or names
    /// some symbol twice.
    UnsortedNameIndex {
        /// Position in the name index of the first entry out of order.
        position: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::TooShort => write!(f, "kallsyms: table shorter than its header"),
            Error::BadMagic => write!(f, "kallsyms: bad magic"),
            Error::UnsupportedVersion(v) => write!(f, "kallsyms: unsupported version {v}"),
            Error::Truncated => write!(f, "kallsyms: table truncated"),
            Error::UnsortedAddresses { index } => {
                write!(f, "kallsyms: symbol {index} out of address order")
            }
            Error::AddressOverflow { index } => {
                write!(f, "kallsyms: symbol {index} ends past 2^64")
            }
            Error::BadNameOffset { index } => write!(f, "kallsyms: bad name offset {index}"),
            Error::NameNotUtf8 { index } => write!(f, "kallsyms: name {index} is not UTF-8"),
            Error::BadNameIndex { position } => {
                write!(f, "kallsyms: name index entry {position} out of range")
            }
            Error::UnsortedNameIndex { position } => {
                write!(f, "kallsyms: name index entry {position} out of order")
            }
        }
    }
}

/// Why [`Kallsyms::lookup_unique`] found no single function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupError {
    /// No function has that name (Linux: `ENOENT`).
    NotFound,
    /// Several functions have that name (Linux refuses a probe on it with
    /// `EADDRNOTAVAIL`, "Symbol name is not unique").
    NotUnique,
}

/// A symbol found in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// The demangled name, without the Rust hash.
    pub name: &'a str,
    /// The start address.
    pub addr: u64,
    /// The size in bytes (0 for a symbol whose size is unknown).
    pub size: u64,
    /// How far into the symbol the looked-up address is; 0 for a lookup by
    /// name or an iteration.
    pub offset: u64,
}

impl fmt::Display for Symbol<'_> {
    /// Formats as Linux's `%pS` does: `name+0xoff/0xsize`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{:#x}/{:#x}", self.name, self.offset, self.size)
    }
}

/// An address formatted as Linux's `%pS`: `symbol+0xoff/0xsize` when it is
/// inside a known function, otherwise `0x` and 16 hex digits.
///
/// Returned by [`Kallsyms::symbolize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolizedAddr<'a> {
    /// The address that was looked up.
    pub addr: u64,
    /// The function containing it, if any.
    pub symbol: Option<Symbol<'a>>,
}

impl fmt::Display for SymbolizedAddr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.symbol {
            Some(sym) => sym.fmt(f),
            None => write!(f, "{:#018x}", self.addr),
        }
    }
}

/// A validated symbol table, read in place from its blob.
#[derive(Debug, Clone, Copy)]
pub struct Kallsyms<'a> {
    base: u64,
    count: usize,
    offsets: &'a [u8],
    sizes: &'a [u8],
    name_offsets: &'a [u8],
    name_index: &'a [u8],
    strings: &'a [u8],
}

/// Reads the little-endian u32 at element `i` of `array`.
///
/// Callers index only within the bounds checked by [`Kallsyms::new`]; an
/// out-of-range index yields 0 rather than a panic, so a logic error cannot
/// turn into a fault inside an oops.
#[inline]
fn u32_at(array: &[u8], i: usize) -> u32 {
    match array.get(i * 4..i * 4 + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Splits `len` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], len: usize) -> Result<&'a [u8], Error> {
    if rest.len() < len {
        return Err(Error::Truncated);
    }
    let (head, tail) = rest.split_at(len);
    *rest = tail;
    Ok(head)
}

impl<'a> Kallsyms<'a> {
    /// Validates `blob` and returns a table that reads it in place.
    ///
    /// Checks the header, the bounds of every array and name, that
    /// addresses and the name index are sorted and that every name is
    /// UTF-8, so that no later lookup can read out of bounds or misbehave.
    /// Costs one pass over the table, with no allocation.
    pub fn new(blob: &'a [u8]) -> Result<Self, Error> {
        let header = blob.get(..HEADER_LEN).ok_or(Error::TooShort)?;
        if header[0..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        let version = u32_at(header, 1);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let count = u32_at(header, 2) as usize;
        let strings_len = u32_at(header, 3) as usize;
        let base = u64::from(u32_at(header, 4)) | (u64::from(u32_at(header, 5)) << 32);

        let array_len = count.checked_mul(4).ok_or(Error::Truncated)?;
        let mut rest = &blob[HEADER_LEN..];
        let offsets = take(&mut rest, array_len)?;
        let sizes = take(&mut rest, array_len)?;
        let name_offsets = take(&mut rest, array_len + 4)?;
        let name_index = take(&mut rest, array_len)?;
        let strings = take(&mut rest, strings_len)?;

        let table = Kallsyms {
            base,
            count,
            offsets,
            sizes,
            name_offsets,
            name_index,
            strings,
        };
        table.validate()?;
        Ok(table)
    }

    fn validate(&self) -> Result<(), Error> {
        let mut prev = 0u32;
        for i in 0..self.count {
            // `count` came from a u32, so every index fits in one.
            let index = i as u32;
            let off = u32_at(self.offsets, i);
            if off < prev {
                return Err(Error::UnsortedAddresses { index });
            }
            prev = off;
            let end = u64::from(off) + u64::from(u32_at(self.sizes, i));
            if self.base.checked_add(end).is_none() {
                return Err(Error::AddressOverflow { index });
            }
        }

        if u32_at(self.name_offsets, 0) != 0 {
            return Err(Error::BadNameOffset { index: 0 });
        }
        for i in 0..self.count {
            let (start, end) = self.name_range(i);
            if end < start || end > self.strings.len() {
                return Err(Error::BadNameOffset { index: i as u32 + 1 });
            }
            if core::str::from_utf8(&self.strings[start..end]).is_err() {
                return Err(Error::NameNotUtf8 { index: i as u32 });
            }
        }
        if self.name_range(self.count).0 != self.strings.len() {
            return Err(Error::BadNameOffset {
                index: self.count as u32,
            });
        }

        // Strictly ascending keys over distinct (name, offset, index) also
        // prove the index is a permutation: n entries, all below n, none
        // repeated.
        for pos in 0..self.count {
            let i = u32_at(self.name_index, pos) as usize;
            if i >= self.count {
                return Err(Error::BadNameIndex { position: pos as u32 });
            }
            if pos > 0 {
                let prev = u32_at(self.name_index, pos - 1) as usize;
                if self.name_key_cmp(prev, i) != Ordering::Less {
                    return Err(Error::UnsortedNameIndex { position: pos as u32 });
                }
            }
        }
        Ok(())
    }

    /// Byte range of name `i` in the string area, unchecked.
    #[inline]
    fn name_range(&self, i: usize) -> (usize, usize) {
        (
            u32_at(self.name_offsets, i) as usize,
            u32_at(self.name_offsets, i + 1) as usize,
        )
    }

    #[inline]
    fn name_bytes(&self, i: usize) -> &'a [u8] {
        let (start, end) = self.name_range(i);
        self.strings.get(start..end).unwrap_or(&[])
    }

    /// Orders symbols as the name index must be: by name, then address,
    /// then index.
    fn name_key_cmp(&self, a: usize, b: usize) -> Ordering {
        self.name_bytes(a)
            .cmp(self.name_bytes(b))
            .then(u32_at(self.offsets, a).cmp(&u32_at(self.offsets, b)))
            .then(a.cmp(&b))
    }

    /// Symbol `i` in address order, with `offset` 0.
    fn symbol(&self, i: usize) -> Symbol<'a> {
        // Validated as UTF-8 in `new`; the fallback is never taken.
        let name = core::str::from_utf8(self.name_bytes(i)).unwrap_or("");
        Symbol {
            name,
            addr: self.base + u64::from(u32_at(self.offsets, i)),
            size: u64::from(u32_at(self.sizes, i)),
            offset: 0,
        }
    }

    /// Number of symbols (in address order) whose start offset satisfies
    /// `pred`, which must hold for a prefix of the table: a binary search.
    fn partition_point(&self, pred: impl Fn(u64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(u64::from(u32_at(self.offsets, mid))) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The address of `_text`, which all symbol offsets are relative to.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if the table has no symbols, as in the first link of the kernel.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The function containing `addr`, with `offset` set to how far into it
    /// `addr` lies.
    ///
    /// As Linux reports only addresses inside a function, an address in a
    /// gap between functions, past the end of the nearest one, or at a
    /// symbol of size 0 gives `None`.
    pub fn lookup_addr(&self, addr: u64) -> Option<Symbol<'a>> {
        let off = addr.checked_sub(self.base)?;
        // The nearest symbol starting at or below `off`, then the first of
        // the symbols sharing that start, which the builder makes the largest.
        let nearest = self.partition_point(|o| o <= off).checked_sub(1)?;
        let start = u64::from(u32_at(self.offsets, nearest));
        let first = self.partition_point(|o| o < start);
        let sym = self.symbol(first);
        let offset = addr - sym.addr;
        (offset < sym.size).then_some(Symbol { offset, ..sym })
    }

    /// The symbol called `name`; of several with that name, the one at the
    /// lowest address.
    pub fn lookup_name(&self, name: &str) -> Option<Symbol<'a>> {
        let want = name.as_bytes();
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let i = u32_at(self.name_index, mid) as usize;
            if self.name_bytes(i) < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == self.count {
            return None;
        }
        let i = u32_at(self.name_index, lo) as usize;
        (self.name_bytes(i) == want).then(|| self.symbol(i))
    }

    /// The symbol a user means by `name`, as a probe definition resolves
    /// it: the function of exactly that name, or [`LookupError::NotUnique`]
    /// when several functions share it (the table then lists them as
    /// `name.1`, `name.2`, ..., as `name::make_unique` names them), or
    /// [`LookupError::NotFound`].
    pub fn lookup_unique(&self, name: &str) -> Result<Symbol<'a>, LookupError> {
        if let Some(sym) = self.lookup_name(name) {
            return Ok(sym);
        }
        // `name.1` exists exactly when the builder split `name` among
        // several functions. Built without allocating: the oops path may
        // resolve names too.
        let mut buf = [0u8; 512];
        let want = name.len() + 2;
        if let Some(slot) = buf.get_mut(..want) {
            slot[..name.len()].copy_from_slice(name.as_bytes());
            slot[name.len()..].copy_from_slice(b".1");
            if let Ok(first) = core::str::from_utf8(slot) {
                if self.lookup_name(first).is_some() {
                    return Err(LookupError::NotUnique);
                }
            }
        }
        Err(LookupError::NotFound)
    }

    /// `addr` ready to print as Linux's `%pS` would.
    pub fn symbolize(&self, addr: u64) -> SymbolizedAddr<'a> {
        SymbolizedAddr {
            addr,
            symbol: self.lookup_addr(addr),
        }
    }

    /// All symbols in address order, each with `offset` 0, as
    /// `/proc/kallsyms` lists them.
    pub fn iter(&self) -> Iter<'a> {
        Iter { table: *self, next: 0 }
    }
}

impl<'a> IntoIterator for &Kallsyms<'a> {
    type Item = Symbol<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator over a table's symbols in address order; see [`Kallsyms::iter`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    table: Kallsyms<'a>,
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Symbol<'a>;

    fn next(&mut self) -> Option<Symbol<'a>> {
        if self.next >= self.table.count {
            return None;
        }
        let sym = self.table.symbol(self.next);
        self.next += 1;
        Some(sym)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.table.count - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Encodes `symbols`, given as `(name, address, size)`, into a table based
/// at `base` (the address of `_text`).
///
/// Symbols below `base` or starting 4 GiB or more above it are dropped,
/// since offsets are 32-bit; sizes are clamped to `u32::MAX` and so that
/// no symbol ends past 2^64. Among
/// symbols sharing a start address the largest comes first, so that an
/// address lookup reports it. The input need not be sorted.
///
/// # Panics
/// If the names add up to 4 GiB or more, which no kernel comes near.
#[cfg(any(feature = "builder", test))]
pub fn build<S: AsRef<str>>(base: u64, symbols: &[(S, u64, u64)]) -> alloc::vec::Vec<u8> {
    use alloc::vec::Vec;

    let mut syms: Vec<(u32, u32, &str)> = symbols
        .iter()
        .filter_map(|(name, addr, size)| {
            let off = u32::try_from(addr.checked_sub(base)?).ok()?;
            // Clamped so that the end address fits in 64 bits, as `new` checks.
            let size = (*size).min(u64::MAX - addr);
            let size = u32::try_from(size).unwrap_or(u32::MAX);
            Some((off, size, name.as_ref()))
        })
        .collect();
    syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));

    let mut name_offsets = Vec::with_capacity(syms.len() + 1);
    let mut strings = Vec::new();
    name_offsets.push(0u32);
    for (_, _, name) in &syms {
        strings.extend_from_slice(name.as_bytes());
        name_offsets.push(u32::try_from(strings.len()).expect("kallsyms: names exceed 4 GiB"));
    }

    let mut name_index: Vec<u32> = (0..syms.len() as u32).collect();
    // Same order as `Kallsyms::name_key_cmp`; index breaks ties implicitly
    // because the sort is stable and starts in index order.
    name_index.sort_by(|&a, &b| {
        let (a, b) = (&syms[a as usize], &syms[b as usize]);
        a.2.as_bytes().cmp(b.2.as_bytes()).then(a.0.cmp(&b.0))
    });

    let count = u32::try_from(syms.len()).expect("kallsyms: more than 2^32 symbols");
    let mut out = Vec::with_capacity(HEADER_LEN + syms.len() * 16 + 4 + strings.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    out.extend_from_slice(&base.to_le_bytes());
    for (off, _, _) in &syms {
        out.extend_from_slice(&off.to_le_bytes());
    }
    for (_, size, _) in &syms {
        out.extend_from_slice(&size.to_le_bytes());
    }
    for off in &name_offsets {
        out.extend_from_slice(&off.to_le_bytes());
    }
    for i in &name_index {
        out.extend_from_slice(&i.to_le_bytes());
    }
    out.extend_from_slice(&strings);
    out
}
