//! Text patching (Linux's arch/arm64/kernel/patching.c):
//! `patch_text_nosync` writes one instruction through the fixmap alias
//! under a lock; `patch_text` does a batch under `stop_machine`. Only kernel
//! text and the kprobe slot pages may be patched.
//!
//! The safe functions make only the changes the architecture allows on
//! code other CPUs may be running and that cannot make the kernel do
//! anything it could not already do: an instruction that is B, BL, NOP or
//! BRK replaced by another of those (checked by the decoder). Any other
//! write (a kprobe's BRK over an arbitrary instruction, the original put
//! back, a fresh out-of-line slot) goes through the `unsafe` variants,
//! whose callers state why the new code keeps the kernel sound.

crate::notrace_module!();

use crate::errno::Errno;
use crate::sync::IrqSpinLock;
use arch::addr::VirtAddr;

static PATCH_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

/// Whether `addr` may be patched: inside kernel text or a probe slot page.
pub fn is_patchable(addr: usize) -> bool {
    let l = arch::mmu::image_layout();
    (addr >= l.text && addr < l.etext) || crate::kprobes::slots::contains(addr)
}

fn check_addr(addr: usize) -> Result<VirtAddr, Errno> {
    if !addr.is_multiple_of(4) || !is_patchable(addr) {
        return Err(Errno::EINVAL);
    }
    VirtAddr::new(addr).ok_or(Errno::EINVAL)
}

/// How a write is vetted under PATCH_LOCK.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Only B/BL/NOP/BRK over B/BL/NOP/BRK.
    HotpatchSafe,
    /// The caller vouched for the write (an `unsafe` entry point).
    Unchecked,
}

fn poke(addr: usize, insn: u32, check: Check) -> Result<(), Errno> {
    let va = check_addr(addr)?;
    let _guard = PATCH_LOCK.lock();
    if check == Check::HotpatchSafe {
        // Read under the lock, so that nobody changes it before the write.
        let old = read_insn(addr).ok_or(Errno::EINVAL)?;
        if !insn::decode::aarch64_insn_hotpatch_safe(old, insn) {
            return Err(Errno::EPERM);
        }
    }
    #[allow(unsafe_code)]
    // SAFETY: `addr` is an instruction of kernel text or a slot page
    // (checked), PATCH_LOCK gives us the poke slot, and the change is either
    // a swap among B/BL/NOP/BRK (checked above), which the architecture
    // allows on live code and which branches only where the kernel already
    // did or traps to its own BRK handlers, or one the caller of an unsafe
    // entry point vouched for.
    unsafe {
        arch::patching::poke_insn(va, insn).map_err(|_| Errno::EINVAL)
    }
}

/// Writes one instruction without stopping other CPUs, if both the
/// instruction there and `insn` are B, BL, NOP or BRK (ARM ARM B2.2.5);
/// `EPERM` for any other change, `EINVAL` for an address outside text.
pub fn patch_text_nosync(addr: usize, insn: u32) -> Result<(), Errno> {
    poke(addr, insn, Check::HotpatchSafe)
}

/// Writes any instruction at `addr` without stopping other CPUs.
///
/// # Safety
/// No CPU may execute `addr` until this returns (e.g. an out-of-line slot
/// not yet in use), and `insn` must keep the kernel sound wherever it will
/// run: it is executed with the kernel's privileges.
#[allow(unsafe_code)]
pub unsafe fn patch_text_nosync_unchecked(addr: usize, insn: u32) -> Result<(), Errno> {
    poke(addr, insn, Check::Unchecked)
}

fn patch_batch(addrs: &[usize], insns: &[u32], check: Check) -> Result<(), Errno> {
    if addrs.len() != insns.len() {
        return Err(Errno::EINVAL);
    }
    addrs.iter().try_for_each(|&a| check_addr(a).map(drop))?;
    if check == Check::HotpatchSafe {
        // Refuse the whole batch before any of it is written.
        let _guard = PATCH_LOCK.lock();
        for (&a, &i) in addrs.iter().zip(insns) {
            let old = read_insn(a).ok_or(Errno::EINVAL)?;
            if !insn::decode::aarch64_insn_hotpatch_safe(old, i) {
                return Err(Errno::EPERM);
            }
        }
    }
    crate::stop_machine::stop_machine(|| addrs.iter().zip(insns).try_for_each(|(&a, &i)| poke(a, i, check)))
}

/// Writes each `insns[i]` at `addrs[i]` with all other CPUs stopped, if
/// every change is among B, BL, NOP and BRK; `EPERM` otherwise (nothing is
/// written then).
pub fn patch_text(addrs: &[usize], insns: &[u32]) -> Result<(), Errno> {
    patch_batch(addrs, insns, Check::HotpatchSafe)
}

/// Writes each `insns[i]` at `addrs[i]` with all other CPUs stopped,
/// whatever the instructions.
///
/// # Safety
/// Each `insns[i]` must keep the kernel sound where it runs: it is executed
/// with the kernel's privileges by whatever code reaches `addrs[i]` (e.g. a
/// kprobe's BRK over an instruction that `arch_prepare_kprobe` accepted, or
/// the original instruction put back).
#[allow(unsafe_code)]
pub unsafe fn patch_text_unchecked(addrs: &[usize], insns: &[u32]) -> Result<(), Errno> {
    patch_batch(addrs, insns, Check::Unchecked)
}

/// The instruction at `addr` now.
pub fn read_insn(addr: usize) -> Option<u32> {
    arch::patching::peek_insn(VirtAddr::new(addr)?)
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    /// A function whose body holds a BL and instructions outside
    /// B/BL/NOP/BRK.
    #[inline(never)]
    extern "C" fn ktest_patching_target(a: u64) -> u64 {
        ktest_patching_callee(core::hint::black_box(a)).wrapping_mul(7) ^ 5
    }

    #[inline(never)]
    extern "C" fn ktest_patching_callee(a: u64) -> u64 {
        core::hint::black_box(a) + 1
    }

    #[kernel_test]
    fn safe_patching_refuses_changes_outside_b_bl_nop_brk() {
        let f = ktest_patching_target as *const () as usize;
        let body: alloc::vec::Vec<(usize, u32)> = (f..f + 64).step_by(4).map(|a| (a, read_insn(a).unwrap())).collect();
        let &(addr, orig) = body
            .iter()
            .find(|&&(_, i)| !insn::decode::is_hotpatch_class(i))
            .expect("an ordinary instruction in the function");
        let &(call, bl) = body
            .iter()
            .find(|&&(_, i)| insn::decode::is_bl(i))
            .expect("the BL to the callee");
        let nop = insn::encode::nop();
        let brk = arch::debug_monitors::brk_insn(arch::debug_monitors::KPROBES_BRK_IMM);
        assert_eq!(patch_text_nosync(addr, nop), Err(Errno::EPERM));
        assert_eq!(patch_text_nosync(addr, brk), Err(Errno::EPERM));
        assert_eq!(patch_text(&[addr], &[brk]), Err(Errno::EPERM));
        assert_eq!(read_insn(addr), Some(orig), "a refused write changed the text");
        // A hot-patchable site may not become an arbitrary instruction either.
        assert_eq!(patch_text_nosync(call, orig), Err(Errno::EPERM));
        assert_eq!(patch_text(&[call, addr], &[nop, nop]), Err(Errno::EPERM));
        assert_eq!(read_insn(call), Some(bl), "a refused batch was partly written");
        // Swaps within the class are allowed, live.
        patch_text_nosync(call, brk).unwrap();
        assert_eq!(read_insn(call), Some(brk));
        patch_text(&[call], &[nop]).unwrap();
        assert_eq!(read_insn(call), Some(nop));
        patch_text_nosync(call, bl).unwrap();
        assert_eq!(read_insn(call), Some(bl));
        assert_eq!(ktest_patching_target(2), (3 * 7) ^ 5);
    }

    #[kernel_test]
    fn address_types_keep_to_their_half_and_round_trip() {
        use arch::addr::{PhysAddr, UserVirtAddr};
        use arch::memory::PAGE_OFFSET;
        use arch::uaccess::TASK_SIZE;
        assert_eq!(VirtAddr::new(0x40_0000), None, "a user address is no kernel address");
        assert_eq!(
            UserVirtAddr::new(PAGE_OFFSET as u64),
            None,
            "a kernel address is no user address"
        );
        let last = UserVirtAddr::new(TASK_SIZE - 1).unwrap();
        assert_eq!(last.checked_add(1), None);
        assert!(last.range_ok(1) && !last.range_ok(2));
        assert_eq!(PhysAddr::new(1 << 48), None);
        assert_eq!(PhysAddr::new(u64::MAX - 1).and_then(|p| p.checked_add(4)), None);
        let heap = alloc::boxed::Box::new(7u64);
        let (pa, _) = arch::mmu::translate(VirtAddr::of(&*heap).unwrap()).unwrap();
        let alias = pa.to_linear();
        assert_eq!(alias.linear_to_phys(), Some(pa));
        // The linear alias of the heap page maps the same frame.
        assert_eq!(arch::mmu::translate(alias).map(|(p, _)| p), Some(pa));
        // Patching takes kernel addresses only.
        assert_eq!(read_insn(0x40_0000), None);
        assert_eq!(patch_text_nosync(0x40_0000, insn::encode::nop()), Err(Errno::EINVAL));
    }
}
