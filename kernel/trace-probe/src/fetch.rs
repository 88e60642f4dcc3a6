//! Running the compiled arguments on a hit: Linux's `process_fetch_insn`,
//! `__get_data_size` and `store_trace_args`. Nothing here allocates: the
//! kernel calls it from its BRK handler with a buffer it reserved.

use crate::insn::{Insn, Op, Reg};
use crate::{ProbeArg, ProbeDef, COMMON_HEADER_SIZE, KSYM_SYMBOL_LEN, MAX_STRING_SIZE};

/// What a probe hit sees: the trapped registers, memory and the task.
///
/// Memory reads must never fault the kernel: they return `false` when the
/// address is not readable. As on arm64 Linux (which has non-overlapping
/// address spaces), a kernel-memory fetch of an address below
/// [`FetchEnv::task_size`] reads user memory instead.
pub trait FetchEnv {
    /// The end of user space (`TASK_SIZE`): 2^48 with 48-bit addresses.
    fn task_size(&self) -> u64 {
        1 << 48
    }
    /// A register of the trapped context.
    fn register(&self, reg: Reg) -> u64;
    /// The `n`th 8-byte word of the kernel stack above `sp`, 0 when that
    /// is outside the task's stack (`regs_get_kernel_stack_nth`).
    fn kernel_stack_nth(&self, n: u32) -> u64;
    /// Reads kernel memory.
    fn read_kernel(&self, addr: u64, dst: &mut [u8]) -> bool;
    /// Reads user memory of the current task.
    fn read_user(&self, addr: u64, dst: &mut [u8]) -> bool;
    /// The current task's name (up to 16 bytes; a NUL ends it early).
    fn comm(&self) -> &[u8];
    /// Writes `addr` as `%pS` does (`sym+0xoff/0xsize`, or `0x...` when it
    /// is no symbol) into `dst`, returning the length written (without NUL);
    /// [`crate::sprint_symbol`] does it given a lookup.
    fn sprint_symbol(&self, addr: u64, dst: &mut [u8]) -> usize;
    /// The attached event's whole record (common header first), for an
    /// event probe's `$FIELD`s; empty elsewhere.
    fn event_record(&self) -> &[u8] {
        &[]
    }
}

/// What the probe's own fields hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeSite {
    /// A `p` probe: the probed address (`__probe_ip`).
    Entry {
        /// The address of the probe.
        ip: u64,
    },
    /// An `r` probe: the function and where it returns to.
    Return {
        /// The probed function (`__probe_func`).
        func: u64,
        /// The return address (`__probe_ret_ip`).
        ret_ip: u64,
    },
}

/// Why a record could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchError {
    /// The buffer is smaller than the record: `needed` bytes.
    BufferTooSmall {
        /// The record's size.
        needed: usize,
    },
    /// A return probe's entry data is shorter than
    /// [`ProbeDef::entry_data_len`].
    MissingEntryData,
}

const EFAULT: i64 = -14;
const ENOMEM: i64 = -12;
const EILSEQ: i64 = -84;

fn make_data_loc(len: u32, offs: u32) -> u32 {
    len.wrapping_shl(16) | (offs & 0xffff)
}

/// The running state of one argument's store, in Linux's terms: where the
/// record starts is offset 0 of `rec`.
struct Dest<'a> {
    rec: &'a mut [u8],
    /// Offset of the value being stored.
    at: usize,
}

impl Dest<'_> {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        if let Some(d) = at.checked_add(bytes.len()).and_then(|end| self.rec.get_mut(at..end)) {
            d.copy_from_slice(bytes);
        }
    }

    fn get_u32(&self, at: usize) -> u32 {
        match self.rec.get(at..at + 4) {
            Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => 0,
        }
    }

    fn get(&self, at: usize, n: usize) -> u64 {
        let mut v = [0u8; 8];
        if let Some(b) = self.rec.get(at..at + n) {
            v[..n].copy_from_slice(b);
        }
        u64::from_le_bytes(v)
    }
}

/// `probe_mem_read` (or `probe_mem_read_user` when `user`).
fn probe_mem_read(env: &(impl FetchEnv + ?Sized), user: bool, addr: u64, dst: &mut [u8]) -> bool {
    if user || addr < env.task_size() {
        env.read_user(addr, dst)
    } else {
        env.read_kernel(addr, dst)
    }
}

fn read_u64(env: &(impl FetchEnv + ?Sized), user: bool, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    probe_mem_read(env, user, addr, &mut b).then(|| u64::from_le_bytes(b))
}

/// Length of a kernel string including its NUL, at most MAX_STRING_SIZE,
/// or a negative errno (`fetch_store_strlen`).
fn strlen_kernel(env: &(impl FetchEnv + ?Sized), addr: u64) -> i64 {
    let mut len = 0u64;
    loop {
        let mut c = [0u8];
        let ok = env.read_kernel(addr.wrapping_add(len), &mut c);
        len += 1;
        if !ok {
            return EFAULT;
        }
        if c[0] == 0 || len >= MAX_STRING_SIZE as u64 {
            return len as i64;
        }
    }
}

/// `strnlen_user_nofault(addr, MAX_STRING_SIZE)`: the length including the
/// NUL, 0 on a fault, more than the limit if there is no NUL within it.
fn strlen_user(env: &(impl FetchEnv + ?Sized), addr: u64) -> i64 {
    for i in 0..MAX_STRING_SIZE as u64 {
        let mut c = [0u8];
        if !env.read_user(addr.wrapping_add(i), &mut c) {
            return 0;
        }
        if c[0] == 0 {
            return i as i64 + 1;
        }
    }
    MAX_STRING_SIZE as i64 + 1
}

/// Copies a NUL-terminated string of at most `dst.len()` bytes (cut and
/// terminated if longer). Kernel: returns the bytes stored including the
/// NUL (`strncpy_from_kernel_nofault`). User: the same, except that an
/// empty string gives 0 (`strncpy_from_user_nofault`).
fn strncpy(env: &(impl FetchEnv + ?Sized), user: bool, addr: u64, dst: &mut [u8]) -> i64 {
    let count = dst.len();
    if count == 0 {
        return 0;
    }
    for (i, slot) in dst.iter_mut().enumerate() {
        let mut c = [0u8];
        let a = addr.wrapping_add(i as u64);
        let ok = if user {
            env.read_user(a, &mut c)
        } else {
            env.read_kernel(a, &mut c)
        };
        if !ok {
            *slot = 0;
            return EFAULT;
        }
        *slot = c[0];
        if c[0] == 0 {
            return if user && i == 0 { 0 } else { i as i64 + 1 };
        }
    }
    dst[count - 1] = 0;
    count as i64
}

/// Copies bytes up to a NUL (or the end) of an in-memory string: `$comm`
/// and immediate strings.
fn strncpy_mem(src: &[u8], dst: &mut [u8]) -> i64 {
    let count = dst.len();
    if count == 0 {
        return 0;
    }
    let n = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    if n < count {
        dst[..n].copy_from_slice(&src[..n]);
        dst[n] = 0;
        n as i64 + 1
    } else {
        dst[..count - 1].copy_from_slice(&src[..count - 1]);
        dst[count - 1] = 0;
        count as i64
    }
}

/// Where a string comes from: memory, or a buffer the program holds.
#[derive(Clone, Copy)]
enum Src<'a> {
    Addr(u64),
    Bytes(&'a [u8]),
}

impl ProbeArg {
    /// `process_fetch_insn`: stage 1 then the rest. `dest` is `None` for
    /// the sizing pass, which returns the dynamic bytes this argument needs.
    fn process(&self, env: &(impl FetchEnv + ?Sized), edata: &[u64], dest: Option<&mut Dest>) -> i64 {
        let code = &self.code[..];
        let mut pc = 0;
        let mut src_bytes: Option<&[u8]> = None;
        let val: u64 = loop {
            let Some(c) = code.get(pc) else { return EILSEQ };
            break match c.op {
                Op::Reg(r) => env.register(r),
                Op::Stack => env.kernel_stack_nth(c.param),
                Op::StackP => env.register(Reg::Sp),
                Op::Retval => env.register(Reg::X(0)),
                // arm64's regs_get_kernel_argument: x0..x7, then 0.
                Op::Arg => {
                    if c.param < 8 {
                        env.register(Reg::X(c.param as u8))
                    } else {
                        0
                    }
                }
                Op::Edata => match edata.get(c.offset as usize / 8) {
                    Some(&v) => v,
                    None => 0,
                },
                Op::NopSymbol => {
                    pc += 1;
                    continue;
                }
                Op::Imm => c.imm,
                Op::Comm => {
                    src_bytes = Some(env.comm());
                    0
                }
                Op::Data => {
                    src_bytes = Some(&self.data);
                    0
                }
                Op::TpArg => {
                    let (v, bytes) = event_field(env.event_record(), c);
                    // A string stored right from the record needs no
                    // memory read.
                    if matches!(code.get(pc + 1).map(|n| n.op), Some(Op::StString | Op::StUString)) {
                        src_bytes = bytes;
                    }
                    v
                }
                _ => return EILSEQ,
            };
        };
        pc += 1;
        bottom(code, pc, val, src_bytes, env, dest)
    }
}

/// Linux's `get_event_field`: a number (sign-extended as the field is), or
/// for a string field its address (and the bytes it has in the record).
fn event_field<'r>(rec: &'r [u8], c: &Insn) -> (u64, Option<&'r [u8]>) {
    let off = c.param as usize;
    let base = rec.as_ptr() as u64;
    let rd = |at: usize, n: usize| -> u64 {
        let mut b = [0u8; 8];
        if let Some(src) = at.checked_add(n).and_then(|end| rec.get(at..end)) {
            b[..n].copy_from_slice(src);
        }
        u64::from_le_bytes(b)
    };
    match crate::StrKind::from_code(c.basesize) {
        Some(crate::StrKind::Static) => {
            let end = off.saturating_add(c.size as usize).min(rec.len());
            (base.wrapping_add(off as u64), rec.get(off..end))
        }
        Some(kind @ (crate::StrKind::DataLoc | crate::StrKind::RelLoc)) => {
            let dl = rd(off, 4) as u32;
            let mut start = (dl & 0xffff) as usize;
            if kind == crate::StrKind::RelLoc {
                start += off;
            }
            let end = start.saturating_add((dl >> 16) as usize).min(rec.len());
            (base.wrapping_add(start as u64), rec.get(start.min(end)..end))
        }
        Some(crate::StrKind::Ptr) => (rd(off, 8), None),
        None => {
            let n = match c.size {
                1 | 2 | 4 => c.size as usize,
                _ => 8,
            };
            let v = rd(off, n);
            let v = if c.lshift != 0 && n < 8 {
                let sh = 64 - 8 * n as u32;
                (((v << sh) as i64) >> sh) as u64
            } else {
                v
            };
            (v, None)
        }
    }
}

/// `process_fetch_insn_bottom`: dereferences, store, bitfield, array loop.
fn bottom(
    code: &[Insn],
    mut pc: usize,
    mut val: u64,
    src_bytes: Option<&[u8]>,
    env: &(impl FetchEnv + ?Sized),
    mut dest: Option<&mut Dest>,
) -> i64 {
    let op = |pc: usize| code.get(pc).map_or(Op::End, |c| c.op);
    let mut lval = val;
    let mut total = 0i64;
    let mut ret = 0i64;
    let mut i = 0u32;
    let mut loc = 0u32;
    'stage2: loop {
        // Stage 2: dereference.
        loop {
            let user = match op(pc) {
                Op::Deref => false,
                Op::UDeref => true,
                _ => break,
            };
            lval = val;
            let off = i64::from(code[pc].offset) as u64;
            match read_u64(env, user, val.wrapping_add(off)) {
                Some(v) => val = v,
                None => return EFAULT,
            }
            pc += 1;
        }
        let s3 = pc;
        'stage3: loop {
            let c = code.get(pc).copied().unwrap_or(crate::insn::Insn::NOP);
            let src = match src_bytes {
                Some(b) => Src::Bytes(b),
                None => Src::Addr(val.wrapping_add(i64::from(c.offset) as u64)),
            };
            match dest.as_deref_mut() {
                None => {
                    ret = match (c.op, src) {
                        (Op::StString, Src::Addr(a)) if a >= env.task_size() => strlen_kernel(env, a),
                        (Op::StString, Src::Addr(a)) => strlen_user(env, a),
                        (Op::StUString, Src::Addr(a)) => strlen_user(env, a),
                        (Op::StString | Op::StUString, Src::Bytes(b)) => {
                            b.iter()
                                .position(|&x| x == 0)
                                .unwrap_or(b.len())
                                .min(MAX_STRING_SIZE - 1) as i64
                                + 1
                        }
                        (Op::StSymstr, Src::Addr(a)) => {
                            let mut tmp = [0u8; KSYM_SYMBOL_LEN];
                            env.sprint_symbol(a, &mut tmp[..KSYM_SYMBOL_LEN - 1]) as i64 + 1
                        }
                        _ => return EILSEQ,
                    };
                    pc += 1;
                }
                Some(d) => {
                    let at = d.at;
                    match c.op {
                        Op::StRaw => {
                            let n = (c.size as usize).min(8);
                            d.put(at, &val.to_le_bytes()[..n]);
                        }
                        Op::StMem | Op::StUMem => {
                            let n = (c.size as usize).min(8);
                            let mut b = [0u8; 8];
                            let addr = match src {
                                Src::Addr(a) => a,
                                Src::Bytes(_) => return EILSEQ,
                            };
                            let ok = probe_mem_read(env, c.op == Op::StUMem, addr, &mut b[..n]);
                            if !ok {
                                b = [0; 8];
                            }
                            d.put(at, &b[..n]);
                        }
                        Op::StString | Op::StUString | Op::StSymstr => {
                            loc = d.get_u32(at);
                            ret = store_string(c.op, src, env, d);
                        }
                        _ => return EILSEQ,
                    }
                    pc += 1;
                    // Stage 4: bitfield.
                    if op(pc) == Op::ModBf {
                        let m = code[pc];
                        let bits = u32::from(m.basesize).min(8) * 8;
                        // Only the field's own bytes take part, even for a
                        // wider BTF container (Linux would touch the bytes
                        // after the field too).
                        let keep = (c.size as usize).clamp(1, 8);
                        let v = d.get(at, keep);
                        let v = v.checked_shl(u32::from(m.lshift)).unwrap_or(0);
                        let v = if bits < 64 { v & ((1u64 << bits) - 1) } else { v };
                        let v = v.checked_shr(u32::from(m.rshift)).unwrap_or(0);
                        d.put(at, &v.to_le_bytes()[..keep]);
                        pc += 1;
                    }
                }
            }
            // The last stage: arrays.
            if op(pc) == Op::LpArray {
                if ret < 0 {
                    ret = 0;
                }
                total += ret;
                i += 1;
                if i < code[pc].param {
                    pc = s3;
                    let st = code[s3];
                    if st.op != Op::StString && st.op != Op::StUString {
                        if let Some(d) = dest.as_deref_mut() {
                            d.at += st.size as usize;
                        }
                        val = val.wrapping_add(u64::from(st.size));
                        continue 'stage3;
                    }
                    pc = pc.wrapping_sub(1);
                    val = lval.wrapping_add(8);
                    if let Some(d) = dest.as_deref_mut() {
                        d.at += 4;
                        let len = (loc >> 16).wrapping_sub(ret as u32);
                        let offs = (loc & 0xffff).wrapping_add(ret as u32);
                        let at = d.at;
                        d.put(at, &make_data_loc(len, offs).to_le_bytes());
                    }
                    continue 'stage2;
                }
                pc += 1;
                ret = total;
            }
            break 'stage2;
        }
    }
    if op(pc) == Op::End {
        ret
    } else {
        EILSEQ
    }
}

/// `fetch_store_string`, `fetch_store_string_user`, `fetch_store_symstring`:
/// the `__data_loc` at `d.at` holds the room left and where the bytes go.
fn store_string(op: Op, src: Src, env: &(impl FetchEnv + ?Sized), d: &mut Dest) -> i64 {
    let dl = d.get_u32(d.at);
    let maxlen = (dl >> 16) as usize;
    let offs = (dl & 0xffff) as usize;
    if maxlen == 0 {
        return ENOMEM;
    }
    let end = offs.saturating_add(maxlen).min(d.rec.len());
    let Some(buf) = d.rec.get_mut(offs..end) else {
        return ENOMEM;
    };
    let ret = match (op, src) {
        (Op::StSymstr, Src::Addr(a)) => {
            // Linux writes the symbol without looking at the room left and
            // leaves the __data_loc as it was.
            let n = buf.len().min(KSYM_SYMBOL_LEN);
            let len = env.sprint_symbol(a, &mut buf[..n.saturating_sub(1)]);
            if let Some(z) = buf.get_mut(len) {
                *z = 0;
            }
            return len as i64;
        }
        (_, Src::Bytes(b)) => strncpy_mem(b, buf),
        (Op::StUString, Src::Addr(a)) => strncpy(env, true, a, buf),
        (_, Src::Addr(a)) => strncpy(env, a < env.task_size(), a, buf),
    };
    let len = if ret < 0 { 0 } else { ret as u32 };
    let at = d.at;
    d.put(at, &make_data_loc(len, offs as u32).to_le_bytes());
    ret
}

impl ProbeDef {
    /// Bytes of the probe's own fields after the common header.
    pub fn probe_header_size(&self) -> usize {
        match self.kind {
            crate::ProbeKind::Eprobe { .. } => 0,
            _ if self.is_return => 16,
            _ => 8,
        }
    }

    /// Offset of the first argument in the record.
    pub fn args_offset(&self) -> usize {
        COMMON_HEADER_SIZE + self.probe_header_size()
    }

    /// Size of the record without dynamic data.
    pub fn fixed_size(&self) -> usize {
        self.args_offset() + self.size
    }

    /// An upper bound of the record's size: every string at its longest.
    pub fn max_size(&self) -> usize {
        let dynamic: usize = self
            .args
            .iter()
            .filter(|a| a.dynamic)
            .map(|a| a.count.max(1) as usize * (MAX_STRING_SIZE + 1).max(KSYM_SYMBOL_LEN))
            .sum();
        self.fixed_size() + dynamic
    }

    /// How many 8-byte words a return probe saves at function entry for
    /// its `$argN`/named arguments (0 for none).
    pub fn entry_data_len(&self) -> usize {
        self.entry_args.len()
    }

    /// At the entry of the probed function (a return probe's entry
    /// handler): saves the arguments the return side reads into `edata`
    /// (at least [`ProbeDef::entry_data_len`] words).
    pub fn store_entry_data(&self, env: &(impl FetchEnv + ?Sized), edata: &mut [u64]) {
        for (slot, &n) in edata.iter_mut().zip(self.entry_args.iter()) {
            *slot = if n < 8 { env.register(Reg::X(n as u8)) } else { 0 };
        }
    }

    /// The dynamic bytes this hit needs (Linux's `__get_data_size`).
    pub fn dynamic_size(&self, env: &(impl FetchEnv + ?Sized), edata: &[u64]) -> usize {
        self.args
            .iter()
            .filter(|a| a.dynamic)
            .map(|a| a.process(env, edata, None))
            .filter(|&l| l > 0)
            .map(|l| l as usize)
            .sum()
    }

    /// Writes the record of one hit into `rec`, leaving its first
    /// [`COMMON_HEADER_SIZE`] bytes (the common header) to the caller, and
    /// returns the record's size. Fixed fields first, then the strings
    /// their `__data_loc`s (u32: length << 16 | offset from the record's
    /// start) point at. A value that cannot be read is stored as 0 (Linux
    /// leaves the bytes it reserved); a string that cannot be read has
    /// length 0 and prints as `(fault)`. Never allocates.
    pub fn fetch(
        &self,
        env: &(impl FetchEnv + ?Sized),
        site: ProbeSite,
        edata: &[u64],
        rec: &mut [u8],
    ) -> Result<usize, FetchError> {
        let dsize = self.dynamic_size(env, edata);
        self.fetch_sized(env, site, edata, rec, dsize)
    }

    /// [`ProbeDef::fetch`] for a hit whose dynamic size the caller already
    /// has from [`ProbeDef::dynamic_size`] on the same `env` and `edata`
    /// (it sized the record with it): the strings are not measured twice.
    pub fn fetch_sized(
        &self,
        env: &(impl FetchEnv + ?Sized),
        site: ProbeSite,
        edata: &[u64],
        rec: &mut [u8],
        dsize: usize,
    ) -> Result<usize, FetchError> {
        if edata.len() < self.entry_args.len() {
            return Err(FetchError::MissingEntryData);
        }
        let needed = self.fixed_size() + dsize;
        let Some(rec) = rec.get_mut(..needed) else {
            return Err(FetchError::BufferTooSmall { needed });
        };
        rec[COMMON_HEADER_SIZE..].fill(0);
        let head = match site {
            ProbeSite::Entry { ip } => [ip, 0],
            ProbeSite::Return { func, ret_ip } => [func, ret_ip],
        };
        // The probe's own fields: what the definition's kind has room for.
        for (i, v) in head.iter().take(self.probe_header_size() / 8).enumerate() {
            rec[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let base = self.args_offset();
        let mut dyndata = self.fixed_size();
        let mut maxlen = dsize as u32;
        for a in &self.args {
            let at = base + a.offset as usize;
            let mut d = Dest { rec: &mut *rec, at };
            if a.dynamic {
                d.put(at, &make_data_loc(maxlen, dyndata as u32).to_le_bytes());
            }
            let ret = a.process(env, edata, Some(&mut d));
            if a.dynamic && ret > 0 {
                dyndata += ret as usize;
                maxlen = maxlen.wrapping_sub(ret as u32);
            }
        }
        Ok(needed)
    }
}
