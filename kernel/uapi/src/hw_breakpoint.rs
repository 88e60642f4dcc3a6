//! arm64's hardware breakpoint and watchpoint ABI for ptrace: the
//! `NT_ARM_HW_BREAK`/`NT_ARM_HW_WATCH` regset (`struct user_hwdebug_state`),
//! the control word a debugger writes (Linux's `arch_hw_breakpoint_ctrl`,
//! which is also the DBGBCR/DBGWCR layout), and Linux's checks of it
//! (`arch_bp_generic_fields`, `ptrace_hbp_fill_attr_ctrl`,
//! `hw_breakpoint_arch_parse`, `hw_break_set`/`hw_break_get` in
//! arch/arm64/kernel/{ptrace.c,hw_breakpoint.c}), so that the kernel keeps
//! and reports exactly what Linux would.

use crate::errno::Errno;
use crate::ptrace::NT_ARM_HW_BREAK;

/// Slots in `struct user_hwdebug_state` (ARM_MAX_BRP and ARM_MAX_WRP).
pub const MAX_SLOTS: usize = 16;
/// Offset of `dbg_regs` in `struct user_hwdebug_state`.
pub const DBG_REGS_OFFSET: usize = 8;
/// `sizeof(struct user_hwdebug_state)`.
pub const USER_HWDEBUG_STATE_SIZE: usize = DBG_REGS_OFFSET + MAX_SLOTS * 16;
/// The first address a user breakpoint may not cover (TASK_SIZE with
/// 48-bit user addresses).
pub const TASK_SIZE: u64 = 1 << 48;

/// `ctrl.type` for a breakpoint (ARM_BREAKPOINT_EXECUTE).
pub const ARM_BREAKPOINT_EXECUTE: u8 = 0;
/// `ctrl.type` bit for loads (ARM_BREAKPOINT_LOAD).
pub const ARM_BREAKPOINT_LOAD: u8 = 1;
/// `ctrl.type` bit for stores (ARM_BREAKPOINT_STORE).
pub const ARM_BREAKPOINT_STORE: u8 = 2;
/// `ctrl.privilege`: EL1 (AARCH64_BREAKPOINT_EL1).
pub const AARCH64_BREAKPOINT_EL1: u8 = 1;
/// `ctrl.privilege`: EL0 (AARCH64_BREAKPOINT_EL0).
pub const AARCH64_BREAKPOINT_EL0: u8 = 2;

/// The control word (Linux's `struct arch_hw_breakpoint_ctrl`): bit 0
/// enable, bits 2:1 privilege, bits 4:3 type, bits 12:5 the byte mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArchHwBreakpointCtrl {
    /// Byte-address-select mask.
    pub len: u8,
    /// `ARM_BREAKPOINT_*`.
    pub ty: u8,
    /// `AARCH64_BREAKPOINT_EL0` or `_EL1`.
    pub privilege: u8,
    /// Armed.
    pub enabled: bool,
}

impl ArchHwBreakpointCtrl {
    /// Linux's decode_ctrl_reg.
    pub fn decode(reg: u32) -> Self {
        ArchHwBreakpointCtrl {
            enabled: reg & 1 != 0,
            privilege: ((reg >> 1) & 3) as u8,
            ty: ((reg >> 3) & 3) as u8,
            len: ((reg >> 5) & 0xff) as u8,
        }
    }

    /// Linux's encode_ctrl_reg (the kernel never runs at EL2 here).
    pub fn encode(self) -> u32 {
        (u32::from(self.len) << 5)
            | (u32::from(self.ty) << 3)
            | (u32::from(self.privilege) << 1)
            | u32::from(self.enabled)
    }
}

/// What a breakpoint watches (perf's HW_BREAKPOINT_X/R/W/RW).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BpType {
    /// Instruction fetch.
    X,
    /// Loads.
    R,
    /// Stores.
    W,
    /// Loads and stores.
    Rw,
}

/// The generic description a slot holds (the `perf_event_attr` fields
/// ptrace keeps: `bp_addr`, `bp_len`, `bp_type`, `disabled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpAttr {
    /// `bp_addr`.
    pub addr: u64,
    /// `bp_len`, 1 to 8 bytes.
    pub len: u32,
    /// `bp_type`.
    pub ty: BpType,
    /// Not armed.
    pub disabled: bool,
}

/// The checked form the hardware is programmed from (Linux's
/// `struct arch_hw_breakpoint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArchHwBreakpoint {
    /// Address, aligned down to the word (instructions) or doubleword.
    pub address: u64,
    /// Control, its byte mask shifted to the address's offset.
    pub ctrl: ArchHwBreakpointCtrl,
}

/// One ptrace slot: Linux's `hbp_break[i]`/`hbp_watch[i]` perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwSlot {
    /// What the tracer asked for.
    pub attr: BpAttr,
    /// What the hardware gets.
    pub info: ArchHwBreakpoint,
}

impl HwSlot {
    /// A slot as ptrace_hbp_create makes it: address 0, four bytes,
    /// disabled.
    pub fn new(note: u32) -> HwSlot {
        let ty = if note == NT_ARM_HW_BREAK { BpType::X } else { BpType::Rw };
        let attr = BpAttr {
            addr: 0,
            len: 4,
            ty,
            disabled: true,
        };
        // The defaults always pass.
        let info = hw_breakpoint_parse(&attr).unwrap_or_default();
        HwSlot { attr, info }
    }

    /// Armed for the hardware.
    pub fn enabled(&self) -> bool {
        self.info.ctrl.enabled
    }
}

/// `len` as a run of `len` ones (ARM_BREAKPOINT_LEN_n).
fn arm_len(len: u32) -> u8 {
    ((1u32 << len) - 1) as u8
}

/// Linux's arch_bp_generic_fields: the generic length, type and the
/// address offset a control word means.
pub fn arch_bp_generic_fields(ctrl: ArchHwBreakpointCtrl) -> Result<(u32, BpType, u32), Errno> {
    let ty = match ctrl.ty {
        ARM_BREAKPOINT_EXECUTE => BpType::X,
        ARM_BREAKPOINT_LOAD => BpType::R,
        ARM_BREAKPOINT_STORE => BpType::W,
        _ => BpType::Rw,
    };
    if ctrl.len == 0 {
        return Err(Errno::EINVAL);
    }
    let offset = ctrl.len.trailing_zeros();
    let run = ctrl.len >> offset;
    // A contiguous run of one to eight bytes.
    if run & run.wrapping_add(1) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok((run.count_ones(), ty, offset))
}

/// Linux's ptrace_hbp_fill_attr_ctrl: the new attributes a control word
/// gives a slot of regset `note`.
pub fn fill_attr_ctrl(note: u32, ctrl: ArchHwBreakpointCtrl, attr: &BpAttr) -> Result<BpAttr, Errno> {
    let mut attr = *attr;
    attr.disabled = !ctrl.enabled;
    if attr.disabled {
        return Ok(attr);
    }
    let (len, ty, offset) = arch_bp_generic_fields(ctrl)?;
    let fits = if note == NT_ARM_HW_BREAK {
        ty == BpType::X
    } else {
        ty != BpType::X
    };
    if !fits {
        return Err(Errno::EINVAL);
    }
    attr.len = len;
    attr.ty = ty;
    attr.addr = attr.addr.wrapping_add(u64::from(offset));
    Ok(attr)
}

/// Linux's hw_breakpoint_parse for a user task's breakpoint
/// (arch_build_bp_info and hw_breakpoint_arch_parse): instruction
/// breakpoints always cover four bytes, the byte mask shifted to the
/// address's offset must stay inside the doubleword, and nothing may
/// reach kernel addresses.
pub fn hw_breakpoint_parse(attr: &BpAttr) -> Result<ArchHwBreakpoint, Errno> {
    if !(1..=8).contains(&attr.len) {
        return Err(Errno::EINVAL);
    }
    let ty = match attr.ty {
        BpType::X => ARM_BREAKPOINT_EXECUTE,
        BpType::R => ARM_BREAKPOINT_LOAD,
        BpType::W => ARM_BREAKPOINT_STORE,
        BpType::Rw => ARM_BREAKPOINT_LOAD | ARM_BREAKPOINT_STORE,
    };
    let len = if ty == ARM_BREAKPOINT_EXECUTE { 4 } else { attr.len };
    let end = attr.addr.checked_add(u64::from(len) - 1);
    if attr.addr >= TASK_SIZE || end.is_none_or(|e| e >= TASK_SIZE) {
        return Err(Errno::EINVAL);
    }
    let alignment_mask = if ty == ARM_BREAKPOINT_EXECUTE { 3 } else { 7 };
    let offset = (attr.addr & alignment_mask) as u32;
    let mask = u32::from(arm_len(len)) << offset;
    if mask > 0xff {
        return Err(Errno::EINVAL);
    }
    Ok(ArchHwBreakpoint {
        address: attr.addr & !alignment_mask,
        ctrl: ArchHwBreakpointCtrl {
            len: mask as u8,
            ty,
            privilege: AARCH64_BREAKPOINT_EL0,
            enabled: !attr.disabled,
        },
    })
}

/// A ptrace regset's slots (Linux's `thread.debug.hbp_break` or
/// `hbp_watch`): `None` until the tracer first writes the slot.
pub type HwSlots = [Option<HwSlot>; MAX_SLOTS];

fn slot_for(slots: &mut HwSlots, note: u32, idx: usize, num: usize) -> Result<&mut HwSlot, Errno> {
    let s = slots.get_mut(idx).ok_or(Errno::EINVAL)?;
    if s.is_none() {
        // register_user_hw_breakpoint: the task has no slot left.
        if idx >= num {
            return Err(Errno::ENOSPC);
        }
        *s = Some(HwSlot::new(note));
    }
    s.as_mut().ok_or(Errno::EINVAL)
}

/// Linux's ptrace_hbp_set_addr.
fn set_addr(slots: &mut HwSlots, note: u32, idx: usize, num: usize, addr: u64) -> Result<(), Errno> {
    let slot = slot_for(slots, note, idx, num)?;
    let attr = BpAttr { addr, ..slot.attr };
    slot.info = hw_breakpoint_parse(&attr)?;
    slot.attr = attr;
    Ok(())
}

/// Linux's ptrace_hbp_set_ctrl.
fn set_ctrl(slots: &mut HwSlots, note: u32, idx: usize, num: usize, ctrl: u32) -> Result<(), Errno> {
    let slot = slot_for(slots, note, idx, num)?;
    let attr = fill_attr_ctrl(note, ArchHwBreakpointCtrl::decode(ctrl), &slot.attr)?;
    slot.info = hw_breakpoint_parse(&attr)?;
    slot.attr = attr;
    Ok(())
}

/// `dbg_info` of the regset: the debug architecture above the slot count.
pub fn dbg_info(debug_arch: u8, num: usize) -> u32 {
    (u32::from(debug_arch) << 8) | (num as u32 & 0xff)
}

/// Linux's hw_break_get: the whole `struct user_hwdebug_state` (the caller
/// copies as much as the tracer asked for).
pub fn hw_break_get(slots: &HwSlots, info: u32) -> [u8; USER_HWDEBUG_STATE_SIZE] {
    let mut b = [0u8; USER_HWDEBUG_STATE_SIZE];
    b[..4].copy_from_slice(&info.to_le_bytes());
    for (chunk, slot) in b[DBG_REGS_OFFSET..].chunks_exact_mut(16).zip(slots.iter()) {
        let (addr, ctrl) = slot.map_or((0, 0), |s| (s.info.address, s.info.ctrl.encode()));
        chunk[..8].copy_from_slice(&addr.to_le_bytes());
        chunk[8..12].copy_from_slice(&ctrl.to_le_bytes());
    }
    b
}

/// Linux's hw_break_set: `data` (a multiple of four bytes, at most the
/// regset's size) from the start of `struct user_hwdebug_state`; `dbg_info`
/// and padding are ignored, each slot's address then control word is
/// checked and stored in turn, and the first error stops the write (the
/// slots before it keep their new values, as on Linux).
pub fn hw_break_set(slots: &mut HwSlots, note: u32, num: usize, data: &[u8]) -> Result<(), Errno> {
    let mut rest = data.get(DBG_REGS_OFFSET..).unwrap_or(&[]);
    let mut idx = 0;
    while !rest.is_empty() && idx < MAX_SLOTS {
        let (addr, after) = rest.split_first_chunk::<8>().ok_or(Errno::EINVAL)?;
        set_addr(slots, note, idx, num, u64::from_le_bytes(*addr))?;
        let Some((ctrl, after)) = after.split_first_chunk::<4>() else {
            break;
        };
        set_ctrl(slots, note, idx, num, u32::from_le_bytes(*ctrl))?;
        rest = after.get(4..).unwrap_or(&[]);
        idx += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptrace::NT_ARM_HW_WATCH;
    use proptest::prelude::*;

    fn image(slots: &[(u64, u32)]) -> alloc::vec::Vec<u8> {
        let mut b = alloc::vec![0u8; DBG_REGS_OFFSET];
        for (a, c) in slots {
            b.extend_from_slice(&a.to_le_bytes());
            b.extend_from_slice(&c.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
        }
        b
    }

    extern crate alloc;

    #[test]
    fn watchpoint_on_bytes_4_to_7_keeps_the_doubleword_address_and_mask() {
        let mut s: HwSlots = [None; MAX_SLOTS];
        // Write watch, bytes 4..8 of the doubleword at 0x1000, enabled.
        let ctrl = (0xf0 << 5) | (2 << 3) | 1;
        hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &image(&[(0x1000, ctrl)])).unwrap();
        let slot = s[0].unwrap();
        assert_eq!(slot.info.address, 0x1000);
        assert_eq!(slot.info.ctrl.len, 0xf0);
        assert_eq!(slot.attr.addr, 0x1004);
        // Read back: EL0 privilege filled in.
        let b = hw_break_get(&s, dbg_info(6, 4));
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), ctrl | (2 << 1));
    }

    #[test]
    fn a_written_disabled_slot_reads_back_its_defaults_and_an_unwritten_one_zero() {
        let mut s: HwSlots = [None; MAX_SLOTS];
        hw_break_set(&mut s, NT_ARM_HW_BREAK, 6, &image(&[(0x4000, 0)])).unwrap();
        let b = hw_break_get(&s, dbg_info(6, 6));
        assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), 0x606);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x4000);
        // 4 bytes, execute, EL0, disabled.
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 0x1e4);
        assert!(b[24..].iter().all(|&x| x == 0));
    }

    #[test]
    fn kernel_addresses_and_overlong_masks_are_einval_and_extra_slots_enospc() {
        let mut s: HwSlots = [None; MAX_SLOTS];
        let bp = (0xf << 5) | 1;
        assert_eq!(
            hw_break_set(&mut s, NT_ARM_HW_BREAK, 6, &image(&[(0xffff_0000_0000_0000, bp)])),
            Err(Errno::EINVAL)
        );
        // Eight bytes starting at byte 1 leave the doubleword.
        let wp = (0xff << 5) | (3 << 3) | 1;
        assert_eq!(
            hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &image(&[(0x1001, wp)])),
            Err(Errno::EINVAL)
        );
        // A non-contiguous byte mask.
        let holes = (0b101 << 5) | (2 << 3) | 1;
        assert_eq!(
            hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &image(&[(0x1000, holes)])),
            Err(Errno::EINVAL)
        );
        // An execute type in the watch regset, a data type in the break one.
        assert_eq!(
            hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &image(&[(0x1000, (0xf << 5) | 1)])),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            hw_break_set(
                &mut s,
                NT_ARM_HW_BREAK,
                6,
                &image(&[(0x1000, (0xf << 5) | (1 << 3) | 1)])
            ),
            Err(Errno::EINVAL)
        );
        let five = [(0x1000, 0); 5];
        assert_eq!(
            hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &image(&five)),
            Err(Errno::ENOSPC)
        );
        // A length that stops inside a slot's address.
        let mut short = image(&[(0x1000, 0)]);
        short.extend_from_slice(&[0; 4]);
        assert_eq!(hw_break_set(&mut s, NT_ARM_HW_WATCH, 4, &short), Err(Errno::EINVAL));
    }

    proptest! {
        #[test]
        fn any_accepted_slot_is_user_only_and_inside_its_doubleword(addr in any::<u64>(), ctrl in any::<u32>(), watch in any::<bool>()) {
            let note = if watch { NT_ARM_HW_WATCH } else { NT_ARM_HW_BREAK };
            let mut s: HwSlots = [None; MAX_SLOTS];
            if hw_break_set(&mut s, note, 16, &image(&[(addr, ctrl)])).is_ok() {
                let slot = s[0].unwrap();
                prop_assert!(slot.info.address < TASK_SIZE);
                prop_assert_eq!(slot.info.ctrl.privilege, AARCH64_BREAKPOINT_EL0);
                prop_assert_eq!(slot.info.address & 3, 0);
                if !watch {
                    prop_assert_eq!(slot.info.ctrl.ty, ARM_BREAKPOINT_EXECUTE);
                }
                // Reading it back and writing that again changes nothing
                // for an instruction breakpoint or a doubleword-aligned one.
                let b = hw_break_get(&s, 0);
                let mut again: HwSlots = [None; MAX_SLOTS];
                prop_assert!(hw_break_set(&mut again, note, 16, &b[..24]).is_ok());
                prop_assert_eq!(again[0].unwrap().info, slot.info);
            }
        }
    }
}
