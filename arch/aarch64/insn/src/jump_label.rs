//! Static-key sites: which instruction a jump-label site holds in each
//! state and whether a site recorded in `__jump_table` is one the kernel
//! may patch (Linux's `arch_jump_label_transform_queue()` in
//! `arch/arm64/kernel/jump_label.c`, plus the boot-time checks Linux does
//! not make).
//!
//! A site is one instruction: `NOP` when execution falls through, `B
//! target` when it jumps. The kernel's `static_branch_*!` macros emit one
//! of the two, and `jump_label_init` refuses any entry that [`check_site`]
//! rejects.

use crate::decode;
use crate::encode::{self, InsnError};
use core::ops::Range;

/// What a site holds (Linux's `enum jump_label_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpLabelType {
    /// `NOP`: fall through.
    Nop,
    /// `B target`.
    Jmp,
}

/// The state of a site whose key is `enabled`, for a site recorded with
/// `branch` (the entry's branch bit: set by `static_branch_likely`, whose
/// fall-through is the enabled case). As Linux's `jump_label_type()`, the
/// site jumps when `enabled != branch`.
pub const fn jump_label_type(enabled: bool, branch: bool) -> JumpLabelType {
    if enabled != branch {
        JumpLabelType::Jmp
    } else {
        JumpLabelType::Nop
    }
}

/// The instruction for a site at `code` jumping to `target` in state `ty`.
/// `B` reaches ±128 MiB; anything else is refused rather than truncated.
pub fn jump_label_insn(code: u64, target: u64, ty: JumpLabelType) -> Result<u32, InsnError> {
    match ty {
        JumpLabelType::Nop => {
            if !code.is_multiple_of(4) {
                return Err(InsnError::Misaligned);
            }
            // The target must be reachable even while the site is a NOP:
            // the site will become a B to it.
            encode::b(code, target).map(|_| encode::NOP)
        }
        JumpLabelType::Jmp => encode::b(code, target),
    }
}

/// Why a `__jump_table` entry is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteError {
    /// The site is not 4-byte aligned.
    Misaligned,
    /// The site is outside kernel text.
    OutsideText,
    /// The branch target is outside kernel text.
    TargetOutsideText,
    /// The target is not 4-byte aligned or beyond B's ±128 MiB.
    Unreachable(InsnError),
    /// The site does not hold the instruction the build emitted.
    Unexpected {
        /// What the site holds.
        found: u32,
        /// What the build should have put there.
        expected: u32,
    },
}

impl core::fmt::Display for SiteError {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            SiteError::Misaligned => f.write_str("site not 4-byte aligned"),
            SiteError::OutsideText => f.write_str("site outside kernel text"),
            SiteError::TargetOutsideText => f.write_str("target outside kernel text"),
            SiteError::Unreachable(InsnError::OutOfRange) => f.write_str("target beyond B's range"),
            SiteError::Unreachable(_) => f.write_str("target not 4-byte aligned"),
            SiteError::Unexpected { found, expected } => {
                write!(f, "holds {found:08x}, the build emitted {expected:08x}")
            }
        }
    }
}

/// Checks a `__jump_table` entry at boot: the site `code` lies in `text`,
/// is aligned, `target` lies in `text` within B's range, and the site now
/// holds `found`, which must be the instruction the build emitted for
/// state `built`.
pub fn check_site(text: Range<u64>, code: u64, target: u64, built: JumpLabelType, found: u32) -> Result<(), SiteError> {
    if !code.is_multiple_of(4) {
        return Err(SiteError::Misaligned);
    }
    if !text.contains(&code) || code.checked_add(4).is_none_or(|end| end > text.end) {
        return Err(SiteError::OutsideText);
    }
    if !text.contains(&target) {
        return Err(SiteError::TargetOutsideText);
    }
    let expected = jump_label_insn(code, target, built).map_err(SiteError::Unreachable)?;
    if found != expected {
        return Err(SiteError::Unexpected { found, expected });
    }
    Ok(())
}

/// The state of the instruction `insn` at a site `code` that jumps to
/// `target`: `None` if it is neither that site's NOP nor its B.
pub fn site_state(code: u64, target: u64, insn: u32) -> Option<JumpLabelType> {
    if decode::is_nop(insn) {
        return Some(JumpLabelType::Nop);
    }
    match decode::decode_b_bl(insn, code) {
        Some(b) if !b.link && b.target == target => Some(JumpLabelType::Jmp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    const TEXT: Range<u64> = 0xffff_ffff_8008_0000..0xffff_ffff_8400_0000;
    const SITE: u64 = 0xffff_ffff_8010_0000;

    /// `B` built by hand from the ARM ARM's layout (opcode 0b000101, imm26
    /// = offset / 4 in two's complement), not by the encoder under test.
    fn b_by_hand(code: u64, target: u64) -> u32 {
        let words = (target as i64 - code as i64) / 4;
        0x1400_0000 | (words as u32 & 0x03ff_ffff)
    }

    #[test]
    fn the_site_jumps_exactly_when_enabled_differs_from_branch() {
        assert_eq!(jump_label_type(false, false), JumpLabelType::Nop);
        assert_eq!(jump_label_type(true, false), JumpLabelType::Jmp);
        assert_eq!(jump_label_type(false, true), JumpLabelType::Jmp);
        assert_eq!(jump_label_type(true, true), JumpLabelType::Nop);
    }

    #[test]
    fn forward_and_backward_sites_encode_the_exact_b() {
        // Forward by 8 bytes and backward by 8 bytes: the backward one has
        // every high bit of imm26 set (an encoder that shifts before
        // masking, or masks to fewer bits, gets these wrong).
        assert_eq!(jump_label_insn(SITE, SITE + 8, JumpLabelType::Jmp), Ok(0x1400_0002));
        assert_eq!(jump_label_insn(SITE, SITE - 8, JumpLabelType::Jmp), Ok(0x17ff_fffe));
        assert_eq!(jump_label_insn(SITE, SITE - 4, JumpLabelType::Jmp), Ok(0x17ff_ffff));
        assert_eq!(jump_label_insn(SITE, SITE, JumpLabelType::Jmp), Ok(0x1400_0000));
        assert_eq!(jump_label_insn(SITE, SITE - 8, JumpLabelType::Nop), Ok(encode::NOP));
        for t in [SITE + 4, SITE - 4, SITE + 0x0123_4568, SITE - 0x0123_4568] {
            assert_eq!(jump_label_insn(SITE, t, JumpLabelType::Jmp), Ok(b_by_hand(SITE, t)));
        }
    }

    #[test]
    fn b_reaches_128_mib_each_way_and_no_further() {
        let max_fwd = SITE + (128 << 20) - 4;
        let max_back = SITE - (128 << 20);
        assert_eq!(jump_label_insn(SITE, max_fwd, JumpLabelType::Jmp), Ok(0x15ff_ffff));
        assert_eq!(jump_label_insn(SITE, max_back, JumpLabelType::Jmp), Ok(0x1600_0000));
        for t in [max_fwd + 4, max_back - 4] {
            assert_eq!(jump_label_insn(SITE, t, JumpLabelType::Jmp), Err(InsnError::OutOfRange));
            // A NOP whose B could not be written is refused too.
            assert_eq!(jump_label_insn(SITE, t, JumpLabelType::Nop), Err(InsnError::OutOfRange));
        }
        assert_eq!(
            jump_label_insn(SITE + 2, SITE, JumpLabelType::Nop),
            Err(InsnError::Misaligned)
        );
        assert_eq!(
            jump_label_insn(SITE, SITE + 2, JumpLabelType::Jmp),
            Err(InsnError::Misaligned)
        );
    }

    #[test]
    fn check_site_refuses_each_inconsistency() {
        let b = b_by_hand(SITE, SITE - 16);
        assert_eq!(check_site(TEXT, SITE, SITE - 16, JumpLabelType::Jmp, b), Ok(()));
        assert_eq!(
            check_site(TEXT, SITE, SITE - 16, JumpLabelType::Nop, encode::NOP),
            Ok(())
        );
        assert_eq!(
            check_site(TEXT, SITE + 1, SITE, JumpLabelType::Nop, encode::NOP),
            Err(SiteError::Misaligned)
        );
        assert_eq!(
            check_site(TEXT, TEXT.end, SITE, JumpLabelType::Nop, encode::NOP),
            Err(SiteError::OutsideText)
        );
        assert_eq!(
            check_site(TEXT, TEXT.start - 4, SITE, JumpLabelType::Nop, encode::NOP),
            Err(SiteError::OutsideText)
        );
        assert_eq!(
            check_site(TEXT, SITE, TEXT.end + 8, JumpLabelType::Nop, encode::NOP),
            Err(SiteError::TargetOutsideText)
        );
        assert_eq!(
            check_site(TEXT, SITE, SITE + 6, JumpLabelType::Nop, encode::NOP),
            Err(SiteError::Unreachable(InsnError::Misaligned))
        );
        let wide = TEXT.start..TEXT.start + (512 << 20);
        assert_eq!(
            check_site(
                wide.clone(),
                wide.start,
                wide.start + (256 << 20),
                JumpLabelType::Nop,
                encode::NOP
            ),
            Err(SiteError::Unreachable(InsnError::OutOfRange))
        );
        // The build emitted a B but the site holds a NOP, or a B elsewhere.
        assert_eq!(
            check_site(TEXT, SITE, SITE - 16, JumpLabelType::Jmp, encode::NOP),
            Err(SiteError::Unexpected {
                found: encode::NOP,
                expected: b
            })
        );
        let elsewhere = b_by_hand(SITE, SITE + 16);
        assert_eq!(
            check_site(TEXT, SITE, SITE - 16, JumpLabelType::Jmp, elsewhere),
            Err(SiteError::Unexpected {
                found: elsewhere,
                expected: b
            })
        );
    }

    #[test]
    fn site_state_knows_only_the_sites_own_nop_and_b() {
        assert_eq!(site_state(SITE, SITE - 8, encode::NOP), Some(JumpLabelType::Nop));
        assert_eq!(site_state(SITE, SITE - 8, 0x17ff_fffe), Some(JumpLabelType::Jmp));
        assert_eq!(site_state(SITE, SITE + 8, 0x17ff_fffe), None);
        // BL to the target is not the site's B.
        assert_eq!(site_state(SITE, SITE - 8, 0x97ff_fffe), None);
        assert_eq!(site_state(SITE, SITE - 8, 0xd420_0080), None);
    }

    proptest::proptest! {
        #[test]
        fn every_reachable_site_round_trips_through_the_decoder(
            code in (TEXT.start / 4..TEXT.end / 4).prop_map(|w| w * 4),
            words in -(1i64 << 25)..(1i64 << 25),
        ) {
            let target = code.wrapping_add_signed(words * 4);
            let b = jump_label_insn(code, target, JumpLabelType::Jmp).unwrap();
            proptest::prop_assert_eq!(b, b_by_hand(code, target));
            proptest::prop_assert_eq!(site_state(code, target, b), Some(JumpLabelType::Jmp));
            let nop = jump_label_insn(code, target, JumpLabelType::Nop).unwrap();
            proptest::prop_assert_eq!(site_state(code, target, nop), Some(JumpLabelType::Nop));
        }
    }
}
