//! Linux's number parsers, with their exact acceptance rules: the grammar
//! inherits every quirk of `kstrtoul`, `kstrtol` and `simple_strtoul`
//! (lib/kstrtox.c, lib/vsprintf.c), e.g. a leading `+`, base 0 picking
//! octal for a leading `0`, and `0x` needing a hex digit after it.

/// Why a strict parse failed: Linux's `-EINVAL` (syntax) or `-ERANGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumError {
    /// Not a number, or trailing garbage.
    Invalid,
    /// Does not fit the type.
    Range,
}

fn digit_value(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        b'a'..=b'f' => Some(u32::from(c - b'a') + 10),
        b'A'..=b'F' => Some(u32::from(c - b'A') + 10),
        _ => None,
    }
}

/// `_parse_integer_fixup_radix`: returns the base and how many prefix bytes
/// to skip.
fn fixup_radix(s: &[u8], base: u32) -> (u32, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut base = base;
    if base == 0 {
        base = if at(0) == b'0' {
            if at(1).eq_ignore_ascii_case(&b'x') && at(2).is_ascii_hexdigit() {
                16
            } else {
                8
            }
        } else {
            10
        };
    }
    if base == 16 && at(0) == b'0' && at(1).eq_ignore_ascii_case(&b'x') {
        (16, 2)
    } else {
        (base, 0)
    }
}

/// Parses digits of `base` from the start of `s`: (value, digits consumed,
/// overflowed). The value wraps on overflow, as `simple_strtoull`'s does.
fn parse_digits(s: &[u8], base: u32) -> (u64, usize, bool) {
    let mut v: u64 = 0;
    let mut overflow = false;
    let mut n = 0;
    for &c in s {
        let Some(d) = digit_value(c) else { break };
        if d >= base {
            break;
        }
        match v.checked_mul(u64::from(base)).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => {
                overflow = true;
                v = v.wrapping_mul(u64::from(base)).wrapping_add(u64::from(d));
            }
        }
        n += 1;
    }
    (v, n, overflow)
}

/// `kstrtoull(s, base)`: the whole string must be the number (one trailing
/// newline allowed, as in Linux), with an optional leading `+`.
pub fn kstrtoull(s: &str, base: u32) -> Result<u64, NumError> {
    let mut b = s.as_bytes();
    if b.first() == Some(&b'+') {
        b = &b[1..];
    }
    let (base, skip) = fixup_radix(b, base);
    let b = b.get(skip..).unwrap_or(&[]);
    let (v, n, overflow) = parse_digits(b, base);
    if n == 0 {
        return Err(NumError::Invalid);
    }
    if overflow {
        return Err(NumError::Range);
    }
    let rest = &b[n..];
    if !(rest.is_empty() || rest == b"\n") {
        return Err(NumError::Invalid);
    }
    Ok(v)
}

/// `kstrtoul` on a 64-bit kernel.
pub fn kstrtoul(s: &str, base: u32) -> Result<u64, NumError> {
    kstrtoull(s, base)
}

/// `kstrtouint`.
pub fn kstrtouint(s: &str, base: u32) -> Result<u32, NumError> {
    let v = kstrtoull(s, base)?;
    u32::try_from(v).map_err(|_| NumError::Range)
}

/// `kstrtol` on a 64-bit kernel (`kstrtoll`).
pub fn kstrtol(s: &str, base: u32) -> Result<i64, NumError> {
    if let Some(rest) = s.strip_prefix('-') {
        let v = kstrtoull(rest, base)?;
        if v > (i64::MAX as u64) + 1 {
            return Err(NumError::Range);
        }
        Ok((v as i64).wrapping_neg())
    } else {
        let v = kstrtoull(s, base)?;
        i64::try_from(v).map_err(|_| NumError::Range)
    }
}

/// `simple_strtoul(s, &end, base)`: parses as far as it can and returns the
/// value with the number of bytes consumed (0 if nothing was a digit, in
/// which case Linux's `end` is `s`).
pub fn simple_strtoul(s: &str, base: u32) -> (u64, usize) {
    let b = s.as_bytes();
    let (base, skip) = fixup_radix(b, base);
    let (v, n, _) = parse_digits(b.get(skip..).unwrap_or(&[]), base);
    if n == 0 {
        // Linux's `end` points past the prefix even with no digits only if
        // the prefix was consumed; with "0x" and no hex digit the radix is
        // 8 and "0" is a digit, so a consumed prefix always has digits.
        (0, 0)
    } else {
        (v, skip + n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrtoul_follows_linux_prefixes_and_signs() {
        assert_eq!(kstrtoul("10", 0), Ok(10));
        assert_eq!(kstrtoul("0x10", 0), Ok(16));
        assert_eq!(kstrtoul("010", 0), Ok(8));
        assert_eq!(kstrtoul("+5", 0), Ok(5));
        assert_eq!(kstrtoul("0x", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoul("08", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoul("", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoul("-1", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoul("18446744073709551616", 0), Err(NumError::Range));
        assert_eq!(kstrtoul("0xffffffffffffffff", 0), Ok(u64::MAX));
        assert_eq!(kstrtoul("12x", 10), Err(NumError::Invalid));
        assert_eq!(kstrtouint("4294967296", 0), Err(NumError::Range));
    }

    #[test]
    fn kstrtol_takes_both_signs_and_checks_range() {
        assert_eq!(kstrtol("-8", 0), Ok(-8));
        assert_eq!(kstrtol("-0x10", 0), Ok(-16));
        assert_eq!(kstrtol("9223372036854775807", 0), Ok(i64::MAX));
        assert_eq!(kstrtol("-9223372036854775808", 0), Ok(i64::MIN));
        assert_eq!(kstrtol("9223372036854775808", 0), Err(NumError::Range));
        assert_eq!(kstrtol("--1", 0), Err(NumError::Invalid));
    }

    #[test]
    fn simple_strtoul_stops_at_first_non_digit() {
        assert_eq!(simple_strtoul("3@4/32", 0), (3, 1));
        assert_eq!(simple_strtoul("0x1f@", 0), (31, 4));
        assert_eq!(simple_strtoul("@4", 0), (0, 0));
        assert_eq!(simple_strtoul("0x", 0), (0, 1));
    }
}
