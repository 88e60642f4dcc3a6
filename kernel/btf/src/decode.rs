//! Reading the binary format: [`Btf::parse`] checks the whole table once,
//! then [`Btf::func_proto`] builds one function's prototype at a time.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Range;

use crate::{
    kind, CType, Error, FuncEntry, FuncProto, Member, MemberEntry, Pointee, StructType, Table, TypeEntry, TypeId,
    HEADER_LEN, MAGIC, MAX_NEST, MAX_PTR_DEPTH, VERSION,
};

/// A parsed table, borrowing its names from the blob.
#[derive(Clone, Debug)]
pub struct Btf<'a> {
    max_ptr_depth: u8,
    strings: Vec<&'a str>,
    types: Vec<RawType>,
    members: Vec<RawMember>,
    funcs: Vec<RawFunc>,
    params: Vec<(u32, TypeId)>,
    /// The function names, front-coded in the blob, spelled out here.
    func_names: String,
}

#[derive(Clone, Copy, Debug)]
enum RawType {
    Void,
    Other,
    PtrChar,
    PtrOther,
    Int { bytes: u8, signed: bool },
    Enum { bytes: u8 },
    PtrStruct(TypeId),
    Struct { name: u32, members: (u32, u32) },
    CharArray(u32),
}

#[derive(Clone, Copy, Debug)]
struct RawMember {
    name: u32,
    bit_offset: u32,
    bitfield_size: u8,
    ty: TypeId,
}

#[derive(Clone, Copy, Debug)]
struct RawFunc {
    /// Range in `func_names`.
    name: (u32, u32),
    ret: TypeId,
    params: (u32, u32),
}

/// Structures already built, shared between the prototypes made from one
/// [`Btf`]: each (structure, remaining `->` depth) is built once.
#[derive(Clone, Debug, Default)]
pub struct StructCache {
    map: BTreeMap<(TypeId, u8), Arc<StructType>>,
}

impl StructCache {
    /// An empty cache.
    pub const fn new() -> Self {
        StructCache { map: BTreeMap::new() }
    }

    /// How many structures it holds.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, Error> {
        let b = *self.data.get(self.pos).ok_or(Error::Truncated)?;
        self.pos = self.pos.saturating_add(1);
        Ok(b)
    }

    fn uleb(&mut self) -> Result<u64, Error> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if shift >= 64 || (shift == 63 && bits > 1) {
                return Err(Error::BadNumber);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift = shift.saturating_add(7);
        }
    }

    fn u32(&mut self) -> Result<u32, Error> {
        u32::try_from(self.uleb()?).map_err(|_| Error::BadNumber)
    }

    /// A count of entries each at least `min_bytes` long: refused when the
    /// rest of the blob cannot hold them, so garbage never makes a huge
    /// allocation.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Error> {
        let n = usize::try_from(self.uleb()?).map_err(|_| Error::BadNumber)?;
        let left = self.data.len().saturating_sub(self.pos);
        if n.saturating_mul(min_bytes) > left {
            return Err(Error::BadNumber);
        }
        Ok(n)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated)?;
        let b = self.data.get(self.pos..end).ok_or(Error::Truncated)?;
        self.pos = end;
        Ok(b)
    }
}

fn range(r: (u32, u32)) -> Range<usize> {
    let start = r.0 as usize;
    start..start.saturating_add(r.1 as usize)
}

impl<'a> Btf<'a> {
    /// A table describing no function.
    pub const fn empty() -> Self {
        Btf {
            max_ptr_depth: 0,
            strings: Vec::new(),
            types: Vec::new(),
            members: Vec::new(),
            funcs: Vec::new(),
            params: Vec::new(),
            func_names: String::new(),
        }
    }

    /// Parses and checks a whole table: every reference in range, pointers
    /// only to structures, no structure inside itself, functions sorted.
    pub fn parse(blob: &'a [u8]) -> Result<Self, Error> {
        let header = blob.get(..HEADER_LEN).ok_or(Error::Truncated)?;
        if header.get(..4) != Some(&MAGIC[..]) {
            return Err(Error::BadMagic);
        }
        let version = blob.get(4).copied().ok_or(Error::Truncated)?;
        if version != VERSION {
            return Err(Error::BadVersion(version));
        }
        let max_ptr_depth = blob.get(5).copied().ok_or(Error::Truncated)?;
        if max_ptr_depth > MAX_PTR_DEPTH {
            return Err(Error::TooDeep);
        }
        let mut len = [0u8; 4];
        len.copy_from_slice(blob.get(6..HEADER_LEN).ok_or(Error::Truncated)?);
        let body_len = u32::from_le_bytes(len) as usize;
        let body = blob
            .get(HEADER_LEN..HEADER_LEN.saturating_add(body_len))
            .ok_or(Error::Truncated)?;
        let mut r = Reader { data: body, pos: 0 };

        let n = r.count(1)?;
        let mut strings = Vec::with_capacity(n);
        for _ in 0..n {
            let len = usize::try_from(r.uleb()?).map_err(|_| Error::BadNumber)?;
            let s = core::str::from_utf8(r.bytes(len)?).map_err(|_| Error::BadString)?;
            strings.push(s);
        }
        let nstr = strings.len();
        let string = |i: u32| {
            if (i as usize) < nstr {
                Ok(i)
            } else {
                Err(Error::BadReference)
            }
        };

        let n = r.count(1)?;
        let mut types = Vec::with_capacity(n);
        let mut members = Vec::new();
        for _ in 0..n {
            let t = match r.u8()? {
                kind::VOID => RawType::Void,
                kind::OTHER => RawType::Other,
                kind::PTR_CHAR => RawType::PtrChar,
                kind::PTR_OTHER => RawType::PtrOther,
                kind::INT => {
                    let bytes = r.u8()?;
                    let signed = match r.u8()? {
                        0 => false,
                        1 => true,
                        _ => return Err(Error::BadNumber),
                    };
                    RawType::Int { bytes, signed }
                }
                kind::ENUM => RawType::Enum { bytes: r.u8()? },
                kind::PTR_STRUCT => RawType::PtrStruct(r.u32()?),
                kind::STRUCT => {
                    let name = string(r.u32()?)?;
                    let count = r.count(4)?;
                    let start = u32::try_from(members.len()).map_err(|_| Error::BadNumber)?;
                    for _ in 0..count {
                        let name = string(r.u32()?)?;
                        let bit_offset = r.u32()?;
                        let bitfield_size = r.u8()?;
                        let ty = r.u32()?;
                        members.push(RawMember {
                            name,
                            bit_offset,
                            bitfield_size,
                            ty,
                        });
                    }
                    let count = u32::try_from(count).map_err(|_| Error::BadNumber)?;
                    RawType::Struct {
                        name,
                        members: (start, count),
                    }
                }
                kind::CHAR_ARRAY => RawType::CharArray(r.u32()?),
                k => return Err(Error::BadKind(k)),
            };
            types.push(t);
        }

        let n = r.count(4)?;
        let mut funcs = Vec::with_capacity(n);
        let mut params = Vec::new();
        let mut func_names = String::new();
        let mut prev = (0u32, 0u32);
        for _ in 0..n {
            let shared = usize::try_from(r.uleb()?).map_err(|_| Error::BadNumber)?;
            let rest = usize::try_from(r.uleb()?).map_err(|_| Error::BadNumber)?;
            let rest = r.bytes(rest)?;
            let head = func_names
                .as_bytes()
                .get(range(prev))
                .and_then(|p| p.get(..shared))
                .ok_or(Error::BadReference)?;
            let mut name = Vec::with_capacity(shared.saturating_add(rest.len()));
            name.extend_from_slice(head);
            name.extend_from_slice(rest);
            let name = String::from_utf8(name).map_err(|_| Error::BadString)?;
            let start = u32::try_from(func_names.len()).map_err(|_| Error::BadNumber)?;
            let len = u32::try_from(name.len()).map_err(|_| Error::BadNumber)?;
            func_names.push_str(&name);
            prev = (start, len);
            let ret = r.u32()?;
            let count = r.count(2)?;
            let start = u32::try_from(params.len()).map_err(|_| Error::BadNumber)?;
            for _ in 0..count {
                let pname = string(r.u32()?)?;
                params.push((pname, r.u32()?));
            }
            let count = u32::try_from(count).map_err(|_| Error::BadNumber)?;
            funcs.push(RawFunc {
                name: prev,
                ret,
                params: (start, count),
            });
        }
        if r.pos != body.len() {
            return Err(Error::TrailingBytes);
        }

        let btf = Btf {
            max_ptr_depth,
            strings,
            types,
            members,
            funcs,
            params,
            func_names,
        };
        btf.check()?;
        Ok(btf)
    }

    /// The checks that need the whole table.
    fn check(&self) -> Result<(), Error> {
        let ntypes = self.types.len();
        let valid = |t: TypeId| (t as usize) < ntypes;
        for t in &self.types {
            if let RawType::PtrStruct(s) = t {
                if !matches!(self.types.get(*s as usize), Some(RawType::Struct { .. })) {
                    return Err(Error::BadReference);
                }
            }
        }
        if self.members.iter().any(|m| !valid(m.ty)) || self.params.iter().any(|p| !valid(p.1)) {
            return Err(Error::BadReference);
        }
        if self.funcs.iter().any(|f| !valid(f.ret)) {
            return Err(Error::BadReference);
        }
        // How deep each structure nests others by value; in progress is
        // u32::MAX, so meeting it again is a cycle.
        let mut height: Vec<Option<u32>> = alloc::vec![None; ntypes];
        for t in 0..ntypes {
            self.nest_height(t, 0, &mut height)?;
        }
        let mut prev: Option<&str> = None;
        for f in &self.funcs {
            let name = self.func_name(f);
            if prev.is_some_and(|p| p >= name) {
                return Err(Error::Unsorted);
            }
            prev = Some(name);
        }
        Ok(())
    }

    /// The by-value nesting height of type `t` (0 for a non-structure).
    fn nest_height(&self, t: usize, level: u32, height: &mut [Option<u32>]) -> Result<u32, Error> {
        let Some(RawType::Struct { members, .. }) = self.types.get(t) else {
            return Ok(0);
        };
        match height.get(t).copied().flatten() {
            Some(u32::MAX) => return Err(Error::TooDeep),
            Some(h) => return Ok(h),
            None => {}
        }
        if level >= MAX_NEST {
            return Err(Error::TooDeep);
        }
        if let Some(slot) = height.get_mut(t) {
            *slot = Some(u32::MAX);
        }
        let mut h = 1u32;
        for m in self.members.get(range(*members)).unwrap_or(&[]) {
            let below = self.nest_height(m.ty as usize, level.saturating_add(1), height)?;
            h = h.max(below.saturating_add(1));
        }
        if h > MAX_NEST {
            return Err(Error::TooDeep);
        }
        if let Some(slot) = height.get_mut(t) {
            *slot = Some(h);
        }
        Ok(h)
    }

    fn str(&self, i: u32) -> &'a str {
        self.strings.get(i as usize).copied().unwrap_or("")
    }

    fn func_name(&self, f: &RawFunc) -> &str {
        self.func_names.get(range(f.name)).unwrap_or("")
    }

    /// How many `->` levels the prototypes describe.
    pub fn max_ptr_depth(&self) -> u8 {
        self.max_ptr_depth
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.funcs.len()
    }

    /// True if the table describes no function.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }

    /// The names of the functions described, in sorted order.
    pub fn func_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.funcs.iter().map(|f| self.func_name(f))
    }

    fn find(&self, name: &str) -> Option<&RawFunc> {
        let i = self.funcs.binary_search_by(|f| self.func_name(f).cmp(name)).ok()?;
        self.funcs.get(i)
    }

    /// The prototype of `name`, structures shared through `cache` (which
    /// must only ever be used with this table).
    pub fn func_proto(&self, name: &str, cache: &mut StructCache) -> Option<FuncProto> {
        let f = *self.find(name)?;
        let depth = self.max_ptr_depth;
        let ret = self.ctype(f.ret, depth, cache);
        let params = self
            .params
            .get(range(f.params))
            .unwrap_or(&[])
            .iter()
            .map(|&(n, t)| (String::from(self.str(n)), self.ctype(t, depth, cache)))
            .collect();
        Some(FuncProto { ret, params })
    }

    /// Type `t` as a tree in which `depth` more `->` can be followed.
    fn ctype(&self, t: TypeId, depth: u8, cache: &mut StructCache) -> CType {
        match self.types.get(t as usize) {
            None | Some(RawType::Other) => CType::Other,
            Some(RawType::Void) => CType::Void,
            Some(RawType::PtrChar) => CType::Ptr(Pointee::Char),
            Some(RawType::PtrOther) => CType::Ptr(Pointee::Other),
            Some(&RawType::Int { bytes, signed }) => CType::Int { bytes, signed },
            Some(&RawType::Enum { bytes }) => CType::Enum { bytes },
            Some(&RawType::CharArray(n)) => CType::CharArray(n),
            Some(&RawType::PtrStruct(s)) => match depth.checked_sub(1) {
                Some(below) => CType::Ptr(Pointee::Struct(self.strukt(s, below, cache))),
                None => CType::Ptr(Pointee::Other),
            },
            Some(RawType::Struct { .. }) => CType::Struct(self.strukt(t, depth, cache)),
        }
    }

    /// Structure `t` with `depth` more `->` levels below it. Ends because
    /// [`Btf::parse`] refused by-value cycles and each pointer lowers
    /// `depth`.
    fn strukt(&self, t: TypeId, depth: u8, cache: &mut StructCache) -> Arc<StructType> {
        if let Some(s) = cache.map.get(&(t, depth)) {
            return s.clone();
        }
        let (name, members) = match self.types.get(t as usize) {
            Some(&RawType::Struct { name, members }) => (name, members),
            _ => (0, (0, 0)),
        };
        let members = self
            .members
            .get(range(members))
            .unwrap_or(&[])
            .iter()
            .map(|m| Member {
                name: String::from(self.str(m.name)),
                bit_offset: m.bit_offset,
                bitfield_size: m.bitfield_size,
                ty: self.ctype(m.ty, depth, cache),
            })
            .collect();
        let s = Arc::new(StructType {
            name: String::from(self.str(name)),
            members,
        });
        cache.map.insert((t, depth), s.clone());
        s
    }

    /// The whole table back in its owned form (for tests and tools).
    pub fn to_table(&self) -> Table {
        let types = self
            .types
            .iter()
            .map(|t| match *t {
                RawType::Void => TypeEntry::Void,
                RawType::Other => TypeEntry::Other,
                RawType::PtrChar => TypeEntry::PtrChar,
                RawType::PtrOther => TypeEntry::PtrOther,
                RawType::Int { bytes, signed } => TypeEntry::Int { bytes, signed },
                RawType::Enum { bytes } => TypeEntry::Enum { bytes },
                RawType::PtrStruct(s) => TypeEntry::PtrStruct(s),
                RawType::CharArray(n) => TypeEntry::CharArray(n),
                RawType::Struct { name, members } => TypeEntry::Struct {
                    name: String::from(self.str(name)),
                    members: self
                        .members
                        .get(range(members))
                        .unwrap_or(&[])
                        .iter()
                        .map(|m| MemberEntry {
                            name: String::from(self.str(m.name)),
                            bit_offset: m.bit_offset,
                            bitfield_size: m.bitfield_size,
                            ty: m.ty,
                        })
                        .collect(),
                },
            })
            .collect();
        let funcs = self
            .funcs
            .iter()
            .map(|f| FuncEntry {
                name: String::from(self.func_name(f)),
                ret: f.ret,
                params: self
                    .params
                    .get(range(f.params))
                    .unwrap_or(&[])
                    .iter()
                    .map(|&(n, t)| (String::from(self.str(n)), t))
                    .collect(),
            })
            .collect();
        Table {
            max_ptr_depth: self.max_ptr_depth,
            types,
            funcs,
        }
    }
}
