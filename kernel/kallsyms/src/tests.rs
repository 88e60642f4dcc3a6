extern crate std;

use super::*;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use proptest::prelude::*;

const BASE: u64 = 0xffff_8000_8000_0000;

fn sample() -> Vec<u8> {
    build(
        BASE,
        &[
            ("start_kernel", BASE + 0x1000, 0x200),
            ("_text", BASE, 0),
            ("kernel::mm::frame::alloc", BASE + 0x400, 0x80),
            ("vfs_read", BASE + 0x2000, 0x40),
        ],
    )
}

/// Runs every kind of lookup over a table, as a corrupted-but-accepted
/// table must survive them all.
fn exercise(table: &Kallsyms<'_>) {
    let mut prev = 0;
    for sym in table.iter() {
        assert!(sym.addr >= prev);
        prev = sym.addr;
        let found = table.lookup_name(sym.name).expect("a listed name is found");
        assert_eq!(found.name, sym.name);
        assert!(found.addr <= sym.addr);
        for addr in [sym.addr, sym.addr.wrapping_add(sym.size / 2), sym.addr.wrapping_sub(1)] {
            if let Some(hit) = table.lookup_addr(addr) {
                assert!(hit.offset < hit.size);
                assert_eq!(hit.addr + hit.offset, addr);
            }
            let _ = table.symbolize(addr).to_string();
        }
    }
    assert_eq!(table.iter().count(), table.len());
    let _ = table.lookup_addr(0);
    let _ = table.lookup_addr(u64::MAX);
    let _ = table.lookup_name("");
}

#[test]
fn empty_table_is_valid_and_finds_nothing() {
    let blob = build::<&str>(BASE, &[]);
    let table = Kallsyms::new(&blob).unwrap();
    assert!(table.is_empty());
    assert_eq!(table.len(), 0);
    assert_eq!(table.base(), BASE);
    assert_eq!(table.lookup_addr(BASE), None);
    assert_eq!(table.lookup_name("start_kernel"), None);
    assert_eq!(table.iter().next(), None);
    assert_eq!(table.symbolize(BASE + 0x10).to_string(), "0xffff800080000010");
}

#[test]
fn address_inside_function_formats_like_linux() {
    let blob = sample();
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.symbolize(BASE + 0x101c).to_string(), "start_kernel+0x1c/0x200");
    assert_eq!(table.symbolize(BASE + 0x1000).to_string(), "start_kernel+0x0/0x200");
    let sym = table.lookup_addr(BASE + 0x47f).unwrap();
    assert_eq!(
        sym,
        Symbol {
            name: "kernel::mm::frame::alloc",
            addr: BASE + 0x400,
            size: 0x80,
            offset: 0x7f,
        }
    );
}

#[test]
fn unknown_address_formats_as_sixteen_hex_digits() {
    let blob = sample();
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.symbolize(0x1234).to_string(), "0x0000000000001234");
    assert_eq!(format!("{}", table.symbolize(BASE + 0x1200)), "0xffff800080001200");
}

#[test]
fn addresses_outside_functions_give_none() {
    let blob = sample();
    let table = Kallsyms::new(&blob).unwrap();
    // `_text` has size 0: only real functions are reported.
    assert_eq!(table.lookup_addr(BASE), None);
    // Just past the end of `start_kernel`.
    assert_eq!(table.lookup_addr(BASE + 0x1200), None);
    assert_eq!(table.lookup_addr(BASE - 1), None);
    assert_eq!(table.lookup_addr(BASE + 0x2040), None);
    assert_eq!(table.lookup_addr(u64::MAX), None);
    assert_eq!(table.lookup_addr(0), None);
}

#[test]
fn lookup_name_finds_every_symbol_with_offset_zero() {
    let blob = sample();
    let table = Kallsyms::new(&blob).unwrap();
    let sym = table.lookup_name("start_kernel").unwrap();
    assert_eq!((sym.addr, sym.size, sym.offset), (BASE + 0x1000, 0x200, 0));
    assert_eq!(table.lookup_name("_text").unwrap().addr, BASE);
    assert_eq!(table.lookup_name("vfs_read").unwrap().addr, BASE + 0x2000);
    assert_eq!(table.lookup_name("vfs_rea"), None);
    assert_eq!(table.lookup_name("vfs_readv"), None);
    assert_eq!(table.lookup_name(""), None);
    assert_eq!(table.lookup_name("zzz"), None);
}

#[test]
fn duplicate_names_resolve_to_lowest_address() {
    let blob = build(
        BASE,
        &[
            ("new", BASE + 0x300, 0x10),
            ("new", BASE + 0x100, 0x10),
            ("drop", BASE + 0x200, 0x10),
            ("new", BASE + 0x200, 0x8),
        ],
    );
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.lookup_name("new").unwrap().addr, BASE + 0x100);
}

#[test]
fn aliases_at_one_address_report_the_largest() {
    let blob = build(
        BASE,
        &[
            ("alias_small", BASE + 0x100, 0x4),
            ("alias_big", BASE + 0x100, 0x40),
            ("alias_none", BASE + 0x100, 0),
        ],
    );
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.lookup_addr(BASE + 0x130).unwrap().name, "alias_big");
    assert_eq!(table.lookup_addr(BASE + 0x102).unwrap().name, "alias_big");
}

#[test]
fn build_drops_symbols_below_base_or_beyond_four_gib() {
    let blob = build(
        BASE,
        &[
            ("below", BASE - 0x10, 0x100),
            ("kept", BASE + 0x10, 0x10),
            ("far", BASE + (1 << 32), 0x10),
        ],
    );
    let table = Kallsyms::new(&blob).unwrap();
    let names: Vec<&str> = table.iter().map(|s| s.name).collect();
    assert_eq!(names, ["kept"]);
}

#[test]
fn build_clamps_size_at_the_top_of_the_address_space() {
    let blob = build(0, &[("top", 0xffff_fff0, u64::MAX)]);
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.lookup_name("top").unwrap().size, u64::from(u32::MAX));
    let base = u64::MAX - 0xff;
    let blob = build(base, &[("end", base + 0x10, 0x1000)]);
    let table = Kallsyms::new(&blob).unwrap();
    let end = table.lookup_name("end").unwrap();
    assert_eq!(end.addr + end.size, u64::MAX);
    assert_eq!(table.lookup_addr(u64::MAX - 1).unwrap().name, "end");
}

#[test]
fn iter_is_in_address_order() {
    let blob = sample();
    let table = Kallsyms::new(&blob).unwrap();
    let names: Vec<&str> = (&table).into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["_text", "kernel::mm::frame::alloc", "start_kernel", "vfs_read"]);
    assert_eq!(table.iter().len(), 4);
}

#[test]
fn trailing_padding_is_ignored() {
    let mut blob = sample();
    blob.extend_from_slice(&[0; 7]);
    let table = Kallsyms::new(&blob).unwrap();
    assert_eq!(table.len(), 4);
}

#[test]
fn bad_header_is_refused() {
    let blob = sample();
    assert_eq!(Kallsyms::new(&blob[..10]).unwrap_err(), Error::TooShort);
    let mut bad = blob.clone();
    bad[0] = b'X';
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::BadMagic);
    let mut bad = blob.clone();
    bad[4] = 2;
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::UnsupportedVersion(2));
    let mut bad = blob.clone();
    bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::Truncated);
    let mut bad = blob;
    bad[12] += 1;
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::Truncated);
}

/// Offsets of the arrays in `sample()`, which has 4 symbols.
const OFFSETS: usize = HEADER_LEN;
const SIZES: usize = OFFSETS + 16;
const NAME_OFFSETS: usize = SIZES + 16;
const NAME_INDEX: usize = NAME_OFFSETS + 20;
const STRINGS: usize = NAME_INDEX + 16;

#[test]
fn unsorted_addresses_are_refused() {
    let mut bad = sample();
    bad[OFFSETS + 4..OFFSETS + 8].copy_from_slice(&0x5000u32.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::UnsortedAddresses { index: 2 });
}

#[test]
fn symbol_ending_past_the_address_space_is_refused() {
    let mut bad = build(u64::MAX - 0x100, &[("f", u64::MAX - 0x10, 0x10)]);
    bad[SIZES - 12..SIZES - 8].copy_from_slice(&0x11u32.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::AddressOverflow { index: 0 });
}

#[test]
fn bad_name_offsets_are_refused() {
    let blob = sample();
    let mut bad = blob.clone();
    bad[NAME_OFFSETS..NAME_OFFSETS + 4].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::BadNameOffset { index: 0 });
    let mut bad = blob.clone();
    bad[NAME_OFFSETS + 8..NAME_OFFSETS + 12].copy_from_slice(&1000u32.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::BadNameOffset { index: 2 });
    // Names that stop short of the end of the string area.
    let mut bad = blob;
    bad[NAME_OFFSETS + 16..NAME_OFFSETS + 20].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(Kallsyms::new(&bad).unwrap_err(), Error::BadNameOffset { .. }));
}

#[test]
fn name_that_is_not_utf8_is_refused() {
    let mut bad = sample();
    bad[STRINGS] = 0xff;
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::NameNotUtf8 { index: 0 });
}

#[test]
fn bad_name_index_is_refused() {
    let blob = sample();
    let mut bad = blob.clone();
    bad[NAME_INDEX..NAME_INDEX + 4].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(Kallsyms::new(&bad).unwrap_err(), Error::BadNameIndex { position: 0 });
    // Swapping two entries breaks the order.
    let mut bad = blob.clone();
    bad[NAME_INDEX..NAME_INDEX + 8].rotate_left(4);
    assert_eq!(
        Kallsyms::new(&bad).unwrap_err(),
        Error::UnsortedNameIndex { position: 1 }
    );
    // Naming one symbol twice is refused too, though the order holds.
    let mut bad = blob;
    let first: [u8; 4] = bad[NAME_INDEX..NAME_INDEX + 4].try_into().unwrap();
    bad[NAME_INDEX + 4..NAME_INDEX + 8].copy_from_slice(&first);
    assert_eq!(
        Kallsyms::new(&bad).unwrap_err(),
        Error::UnsortedNameIndex { position: 1 }
    );
}

#[test]
fn errors_describe_themselves() {
    assert_eq!(
        Error::UnsupportedVersion(7).to_string(),
        "kallsyms: unsupported version 7"
    );
}

/// A function: gap before it, size, and a name from a small alphabet so
/// that duplicates and shared prefixes occur.
fn arb_funcs() -> impl Strategy<Value = Vec<(u64, u64, String)>> {
    prop::collection::vec((0u64..64, 1u64..512, "[a-c:_]{1,6}"), 0..40)
}

/// Lays the functions out one after another from `base`.
fn layout(base: u64, funcs: &[(u64, u64, String)]) -> Vec<(String, u64, u64)> {
    let mut addr = base;
    funcs
        .iter()
        .map(|(gap, size, name)| {
            addr += gap;
            let sym = (name.clone(), addr, *size);
            addr += size;
            sym
        })
        .collect()
}

proptest! {
    #[test]
    fn round_trip_maps_every_address_back(
        base in prop_oneof![Just(BASE), Just(0u64), any::<u32>().prop_map(u64::from)],
        funcs in arb_funcs(),
        pick in any::<u64>(),
    ) {
        let syms = layout(base, &funcs);
        let blob = build(base, &syms);
        let table = Kallsyms::new(&blob).unwrap();
        prop_assert_eq!(table.len(), syms.len());
        for (i, (name, addr, size)) in syms.iter().enumerate() {
            let inside = [0, size / 2, size - 1, pick % size];
            for off in inside {
                let hit = table.lookup_addr(addr + off).unwrap();
                prop_assert_eq!(hit, Symbol { name, addr: *addr, size: *size, offset: off });
                prop_assert_eq!(
                    table.symbolize(addr + off).to_string(),
                    format!("{name}+{off:#x}/{size:#x}")
                );
            }
            let next = syms.get(i + 1).map_or(u64::MAX, |s| s.1);
            if addr + size < next {
                prop_assert_eq!(table.lookup_addr(addr + size), None);
                prop_assert_eq!(table.lookup_addr(next - 1), None);
            }
            let lowest = syms.iter().filter(|s| &s.0 == name).map(|s| s.1).min().unwrap();
            let found = table.lookup_name(name).unwrap();
            prop_assert_eq!((found.name, found.addr, found.offset), (name.as_str(), lowest, 0));
        }
        if let Some(first) = syms.first() {
            if first.1 > 0 {
                prop_assert_eq!(table.lookup_addr(first.1 - 1), None);
            }
        }
        prop_assert_eq!(table.lookup_name("d"), None);
        let listed: Vec<(String, u64, u64)> =
            table.iter().map(|s| (s.name.to_string(), s.addr, s.size)).collect();
        prop_assert_eq!(listed, syms);
    }

    #[test]
    fn unsorted_input_builds_the_same_table(funcs in arb_funcs(), seed in any::<u64>()) {
        let syms = layout(BASE, &funcs);
        let mut shuffled = syms.clone();
        // A cheap deterministic shuffle; the builder must not care.
        if !shuffled.is_empty() {
            let n = shuffled.len();
            for i in 0..n {
                let j = (seed.wrapping_mul(i as u64 + 1) % n as u64) as usize;
                shuffled.swap(i, j);
            }
        }
        prop_assert_eq!(build(BASE, &shuffled), build(BASE, &syms));
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(table) = Kallsyms::new(&bytes) {
            exercise(&table);
        }
    }

    #[test]
    fn random_bytes_behind_a_valid_header_never_panic(
        count in 0u32..8,
        strings_len in 0u32..64,
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut blob = Vec::new();
        blob.extend_from_slice(&MAGIC);
        blob.extend_from_slice(&VERSION.to_le_bytes());
        blob.extend_from_slice(&count.to_le_bytes());
        blob.extend_from_slice(&strings_len.to_le_bytes());
        blob.extend_from_slice(&BASE.to_le_bytes());
        blob.extend_from_slice(&body);
        if let Ok(table) = Kallsyms::new(&blob) {
            exercise(&table);
        }
    }

    #[test]
    fn every_prefix_of_a_valid_table_is_refused(funcs in arb_funcs()) {
        let blob = build(BASE, &layout(BASE, &funcs));
        for len in 0..blob.len() {
            prop_assert!(Kallsyms::new(&blob[..len]).is_err(), "prefix of {} accepted", len);
        }
        prop_assert!(Kallsyms::new(&blob).is_ok());
    }

    #[test]
    fn corrupted_tables_are_refused_or_stay_safe(
        funcs in arb_funcs(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let mut blob = build(BASE, &layout(BASE, &funcs));
        for (at, mask) in flips {
            let i = at.index(blob.len());
            blob[i] ^= mask;
        }
        if let Ok(table) = Kallsyms::new(&blob) {
            exercise(&table);
        }
    }
}

mod names {
    use super::*;
    use crate::name::{is_valid_name, make_unique, render, render_all};
    use alloc::vec;

    #[test]
    fn render_spells_rust_paths_as_one_token() {
        let cases = [
            ("kernel::sched::schedule", "kernel__sched__schedule"),
            (
                "<kernel::fs::tty::Console as vfs::file::FileOps>::read",
                "kernel__fs__tty__Console__FileOps__read",
            ),
            (
                "<alloc::raw_vec::RawVecInner>::finish_grow",
                "alloc__raw_vec__RawVecInner__finish_grow",
            ),
            (
                "core::ptr::drop_glue::<vfs::mount::Path>",
                "core__ptr__drop_glue<vfs__mount__Path>",
            ),
            (
                "kernel::process::do_clone::{closure#1}",
                "kernel__process__do_clone__closure_1",
            ),
            ("<&str as core::fmt::Display>::fmt", "ref_str__Display__fmt"),
            ("<&mut u8 as core::fmt::Debug>::fmt", "refmut_u8__Debug__fmt"),
            (
                "<spin::once::Once<[u64; 31]>>::try_call_once_slow",
                "spin__once__Once<array<u64,31>>__try_call_once_slow",
            ),
            (
                "<alloc::collections::btree::map::BTreeMap<u32, (u64, u64)>>::insert",
                "alloc__collections__btree__map__BTreeMap<u32,tuple<u64,u64>>__insert",
            ),
            (
                "<spin::once::Once<fn() -> core::option::Option<u64>>>::get",
                "spin__once__Once<fn<>_ret_core__option__Option<u64>>__get",
            ),
            (
                "<alloc::sync::Arc<dyn vfs::inode::Inode + core::marker::Send>>::drop_slow",
                "alloc__sync__Arc<dyn_vfs__inode__Inode_core__marker__Send>__drop_slow",
            ),
            ("<[u8]>::copy_from_slice", "slice<u8>__copy_from_slice"),
            ("<*const u8>::add", "ptr_u8__add"),
            ("<(u8,)>::f", "tuple<u8>__f"),
            ("<kernel::X<'_, T>>::f", "kernel__X<T>__f"),
            (
                "<kernel::Buf<40> as core::fmt::Write>::write_char",
                "kernel__Buf<40>__Write__write_char",
            ),
            (
                "core::panicking::assert_failed::<!, i64>",
                "core__panicking__assert_failed<never,i64>",
            ),
            ("<fn(&'a u8) as Foo>::f", "fn<ref_u8>__Foo__f"),
            ("<for<'a> fn(&'a u8)>::f", "fn<ref_u8>__f"),
            ("<T as a::Tr<'static, u8>>::f", "T__Tr<u8>__f"),
            ("<kernel::Neg<-1>>::f", "kernel__Neg<neg1>__f"),
            ("<unsafe extern \"C\" fn()>::f", "unsafe_extern_C_fn<>__f"),
        ];
        for (rust, want) in cases {
            assert_eq!(render(rust), want, "rendering {rust}");
            assert!(is_valid_name(want));
        }
    }

    #[test]
    fn render_keeps_names_that_are_already_tokens() {
        for name in [
            "vfs_read",
            "__arm64_sys_read",
            "OUTLINED_FUNCTION_0",
            "start_kernel",
            "foo.isra.0",
        ] {
            assert_eq!(render(name), name);
        }
    }

    #[test]
    fn make_unique_numbers_every_copy_and_keeps_single_names() {
        let mut names: Vec<String> = ["f", "g", "f", "h", "f", "f.2"].iter().map(|s| s.to_string()).collect();
        make_unique(&mut names);
        assert_eq!(names, ["f.1", "g", "f.3", "h", "f.4", "f.2"]);
    }

    #[test]
    fn lookup_unique_refuses_a_shared_name_and_finds_each_copy() {
        let names = render_all(&[
            "<&str as core::fmt::Display>::fmt",
            "vfs_read",
            "<&str as core::fmt::Display>::fmt",
        ]);
        assert_eq!(
            names,
            ["ref_str__Display__fmt.1", "vfs_read", "ref_str__Display__fmt.2"]
        );
        let syms: Vec<(&str, u64, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), BASE + 0x100 * i as u64, 0x40))
            .collect();
        let blob = build(BASE, &syms);
        let table = Kallsyms::new(&blob).unwrap();
        assert_eq!(table.lookup_unique("vfs_read").unwrap().addr, BASE + 0x100);
        assert_eq!(
            table.lookup_unique("ref_str__Display__fmt"),
            Err(LookupError::NotUnique)
        );
        assert_eq!(
            table.lookup_unique("ref_str__Display__fmt.2").unwrap().addr,
            BASE + 0x200
        );
        assert_eq!(table.lookup_unique("vfs_write"), Err(LookupError::NotFound));
        assert_eq!(table.lookup_unique(&"x".repeat(600)), Err(LookupError::NotFound));
    }

    /// Demangler-like text: path segments, generics, the type forms the
    /// demangler prints, and arbitrary characters mixed in.
    fn demangled_like() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            "[a-z_][a-z0-9_]{0,6}",
            Just("::".to_string()),
            Just("<".to_string()),
            Just(">".to_string()),
            Just(" as ".to_string()),
            Just(", ".to_string()),
            Just("&mut ".to_string()),
            Just("&".to_string()),
            Just("[".to_string()),
            Just("; 4]".to_string()),
            Just("]".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just(" -> ".to_string()),
            Just("{closure#0}".to_string()),
            Just("'a ".to_string()),
            Just("dyn ".to_string()),
            Just(" + ".to_string()),
            Just("for<'a> ".to_string()),
            Just(".".to_string()),
        ];
        proptest::collection::vec(atom, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn rendered_names_are_single_probe_tokens(s in demangled_like()) {
            let name = render(&s);
            prop_assert!(is_valid_name(&name), "{s:?} -> {name:?}");
            // Nothing Linux's kprobe_events or set_ftrace_filter would cut at.
            prop_assert!(!name.contains(|c: char| c.is_whitespace() || ":+-%#*?[]!()/=$\"'\\".contains(c)));
        }

        #[test]
        fn arbitrary_text_renders_to_a_valid_name(s in "\\PC{0,40}") {
            prop_assert!(is_valid_name(&render(&s)));
        }

        #[test]
        fn long_names_fit_linux_ksym_name_len(n in 400usize..2000, copies in 1usize..12) {
            let long = "kernel::a::".repeat(n / 11 + 1) + "f";
            let names = render_all(&vec![long; copies]);
            for name in &names {
                prop_assert!(name.len() <= crate::name::KSYM_NAME_MAX);
            }
        }

        #[test]
        fn render_all_gives_unique_valid_names(v in proptest::collection::vec(demangled_like(), 0..40)) {
            let names = render_all(&v);
            prop_assert_eq!(names.len(), v.len());
            let set: std::collections::BTreeSet<&String> = names.iter().collect();
            prop_assert_eq!(set.len(), names.len(), "{:?}", names);
            for n in &names {
                prop_assert!(is_valid_name(n));
            }
        }
    }
}
