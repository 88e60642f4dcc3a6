//! `prctl` options (include/uapi/linux/prctl.h).

/// Set the calling thread's name (`comm`, at most 15 bytes).
pub const PR_SET_NAME: u64 = 15;
/// Get the calling thread's name.
pub const PR_GET_NAME: u64 = 16;
