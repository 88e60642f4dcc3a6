//! Building a [`Table`] and writing it in the binary format.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::{
    kind, CType, FuncEntry, FuncProto, MemberEntry, Pointee, Table, TypeEntry, TypeId, HEADER_LEN, MAGIC, VERSION,
};

/// Collects types and functions into a [`Table`], storing each distinct
/// type once.
///
/// Types without cycles are added with [`Builder::intern`] (or, from
/// `trace_probe`'s trees, [`Builder::add_proto`]), which returns the index
/// of an equal entry when there is one. A structure that points back to
/// itself is made in two steps: [`Builder::declare_struct`], then
/// [`Builder::define_struct`] once its members' indices are known.
#[derive(Clone, Debug)]
pub struct Builder {
    table: Table,
    interned: BTreeMap<TypeEntry, TypeId>,
    funcs: BTreeMap<String, FuncEntry>,
}

impl Builder {
    /// An empty builder for a table describing `max_ptr_depth` levels of
    /// `->` (clamped to [`crate::MAX_PTR_DEPTH`]).
    pub fn new(max_ptr_depth: u8) -> Self {
        Builder {
            table: Table {
                max_ptr_depth: max_ptr_depth.min(crate::MAX_PTR_DEPTH),
                types: Vec::new(),
                funcs: Vec::new(),
            },
            interned: BTreeMap::new(),
            funcs: BTreeMap::new(),
        }
    }

    fn push(&mut self, e: TypeEntry) -> TypeId {
        let id = TypeId::try_from(self.table.types.len()).unwrap_or(TypeId::MAX);
        self.table.types.push(e);
        id
    }

    /// The index of `e`, added if no equal entry exists yet.
    pub fn intern(&mut self, e: TypeEntry) -> TypeId {
        if let Some(&id) = self.interned.get(&e) {
            return id;
        }
        let id = self.push(e.clone());
        self.interned.insert(e, id);
        id
    }

    /// Reserves an index for a structure whose members come later
    /// ([`Builder::define_struct`]); such structures are not deduplicated
    /// by content (the caller knows their identity).
    pub fn declare_struct(&mut self) -> TypeId {
        self.push(TypeEntry::Struct {
            name: String::new(),
            members: Vec::new(),
        })
    }

    /// Gives a declared structure its name and members.
    pub fn define_struct(&mut self, id: TypeId, name: String, members: Vec<MemberEntry>) {
        if let Some(slot) = self.table.types.get_mut(id as usize) {
            *slot = TypeEntry::Struct { name, members };
        }
    }

    /// Adds a function; returns false (and keeps the first) if a function
    /// of that name exists already.
    pub fn add_func(&mut self, name: &str, ret: TypeId, params: Vec<(String, TypeId)>) -> bool {
        if self.funcs.contains_key(name) {
            return false;
        }
        self.funcs.insert(
            String::from(name),
            FuncEntry {
                name: String::from(name),
                ret,
                params,
            },
        );
        true
    }

    /// The index of a `trace_probe` type tree, its structures deduplicated
    /// by content.
    pub fn add_ctype(&mut self, ty: &CType) -> TypeId {
        let e = match ty {
            CType::Void => TypeEntry::Void,
            CType::Other => TypeEntry::Other,
            CType::Int { bytes, signed } => TypeEntry::Int {
                bytes: *bytes,
                signed: *signed,
            },
            CType::Enum { bytes } => TypeEntry::Enum { bytes: *bytes },
            CType::CharArray(n) => TypeEntry::CharArray(*n),
            CType::Ptr(Pointee::Char) => TypeEntry::PtrChar,
            CType::Ptr(Pointee::Other) => TypeEntry::PtrOther,
            CType::Ptr(Pointee::Struct(s)) => {
                let target = self.add_ctype(&CType::Struct(s.clone()));
                TypeEntry::PtrStruct(target)
            }
            CType::Struct(s) => {
                let members = s
                    .members
                    .iter()
                    .map(|m| MemberEntry {
                        name: m.name.clone(),
                        bit_offset: m.bit_offset,
                        bitfield_size: m.bitfield_size,
                        ty: self.add_ctype(&m.ty),
                    })
                    .collect();
                TypeEntry::Struct {
                    name: s.name.clone(),
                    members,
                }
            }
        };
        self.intern(e)
    }

    /// Adds a function from its `trace_probe` prototype; false if the name
    /// is taken.
    pub fn add_proto(&mut self, name: &str, proto: &FuncProto) -> bool {
        if self.funcs.contains_key(name) {
            return false;
        }
        let ret = self.add_ctype(&proto.ret);
        let params = proto
            .params
            .iter()
            .map(|(n, t)| (n.clone(), self.add_ctype(t)))
            .collect();
        self.add_func(name, ret, params)
    }

    /// Number of types so far.
    pub fn type_count(&self) -> usize {
        self.table.types.len()
    }

    /// The table, functions sorted by name.
    pub fn finish(mut self) -> Table {
        self.table.funcs = self.funcs.into_values().collect();
        self.table
    }
}

/// Appends `v` as unsigned LEB128.
fn uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Interns names into the string table.
struct Strings {
    index: BTreeMap<String, u32>,
    list: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.index.insert(String::from(s), i);
        self.list.push(String::from(s));
        i
    }
}

impl Table {
    /// The binary form (see the crate documentation). Functions are written
    /// in the order held; [`Builder::finish`] sorts them as the format
    /// requires.
    pub fn encode(&self) -> Vec<u8> {
        let mut strings = Strings {
            index: BTreeMap::new(),
            list: Vec::new(),
        };
        let mut types = Vec::new();
        uleb(&mut types, self.types.len() as u64);
        for t in &self.types {
            match t {
                TypeEntry::Void => types.push(kind::VOID),
                TypeEntry::Other => types.push(kind::OTHER),
                TypeEntry::PtrChar => types.push(kind::PTR_CHAR),
                TypeEntry::PtrOther => types.push(kind::PTR_OTHER),
                TypeEntry::Int { bytes, signed } => types.extend([kind::INT, *bytes, u8::from(*signed)]),
                TypeEntry::Enum { bytes } => types.extend([kind::ENUM, *bytes]),
                TypeEntry::PtrStruct(s) => {
                    types.push(kind::PTR_STRUCT);
                    uleb(&mut types, u64::from(*s));
                }
                TypeEntry::Struct { name, members } => {
                    types.push(kind::STRUCT);
                    uleb(&mut types, u64::from(strings.id(name)));
                    uleb(&mut types, members.len() as u64);
                    for m in members {
                        uleb(&mut types, u64::from(strings.id(&m.name)));
                        uleb(&mut types, u64::from(m.bit_offset));
                        types.push(m.bitfield_size);
                        uleb(&mut types, u64::from(m.ty));
                    }
                }
                TypeEntry::CharArray(n) => {
                    types.push(kind::CHAR_ARRAY);
                    uleb(&mut types, u64::from(*n));
                }
            }
        }
        let mut funcs = Vec::new();
        uleb(&mut funcs, self.funcs.len() as u64);
        let mut prev: &str = "";
        for f in &self.funcs {
            // Front coding: sorted names share long prefixes (Rust paths).
            let shared = prev.bytes().zip(f.name.bytes()).take_while(|(a, b)| a == b).count();
            let suffix = f.name.as_bytes().get(shared..).unwrap_or(&[]);
            uleb(&mut funcs, shared as u64);
            uleb(&mut funcs, suffix.len() as u64);
            funcs.extend_from_slice(suffix);
            prev = &f.name;
            uleb(&mut funcs, u64::from(f.ret));
            uleb(&mut funcs, f.params.len() as u64);
            for (name, ty) in &f.params {
                uleb(&mut funcs, u64::from(strings.id(name)));
                uleb(&mut funcs, u64::from(*ty));
            }
        }
        let mut body = Vec::new();
        uleb(&mut body, strings.list.len() as u64);
        for s in &strings.list {
            uleb(&mut body, s.len() as u64);
            body.extend_from_slice(s.as_bytes());
        }
        body.extend_from_slice(&types);
        body.extend_from_slice(&funcs);

        let mut out = Vec::with_capacity(HEADER_LEN.saturating_add(body.len()));
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.max_ptr_depth);
        out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }
}
