extern crate std;

use super::*;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use proptest::prelude::*;

/// `perl shared/reflinux/mkcpio.pl < testdata/sample.list`.
const SAMPLE: &[u8] = include_bytes!("../testdata/sample.cpio");

// Indices into the thirteen header fields.
const INO: usize = 0;
const MODE: usize = 1;
const NLINK: usize = 4;
const FILESIZE: usize = 6;
const NAMESIZE: usize = 11;
const CHECK: usize = 12;

/// One entry with any field values, lying or not: the header, `name` (to
/// which no NUL is added), padding, `data`, padding.
fn raw_entry(magic: &[u8], fields: [u32; 13], name: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = magic.to_vec();
    for field in fields {
        out.extend_from_slice(format!("{field:08X}").as_bytes());
    }
    out.extend_from_slice(name);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out.extend_from_slice(data);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out
}

/// Honest fields for a named entry of `mode` holding `data`.
fn fields(mode: u32, name: &str, data: &[u8]) -> [u32; 13] {
    let mut f = [0; 13];
    f[INO] = 1;
    f[MODE] = mode;
    f[NLINK] = 1;
    f[FILESIZE] = data.len() as u32;
    f[NAMESIZE] = name.len() as u32 + 1;
    f
}

/// A well-formed entry followed by nothing.
fn honest(mode: u32, name: &str, data: &[u8]) -> Vec<u8> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    raw_entry(&MAGIC_NEWC, fields(mode, name, data), &n, data)
}

fn trailer() -> Vec<u8> {
    Writer::new().finish()
}

/// `parts` concatenated.
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn read_all(bytes: &[u8]) -> Result<Vec<Entry<'_>>, Error> {
    Archive::new(bytes).entries().collect()
}

fn first_error(bytes: &[u8]) -> Error {
    match read_all(bytes) {
        Ok(entries) => panic!("accepted: {entries:?}"),
        Err(e) => e,
    }
}

/// Touches everything a reader of the archive can, as damaged input that is
/// accepted must survive it all.
fn exercise(bytes: &[u8]) -> Result<usize, Error> {
    let archive = Archive::new(bytes);
    let mut n = 0;
    for entry in archive.entries() {
        let entry = entry?;
        let _ = (entry.file_type(), entry.permissions(), entry.symlink_target());
        let _ = archive.link_data(&entry);
        n += 1;
    }
    Ok(n)
}

#[test]
fn reads_every_field_of_mkcpio_output() {
    let entries = read_all(SAMPLE).unwrap();
    let got: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.name,
                e.raw_name,
                e.file_type(),
                e.permissions(),
                e.uid,
                e.gid,
                e.ino,
                e.rdev_major,
                e.rdev_minor,
                e.data,
            )
        })
        .collect();
    use FileType::*;
    assert_eq!(
        got,
        [
            ("dev", "dev", Directory, 0o755, 0, 0, 721, 0, 0, &b""[..]),
            ("dev/console", "dev/console", CharDevice, 0o600, 0, 0, 722, 5, 1, b""),
            ("bin", "bin", Directory, 0o755, 0, 0, 723, 0, 0, b""),
            ("bin/hello", "bin/hello", Regular, 0o644, 1000, 100, 724, 0, 0, b"hi\n"),
            ("bin/sh", "bin/sh", Symlink, 0o777, 0, 0, 725, 0, 0, b"hello"),
            ("dev/sda", "dev/sda", BlockDevice, 0o660, 0, 6, 726, 8, 0, b""),
        ]
    );
    for e in &entries {
        assert_eq!((e.nlink, e.mtime, e.dev_major, e.dev_minor), (1, 0, 0, 0));
        assert_eq!(e.mode, e.file_type().mode_bits() | e.permissions());
        assert_eq!(e.offset % 4, 0);
    }
    assert_eq!(entries[4].symlink_target(), Some("hello"));
    assert_eq!(entries[3].symlink_target(), None);
}

#[test]
fn writer_output_is_byte_identical_to_mkcpio() {
    let mut w = Writer::new();
    w.dir("/dev", Metadata::new(0o755, 0, 0)).unwrap();
    w.device("/dev/console", DeviceKind::Char, 5, 1, Metadata::new(0o600, 0, 0))
        .unwrap();
    w.dir("/bin", Metadata::new(0o755, 0, 0)).unwrap();
    w.file("/bin/hello", Metadata::new(0o644, 1000, 100), b"hi\n").unwrap();
    w.symlink("/bin/sh", "hello", Metadata::new(0o777, 0, 0)).unwrap();
    w.device("/dev/sda", DeviceKind::Block, 8, 0, Metadata::new(0o660, 0, 6))
        .unwrap();
    assert_eq!(w.finish(), SAMPLE);
}

#[test]
fn empty_writer_gives_mkcpio_trailer() {
    // `: | perl mkcpio.pl`: inode 0, mode 0, one link, 11-byte name, padded.
    let want = b"070701\
        00000000\
        00000000\
        00000000\
        00000000\
        00000001\
        00000000\
        00000000\
        00000000\
        00000000\
        00000000\
        00000000\
        0000000B\
        00000000\
        TRAILER!!!\0\0\0\0";
    let got = trailer();
    assert_eq!(got, want);
    assert_eq!(read_all(&got).unwrap(), []);
}

#[test]
fn trailer_ends_iteration_and_offset_points_past_it() {
    let archive = cat(&[&honest(0o100644, "a", b"x"), &trailer(), b"garbage after"]);
    let mut entries = Archive::new(&archive).entries();
    assert_eq!(entries.next().unwrap().unwrap().name, "a");
    assert!(entries.next().is_none());
    assert!(entries.next().is_none());
    assert_eq!(entries.offset(), archive.len() - b"garbage after".len());
}

#[test]
fn names_are_normalised_relative_to_root() {
    for (raw, want) in [
        ("/bin", "bin"),
        ("./bin", "bin"),
        ("//./bin/sh", "bin/sh"),
        ("././a/./b", "a/./b"),
        (".", "."),
        ("/", "."),
        ("./", "."),
        ("", "."),
        ("..", ".."),
        (".hidden", ".hidden"),
    ] {
        let archive = cat(&[&honest(0o040755, raw, b""), &trailer()]);
        let entries = read_all(&archive).unwrap();
        assert_eq!((entries[0].name, entries[0].raw_name), (want, raw));
    }
}

#[test]
fn every_file_type_is_decoded_and_unknown_ones_refused() {
    for ft in [
        FileType::Regular,
        FileType::Directory,
        FileType::Symlink,
        FileType::CharDevice,
        FileType::BlockDevice,
        FileType::Fifo,
        FileType::Socket,
    ] {
        assert_eq!(FileType::from_mode(ft.mode_bits() | 0o7777), Some(ft));
        let archive = cat(&[&honest(ft.mode_bits() | 0o644, "f", b"t"), &trailer()]);
        assert_eq!(read_all(&archive).unwrap()[0].file_type(), ft);
    }
    for bad in [0, 0o030000, 0o050000, 0o070000, 0o110000, 0o170000] {
        let archive = cat(&[&honest(bad | 0o644, "f", b""), &trailer()]);
        let err = first_error(&archive);
        assert_eq!(err.kind(), ErrorKind::UnknownFileType { mode: bad | 0o644 });
        assert_eq!(err.offset(), 0);
    }
}

#[test]
fn gen_init_cpio_symlink_nul_is_not_part_of_target() {
    let archive = cat(&[&honest(0o120777, "sh", b"busybox\0"), &trailer()]);
    let entries = read_all(&archive).unwrap();
    assert_eq!(entries[0].symlink_target(), Some("busybox"));
    assert_eq!(entries[0].data, b"busybox\0");
}

#[test]
fn bad_symlink_targets_are_refused() {
    for target in [&b""[..], b"\0", b"a\0b", b"\xff"] {
        let archive = cat(&[&honest(0o120777, "l", target), &trailer()]);
        assert_eq!(first_error(&archive).kind(), ErrorKind::BadSymlinkTarget);
    }
}

#[test]
fn hard_links_share_inode_and_data_is_found_on_last() {
    let mut w = Writer::new();
    w.dir("bin", Metadata::new(0o755, 0, 0)).unwrap();
    w.file_with_links(
        &["bin/busybox", "bin/sh", "bin/ls"],
        Metadata::new(0o755, 0, 0),
        b"\x7fELF...",
    )
    .unwrap();
    w.file("bin/other", Metadata::new(0o644, 0, 0), b"other").unwrap();
    let bytes = w.finish();
    let archive = Archive::new(&bytes);
    let entries = read_all(&bytes).unwrap();
    assert_eq!(entries.len(), 5);
    let links = &entries[1..4];
    for (i, e) in links.iter().enumerate() {
        assert!(e.is_hard_link());
        assert_eq!((e.ino, e.nlink), (722, 3));
        assert_eq!(e.data.is_empty(), i != 2, "data only on the last link");
        assert_eq!(archive.link_data(e).unwrap(), b"\x7fELF...");
    }
    assert!(!entries[4].is_hard_link());
    assert_eq!(entries[4].ino, 723);
    assert_eq!(archive.link_data(&entries[4]).unwrap(), b"other");
    assert_eq!(archive.link_data(&entries[0]).unwrap(), b"");
}

#[test]
fn hard_link_data_ignores_other_inodes_and_other_devices() {
    let mut first = fields(0o100644, "a", b"");
    first[NLINK] = 2;
    first[INO] = 7;
    let mut other_dev = fields(0o100644, "b", b"wrong");
    other_dev[NLINK] = 2;
    other_dev[INO] = 7;
    other_dev[7] = 1; // c_devmajor
    let mut last = fields(0o100644, "c", b"right");
    last[NLINK] = 2;
    last[INO] = 7;
    let bytes = cat(&[
        &raw_entry(&MAGIC_NEWC, first, b"a\0", b""),
        &raw_entry(&MAGIC_NEWC, other_dev, b"b\0", b"wrong"),
        &raw_entry(&MAGIC_NEWC, last, b"c\0", b"right"),
        &trailer(),
    ]);
    let entries = read_all(&bytes).unwrap();
    let archive = Archive::new(&bytes);
    assert_eq!(archive.link_data(&entries[0]).unwrap(), b"right");
    assert_eq!(archive.link_data(&entries[1]).unwrap(), b"wrong");
}

#[test]
fn hard_link_data_reports_damage_after_the_entry() {
    let mut f = fields(0o100644, "a", b"");
    f[NLINK] = 2;
    let bytes = cat(&[&raw_entry(&MAGIC_NEWC, f, b"a\0", b""), b"junk"]);
    let mut entries = Archive::new(&bytes).entries();
    let first = entries.next().unwrap().unwrap();
    let err = Archive::new(&bytes).link_data(&first).unwrap_err();
    assert_eq!((err.kind(), err.offset()), (ErrorKind::BadMagic, 112));
}

#[test]
fn checksummed_entries_are_verified() {
    let data = b"\xff\xfe\x01";
    let mut f = fields(0o100644, "c", data);
    f[CHECK] = 0xff + 0xfe + 0x01;
    let good = cat(&[&raw_entry(&MAGIC_NEWC_CRC, f, b"c\0", data), &trailer()]);
    assert_eq!(read_all(&good).unwrap()[0].data, data);

    f[CHECK] += 1;
    let bad = cat(&[&raw_entry(&MAGIC_NEWC_CRC, f, b"c\0", data), &trailer()]);
    assert_eq!(
        first_error(&bad).kind(),
        ErrorKind::BadChecksum {
            expected: 0x1ff,
            computed: 0x1fe
        }
    );
    // 070701 ignores the field.
    let unchecked = cat(&[&raw_entry(&MAGIC_NEWC, f, b"c\0", data), &trailer()]);
    assert!(read_all(&unchecked).is_ok());
}

#[test]
fn lower_case_hex_is_accepted() {
    let entry = honest(0o100644, "f", b"").to_ascii_lowercase();
    let archive = cat(&[&entry, &trailer()]);
    assert_eq!(read_all(&archive).unwrap()[0].mode, 0o100644);
}

#[test]
fn malformed_headers_are_reported_with_field_and_offset() {
    let good = honest(0o100644, "a", b"abc");
    let second = good.len();

    let mut bad_magic = cat(&[&good, &good, &trailer()]);
    bad_magic[second + 5] = b'3';
    let err = first_error(&bad_magic);
    assert_eq!((err.kind(), err.offset()), (ErrorKind::BadMagic, second));

    for (i, field) in ["c_ino", "c_mode", "c_filesize", "c_namesize", "c_check"]
        .iter()
        .zip([0, 1, 6, 11, 12])
        .map(|(f, i)| (i, *f))
    {
        for junk in [b'g', b' ', b'-', b'+', 0] {
            let mut bytes = cat(&[&good, &trailer()]);
            bytes[6 + 8 * i + 3] = junk;
            let err = first_error(&bytes);
            assert_eq!(err.kind(), ErrorKind::BadField { field });
        }
    }
}

#[test]
fn malformed_names_are_refused() {
    let tr = trailer();
    let mut f = fields(0o100644, "ab", b"");
    let cases: [(&[u8], u32, ErrorKind); 4] = [
        (b"ab\0", 0, ErrorKind::NameNotTerminated),
        (b"abc", 3, ErrorKind::NameNotTerminated),
        (b"a\0b\0", 4, ErrorKind::NameHasNul),
        (b"a\xffb\0", 4, ErrorKind::NameNotUtf8),
    ];
    for (name, namesize, want) in cases {
        f[NAMESIZE] = namesize;
        let bytes = cat(&[&raw_entry(&MAGIC_NEWC, f, name, b""), &tr]);
        assert_eq!(first_error(&bytes).kind(), want, "{name:?}");
    }
}

#[test]
fn lengths_beyond_the_archive_are_truncation_not_overflow() {
    let tr = trailer();
    let mut f = fields(0o100644, "a", b"");
    f[NAMESIZE] = u32::MAX;
    let bytes = cat(&[&raw_entry(&MAGIC_NEWC, f, b"a\0", b""), &tr]);
    assert_eq!(first_error(&bytes).kind(), ErrorKind::TruncatedName);

    let mut f = fields(0o100644, "a", b"");
    f[FILESIZE] = u32::MAX;
    let bytes = cat(&[&raw_entry(&MAGIC_NEWC, f, b"a\0", b""), &tr]);
    assert_eq!(first_error(&bytes).kind(), ErrorKind::TruncatedData);
}

#[test]
fn truncation_is_reported_by_where_it_falls() {
    // Header 0..110, name "abcdef\0" 110..117, padding to 120, data
    // 120..125, padding to 128, trailer.
    let archive = cat(&[&honest(0o100644, "abcdef", b"12345"), &trailer()]);
    for (len, want) in [
        (0, ErrorKind::MissingTrailer),
        (4, ErrorKind::TruncatedHeader),
        (109, ErrorKind::TruncatedHeader),
        (110, ErrorKind::TruncatedName),
        (116, ErrorKind::TruncatedName),
        (117, ErrorKind::TruncatedName),
        (119, ErrorKind::TruncatedName),
        (120, ErrorKind::TruncatedData),
        (126, ErrorKind::TruncatedData),
        (128, ErrorKind::MissingTrailer),
    ] {
        let err = first_error(&archive[..len]);
        assert_eq!(err.kind(), want, "truncated to {len}");
    }
    assert_eq!(first_error(&archive[..128]).offset(), 128);
}

#[test]
fn iteration_stops_after_the_first_error() {
    let archive = cat(&[&honest(0o100644, "a", b""), b"07070X"]);
    let mut entries = Archive::new(&archive).entries();
    assert!(entries.next().unwrap().is_ok());
    assert!(entries.next().unwrap().is_err());
    assert!(entries.next().is_none());
}

#[test]
fn errors_display_what_and_where() {
    let archive = cat(&[&honest(0o100644, "a", b""), b"ustar"]);
    let err = first_error(&archive);
    assert_eq!(
        err.to_string(),
        "cpio: bad magic (expected \"070701\" or \"070702\") (entry at offset 0x70)"
    );
    let mut bytes = trailer();
    bytes[60] = b'z';
    assert_eq!(
        first_error(&bytes).to_string(),
        "cpio: header field c_filesize is not 8 hexadecimal digits (entry at offset 0x0)"
    );
    let kinds = [
        ErrorKind::TruncatedHeader,
        ErrorKind::TruncatedName,
        ErrorKind::TruncatedData,
        ErrorKind::NameNotTerminated,
        ErrorKind::NameHasNul,
        ErrorKind::NameNotUtf8,
        ErrorKind::UnknownFileType { mode: 0o170644 },
        ErrorKind::BadChecksum {
            expected: 1,
            computed: 2,
        },
        ErrorKind::BadSymlinkTarget,
        ErrorKind::MissingTrailer,
        ErrorKind::LengthOverflow,
    ];
    let texts: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
    for (i, t) in texts.iter().enumerate() {
        assert!(!t.is_empty());
        assert!(!texts[..i].contains(t), "{t} is said twice");
    }
    assert!(texts[6].contains("0o170644"));
}

#[test]
fn writer_refuses_bad_entries_and_keeps_what_it_had() {
    let meta = Metadata::new(0o644, 0, 0);
    let mut w = Writer::new();
    w.file("kept", meta, b"k").unwrap();
    let before = w.clone().finish();
    assert_eq!(w.file("a\0b", meta, b""), Err(WriteError::NameHasNul));
    assert_eq!(w.dir("/TRAILER!!!", meta), Err(WriteError::NameIsTrailer));
    assert_eq!(
        w.file("f", Metadata::new(0o100644, 0, 0), b""),
        Err(WriteError::BadMode(0o100644))
    );
    assert_eq!(w.symlink("l", "", meta), Err(WriteError::BadSymlinkTarget));
    assert_eq!(w.symlink("l", "a\0", meta), Err(WriteError::BadSymlinkTarget));
    assert_eq!(w.file_with_links(&[], meta, b""), Err(WriteError::NoNames));
    assert_eq!(
        w.file_with_links(&["ok", "TRAILER!!!"], meta, b""),
        Err(WriteError::NameIsTrailer)
    );
    assert_eq!(w.finish(), before);
    for e in [
        WriteError::NameHasNul,
        WriteError::NameIsTrailer,
        WriteError::TooLong,
        WriteError::BadMode(0o10000),
        WriteError::BadSymlinkTarget,
        WriteError::NoNames,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn writer_numbers_inodes_and_keeps_mtime() {
    let mut w = Writer::with_first_ino(10);
    let meta = Metadata {
        mode: 0o4755,
        uid: 1,
        gid: 2,
        mtime: 1_700_000_000,
    };
    w.file("a", meta, b"").unwrap();
    w.dir("./b", meta).unwrap();
    let bytes = w.finish();
    let entries = read_all(&bytes).unwrap();
    assert_eq!(entries[0].ino, 10);
    assert_eq!(entries[1].ino, 11);
    assert_eq!(entries[1].raw_name, "./b");
    assert_eq!(entries[1].name, "b");
    assert_eq!(entries[0].permissions(), 0o4755);
    assert!(entries.iter().all(|e| e.mtime == 1_700_000_000));
}

/// What a test entry is, independent of how it was written.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Dir,
    File(Vec<u8>),
    Symlink(String),
    Device(DeviceKind, u32, u32),
}

fn arb_name() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9_.-]{1,12}|é|→", 1..4).prop_filter_map(
        "not a name of the root or the trailer",
        |parts| {
            let name = parts.join("/");
            let normal = name != TRAILER_NAME && !name.starts_with("./") && name != ".";
            normal.then_some(name)
        },
    )
}

fn arb_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Dir),
        prop::collection::vec(any::<u8>(), 0..300).prop_map(Kind::File),
        "[^\0]{1,40}".prop_map(Kind::Symlink),
        (any::<bool>(), any::<u32>(), any::<u32>()).prop_map(|(b, ma, mi)| {
            let kind = if b { DeviceKind::Block } else { DeviceKind::Char };
            Kind::Device(kind, ma, mi)
        }),
    ]
}

fn arb_meta() -> impl Strategy<Value = Metadata> {
    (0..=PERMISSION_MASK, any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(mode, uid, gid, mtime)| Metadata {
        mode,
        uid,
        gid,
        mtime,
    })
}

fn arb_entries() -> impl Strategy<Value = Vec<(String, bool, Kind, Metadata)>> {
    prop::collection::vec((arb_name(), any::<bool>(), arb_kind(), arb_meta()), 0..12)
}

fn write(entries: &[(String, bool, Kind, Metadata)]) -> Vec<u8> {
    let mut w = Writer::new();
    for (name, slash, kind, meta) in entries {
        let name = if *slash { format!("/{name}") } else { name.clone() };
        match kind {
            Kind::Dir => w.dir(&name, *meta),
            Kind::File(data) => w.file(&name, *meta, data),
            Kind::Symlink(target) => w.symlink(&name, target, *meta),
            Kind::Device(k, ma, mi) => w.device(&name, *k, *ma, *mi, *meta),
        }
        .unwrap();
    }
    w.finish()
}

/// A valid archive with a bit of everything, for the damage tests.
fn arb_archive() -> impl Strategy<Value = Vec<u8>> {
    (arb_entries(), prop::collection::vec(arb_name(), 0..3)).prop_map(|(entries, links)| {
        let mut bytes = write(&entries);
        if !links.is_empty() {
            // Append a hard-linked file before the trailer.
            let mut w = Writer::with_first_ino(1_000_000);
            let names: Vec<&str> = links.iter().map(String::as_str).collect();
            w.file_with_links(&names, Metadata::new(0o644, 0, 0), b"linked")
                .unwrap();
            let linked = w.finish();
            let trailer_len = trailer().len();
            bytes.truncate(bytes.len() - trailer_len);
            bytes.extend_from_slice(&linked);
        }
        bytes
    })
}

proptest! {
    #[test]
    fn round_trip_gives_back_every_entry(entries in arb_entries()) {
        let bytes = write(&entries);
        prop_assert_eq!(bytes.len() % 4, 0);
        let read = read_all(&bytes).unwrap();
        prop_assert_eq!(read.len(), entries.len());
        for (i, ((name, _, kind, meta), got)) in entries.iter().zip(&read).enumerate() {
            prop_assert_eq!(got.name, name.as_str());
            prop_assert_eq!(got.raw_name, name.as_str());
            prop_assert_eq!(got.ino, Writer::FIRST_INO + i as u32);
            prop_assert_eq!(got.permissions(), meta.mode);
            prop_assert_eq!((got.uid, got.gid, got.mtime, got.nlink), (meta.uid, meta.gid, meta.mtime, 1));
            let back = match got.file_type() {
                FileType::Directory => Kind::Dir,
                FileType::Regular => Kind::File(got.data.to_vec()),
                FileType::Symlink => Kind::Symlink(got.symlink_target().unwrap().to_string()),
                FileType::CharDevice => Kind::Device(DeviceKind::Char, got.rdev_major, got.rdev_minor),
                FileType::BlockDevice => Kind::Device(DeviceKind::Block, got.rdev_major, got.rdev_minor),
                other => return Err(TestCaseError::fail(format!("wrote no {other:?}"))),
            };
            prop_assert_eq!(&back, kind);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = exercise(&bytes);
    }

    #[test]
    fn random_headers_never_panic(
        magic in prop_oneof![Just(MAGIC_NEWC), Just(MAGIC_NEWC_CRC)],
        f in prop::array::uniform13(prop_oneof![0..300u32, any::<u32>()]),
        name in prop::collection::vec(any::<u8>(), 0..20),
        data in prop::collection::vec(any::<u8>(), 0..40),
        tail in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let bytes = cat(&[&raw_entry(&magic, f, &name, &data), &tail]);
        let _ = exercise(&bytes);
    }

    #[test]
    fn every_truncation_is_an_error(bytes in arb_archive()) {
        prop_assert!(exercise(&bytes).is_ok());
        for len in 0..bytes.len() {
            prop_assert!(exercise(&bytes[..len]).is_err(), "prefix of {} bytes accepted", len);
        }
    }

    #[test]
    fn single_byte_corruption_never_panics(
        bytes in arb_archive(),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
    ) {
        let mut bytes = bytes;
        let i = at.index(bytes.len());
        bytes[i] = value;
        let _ = exercise(&bytes);
    }
}

#[test]
fn every_single_byte_corruption_of_the_sample_never_panics() {
    let mut bytes = SAMPLE.to_vec();
    for i in 0..bytes.len() {
        let orig = bytes[i];
        for value in [0, b'0', b'7', b'F', b'f', b'g', b'/', 0xff] {
            bytes[i] = value;
            let _ = exercise(&bytes);
        }
        bytes[i] = orig;
    }
    assert_eq!(exercise(&bytes), Ok(6));
}
