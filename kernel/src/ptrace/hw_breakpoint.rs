//! The NT_ARM_HW_BREAK and NT_ARM_HW_WATCH regsets (Linux's
//! hw_break_get/hw_break_set): the layout and checks are
//! `uapi::hw_breakpoint`'s; the slots live in the tracee's debug state and
//! reach the CPU when it resumes.

use super::*;
use crate::errno::Errno;
use arch::hw_breakpoint as hw;
use uapi::hw_breakpoint::{dbg_info, hw_break_get, hw_break_set, USER_HWDEBUG_STATE_SIZE};

/// Slots this CPU has for regset `nt`.
fn num_slots(nt: u32) -> usize {
    if nt == NT_ARM_HW_BREAK {
        hw::num_brps()
    } else {
        hw::num_wrps()
    }
}

/// The whole `struct user_hwdebug_state` of `child`.
pub(super) fn regset_get(child: &Task, nt: u32) -> [u8; USER_HWDEBUG_STATE_SIZE] {
    let info = dbg_info(hw::debug_arch(), num_slots(nt));
    child.debug.with_state(|st| {
        let slots = if nt == NT_ARM_HW_BREAK {
            &st.hbp_break
        } else {
            &st.hbp_watch
        };
        hw_break_get(slots, info)
    })
}

/// Writes the first `data.len()` bytes of `child`'s regset `nt`.
pub(super) fn regset_set(child: &Task, nt: u32, data: &[u8]) -> Result<(), Errno> {
    let num = num_slots(nt);
    child.debug.with_state(|st| {
        let slots = if nt == NT_ARM_HW_BREAK {
            &mut st.hbp_break
        } else {
            &mut st.hbp_watch
        };
        hw_break_set(slots, nt, num, data)
    })
}
