//! `reboot` magic numbers and commands (include/uapi/linux/reboot.h).

/// First magic argument.
pub const LINUX_REBOOT_MAGIC1: u64 = 0xfee1_dead;
/// Second magic argument: one of these four.
pub const LINUX_REBOOT_MAGIC2: u64 = 672_274_793;
/// Second magic, alternative.
pub const LINUX_REBOOT_MAGIC2A: u64 = 85_072_278;
/// Second magic, alternative.
pub const LINUX_REBOOT_MAGIC2B: u64 = 369_367_448;
/// Second magic, alternative.
pub const LINUX_REBOOT_MAGIC2C: u64 = 537_993_216;

/// Restart the system.
pub const LINUX_REBOOT_CMD_RESTART: u64 = 0x0123_4567;
/// Halt the system.
pub const LINUX_REBOOT_CMD_HALT: u64 = 0xcdef_0123;
/// Power the system off.
pub const LINUX_REBOOT_CMD_POWER_OFF: u64 = 0x4321_fedc;
/// Ctrl-Alt-Del reboots at once.
pub const LINUX_REBOOT_CMD_CAD_ON: u64 = 0x89ab_cdef;
/// Ctrl-Alt-Del sends SIGINT to init.
pub const LINUX_REBOOT_CMD_CAD_OFF: u64 = 0;
