//! `futex` operations and flags (include/uapi/linux/futex.h).

/// Sleep while the word holds the expected value.
pub const FUTEX_WAIT: u32 = 0;
/// Wake.
pub const FUTEX_WAKE: u32 = 1;
/// Wake some waiters, move the others to a second word.
pub const FUTEX_REQUEUE: u32 = 3;
/// FUTEX_REQUEUE if the first word still holds the expected value.
pub const FUTEX_CMP_REQUEUE: u32 = 4;
/// Modify a second word atomically, wake on both.
pub const FUTEX_WAKE_OP: u32 = 5;
/// Take a priority-inheritance lock.
pub const FUTEX_LOCK_PI: u32 = 6;
/// Release a priority-inheritance lock.
pub const FUTEX_UNLOCK_PI: u32 = 7;
/// Take a priority-inheritance lock if free, without blocking.
pub const FUTEX_TRYLOCK_PI: u32 = 8;
/// FUTEX_WAIT with an absolute timeout and a bitset.
pub const FUTEX_WAIT_BITSET: u32 = 9;
/// Wake the waiters whose bitset meets the given one.
pub const FUTEX_WAKE_BITSET: u32 = 10;
/// Wait on a word to be requeued onto a priority-inheritance futex.
pub const FUTEX_WAIT_REQUEUE_PI: u32 = 11;
/// FUTEX_CMP_REQUEUE onto a priority-inheritance futex.
pub const FUTEX_CMP_REQUEUE_PI: u32 = 12;
/// FUTEX_LOCK_PI on the clock FUTEX_CLOCK_REALTIME selects.
pub const FUTEX_LOCK_PI2: u32 = 13;
/// The op is private to the process.
pub const FUTEX_PRIVATE_FLAG: u32 = 128;
/// The absolute timeout of FUTEX_WAIT_BITSET is on CLOCK_REALTIME.
pub const FUTEX_CLOCK_REALTIME: u32 = 256;
/// Matches every waiter.
pub const FUTEX_BITSET_MATCH_ANY: u32 = u32::MAX;

/// `sizeof(struct robust_list_head)`: `list.next`, `futex_offset`,
/// `list_op_pending`, three 8-byte words; the only length
/// set_robust_list accepts.
pub const ROBUST_LIST_HEAD_SIZE: u64 = 24;
