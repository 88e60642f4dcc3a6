//! The context records in `sigcontext.__reserved` (and an `extra_context`
//! block) that `rt_sigreturn` reads back: Linux's `parse_user_sigframe`
//! (arch/arm64/kernel/signal.c). Every record is `{magic: u32, size: u32}`
//! then its body, 16-byte aligned; a zero record ends the list. A record the
//! kernel does not know, a size that does not fit, a second copy of a record
//! or an `extra_context` that does not point right after the terminator that
//! follows it makes the frame invalid (the caller then forces SIGSEGV).

use alloc::vec::Vec;

pub use uapi::sigframe::{
    ESR_MAGIC, EXTRA_MAGIC, EXTRA_SIZE, FPSIMD_MAGIC, FPSIMD_SIZE, RESERVED_SIZE, UNSUPPORTED_MAGICS,
};
/// A terminator record, rounded up to the record alignment.
pub const TERMINATOR_SIZE: u64 = 16;
/// Largest frame Linux accepts with an `extra_context` (`SIGFRAME_MAXSZ`).
pub const SIGFRAME_MAXSZ: u64 = 256 * 1024;

/// Why a frame's records were refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid<E> {
    /// The records break a rule (Linux's EINVAL).
    Malformed,
    /// Reading user memory failed (Linux's EFAULT).
    Fault(E),
}

/// What `parse` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// The `fpsimd_context` record's bytes, header included.
    pub fpsimd: Option<Vec<u8>>,
}

fn word32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn word64(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(w)
}

/// Walks the records of a frame at user address `frame` whose `__reserved`
/// area (`reserved`, copied in) sits at user address `reserved_addr`.
/// `read_user(addr, len)` copies an `extra_context` block in.
pub fn parse<E>(
    reserved: &[u8],
    reserved_addr: u64,
    frame: u64,
    read_user: &mut dyn FnMut(u64, usize) -> Result<Vec<u8>, E>,
) -> Result<Records, Invalid<E>> {
    let mut out = Records::default();
    let mut extra: Option<Vec<u8>> = None;
    let mut base = reserved_addr;
    let mut offset: u64 = 0;
    let mut limit: u64 = reserved.len() as u64;
    if !base.is_multiple_of(16) {
        return Err(Invalid::Malformed);
    }
    loop {
        let buf: &[u8] = extra.as_deref().unwrap_or(reserved);
        if limit - offset < 8 || !offset.is_multiple_of(16) {
            return Err(Invalid::Malformed);
        }
        let o = offset as usize;
        let magic = word32(buf, o);
        let size = word32(buf, o + 4) as u64;
        if limit - offset < size {
            return Err(Invalid::Malformed);
        }
        match magic {
            0 => {
                return if size != 0 { Err(Invalid::Malformed) } else { Ok(out) };
            }
            FPSIMD_MAGIC => {
                if out.fpsimd.is_some() {
                    return Err(Invalid::Malformed);
                }
                out.fpsimd = Some(buf[o..o + size as usize].to_vec());
            }
            ESR_MAGIC => {}
            EXTRA_MAGIC => {
                if extra.is_some() || size < EXTRA_SIZE as u64 {
                    return Err(Invalid::Malformed);
                }
                let datap = word64(buf, o + 8);
                let extra_size = word32(buf, o + 16) as u64;
                // A terminator must follow the extra_context record.
                if limit - offset - size < TERMINATOR_SIZE {
                    return Err(Invalid::Malformed);
                }
                let end = o + size as usize;
                if word32(buf, end) != 0 || word32(buf, end + 4) != 0 {
                    return Err(Invalid::Malformed);
                }
                // The data must start right after that terminator, aligned,
                // and the whole frame stay under SIGFRAME_MAXSZ: an
                // extra_context can point nowhere else (not into the kernel,
                // not back into the frame).
                let userp = base.wrapping_add(offset + size + TERMINATOR_SIZE);
                if !datap.is_multiple_of(16) || !extra_size.is_multiple_of(16) || datap != userp {
                    return Err(Invalid::Malformed);
                }
                let room = frame as i128 + SIGFRAME_MAXSZ as i128 - userp as i128;
                if extra_size as i128 > room {
                    return Err(Invalid::Malformed);
                }
                let data = read_user(datap, extra_size as usize).map_err(Invalid::Fault)?;
                if data.len() as u64 != extra_size {
                    return Err(Invalid::Malformed);
                }
                extra = Some(data);
                base = datap;
                offset = 0;
                limit = extra_size;
                continue;
            }
            _ => return Err(Invalid::Malformed),
        }
        if size < 8 || limit - offset < size {
            return Err(Invalid::Malformed);
        }
        offset += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const FRAME: u64 = 0x7fff_0000;
    const RES: u64 = FRAME + 128 + 176 + 288;

    fn record(buf: &mut [u8], off: usize, magic: u32, size: u32) {
        buf[off..off + 4].copy_from_slice(&magic.to_le_bytes());
        buf[off + 4..off + 8].copy_from_slice(&size.to_le_bytes());
    }

    fn with_fpsimd() -> Vec<u8> {
        let mut b = vec![0u8; RESERVED_SIZE];
        record(&mut b, 0, FPSIMD_MAGIC, FPSIMD_SIZE);
        b[8] = 0xaa;
        b
    }

    fn no_user(_: u64, _: usize) -> Result<Vec<u8>, ()> {
        Err(())
    }

    #[test]
    fn fpsimd_then_terminator_is_accepted() {
        let b = with_fpsimd();
        let r = parse(&b, RES, FRAME, &mut no_user).expect("valid");
        let fp = r.fpsimd.expect("fpsimd found");
        assert_eq!(fp.len(), FPSIMD_SIZE as usize);
        assert_eq!(fp[8], 0xaa);
    }

    #[test]
    fn esr_record_is_skipped() {
        let mut b = with_fpsimd();
        record(&mut b, 528, ESR_MAGIC, 16);
        assert!(parse(&b, RES, FRAME, &mut no_user).is_ok());
    }

    #[test]
    fn unknown_record_after_fpsimd_is_refused() {
        let mut b = with_fpsimd();
        record(&mut b, 528, 0x1234_5678, 16);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
    }

    #[test]
    fn records_of_absent_features_are_refused() {
        for m in UNSUPPORTED_MAGICS {
            let mut b = with_fpsimd();
            record(&mut b, 528, m, 16);
            assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed), "{m:#x}");
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        // Smaller than a header.
        let mut b = with_fpsimd();
        record(&mut b, 528, ESR_MAGIC, 4);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
        // Beyond the area.
        let mut b = with_fpsimd();
        record(&mut b, 528, ESR_MAGIC, 8192);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
        // Misaligned next record.
        let mut b = with_fpsimd();
        record(&mut b, 528, ESR_MAGIC, 24);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
        // A terminator with a size.
        let mut b = with_fpsimd();
        record(&mut b, 528, 0, 16);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
    }

    #[test]
    fn missing_terminator_is_refused() {
        let mut b = vec![0u8; RESERVED_SIZE];
        let mut off = 0;
        while off < RESERVED_SIZE {
            record(&mut b, off, ESR_MAGIC, 16);
            off += 16;
        }
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
    }

    #[test]
    fn second_fpsimd_record_is_refused() {
        let mut b = with_fpsimd();
        record(&mut b, 528, FPSIMD_MAGIC, FPSIMD_SIZE);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Malformed));
    }

    fn extra_record(b: &mut [u8], off: usize, datap: u64, size: u32) {
        record(b, off, EXTRA_MAGIC, EXTRA_SIZE);
        b[off + 8..off + 16].copy_from_slice(&datap.to_le_bytes());
        b[off + 16..off + 20].copy_from_slice(&size.to_le_bytes());
    }

    #[test]
    fn extra_context_into_the_kernel_is_refused() {
        let mut b = with_fpsimd();
        extra_record(&mut b, 528, 0xffff_0000_0000_0000, 64);
        let mut read = |_: u64, n: usize| -> Result<Vec<u8>, ()> { Ok(vec![0; n]) };
        assert_eq!(parse(&b, RES, FRAME, &mut read), Err(Invalid::Malformed));
    }

    #[test]
    fn extra_context_right_after_its_terminator_is_followed() {
        let mut b = vec![0u8; RESERVED_SIZE];
        let datap = RES + 32 + 16;
        extra_record(&mut b, 0, datap, 544);
        let mut read = |addr: u64, n: usize| -> Result<Vec<u8>, ()> {
            assert_eq!((addr, n), (datap, 544));
            let mut d = vec![0u8; n];
            record(&mut d, 0, FPSIMD_MAGIC, FPSIMD_SIZE);
            Ok(d)
        };
        let r = parse(&b, RES, FRAME, &mut read).expect("valid");
        assert!(r.fpsimd.is_some());
    }

    #[test]
    fn extra_context_too_large_or_nested_is_refused() {
        let mut b = vec![0u8; RESERVED_SIZE];
        let datap = RES + 48;
        extra_record(&mut b, 0, datap, (SIGFRAME_MAXSZ as u32) & !15);
        let mut read = |_: u64, n: usize| -> Result<Vec<u8>, ()> { Ok(vec![0; n]) };
        assert_eq!(parse(&b, RES, FRAME, &mut read), Err(Invalid::Malformed));
        let mut nested = |_: u64, n: usize| -> Result<Vec<u8>, ()> {
            let mut d = vec![0u8; n];
            extra_record(&mut d, 0, datap + 48, 64);
            Ok(d)
        };
        extra_record(&mut b, 0, datap, 128);
        assert_eq!(parse(&b, RES, FRAME, &mut nested), Err(Invalid::Malformed));
    }

    #[test]
    fn unreadable_extra_context_is_a_fault() {
        let mut b = vec![0u8; RESERVED_SIZE];
        extra_record(&mut b, 0, RES + 48, 64);
        assert_eq!(parse(&b, RES, FRAME, &mut no_user), Err(Invalid::Fault(())));
    }
}
