//! Linux's `kstrtoull`, `kstrtoll` and `kstrtoul` (lib/kstrtox.c): base 0
//! picks hexadecimal for `0x`, octal for a leading `0`, decimal otherwise;
//! one trailing newline is allowed; `+` is allowed, `-` only for the signed
//! form; overflow is `ERANGE`, anything else wrong `EINVAL`.

use uapi::Errno;

/// Parses digits of `base` from the start of `s`: the value, the count of
/// digits, and whether it overflowed (Linux's `_parse_integer`).
pub(crate) fn parse_integer(s: &[u8], base: u32) -> (u64, usize, bool) {
    let mut res: u64 = 0;
    let mut n = 0usize;
    let mut overflow = false;
    for &c in s {
        let val = match c.to_ascii_lowercase() {
            d @ b'0'..=b'9' => u32::from(d - b'0'),
            l @ b'a'..=b'f' => u32::from(l - b'a') + 10,
            _ => break,
        };
        if val >= base {
            break;
        }
        match res
            .checked_mul(u64::from(base))
            .and_then(|r| r.checked_add(u64::from(val)))
        {
            Some(r) => res = r,
            None => {
                overflow = true;
                res = res.wrapping_mul(u64::from(base)).wrapping_add(u64::from(val));
            }
        }
        n += 1;
    }
    (res, n, overflow)
}

fn kstrtoull_unsigned(s: &[u8], base: u32) -> Result<u64, Errno> {
    let mut base = base;
    let mut s = s;
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    if base == 0 {
        base = if at(s, 0) == b'0' {
            if at(s, 1).eq_ignore_ascii_case(&b'x') && at(s, 2).is_ascii_hexdigit() {
                16
            } else {
                8
            }
        } else {
            10
        };
    }
    if base == 16 && at(s, 0) == b'0' && at(s, 1).eq_ignore_ascii_case(&b'x') {
        s = s.get(2..).unwrap_or(&[]);
    }
    let (v, n, overflow) = parse_integer(s, base);
    if overflow {
        return Err(Errno::ERANGE);
    }
    if n == 0 {
        return Err(Errno::EINVAL);
    }
    let mut rest = s.get(n..).unwrap_or(&[]);
    if rest.first() == Some(&b'\n') {
        rest = rest.get(1..).unwrap_or(&[]);
    }
    if !rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(v)
}

/// `kstrtoull(s, base)`.
pub fn kstrtoull(s: &[u8], base: u32) -> Result<u64, Errno> {
    let s = s.strip_prefix(b"+").unwrap_or(s);
    kstrtoull_unsigned(s, base)
}

/// `kstrtoll(s, base)`.
pub fn kstrtoll(s: &[u8], base: u32) -> Result<i64, Errno> {
    if let Some(rest) = s.strip_prefix(b"-") {
        let t = kstrtoull_unsigned(rest, base)?;
        let neg = (t as i64).wrapping_neg();
        if neg > 0 {
            return Err(Errno::ERANGE);
        }
        Ok(neg)
    } else {
        let t = kstrtoull(s, base)?;
        if (t as i64) < 0 {
            return Err(Errno::ERANGE);
        }
        Ok(t as i64)
    }
}

/// `kstrtoul(s, base)`: on arm64 `unsigned long` is 64 bits.
pub fn kstrtoul(s: &[u8], base: u32) -> Result<u64, Errno> {
    kstrtoull(s, base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_detected_from_prefix() {
        assert_eq!(kstrtoull(b"10", 0), Ok(10));
        assert_eq!(kstrtoull(b"010", 0), Ok(8));
        assert_eq!(kstrtoull(b"0x10", 0), Ok(16));
        assert_eq!(kstrtoull(b"0X1f", 0), Ok(31));
        assert_eq!(kstrtoull(b"0", 0), Ok(0));
        assert_eq!(kstrtoull(b"08", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"0x", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"0x1g", 0), Err(Errno::EINVAL));
    }

    #[test]
    fn signs_newline_and_overflow() {
        assert_eq!(kstrtoull(b"+5", 0), Ok(5));
        assert_eq!(kstrtoull(b"-5", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"5\n", 0), Ok(5));
        assert_eq!(kstrtoull(b"5\n\n", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"18446744073709551615", 0), Ok(u64::MAX));
        assert_eq!(kstrtoull(b"18446744073709551616", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtoull(b"", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoll(b"-1", 0), Ok(-1));
        assert_eq!(kstrtoll(b"-0x10", 0), Ok(-16));
        assert_eq!(kstrtoll(b"-9223372036854775808", 0), Ok(i64::MIN));
        assert_eq!(kstrtoll(b"-9223372036854775809", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtoll(b"9223372036854775808", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtoll(b"-", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoll(b"--1", 0), Err(Errno::EINVAL));
    }
}
