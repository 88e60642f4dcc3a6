//! `struct sysinfo` (include/uapi/linux/sysinfo.h), what sysinfo(2)
//! writes, on a 64-bit machine.

/// Bits of fraction in `loads` (`SI_LOAD_SHIFT`).
pub const SI_LOAD_SHIFT: u32 = 16;

/// `struct sysinfo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sysinfo {
    /// Seconds since boot.
    pub uptime: i64,
    /// 1, 5 and 15 minute load averages, with [`SI_LOAD_SHIFT`] bits of
    /// fraction.
    pub loads: [u64; 3],
    /// Usable memory, in `mem_unit`s.
    pub totalram: u64,
    /// Free memory.
    pub freeram: u64,
    /// Shared memory.
    pub sharedram: u64,
    /// Memory used by buffers.
    pub bufferram: u64,
    /// Swap in all.
    pub totalswap: u64,
    /// Free swap.
    pub freeswap: u64,
    /// Tasks (threads), capped at 65535.
    pub procs: u16,
    /// High memory in all.
    pub totalhigh: u64,
    /// Free high memory.
    pub freehigh: u64,
    /// Bytes in the unit the sizes count.
    pub mem_unit: u32,
}

impl Sysinfo {
    /// Its size in user memory (with the padding after `mem_unit`).
    pub const SIZE: usize = 112;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
        put(0, &self.uptime.to_le_bytes());
        for (i, l) in self.loads.iter().enumerate() {
            put(8 + 8 * i, &l.to_le_bytes());
        }
        put(32, &self.totalram.to_le_bytes());
        put(40, &self.freeram.to_le_bytes());
        put(48, &self.sharedram.to_le_bytes());
        put(56, &self.bufferram.to_le_bytes());
        put(64, &self.totalswap.to_le_bytes());
        put(72, &self.freeswap.to_le_bytes());
        put(80, &self.procs.to_le_bytes());
        put(88, &self.totalhigh.to_le_bytes());
        put(96, &self.freehigh.to_le_bytes());
        put(104, &self.mem_unit.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_at_linux_offsets() {
        let s = Sysinfo {
            uptime: 1,
            loads: [2, 3, 4],
            totalram: 5,
            freeram: 6,
            sharedram: 7,
            bufferram: 8,
            totalswap: 9,
            freeswap: 10,
            procs: 11,
            totalhigh: 12,
            freehigh: 13,
            mem_unit: 14,
        };
        let b = s.to_bytes();
        let word = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let words: [u64; 9] = core::array::from_fn(|i| word(8 * i));
        assert_eq!(words, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(word(72), 10);
        // procs, then the explicit pad and the alignment gap.
        assert_eq!(b[80..88], [11, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((word(88), word(96)), (12, 13));
        assert_eq!(b[104..], [14, 0, 0, 0, 0, 0, 0, 0]);
    }
}
