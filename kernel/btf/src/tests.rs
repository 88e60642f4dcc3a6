use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use crate::*;

fn u64_t() -> CType {
    CType::Int {
        bytes: 8,
        signed: false,
    }
}

fn member(name: &str, byte: u32, ty: CType) -> Member {
    Member {
        name: name.to_string(),
        bit_offset: byte * 8,
        bitfield_size: 0,
        ty,
    }
}

fn strukt(name: &str, members: Vec<Member>) -> Arc<StructType> {
    Arc::new(StructType {
        name: name.to_string(),
        members,
    })
}

/// `vfs_read(file, buf, count, pos)` with a small `struct file`.
fn vfs_read_proto() -> FuncProto {
    let path = strukt("path", vec![member("mnt", 0, CType::Ptr(Pointee::Other))]);
    let file = strukt(
        "file",
        vec![
            member(
                "f_mode",
                0,
                CType::Int {
                    bytes: 4,
                    signed: false,
                },
            ),
            member("f_path", 8, CType::Struct(path)),
            member("f_pos", 24, CType::Int { bytes: 8, signed: true }),
        ],
    );
    FuncProto {
        ret: CType::Int { bytes: 8, signed: true },
        params: vec![
            ("file".to_string(), CType::Ptr(Pointee::Struct(file))),
            ("buf".to_string(), CType::Ptr(Pointee::Char)),
            ("count".to_string(), u64_t()),
            ("pos".to_string(), CType::Ptr(Pointee::Other)),
        ],
    }
}

fn encode_protos(depth: u8, protos: &[(&str, &FuncProto)]) -> Vec<u8> {
    let mut b = Builder::new(depth);
    for (name, p) in protos {
        assert!(b.add_proto(name, p));
    }
    b.finish().encode()
}

#[test]
fn prototype_round_trips_with_names_and_member_offsets() {
    let proto = vfs_read_proto();
    let blob = encode_protos(2, &[("vfs_read", &proto)]);
    let btf = Btf::parse(&blob).unwrap();
    let mut cache = StructCache::new();
    assert_eq!(btf.func_proto("vfs_read", &mut cache), Some(proto));
    assert_eq!(btf.func_proto("vfs_write", &mut cache), None);
    assert_eq!(btf.func_names().collect::<Vec<_>>(), ["vfs_read"]);
}

#[test]
fn equal_structures_are_stored_once() {
    let a = vfs_read_proto();
    let mut b = Builder::new(2);
    b.add_proto("vfs_read", &a);
    let one = b.type_count();
    b.add_proto("vfs_write", &a);
    assert_eq!(b.type_count(), one, "the second function added no type");
    let table = b.finish();
    let structs = table
        .types
        .iter()
        .filter(|t| matches!(t, TypeEntry::Struct { .. }))
        .count();
    assert_eq!(structs, 2, "struct file and struct path, once each");
    // Decoded prototypes share the structure too.
    let blob = table.encode();
    let btf = Btf::parse(&blob).unwrap();
    let mut cache = StructCache::new();
    let r = btf.func_proto("vfs_read", &mut cache).unwrap();
    let w = btf.func_proto("vfs_write", &mut cache).unwrap();
    let (CType::Ptr(Pointee::Struct(x)), CType::Ptr(Pointee::Struct(y))) = (&r.params[0].1, &w.params[0].1) else {
        panic!("file is a struct pointer");
    };
    assert!(Arc::ptr_eq(x, y));
}

/// `struct list_head { next, prev }`: a cycle in the table, cut at the
/// table's depth in the trees.
fn list_table(depth: u8) -> Vec<u8> {
    let mut b = Builder::new(depth);
    let list = b.declare_struct();
    let ptr = b.intern(TypeEntry::PtrStruct(list));
    let members = ["next", "prev"]
        .iter()
        .enumerate()
        .map(|(i, n)| MemberEntry {
            name: n.to_string(),
            bit_offset: 64 * i as u32,
            bitfield_size: 0,
            ty: ptr,
        })
        .collect();
    b.define_struct(list, "list_head".to_string(), members);
    let void = b.intern(TypeEntry::Void);
    b.add_func("list_del", void, vec![("entry".to_string(), ptr)]);
    b.finish().encode()
}

#[test]
fn self_referencing_structure_is_followed_to_the_table_depth() {
    let blob = list_table(3);
    let btf = Btf::parse(&blob).unwrap();
    let mut cache = StructCache::new();
    let p = btf.func_proto("list_del", &mut cache).unwrap();
    assert_eq!(p.ret, CType::Void);
    let mut ty = p.params[0].1.clone();
    let mut levels = 0;
    while let CType::Ptr(Pointee::Struct(s)) = ty {
        assert_eq!(s.name, "list_head");
        let (m, _) = s.find_member("prev").unwrap();
        assert_eq!(m.bit_offset, 64);
        ty = s.find_member("next").unwrap().0.ty.clone();
        levels += 1;
    }
    assert_eq!(levels, 3, "entry->next->next, then no further");
    assert_eq!(ty, CType::Ptr(Pointee::Other));
    assert_eq!(cache.len(), 3, "one structure per remaining depth");
}

#[test]
fn refuses_bad_headers() {
    let blob = list_table(2);
    assert_eq!(Btf::parse(&blob[..5]).unwrap_err(), Error::Truncated);
    let mut bad = blob.clone();
    bad[0] = b'X';
    assert_eq!(Btf::parse(&bad).unwrap_err(), Error::BadMagic);
    let mut bad = blob.clone();
    bad[4] = 9;
    assert_eq!(Btf::parse(&bad).unwrap_err(), Error::BadVersion(9));
    let mut bad = blob.clone();
    bad[5] = MAX_PTR_DEPTH + 1;
    assert_eq!(Btf::parse(&bad).unwrap_err(), Error::TooDeep);
    assert_eq!(Btf::parse(&blob[..blob.len() - 1]).unwrap_err(), Error::Truncated);
}

#[test]
fn ignores_padding_after_the_body() {
    let mut blob = list_table(2);
    blob.extend_from_slice(&[0; 7]);
    assert_eq!(Btf::parse(&blob).unwrap().len(), 1);
}

fn table(types: Vec<TypeEntry>, funcs: Vec<FuncEntry>) -> Table {
    Table {
        max_ptr_depth: 2,
        types,
        funcs,
    }
}

fn func(name: &str, ret: TypeId) -> FuncEntry {
    FuncEntry {
        name: name.to_string(),
        ret,
        params: vec![],
    }
}

fn by_value(name: &str, ty: TypeId) -> TypeEntry {
    TypeEntry::Struct {
        name: name.to_string(),
        members: vec![MemberEntry {
            name: "m".to_string(),
            bit_offset: 0,
            bitfield_size: 0,
            ty,
        }],
    }
}

#[test]
fn refuses_inconsistent_tables() {
    let parse = |t: Table| Btf::parse(&t.encode()).map(|_| ());
    assert_eq!(
        parse(table(vec![TypeEntry::Void], vec![func("f", 1)])),
        Err(Error::BadReference)
    );
    assert_eq!(
        parse(table(vec![TypeEntry::PtrStruct(1), TypeEntry::Void], vec![])),
        Err(Error::BadReference),
        "a pointer to a non-structure"
    );
    assert_eq!(
        parse(table(vec![by_value("a", 1), by_value("b", 0)], vec![])),
        Err(Error::TooDeep),
        "a structure inside itself"
    );
    let deep: Vec<TypeEntry> = (0..=MAX_NEST)
        .map(|i| by_value("s", i + 1))
        .chain([TypeEntry::Void])
        .collect();
    assert_eq!(parse(table(deep, vec![])), Err(Error::TooDeep));
    let ok: Vec<TypeEntry> = (0..MAX_NEST)
        .map(|i| by_value("s", i + 1))
        .chain([TypeEntry::Void])
        .collect();
    assert_eq!(parse(table(ok, vec![])), Ok(()));
    assert_eq!(
        parse(table(vec![TypeEntry::Void], vec![func("b", 0), func("a", 0)])),
        Err(Error::Unsorted)
    );
    assert_eq!(
        parse(table(vec![TypeEntry::Void], vec![func("a", 0), func("a", 0)])),
        Err(Error::Unsorted)
    );
}

#[test]
fn refuses_counts_larger_than_the_blob() {
    // One string claimed, its length beyond the body.
    let mut blob = Vec::from(MAGIC);
    blob.extend([VERSION, 1, 3, 0, 0, 0, 1, 0xff, 0x7f]);
    assert_eq!(Btf::parse(&blob).unwrap_err(), Error::Truncated);
    let mut blob = Vec::from(MAGIC);
    blob.extend([VERSION, 1, 5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(Btf::parse(&blob).unwrap_err(), Error::BadNumber);
}

#[test]
fn refuses_trailing_bytes_inside_the_body() {
    let t = table(vec![TypeEntry::Void], vec![func("f", 0)]);
    let mut blob = t.encode();
    blob.push(0);
    let len = u32::from_le_bytes(blob[6..10].try_into().unwrap()) + 1;
    blob[6..10].copy_from_slice(&len.to_le_bytes());
    assert_eq!(Btf::parse(&blob).unwrap_err(), Error::TrailingBytes);
}

// Property tests.

fn name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z_]{0,6}", "\\PC{0,4}"]
}

fn leaf() -> impl Strategy<Value = CType> {
    prop_oneof![
        Just(CType::Void),
        Just(CType::Other),
        Just(CType::Ptr(Pointee::Char)),
        Just(CType::Ptr(Pointee::Other)),
        (prop::sample::select(vec![1u8, 2, 4, 8]), any::<bool>())
            .prop_map(|(bytes, signed)| CType::Int { bytes, signed }),
        prop::sample::select(vec![1u8, 2, 4, 8]).prop_map(|bytes| CType::Enum { bytes }),
        any::<u32>().prop_map(CType::CharArray),
    ]
}

/// Trees with at most 3 pointer levels and a few levels of nesting.
fn ctype() -> impl Strategy<Value = CType> {
    leaf().prop_recursive(3, 16, 3, |inner| {
        let st = (
            name(),
            prop::collection::vec((name(), any::<u32>(), any::<u8>(), inner), 0..4),
        )
            .prop_map(|(name, ms)| {
                Arc::new(StructType {
                    name,
                    members: ms
                        .into_iter()
                        .map(|(name, bit_offset, bitfield_size, ty)| Member {
                            name,
                            bit_offset,
                            bitfield_size,
                            ty,
                        })
                        .collect(),
                })
            })
            .boxed();
        prop_oneof![
            st.clone().prop_map(CType::Struct),
            st.prop_map(|s| CType::Ptr(Pointee::Struct(s))),
        ]
    })
}

fn proto() -> impl Strategy<Value = FuncProto> {
    (ctype(), prop::collection::vec((name(), ctype()), 0..6)).prop_map(|(ret, params)| FuncProto { ret, params })
}

/// Any well-formed table: struct members by value only refer to earlier
/// types (no cycle), pointers to any structure.
fn any_table() -> impl Strategy<Value = Table> {
    let n = 1usize..24;
    n.prop_flat_map(|n| {
        let entry = |i: usize, n: usize| {
            let earlier = 0..i.max(1) as u32;
            prop_oneof![
                Just(TypeEntry::Void),
                Just(TypeEntry::Other),
                Just(TypeEntry::PtrChar),
                Just(TypeEntry::PtrOther),
                (any::<u8>(), any::<bool>()).prop_map(|(bytes, signed)| TypeEntry::Int { bytes, signed }),
                any::<u8>().prop_map(|bytes| TypeEntry::Enum { bytes }),
                any::<u32>().prop_map(TypeEntry::CharArray),
                (0..n as u32).prop_map(TypeEntry::PtrStruct),
                (
                    name(),
                    prop::collection::vec((name(), any::<u32>(), any::<u8>(), earlier), 0..4)
                )
                    .prop_map(move |(name, ms)| TypeEntry::Struct {
                        name,
                        members: ms
                            .into_iter()
                            .map(|(name, bit_offset, bitfield_size, ty)| MemberEntry {
                                name,
                                bit_offset,
                                bitfield_size,
                                ty: if i == 0 { 0 } else { ty },
                            })
                            .collect()
                    }),
            ]
        };
        let types: Vec<_> = (0..n).map(|i| entry(i, n)).collect();
        let funcs = prop::collection::btree_map(
            name(),
            (0..n as u32, prop::collection::vec((name(), 0..n as u32), 0..9)),
            0..12,
        );
        (types, funcs, 0..=MAX_PTR_DEPTH)
    })
    .prop_map(|(mut types, funcs, max_ptr_depth)| {
        // A pointer must reach a structure: retarget the others, and give
        // the table at least one plain structure to point at.
        types.push(TypeEntry::Struct {
            name: "anchor".to_string(),
            members: vec![],
        });
        let anchor = (types.len() - 1) as u32;
        let is_struct: Vec<bool> = types.iter().map(|t| matches!(t, TypeEntry::Struct { .. })).collect();
        for t in &mut types {
            if let TypeEntry::PtrStruct(s) = t {
                if !is_struct[*s as usize] {
                    *s = anchor;
                }
            }
        }
        let funcs = funcs
            .into_iter()
            .map(|(name, (ret, params))| FuncEntry { name, ret, params })
            .collect();
        Table {
            max_ptr_depth,
            types,
            funcs,
        }
    })
    .prop_filter("nesting within MAX_NEST", |t| Btf::parse(&t.encode()).is_ok())
}

proptest! {
    #[test]
    fn table_round_trips_through_the_binary_form(t in any_table()) {
        let blob = t.encode();
        let btf = Btf::parse(&blob).unwrap();
        prop_assert_eq!(btf.to_table(), t);
    }

    #[test]
    fn prototypes_round_trip_through_encode_and_decode(
        protos in prop::collection::btree_map("[a-z_]{1,10}", proto(), 0..6),
    ) {
        let mut b = Builder::new(MAX_PTR_DEPTH);
        for (name, p) in &protos {
            prop_assert!(b.add_proto(name, p));
        }
        let blob = b.finish().encode();
        let btf = Btf::parse(&blob).unwrap();
        prop_assert_eq!(btf.len(), protos.len());
        let mut cache = StructCache::new();
        for (name, p) in &protos {
            let got = btf.func_proto(name, &mut cache);
            prop_assert_eq!(got.as_ref(), Some(p));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), header in any::<bool>()) {
        let mut blob = bytes;
        if header {
            // Past the header checks, into the body parser.
            let len = blob.len() as u32;
            let mut h = Vec::from(MAGIC);
            h.extend([VERSION, 2]);
            h.extend(len.to_le_bytes());
            h.extend(blob);
            blob = h;
        }
        if let Ok(btf) = Btf::parse(&blob) {
            let mut cache = StructCache::new();
            let names: Vec<&str> = btf.func_names().collect();
            for n in names {
                prop_assert!(btf.func_proto(n, &mut cache).is_some());
            }
        }
    }

    #[test]
    fn mutated_tables_never_panic(
        t in any_table(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut blob = t.encode();
        for (at, v) in edits {
            let i = at.index(blob.len());
            blob[i] = v;
        }
        let keep = cut.index(blob.len() + 1);
        blob.truncate(keep.max(blob.len().saturating_sub(3)));
        if let Ok(btf) = Btf::parse(&blob) {
            let mut cache = StructCache::new();
            let names: Vec<&str> = btf.func_names().collect();
            for n in names {
                prop_assert!(btf.func_proto(n, &mut cache).is_some());
            }
        }
    }
}
