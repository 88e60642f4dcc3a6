//! Whatever the bytes, `parse` and `total_size` return: `Ok` or `Err`,
//! never a panic (the kernel parses before it can report one).

use proptest::prelude::*;

const FIXTURES: [&[u8]; 5] = [
    include_bytes!("fixtures/qemu-virt-smp1.dtb"),
    include_bytes!("fixtures/qemu-virt-smp4.dtb"),
    include_bytes!("fixtures/qemu-virt-gicv3.dtb"),
    include_bytes!("fixtures/bcm2711-rpi-4-b.dtb"),
    include_bytes!("fixtures/qemu-raspi4b.dtb"),
];
/// The smallest fixture, for the exhaustive checks.
const SMALL: &[u8] = FIXTURES[0];

fn header_word(dtb: &[u8], index: usize) -> u32 {
    u32::from_be_bytes(dtb[index * 4..index * 4 + 4].try_into().unwrap())
}

fn set_header_word(dtb: &mut [u8], index: usize, value: u32) {
    dtb[index * 4..index * 4 + 4].copy_from_slice(&value.to_be_bytes());
}

/// Parses, and when that succeeds, looks at every part of the result.
fn parse_anything(dtb: &[u8]) -> bool {
    let _ = devicetree::total_size(dtb);
    match devicetree::parse(dtb) {
        Ok(p) => {
            let _ = format!("{p:?}");
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

#[test]
fn every_truncation_of_a_fixture_is_an_error() {
    for len in 0..SMALL.len() {
        assert!(devicetree::parse(&SMALL[..len]).is_err(), "length {len}");
    }
}

#[test]
fn every_truncation_with_a_matching_totalsize_is_survived() {
    // The header agrees with the shorter blob, so the cut lands inside the
    // blocks themselves.
    for len in 0..SMALL.len() {
        let mut cut = SMALL[..len].to_vec();
        if len >= 8 {
            set_header_word(&mut cut, 1, len as u32);
        }
        parse_anything(&cut);
    }
}

#[test]
fn every_cut_of_the_structure_block_is_survived() {
    let size_struct = header_word(SMALL, 9);
    for size in 0..size_struct {
        let mut cut = SMALL.to_vec();
        set_header_word(&mut cut, 9, size);
        // Only the full block ends with its FDT_END token.
        assert!(!parse_anything(&cut) || size + 4 >= size_struct, "size {size}");
    }
}

#[test]
fn a_corruption_of_every_byte_of_a_fixture_is_survived() {
    // One change per offset, taking turns among zero, all-ones, and the
    // lowest and highest bit flipped (a length or offset made huge).
    let mut bad = SMALL.to_vec();
    for at in 0..SMALL.len() {
        let good = SMALL[at];
        bad[at] = [0x00, 0xff, good ^ 0x01, good ^ 0x80][at % 4];
        parse_anything(&bad);
        bad[at] = good;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_are_survived(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        parse_anything(&bytes);
    }

    /// Random bytes behind a header that passes the first checks, so that
    /// the block and token readers see them.
    #[test]
    fn random_blocks_behind_a_plausible_header_are_survived(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        offsets in proptest::array::uniform3(0u32..2100),
        sizes in proptest::array::uniform2(0u32..2100),
        version in 15u32..19,
    ) {
        let total = (40 + body.len()) as u32;
        let header = [
            0xd00d_feed, total, offsets[0], offsets[1], offsets[2],
            version, 16, 0, sizes[0], sizes[1],
        ];
        let mut dtb: Vec<u8> = header.iter().flat_map(|w| w.to_be_bytes()).collect();
        dtb.extend_from_slice(&body);
        parse_anything(&dtb);
    }

}

proptest! {
    // A parse of a whole fixture takes up to a millisecond in a debug build.
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_single_byte_corruptions_are_survived(
        fixture in 0..FIXTURES.len(),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
    ) {
        let mut bad = FIXTURES[fixture].to_vec();
        let at = at.index(bad.len());
        bad[at] = value;
        parse_anything(&bad);
    }

    #[test]
    fn random_corruptions_of_the_structure_block_are_survived(
        fixture in 0..FIXTURES.len(),
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bad = FIXTURES[fixture].to_vec();
        let (start, size) = (header_word(&bad, 2) as usize, header_word(&bad, 9) as usize);
        for (at, value) in changes {
            bad[start + at.index(size)] = value;
        }
        parse_anything(&bad);
    }

    #[test]
    fn random_truncations_with_a_matching_totalsize_are_survived(
        fixture in 0..FIXTURES.len(),
        at in any::<prop::sample::Index>(),
    ) {
        let dtb = FIXTURES[fixture];
        let len = at.index(dtb.len());
        let mut cut = dtb[..len].to_vec();
        if len >= 8 {
            set_header_word(&mut cut, 1, len as u32);
        }
        parse_anything(&cut);
    }
}
