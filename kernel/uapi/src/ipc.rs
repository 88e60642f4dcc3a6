//! System V IPC flags (include/uapi/linux/ipc.h, msg.h, shm.h).

/// `msgsnd`/`msgrcv`/`semop`: fail with EAGAIN/ENOMSG instead of waiting.
pub const IPC_NOWAIT: u32 = 0o4000;
/// `shmat`: replace any mapping at the given address.
pub const SHM_REMAP: u32 = 0o40000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipc_flags_are_linuxs() {
        // include/uapi/linux/ipc.h and shm.h of Linux 6.12.
        assert_eq!((IPC_NOWAIT, SHM_REMAP), (0o4000, 0o40000));
    }
}
