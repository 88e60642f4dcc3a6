//! TEMPORARY: filesystem glue placeholder while the VFS crate lands.
use crate::errno::Errno;
use alloc::vec::Vec;

/// Per-process filesystem state.
pub struct ProcessFs;
impl ProcessFs {
    /// fork
    pub fn fork(&self, _share_files: bool, _share_fs: bool) -> ProcessFs { ProcessFs }
    /// exit
    pub fn release(&mut self) {}
    /// exec
    pub fn close_on_exec(&mut self) {}
}
/// read
pub fn read_exec_file(_path: &str) -> Result<Vec<u8>, Errno> { Err(Errno::ENOENT) }
/// init
pub fn init_process_fs() -> Result<ProcessFs, Errno> { Ok(ProcessFs) }
/// mount
pub fn mount_root(_initrd: Option<(u64, u64)>) -> Result<(), Errno> { Err(Errno::ENOENT) }
/// poll
pub fn console_poll() {}
