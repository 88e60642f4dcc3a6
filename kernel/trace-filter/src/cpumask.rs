//! CPU masks for the filter's `CPUS{list}` operand, parsed as Linux's
//! `cpulist_parse()` (`bitmap_parselist` over `nr_cpu_ids` bits): regions
//! separated by commas or spaces, each `N`, `A-B`, `A-B:USED/GROUP` or
//! `all`, where `N` in a number's place means the last CPU.

use crate::kstrto::parse_integer;

/// The most CPUs a mask can name; `nr_cpu_ids` above it is clamped.
pub const MAX_CPUS: u32 = 512;

const WORDS: usize = (MAX_CPUS / 64) as usize;

/// A set of CPU numbers below [`MAX_CPUS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CpuMask {
    bits: [u64; WORDS],
}

impl CpuMask {
    /// Is `cpu` in the set?
    pub fn test(&self, cpu: u32) -> bool {
        let w = (cpu / 64) as usize;
        self.bits.get(w).is_some_and(|word| word & (1u64 << (cpu % 64)) != 0)
    }

    fn set(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if let Some(word) = self.bits.get_mut(w) {
            *word |= 1u64 << (cpu % 64);
        }
    }

    /// How many CPUs are in the set.
    pub fn weight(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    /// The lowest CPU in the set.
    pub fn first(&self) -> Option<u32> {
        (0..MAX_CPUS).find(|&c| self.test(c))
    }

    /// `cpulist_parse(list)` with `nr_cpu_ids` bits: `None` for any
    /// malformed or out-of-range list (Linux's `EINVAL`, `ERANGE`,
    /// `EOVERFLOW`, which the filter reports alike).
    pub fn parse_list(list: &[u8], nr_cpu_ids: u32) -> Option<CpuMask> {
        let nbits = nr_cpu_ids.clamp(1, MAX_CPUS);
        let lastbit = nbits - 1;
        let at = |i: usize| list.get(i).copied().unwrap_or(0);
        let end_of_str = |c: u8| c == 0 || c == b'\n';
        let end_of_region_start = |c: u8| c.is_ascii_whitespace() || c == b',';
        let end_of_region = |c: u8| end_of_region_start(c) || end_of_str(c);
        let getnum = |i: usize| -> Option<(u32, usize)> {
            if at(i) == b'N' {
                return Some((lastbit, i + 1));
            }
            let (n, len, overflow) = parse_integer(list.get(i..).unwrap_or(&[]), 10);
            if len == 0 || overflow {
                return None;
            }
            let n = u32::try_from(n).ok()?;
            Some((n, i + len))
        };
        let mut mask = CpuMask::default();
        let mut i = 0usize;
        loop {
            while end_of_region_start(at(i)) {
                i += 1;
            }
            if end_of_str(at(i)) {
                return Some(mask);
            }
            let (start, end, off, group);
            let rest = list.get(i..).unwrap_or(&[]);
            if rest.len() >= 3 && rest.get(..3).is_some_and(|a| a.eq_ignore_ascii_case(b"all")) {
                start = 0;
                end = lastbit;
                i += 3;
            } else {
                let (s, ni) = getnum(i)?;
                i = ni;
                start = s;
                if end_of_region(at(i)) {
                    end = start;
                } else {
                    if at(i) != b'-' {
                        return None;
                    }
                    let (e, ni) = getnum(i + 1)?;
                    i = ni;
                    end = e;
                }
            }
            if end_of_region(at(i)) {
                off = end.checked_add(1)?;
                group = off;
            } else {
                if at(i) != b':' {
                    return None;
                }
                let (o, ni) = getnum(i + 1)?;
                if at(ni) != b'/' {
                    return None;
                }
                let (g, ni) = getnum(ni + 1)?;
                i = ni;
                off = o;
                group = g;
            }
            // bitmap_check_region()
            if start > end || group == 0 || off > group || end >= nbits {
                return None;
            }
            let mut s = start;
            loop {
                let span = (end - s + 1).min(off);
                for c in s..s + span {
                    mask.set(c);
                }
                match s.checked_add(group) {
                    Some(n) if n <= end => s = n,
                    _ => break,
                }
            }
        }
    }
}

/// Why a hex CPU mask was refused (Linux's `bitmap_parse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskError {
    /// Not a mask: an empty or over-long group, a non-hex digit (`EINVAL`).
    Invalid,
    /// A CPU at or above `nr_cpu_ids`, or more 32-bit groups than those
    /// bits need (`EOVERFLOW`).
    Overflow,
}

impl CpuMask {
    /// The CPUs whose bits are set in `word` (CPU N is bit N).
    pub fn from_word(word: u64) -> CpuMask {
        let mut m = CpuMask::default();
        m.bits[0] = word;
        m
    }

    /// CPUs 0..64 as a word (CPU N is bit N).
    pub fn low_word(&self) -> u64 {
        self.bits[0]
    }

    /// Every CPU below `nr_cpu_ids`.
    pub fn all(nr_cpu_ids: u32) -> CpuMask {
        let mut m = CpuMask::default();
        for c in 0..nr_cpu_ids.clamp(1, MAX_CPUS) {
            m.set(c);
        }
        m
    }

    /// `cpumask_parse_user`'s hex form, as `tracing_cpumask` takes it:
    /// groups of at most eight hex digits separated by commas, the most
    /// significant first (`2`, `00000003`, `1,ffffffff`); one trailing
    /// newline is allowed.
    pub fn parse_hex(text: &[u8], nr_cpu_ids: u32) -> Result<CpuMask, MaskError> {
        let nbits = nr_cpu_ids.clamp(1, MAX_CPUS);
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        let groups: alloc::vec::Vec<&[u8]> = text.split(|&c| c == b',').collect();
        if groups.len() > nbits.div_ceil(32) as usize {
            return Err(MaskError::Overflow);
        }
        let mut m = CpuMask::default();
        for (k, g) in groups.iter().rev().enumerate() {
            if g.is_empty() || g.len() > 8 {
                return Err(MaskError::Invalid);
            }
            let mut v = 0u32;
            for &c in g.iter() {
                let d = (c as char).to_digit(16).ok_or(MaskError::Invalid)?;
                v = v << 4 | d;
            }
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    let cpu = k as u32 * 32 + bit;
                    if cpu >= nbits {
                        return Err(MaskError::Overflow);
                    }
                    m.set(cpu);
                }
            }
        }
        Ok(m)
    }

    /// The mask as `%*pb` prints it over `nr_cpu_ids` bits: hex, in
    /// comma-separated 32-bit groups, the first as wide as its bits need
    /// (`3` for two CPUs, `ff` for eight).
    pub fn to_hex(&self, nr_cpu_ids: u32) -> alloc::string::String {
        use core::fmt::Write;
        let nbits = nr_cpu_ids.clamp(1, MAX_CPUS);
        let groups = nbits.div_ceil(32);
        let mut out = alloc::string::String::new();
        for k in (0..groups).rev() {
            let mut v = 0u32;
            for bit in 0..32 {
                let cpu = k * 32 + bit;
                if cpu < nbits && self.test(cpu) {
                    v |= 1 << bit;
                }
            }
            let width = if k == groups - 1 {
                ((nbits - k * 32).div_ceil(4)) as usize
            } else {
                8
            };
            if k != groups - 1 {
                out.push(',');
            }
            let _ = write!(out, "{v:0width$x}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(m: &CpuMask) -> alloc::vec::Vec<u32> {
        (0..MAX_CPUS).filter(|&c| m.test(c)).collect()
    }

    #[test]
    fn lists_ranges_groups_and_last() {
        let p = |s: &str| CpuMask::parse_list(s.as_bytes(), 8).map(|m| cpus(&m));
        assert_eq!(p("1"), Some(alloc::vec![1]));
        assert_eq!(p("0-2,5"), Some(alloc::vec![0, 1, 2, 5]));
        assert_eq!(p(" 3 , 1"), Some(alloc::vec![1, 3]));
        assert_eq!(p("0-7:2/4"), Some(alloc::vec![0, 1, 4, 5]));
        assert_eq!(p("N"), Some(alloc::vec![7]));
        assert_eq!(p("all"), Some((0..8).collect()));
        assert_eq!(p("ALL:1/2"), Some(alloc::vec![0, 2, 4, 6]));
        assert_eq!(p(""), Some(alloc::vec![]));
    }

    #[test]
    fn bad_lists_are_rejected() {
        let p = |s: &str| CpuMask::parse_list(s.as_bytes(), 2);
        assert_eq!(p("0-1").map(|m| m.weight()), Some(2));
        assert!(p("2").is_none(), "beyond nr_cpu_ids");
        assert!(p("x").is_none());
        assert!(p("1-0").is_none());
        assert!(p("0-1:3/2").is_none());
        assert!(p("0-1:1/0").is_none());
        assert!(p("99999999999").is_none());
        assert!(p("1x").is_none());
        // After a group, the next region may follow without a separator.
        assert_eq!(p("0-1:1/2N").map(|m| m.weight()), Some(2));
        assert!(p("0-").is_none());
    }

    #[test]
    fn hex_masks_parse_and_print_as_tracing_cpumask_does_on_linux() {
        // Linux 6.12 on 2 CPUs: "3" read; "2" and "00000003" taken; "0x1"
        // and "zz" EINVAL; "0,3" and "100" EOVERFLOW; "0" an empty mask.
        assert_eq!(CpuMask::all(2).to_hex(2), "3");
        assert_eq!(CpuMask::parse_hex(b"2\n", 2).map(|m| m.to_hex(2)), Ok("2".into()));
        assert_eq!(CpuMask::parse_hex(b"00000003", 2), Ok(CpuMask::all(2)));
        assert_eq!(CpuMask::parse_hex(b"0x1", 2), Err(MaskError::Invalid));
        assert_eq!(CpuMask::parse_hex(b"zz", 2), Err(MaskError::Invalid));
        assert_eq!(CpuMask::parse_hex(b"0,3", 2), Err(MaskError::Overflow));
        assert_eq!(CpuMask::parse_hex(b"100", 2), Err(MaskError::Overflow));
        assert_eq!(CpuMask::parse_hex(b"0", 2).map(|m| m.weight()), Ok(0));
        assert_eq!(CpuMask::all(8).to_hex(8), "ff");
        // Bits past nr_cpu_ids are not shown.
        assert_eq!(CpuMask::from_word(u64::MAX).to_hex(2), "3");
        assert_eq!(CpuMask::all(40).to_hex(40), "ff,ffffffff");
        assert_eq!(CpuMask::parse_hex(b"1,00000000", 40).map(|m| m.first()), Ok(Some(32)));
    }
}
