//! The vDSO and its data page (Linux's arch/arm64/kernel/vdso.c and
//! kernel/time/vsyscall.c): the image built by the `vdso` crate is copied
//! into frames once at boot and mapped, with the `[vvar]` data page just
//! below it, into every process at exec; timekeeping publishes what user
//! space needs to read the clocks there (`update_vsyscall`).
#![allow(unsafe_code)] // The data page is a frame shared with user space, written through the linear map.

use crate::errno::Errno;
use crate::mm::frame;
use crate::mm::vm::Mm;
use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use arch::addr::{PhysAddr, UserVirtAddr};
use vdso::datapage::{Snapshot, VdsoData, MAX_FREQ, VDSO_CLOCKMODE_ARCHTIMER, VDSO_CLOCKMODE_NONE};

/// Page size as a u64.
const PAGE: u64 = crate::mm::PAGE_SIZE as u64;

/// The frames every process maps.
struct VdsoPages {
    /// The data page's frame (`[vvar]`).
    vvar: PhysAddr,
    /// The data page, as the kernel writes it.
    data: &'static VdsoData,
    /// The image's frames (`[vdso]`), in order.
    text: Vec<PhysAddr>,
}

static VDSO: spin::Once<VdsoPages> = spin::Once::new();

/// Serializes updates of the data page (Linux's `vdso_write_begin` runs
/// under the timekeeper's lock), and of what they mirror.
static VSYSCALL_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

/// Sets the vDSO up: copies the image into frames and fills the data page
/// from the timekeeping state (`boot_counter`: the counter at
/// `CLOCK_MONOTONIC` zero). Called once at boot, after the timer and the
/// real-time clock; until then `update_vsyscall` only runs its closure.
pub fn init(boot_counter: u64) -> Result<(), Errno> {
    let image = vdso::image();
    let mut text = Vec::new();
    for chunk in image.chunks(PAGE as usize) {
        let pa = alloc_zeroed_frame()?;
        frame::write_frame(pa, 0, chunk);
        text.push(pa);
    }
    let vvar = alloc_zeroed_frame()?;
    let virt = vvar.to_linear().as_ptr::<VdsoData>();
    // SAFETY: the frame is allocated for the kernel's lifetime (mappings
    // into user space only add references to it), page aligned and zeroed,
    // which is a valid `VdsoData` (atomics only, all zero); the linear map
    // covers it. The kernel accesses it only through this shared reference,
    // and user space only reads it.
    let data: &'static VdsoData = unsafe { &*virt };
    let freq = arch::timer::frequency();
    let _guard = VSYSCALL_LOCK.lock();
    data.update(|s| {
        s.clock_mode = if freq != 0 && freq <= MAX_FREQ {
            VDSO_CLOCKMODE_ARCHTIMER
        } else {
            VDSO_CLOCKMODE_NONE
        };
        s.cycle_base = boot_counter;
        s.freq = freq;
        s.offs_real = crate::time::realtime_offset_ns();
        s.coarse_mono = crate::time::ktime_get_ns();
        s.hrtimer_res = 1;
        s.coarse_res = crate::cputime::TICK_NSEC;
        // The time zone stays 0 until settimeofday sets one.
    });
    VDSO.call_once(|| VdsoPages { vvar, data, text });
    crate::pr_info!(
        "vdso: {} bytes ({} pages), data page at {:#x}",
        image.len(),
        VDSO.get().map_or(0, |v| v.text.len()),
        vvar.as_u64()
    );
    Ok(())
}

/// A zeroed frame the vDSO keeps for the kernel's lifetime.
fn alloc_zeroed_frame() -> Result<PhysAddr, Errno> {
    frame::alloc_zeroed_frame().ok_or(Errno::ENOMEM)
}

/// Changes timekeeping state that user space reads (Linux's
/// `update_vsyscall`): `f` runs under the update lock, with the data
/// page's contents to change, so that whatever it also stores (the
/// kernel's own copy of the value) changes in the same order as the page.
pub fn update_vsyscall(f: impl FnOnce(&mut Snapshot)) {
    let _guard = VSYSCALL_LOCK.lock();
    match VDSO.get() {
        Some(v) => v.data.update(f),
        None => f(&mut Snapshot::default()),
    }
}

/// The data page's contents, if there is one yet.
pub fn vsyscall_snapshot() -> Option<Snapshot> {
    VDSO.get().map(|v| v.data.read())
}

/// Maps `[vvar]` and `[vdso]` into `mm`, next to each other as Linux
/// places them (Linux's `arch_setup_additional_pages`); returns the
/// vDSO's address (`AT_SYSINFO_EHDR`).
pub fn arch_setup_additional_pages(mm: &Mm) -> Result<u64, Errno> {
    let v = VDSO.get().ok_or(Errno::ENOMEM)?;
    mm.map_vdso(&[v.vvar], &v.text).map(UserVirtAddr::as_u64)
}

/// Where a handler without SA_RESTORER returns: `__kernel_rt_sigreturn`
/// in `mm`'s vDSO (Linux's `VDSO_SYMBOL(vdso, sigtramp)`), if it has one.
pub fn sigtramp(mm: &Mm) -> Option<u64> {
    mm.vdso_base().map(|base| base.as_u64() + vdso::SIGRETURN_OFFSET)
}

#[cfg(feature = "ktest")]
mod tests {
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn data_page_follows_the_kernels_clocks() {
        let s = super::vsyscall_snapshot().expect("vdso set up at boot");
        let before = crate::time::ktime_get_ns();
        let counter = arch::timer::counter();
        let after = crate::time::ktime_get_ns();
        let mono = s.mono_ns(counter).expect("the counter is usable at EL0");
        assert!(before <= mono && mono <= after, "{before} <= {mono} <= {after}");
        assert!(s.coarse_mono <= after);
        assert_eq!(s.offs_real, crate::time::realtime_offset_ns());
    }
}
