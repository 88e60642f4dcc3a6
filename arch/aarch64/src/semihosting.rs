//! Arm semihosting (`HLT #0xf000`), used by test builds to end QEMU with a
//! status. QEMU must run with `-semihosting-config enable=on,target=native`;
//! on hardware without a debugger the call is an undefined instruction, so
//! only test builds use it.

const SYS_EXIT: u64 = 0x18;
/// ADP_Stopped_ApplicationExit: the reason code for a normal exit.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// Ends the emulator with `code` as its exit status.
pub fn exit(code: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, code as u64];
    // SAFETY: the semihosting call reads the two-word block and stops the
    // machine; if it returns (no semihosting), nothing was changed.
    unsafe {
        core::arch::asm!("hlt #0xf000", in("x0") SYS_EXIT, in("x1") block.as_ptr(), options(nostack, readonly));
    }
    crate::cpu::halt()
}
