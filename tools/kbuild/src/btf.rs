//! The kernel's function prototypes (Linux's BTF role), read from the
//! DWARF of the first link and embedded in the second like kallsyms.
//!
//! For every out-of-line function whose start address carries a kallsyms
//! symbol (so it is named exactly as kallsyms names it), the parameters
//! that arrive in `x0..x7` are described with their names and types:
//! integers, `bool` and `char` with their size and signedness, C-like enums,
//! pointers (to a byte: a string; to a structure: its members, `->`
//! reachable up to [`MAX_PTR_DEPTH`] levels), everything else `Other`.
//! Parameter `i` of the result is the value of `x<i>` at entry, as Linux's
//! `$argN` assumes; where DWARF leaves that in doubt (an aggregate passed
//! by value, a parameter whose entry register disagrees with its position,
//! a signature the optimiser may have changed) the list stops there.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};

use btf::{Builder, MemberEntry, TypeEntry, TypeId, MAX_NEST};
use gimli::{AttributeValue, EndianSlice, LittleEndian, Operation, UnitOffset};
use object::write;
use object::{elf, Architecture, BinaryFormat, Endianness, Object, ObjectSection, SectionKind};

use crate::symbols::FuncSym;

/// Bytes of the ftrace patch site at each function's entry (two NOPs).
const FTRACE_ENTRY_BYTES: u64 = 8;

/// How many `->` levels the embedded table describes.
pub const MAX_PTR_DEPTH: u8 = 3;

/// The kernel's `#[repr(transparent)]` newtypes over a user address, by
/// qualified name: Linux's `char __user *` arguments (a filename, a
/// read/write buffer). DWARF shows a structure holding a `u64`, but the
/// value is passed and used as a pointer, so the table describes it as
/// Linux's BTF does its `__user` pointer arguments: a pointer to `char`,
/// which `:string`/`:ustring` accept.
const USER_POINTER_TYPES: &[&str] = &["arch::addr::UserPtr"];

/// Registers that carry arguments (AAPCS64 x0..x7; Linux's `$argN` limit).
const ARG_REGS: u16 = 8;

type R<'a> = EndianSlice<'a, LittleEndian>;
type Unit<'a> = gimli::Unit<R<'a>>;

/// A function's return type and its register parameters, in order.
type Signature = (TypeId, Vec<(String, TypeId)>);

/// A DIE anywhere in `.debug_info`: unit index and offset in that unit.
type DieRef = (usize, UnitOffset);

/// What the build reports about the table.
#[derive(Debug, Default)]
pub struct Stats {
    /// Functions described.
    pub funcs: usize,
    /// Parameters described, over all functions.
    pub params: usize,
    /// Structures stored.
    pub structs: usize,
}

/// Where a parameter is at the function's first instruction.
#[derive(Debug, PartialEq, Eq)]
enum EntryLoc {
    /// Whole in this DWARF register.
    Reg(u16),
    /// Split over registers, starting with this one.
    Pieces(u16),
    /// Not said (optimised out, or a stack slot valid after the prologue).
    Unknown,
}

/// How a parameter is passed.
#[derive(Debug)]
enum Pass {
    /// Nothing: a zero-sized type.
    None,
    /// One register.
    Scalar,
    /// By value, `size` bytes: one register or more.
    Aggregate(u64),
}

struct Extractor<'a> {
    dwarf: gimli::Dwarf<R<'a>>,
    units: Vec<Unit<'a>>,
    /// Start of each unit in `.debug_info`, for cross-unit references.
    unit_starts: Vec<usize>,
    /// Qualified names of the structure-like DIEs (namespaces joined by
    /// `::`), the key under which structures are shared across units.
    qualified: HashMap<DieRef, String>,
    builder: Builder,
    /// Structures by identity (qualified name and size, or DIE when
    /// anonymous), with the depth they were first reached at.
    structs: HashMap<String, TypeId>,
    dist: HashMap<TypeId, u32>,
    queue: VecDeque<(TypeId, DieRef)>,
    done: HashSet<TypeId>,
    heights: HashMap<DieRef, u32>,
}

fn err(e: gimli::Error) -> String {
    format!("reading DWARF: {e}")
}

impl<'a> Extractor<'a> {
    fn unit(&self, r: DieRef) -> &Unit<'a> {
        &self.units[r.0]
    }

    fn entry(&self, r: DieRef) -> Result<gimli::DebuggingInformationEntry<'_, '_, R<'a>>, String> {
        self.unit(r).entry(r.1).map_err(err)
    }

    /// The DIE an attribute refers to, in this unit or another.
    fn reference(&self, from: usize, v: AttributeValue<R<'a>>) -> Option<DieRef> {
        match v {
            AttributeValue::UnitRef(o) => Some((from, o)),
            AttributeValue::DebugInfoRef(o) => {
                let at = self.unit_starts.partition_point(|&s| s <= o.0).checked_sub(1)?;
                let off = o.to_unit_offset(&self.units[at].header)?;
                Some((at, off))
            }
            _ => None,
        }
    }

    fn attr_ref(&self, r: DieRef, at: gimli::DwAt) -> Result<Option<DieRef>, String> {
        let e = self.entry(r)?;
        Ok(e.attr_value(at).map_err(err)?.and_then(|v| self.reference(r.0, v)))
    }

    fn name(&self, r: DieRef) -> Result<Option<String>, String> {
        let e = self.entry(r)?;
        match e.attr_value(gimli::DW_AT_name).map_err(err)? {
            Some(v) => {
                let s = self.dwarf.attr_string(self.unit(r), v).map_err(err)?;
                Ok(Some(s.to_string_lossy().into_owned()))
            }
            None => Ok(None),
        }
    }

    fn udata(&self, r: DieRef, at: gimli::DwAt) -> Result<Option<u64>, String> {
        let e = self.entry(r)?;
        Ok(e.attr_value(at).map_err(err)?.and_then(|v| v.udata_value()))
    }

    /// A base type's encoding (`DW_ATE_*`).
    fn encoding(&self, r: DieRef) -> Result<Option<gimli::DwAte>, String> {
        let e = self.entry(r)?;
        Ok(match e.attr_value(gimli::DW_AT_encoding).map_err(err)? {
            Some(AttributeValue::Encoding(a)) => Some(a),
            Some(v) => v.udata_value().and_then(|u| u8::try_from(u).ok()).map(gimli::DwAte),
            None => None,
        })
    }

    /// `r` with typedefs and qualifiers stripped; `None` is `void`.
    fn strip(&self, mut r: Option<DieRef>) -> Result<Option<DieRef>, String> {
        for _ in 0..32 {
            let Some(d) = r else { return Ok(None) };
            match self.entry(d)?.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => r = self.attr_ref(d, gimli::DW_AT_type)?,
                _ => return Ok(Some(d)),
            }
        }
        Ok(None)
    }

    /// The direct children of a DIE.
    fn children(&self, r: DieRef) -> Result<Vec<(gimli::DwTag, DieRef)>, String> {
        let unit = self.unit(r);
        let mut tree = unit.entries_tree(Some(r.1)).map_err(err)?;
        let root = tree.root().map_err(err)?;
        let mut out = Vec::new();
        let mut it = root.children();
        while let Some(child) = it.next().map_err(err)? {
            out.push((child.entry().tag(), (r.0, child.entry().offset())));
        }
        Ok(out)
    }

    fn is_struct_like(tag: gimli::DwTag) -> bool {
        matches!(
            tag,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type
        )
    }

    /// A Rust enum is a structure with a variant part: not a C structure.
    fn is_rust_enum(&self, r: DieRef) -> Result<bool, String> {
        Ok(self.children(r)?.iter().any(|(t, _)| *t == gimli::DW_TAG_variant_part))
    }

    /// True for a one-byte integer (`u8`, `i8`, `char` in C): what
    /// `:string` reads through a pointer.
    fn is_byte(&self, r: Option<DieRef>) -> Result<bool, String> {
        let Some(r) = self.strip(r)? else { return Ok(false) };
        if self.entry(r)?.tag() != gimli::DW_TAG_base_type {
            return Ok(false);
        }
        let enc = self.encoding(r)?;
        let size = self.udata(r, gimli::DW_AT_byte_size)?;
        Ok(size == Some(1)
            && matches!(
                enc,
                Some(
                    gimli::DW_ATE_signed
                        | gimli::DW_ATE_unsigned
                        | gimli::DW_ATE_signed_char
                        | gimli::DW_ATE_unsigned_char
                )
            ))
    }

    /// Whether `r` (stripped) is one of [`USER_POINTER_TYPES`], as the
    /// pointer-sized structure it must be.
    fn is_user_pointer(&self, r: DieRef) -> Result<bool, String> {
        let named = self
            .qualified
            .get(&r)
            .is_some_and(|q| USER_POINTER_TYPES.contains(&q.as_str()));
        Ok(named && self.udata(r, gimli::DW_AT_byte_size)? == Some(8))
    }

    /// How a value of type `r` is passed.
    fn pass(&self, r: Option<DieRef>) -> Result<Pass, String> {
        let Some(r) = self.strip(r)? else { return Ok(Pass::None) };
        if self.is_user_pointer(r)? {
            return Ok(Pass::Scalar); // one register, as a pointer
        }
        let size = self.udata(r, gimli::DW_AT_byte_size)?;
        Ok(match self.entry(r)?.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type
            | gimli::DW_TAG_enumeration_type
            | gimli::DW_TAG_base_type
                if size.is_some_and(|s| (1..=8).contains(&s)) || size.is_none() =>
            {
                Pass::Scalar
            }
            _ => match size {
                Some(0) => Pass::None,
                Some(s) => Pass::Aggregate(s),
                None => Pass::Aggregate(u64::MAX),
            },
        })
    }

    /// By-value nesting height of a structure (1 for one without structure
    /// members), memoised; members too deep are described as `Other`.
    fn height(&mut self, r: DieRef, level: u32) -> Result<u32, String> {
        if let Some(&h) = self.heights.get(&r) {
            return Ok(h);
        }
        if level > MAX_NEST {
            return Ok(u32::MAX);
        }
        let mut h = 1u32;
        for (tag, m) in self.children(r)? {
            if tag != gimli::DW_TAG_member {
                continue;
            }
            let Some(t) = self.strip(self.attr_ref(m, gimli::DW_AT_type)?)? else {
                continue;
            };
            if Self::is_struct_like(self.entry(t)?.tag()) && !self.is_rust_enum(t)? {
                let below = self.height(t, level + 1)?;
                if below < MAX_NEST {
                    h = h.max(below + 1);
                }
            }
        }
        self.heights.insert(r, h);
        Ok(h)
    }

    /// The table entry of a structure at `->` distance `dist`, declared on
    /// first sight and defined when the queue reaches it. The queue is a
    /// 0-1 breadth-first search: a structure held by value (`by_value`) is
    /// as near as its holder and goes first, one behind a pointer is one
    /// further and goes last, so each is defined at its least distance.
    fn struct_id(&mut self, r: DieRef, dist: u32, by_value: bool) -> Result<TypeId, String> {
        let size = self.udata(r, gimli::DW_AT_byte_size)?.unwrap_or(0);
        let key = match self.qualified.get(&r) {
            Some(q) => format!("{q}/{size}"),
            None => format!("@{}:{:#x}", r.0, r.1 .0),
        };
        let id = match self.structs.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.builder.declare_struct();
                self.structs.insert(key, id);
                id
            }
        };
        let better = self.dist.get(&id).is_none_or(|&d| dist < d);
        if better && !self.done.contains(&id) {
            self.dist.insert(id, dist);
            if by_value {
                self.queue.push_front((id, r));
            } else {
                self.queue.push_back((id, r));
            }
        }
        Ok(id)
    }

    /// The table entry of type `r` seen at `->` distance `dist`.
    fn type_id(&mut self, r: Option<DieRef>, dist: u32) -> Result<TypeId, String> {
        let Some(r) = self.strip(r)? else {
            return Ok(self.builder.intern(TypeEntry::Void));
        };
        let size = self.udata(r, gimli::DW_AT_byte_size)?;
        let e = match self.entry(r)?.tag() {
            gimli::DW_TAG_base_type => {
                let enc = self.encoding(r)?;
                let signed = matches!(enc, Some(gimli::DW_ATE_signed | gimli::DW_ATE_signed_char));
                let integer = matches!(
                    enc,
                    Some(
                        gimli::DW_ATE_signed
                            | gimli::DW_ATE_unsigned
                            | gimli::DW_ATE_signed_char
                            | gimli::DW_ATE_unsigned_char
                            | gimli::DW_ATE_boolean
                            | gimli::DW_ATE_UTF
                    )
                );
                match size {
                    Some(b @ (1 | 2 | 4 | 8)) if integer => TypeEntry::Int { bytes: b as u8, signed },
                    _ => TypeEntry::Other,
                }
            }
            gimli::DW_TAG_enumeration_type => match size {
                Some(b @ (1 | 2 | 4 | 8)) => TypeEntry::Enum { bytes: b as u8 },
                _ => TypeEntry::Other,
            },
            gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type => {
                let target = self.attr_ref(r, gimli::DW_AT_type)?;
                if self.is_byte(target)? {
                    TypeEntry::PtrChar
                } else {
                    match self.strip(target)? {
                        Some(t)
                            if dist < u32::from(MAX_PTR_DEPTH)
                                && Self::is_struct_like(self.entry(t)?.tag())
                                && !self.is_rust_enum(t)? =>
                        {
                            TypeEntry::PtrStruct(self.struct_id(t, dist + 1, false)?)
                        }
                        _ => TypeEntry::PtrOther,
                    }
                }
            }
            tag if Self::is_struct_like(tag) && self.is_user_pointer(r)? => TypeEntry::PtrChar,
            tag if Self::is_struct_like(tag) => {
                if self.is_rust_enum(r)? || self.height(r, 0)? >= MAX_NEST {
                    TypeEntry::Other
                } else {
                    return self.struct_id(r, dist, true);
                }
            }
            gimli::DW_TAG_array_type => {
                let elem = self.attr_ref(r, gimli::DW_AT_type)?;
                let dims: Vec<DieRef> = self
                    .children(r)?
                    .into_iter()
                    .filter(|(t, _)| *t == gimli::DW_TAG_subrange_type)
                    .map(|(_, d)| d)
                    .collect();
                let count = match dims.as_slice() {
                    [d] => match self.udata(*d, gimli::DW_AT_count)? {
                        Some(c) => Some(c),
                        None => self.udata(*d, gimli::DW_AT_upper_bound)?.map(|u| u + 1),
                    },
                    _ => None,
                };
                match count {
                    Some(n) if self.is_byte(elem)? => u32::try_from(n).map_or(TypeEntry::Other, TypeEntry::CharArray),
                    _ => TypeEntry::Other,
                }
            }
            _ => TypeEntry::Other,
        };
        Ok(self.builder.intern(e))
    }

    /// Gives a queued structure its members.
    fn define(&mut self, id: TypeId, r: DieRef) -> Result<(), String> {
        let dist = self.dist.get(&id).copied().unwrap_or(0);
        let mut members = Vec::new();
        for (tag, m) in self.children(r)? {
            if tag != gimli::DW_TAG_member {
                continue;
            }
            let e = self.entry(m)?;
            if e.attr_value(gimli::DW_AT_declaration).map_err(err)?.is_some() {
                continue; // a static member
            }
            let bit_offset = if let Some(b) = self.udata(m, gimli::DW_AT_data_bit_offset)? {
                b
            } else {
                match e.attr_value(gimli::DW_AT_data_member_location).map_err(err)? {
                    Some(v) => match v.udata_value() {
                        Some(bytes) => bytes * 8,
                        None => continue, // a location expression: not a fixed offset
                    },
                    None => 0, // a union member
                }
            };
            let Ok(bit_offset) = u32::try_from(bit_offset) else {
                continue;
            };
            let bitfield_size = self.udata(m, gimli::DW_AT_bit_size)?.map_or(0, |b| b.min(255) as u8);
            let name = self.name(m)?.unwrap_or_default();
            let ty = self.attr_ref(m, gimli::DW_AT_type)?;
            let ty = self.type_id(ty, dist)?;
            members.push(MemberEntry {
                name,
                bit_offset,
                bitfield_size,
                ty,
            });
        }
        let name = short_type_name(&self.name(r)?.unwrap_or_default());
        self.builder.define_struct(id, name, members);
        Ok(())
    }

    /// Where parameter `p` of a function starting at `low_pc` is at entry.
    fn entry_loc(&self, p: DieRef, low_pc: u64) -> Result<EntryLoc, String> {
        let unit = self.unit(p);
        let e = self.entry(p)?;
        let Some(v) = e.attr_value(gimli::DW_AT_location).map_err(err)? else {
            return Ok(EntryLoc::Unknown);
        };
        let expr = if let AttributeValue::Exprloc(expr) = v {
            Some(expr)
        } else {
            let mut found = None;
            if let Some(mut list) = self.dwarf.attr_locations(unit, v).map_err(err)? {
                while let Some(l) = list.next().map_err(err)? {
                    // The entry's location: at low_pc, or just after the
                    // ftrace patch site's two entry NOPs, which change no
                    // register (tools/kbuild gives every function one).
                    if l.range.begin == low_pc || l.range.begin == low_pc + FTRACE_ENTRY_BYTES {
                        found = Some(l.data);
                        break;
                    }
                }
            }
            found
        };
        let Some(expr) = expr else { return Ok(EntryLoc::Unknown) };
        let mut ops = expr.operations(unit.encoding());
        let first = ops.next().map_err(err)?;
        let second = ops.next().map_err(err)?;
        Ok(match (first, second) {
            (Some(Operation::Register { register }), None) => EntryLoc::Reg(register.0),
            (Some(Operation::Register { register }), Some(Operation::Piece { .. })) => EntryLoc::Pieces(register.0),
            _ => EntryLoc::Unknown,
        })
    }

    /// The DIE holding a function's declaration: the abstract origin or
    /// specification of a concrete instance, else the DIE itself.
    fn declaration(&self, mut r: DieRef) -> Result<DieRef, String> {
        for _ in 0..4 {
            match self
                .attr_ref(r, gimli::DW_AT_abstract_origin)?
                .or(self.attr_ref(r, gimli::DW_AT_specification)?)
            {
                Some(o) => r = o,
                None => break,
            }
        }
        Ok(r)
    }

    /// One function's return type and register parameters.
    fn function(&mut self, sub: DieRef, low_pc: u64) -> Result<Option<Signature>, String> {
        let decl = self.declaration(sub)?;
        let external = self
            .entry(decl)?
            .attr_value(gimli::DW_AT_external)
            .map_err(err)?
            .is_some()
            || self
                .entry(sub)?
                .attr_value(gimli::DW_AT_external)
                .map_err(err)?
                .is_some();
        // The concrete parameters, by the declaration they stand for.
        let mut concrete: HashMap<DieRef, DieRef> = HashMap::new();
        let own: Vec<DieRef> = self
            .children(sub)?
            .into_iter()
            .filter(|(t, _)| *t == gimli::DW_TAG_formal_parameter)
            .map(|(_, d)| d)
            .collect();
        for &p in &own {
            let origin = self.attr_ref(p, gimli::DW_AT_abstract_origin)?.unwrap_or(p);
            concrete.insert(origin, p);
        }
        let declared: Vec<DieRef> = if decl == sub {
            own
        } else {
            let d: Vec<DieRef> = self
                .children(decl)?
                .into_iter()
                .filter(|(t, _)| *t == gimli::DW_TAG_formal_parameter)
                .map(|(_, d)| d)
                .collect();
            if d.is_empty() {
                own
            } else {
                d
            }
        };

        let ret_ty = self.attr_ref(decl, gimli::DW_AT_type)?;
        let ret = match self.pass(ret_ty)? {
            Pass::Scalar => self.type_id(ret_ty, 0)?,
            Pass::None => self.builder.intern(TypeEntry::Void),
            Pass::Aggregate(_) => self.builder.intern(TypeEntry::Other),
        };

        // Parameters in register order, each with its type when it is a
        // scalar (`None`: an aggregate, described as `Other`).
        let mut found: Vec<(String, Option<Option<DieRef>>)> = Vec::new();
        let mut verified = 0;
        let mut shifted = false;
        let mut reg = 0u16;
        for p in declared {
            if reg >= ARG_REGS {
                break;
            }
            let here = concrete.get(&p).copied().unwrap_or(p);
            let loc = self.entry_loc(here, low_pc)?;
            let ty = self.attr_ref(p, gimli::DW_AT_type)?;
            let pass = self.pass(ty)?;
            let at = match loc {
                EntryLoc::Reg(n) | EntryLoc::Pieces(n) => Some(n),
                EntryLoc::Unknown => None,
            };
            if at.is_some_and(|n| n != reg) {
                // Not where the ABI would put it: a parameter before it may
                // be gone too, and what follows is unknown.
                shifted = true;
                break;
            }
            let name = match self.name(p)? {
                Some(n) if !n.is_empty() => n,
                _ => format!("arg{}", reg + 1),
            };
            match pass {
                Pass::None => {
                    if at.is_some() {
                        break;
                    }
                    continue;
                }
                Pass::Scalar => {
                    found.push((name, Some(ty)));
                    reg += 1;
                }
                Pass::Aggregate(size) => {
                    found.push((name, None));
                    // One register only if DWARF says so and it is small;
                    // otherwise the next parameter's register is unknown.
                    if size <= 8 && loc == EntryLoc::Reg(reg) {
                        reg += 1;
                    } else {
                        if at.is_some() {
                            verified = found.len();
                        }
                        break;
                    }
                }
            }
            if at.is_some() {
                verified = found.len();
            }
        }
        // A function the optimiser could not change keeps the ABI's
        // order. Another may have lost a parameter (dead-argument
        // elimination) without DWARF saying so: only what a later
        // parameter's entry register confirms is kept.
        if !external || shifted {
            found.truncate(verified);
        }
        if found.iter().map(|p| &p.0).collect::<HashSet<_>>().len() != found.len() {
            return Ok(None); // names must tell parameters apart
        }
        let mut params = Vec::with_capacity(found.len());
        for (name, ty) in found {
            let id = match ty {
                Some(ty) => self.type_id(ty, 0)?,
                None => self.builder.intern(TypeEntry::Other),
            };
            params.push((name, id));
        }
        Ok(Some((ret, params)))
    }
}

/// A structure's name without the module paths inside its generic
/// arguments (`Arc<kernel::process::Process, alloc::alloc::Global>` becomes
/// `Arc<Process, Global>`): the name is for people, and the paths were
/// most of the table's bytes.
fn short_type_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut word = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') && !word.is_empty() {
            chars.next();
            word.clear(); // a path segment: dropped
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&word);
    out
}

/// Loads the DWARF sections of `elf`.
fn load_dwarf(file: &object::File<'_>) -> Result<gimli::DwarfSections<Cow<'static, [u8]>>, gimli::Error> {
    gimli::DwarfSections::load(|id| -> Result<Cow<'static, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .map(|d| Cow::Owned(d.into_owned()))
            .unwrap_or(Cow::Borrowed(&[])))
    })
}

/// Walks a unit, recording qualified names of structure-like types and the
/// out-of-line functions that start at a kallsyms address.
fn walk_unit<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    index: usize,
    unit: &Unit<'a>,
    qualified: &mut HashMap<DieRef, String>,
    subprograms: &mut Vec<(DieRef, u64)>,
    addrs: &HashSet<u64>,
) -> Result<(), String> {
    let mut path: Vec<String> = Vec::new();
    let mut cursor = unit.entries();
    let mut depth = 0isize;
    while let Some((delta, e)) = cursor.next_dfs().map_err(err)? {
        depth += delta;
        path.truncate(depth.max(0) as usize);
        let name = match e.attr_value(gimli::DW_AT_name).map_err(err)? {
            Some(v) => Some(dwarf.attr_string(unit, v).map_err(err)?.to_string_lossy().into_owned()),
            None => None,
        };
        let here = (index, e.offset());
        match e.tag() {
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                if let Some(n) = &name {
                    let mut q: Vec<&str> = path.iter().map(String::as_str).filter(|p| !p.is_empty()).collect();
                    q.push(n);
                    qualified.insert(here, q.join("::"));
                }
            }
            gimli::DW_TAG_subprogram => {
                if let Some(v) = e.attr_value(gimli::DW_AT_low_pc).map_err(err)? {
                    if let Some(pc) = dwarf.attr_address(unit, v).map_err(err)? {
                        if addrs.contains(&pc) {
                            subprograms.push((here, pc));
                        }
                    }
                }
            }
            _ => {}
        }
        // Types are qualified by the namespaces and types around them.
        let scope = matches!(
            e.tag(),
            gimli::DW_TAG_namespace
                | gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_class_type
        );
        path.resize(depth.max(0) as usize, String::new());
        path.push(if scope { name.unwrap_or_default() } else { String::new() });
    }
    Ok(())
}

/// The encoded table for the functions `syms` of the linked kernel `elf`.
///
/// A name that kallsyms holds more than once is left out, as a probe on it
/// is refused anyway. An image without DWARF gives an empty table.
pub fn build(elf: &[u8], syms: &[FuncSym]) -> Result<(Vec<u8>, Stats), String> {
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    let owned = load_dwarf(&file).map_err(err)?;
    let dwarf = owned.borrow(|s| EndianSlice::new(s, LittleEndian));

    let mut count: HashMap<&str, usize> = HashMap::new();
    for s in syms {
        *count.entry(s.name.as_str()).or_default() += 1;
    }
    let mut names_at: HashMap<u64, Vec<&str>> = HashMap::new();
    for s in syms.iter().filter(|s| count[s.name.as_str()] == 1) {
        names_at.entry(s.addr).or_default().push(&s.name);
    }
    let addrs: HashSet<u64> = names_at.keys().copied().collect();

    let mut units = Vec::new();
    let mut unit_starts = Vec::new();
    let mut headers = dwarf.units();
    while let Some(h) = headers.next().map_err(err)? {
        unit_starts.push(h.offset().as_debug_info_offset().map_or(usize::MAX, |o| o.0));
        units.push(dwarf.unit(h).map_err(err)?);
    }
    let mut qualified = HashMap::new();
    let mut subprograms = Vec::new();
    for (i, u) in units.iter().enumerate() {
        walk_unit(&dwarf, i, u, &mut qualified, &mut subprograms, &addrs)?;
    }

    let mut x = Extractor {
        dwarf,
        units,
        unit_starts,
        qualified,
        builder: Builder::new(MAX_PTR_DEPTH),
        structs: HashMap::new(),
        dist: HashMap::new(),
        queue: VecDeque::new(),
        done: HashSet::new(),
        heights: HashMap::new(),
    };
    let mut stats = Stats::default();
    let mut seen = HashSet::new();
    let other = x.builder.intern(TypeEntry::Other);
    for (sub, pc) in subprograms {
        if !seen.insert(pc) {
            continue; // one description per address
        }
        let Some((ret, params)) = x.function(sub, pc)? else {
            continue;
        };
        if params.is_empty() && ret == other {
            continue; // says nothing a probe could use
        }
        for name in &names_at[&pc] {
            if name.contains("{closure#") || name.contains("{shim") {
                continue; // numbered by the compiler, not stable names
            }
            if x.builder.add_func(name, ret, params.clone()) {
                stats.funcs += 1;
                stats.params += params.len();
            }
        }
    }
    while let Some((id, r)) = x.queue.pop_front() {
        if x.done.insert(id) {
            x.define(id, r)?;
        }
    }
    stats.structs = x.done.len();
    let blob = x.builder.finish().encode();
    // Check what the kernel will read.
    btf::Btf::parse(&blob).map_err(|e| format!("the BTF table does not read back: {e}"))?;
    Ok((blob, stats))
}

/// An ELF64 AArch64 relocatable object whose only content is a read-only
/// section `.BTF` holding `blob`, which the link script places between
/// `__start_BTF` and `__stop_BTF`.
pub fn btf_object(blob: &[u8]) -> Result<Vec<u8>, String> {
    let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
    let section = obj.add_section(Vec::new(), b".BTF".to_vec(), SectionKind::ReadOnlyData);
    obj.section_mut(section).flags = write::SectionFlags::Elf {
        sh_flags: u64::from(elf::SHF_ALLOC),
    };
    obj.set_section_data(section, blob.to_vec(), 8);
    obj.write().map_err(|e| format!("writing the BTF object: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_type_name_drops_paths_inside_generics() {
        assert_eq!(
            short_type_name("Arc<kernel::process::Process, alloc::alloc::Global>"),
            "Arc<Process, Global>"
        );
        assert_eq!(short_type_name("PtRegs"), "PtRegs");
        assert_eq!(short_type_name("&[u8]"), "&[u8]");
        assert_eq!(short_type_name("{closure_env#0}<u64>"), "{closure_env#0}<u64>");
    }

    #[test]
    fn btf_object_holds_the_blob_read_only() {
        let blob = Builder::new(MAX_PTR_DEPTH).finish().encode();
        let bytes = btf_object(&blob).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let section = file.section_by_name(".BTF").unwrap();
        assert_eq!(section.data().unwrap(), &blob[..]);
        assert_eq!(section.kind(), SectionKind::ReadOnlyData);
    }

    /// An ELF object whose DWARF describes `struct arch::addr::UserPtr`
    /// and `struct arch::addr::Cookie` (both a `u64` in a structure) and
    /// `fn probed(filename: UserPtr, cookie: Cookie, n: u64)` at 0x1000,
    /// its parameters in x0, x1 and x2 at entry.
    fn object_with_a_user_pointer_parameter() -> Vec<u8> {
        use gimli::write::{Address, AttributeValue as V, DwarfUnit, EndianVec, Expression, Sections};
        let encoding = gimli::Encoding {
            format: gimli::Format::Dwarf32,
            version: 4,
            address_size: 8,
        };
        let mut dwarf = DwarfUnit::new(encoding);
        let root = dwarf.unit.root();
        let u64_ty = dwarf.unit.add(root, gimli::DW_TAG_base_type);
        let e = dwarf.unit.get_mut(u64_ty);
        e.set(gimli::DW_AT_name, V::String(b"u64".to_vec()));
        e.set(gimli::DW_AT_encoding, V::Encoding(gimli::DW_ATE_unsigned));
        e.set(gimli::DW_AT_byte_size, V::Udata(8));
        let arch = dwarf.unit.add(root, gimli::DW_TAG_namespace);
        dwarf
            .unit
            .get_mut(arch)
            .set(gimli::DW_AT_name, V::String(b"arch".to_vec()));
        let addr = dwarf.unit.add(arch, gimli::DW_TAG_namespace);
        dwarf
            .unit
            .get_mut(addr)
            .set(gimli::DW_AT_name, V::String(b"addr".to_vec()));
        let mut newtype = |name: &str| {
            let s = dwarf.unit.add(addr, gimli::DW_TAG_structure_type);
            let e = dwarf.unit.get_mut(s);
            e.set(gimli::DW_AT_name, V::String(name.as_bytes().to_vec()));
            e.set(gimli::DW_AT_byte_size, V::Udata(8));
            let m = dwarf.unit.add(s, gimli::DW_TAG_member);
            let e = dwarf.unit.get_mut(m);
            e.set(gimli::DW_AT_name, V::String(b"__0".to_vec()));
            e.set(gimli::DW_AT_type, V::UnitRef(u64_ty));
            e.set(gimli::DW_AT_data_member_location, V::Udata(0));
            s
        };
        let user_ptr = newtype("UserPtr");
        let cookie = newtype("Cookie");
        let f = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
        let e = dwarf.unit.get_mut(f);
        e.set(gimli::DW_AT_name, V::String(b"probed".to_vec()));
        e.set(gimli::DW_AT_low_pc, V::Address(Address::Constant(0x1000)));
        e.set(gimli::DW_AT_high_pc, V::Udata(0x20));
        e.set(gimli::DW_AT_external, V::Flag(true));
        for (reg, (name, ty)) in [("filename", user_ptr), ("cookie", cookie), ("n", u64_ty)]
            .into_iter()
            .enumerate()
        {
            let p = dwarf.unit.add(f, gimli::DW_TAG_formal_parameter);
            let mut loc = Expression::new();
            loc.op_reg(gimli::Register(reg as u16));
            let e = dwarf.unit.get_mut(p);
            e.set(gimli::DW_AT_name, V::String(name.as_bytes().to_vec()));
            e.set(gimli::DW_AT_type, V::UnitRef(ty));
            e.set(gimli::DW_AT_location, V::Exprloc(loc));
        }
        let mut sections = Sections::new(EndianVec::new(gimli::LittleEndian));
        dwarf.write(&mut sections).unwrap();
        let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0u8; 16], 4);
        sections
            .for_each(|id, data| -> Result<(), ()> {
                if !data.slice().is_empty() {
                    let s = obj.add_section(Vec::new(), id.name().as_bytes().to_vec(), SectionKind::Debug);
                    obj.set_section_data(s, data.slice().to_vec(), 1);
                }
                Ok(())
            })
            .unwrap();
        obj.write().unwrap()
    }

    #[test]
    fn a_user_pointer_newtype_is_described_as_a_char_pointer_and_other_newtypes_are_not() {
        let elf = object_with_a_user_pointer_parameter();
        let sym = FuncSym {
            addr: 0x1000,
            size: 0x20,
            name: "probed".into(),
        };
        let (blob, stats) = build(&elf, &[sym]).unwrap();
        assert_eq!(stats.funcs, 1);
        let table = btf::Btf::parse(&blob).unwrap().to_table();
        let f = table
            .funcs
            .iter()
            .find(|f| f.name == "probed")
            .expect("probed is described");
        let params: Vec<(&str, &TypeEntry)> = f
            .params
            .iter()
            .map(|(n, t)| (n.as_str(), &table.types[*t as usize]))
            .collect();
        // UserPtr is `char __user *`: one register, a pointer to char. Any
        // other one-member structure stays an aggregate that probes cannot
        // name, and the parameters after both keep their registers.
        assert_eq!(
            params,
            [
                ("filename", &TypeEntry::PtrChar),
                ("cookie", &TypeEntry::Other),
                (
                    "n",
                    &TypeEntry::Int {
                        bytes: 8,
                        signed: false
                    }
                ),
            ]
        );
    }

    #[test]
    fn an_image_without_dwarf_gives_an_empty_table() {
        let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0u8; 16], 4);
        let elf = obj.write().unwrap();
        let (blob, stats) = build(&elf, &[]).unwrap();
        assert_eq!(stats.funcs, 0);
        assert!(btf::Btf::parse(&blob).unwrap().is_empty());
    }
}
