//! `buffer_subbuf_size_kb` (Linux 6.12): the size of each page of a trace
//! array's ring buffers, a power of two system pages from 4 KiB to
//! 512 KiB. Changing it reallocates every CPU's buffer (and the snapshot
//! buffer's) with as many of the new sub-buffers as keep its size, and
//! drops what they held, as Linux's `ring_buffer_subbuf_order_set`;
//! events, `trace_marker` writes and `trace_pipe_raw` pages follow it.

use super::{tracing_cpus, TraceArray};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use ring_buffer::{CpuBuffer, Page, PAGE_SIZE};
use uapi::Errno;

/// The sub-buffer size for a write of `kb` (Linux's
/// `buffer_subbuf_size_write`: KiB rounded up to whole pages, then to a
/// power of two; EINVAL beyond 128 pages or for 0).
pub fn subbuf_size_for_kb(kb: u64) -> Result<usize, Errno> {
    let bytes = kb.checked_mul(1024).ok_or(Errno::EINVAL)?;
    let pages = bytes.div_ceil(PAGE_SIZE as u64);
    if pages == 0 {
        return Err(Errno::EINVAL);
    }
    let size = usize::try_from(pages.next_power_of_two())
        .ok()
        .and_then(|p| p.checked_mul(PAGE_SIZE))
        .ok_or(Errno::EINVAL)?;
    if !ring_buffer::valid_subbuf_size(size) {
        return Err(Errno::EINVAL);
    }
    Ok(size)
}

/// Gives every CPU buffer of `tr` sub-buffers of `size` bytes, as many as
/// keep each buffer's size in bytes (at least two); their events are
/// dropped. ENOMEM, with nothing changed, if the pages cannot be had.
pub fn set_subbuf_size(tr: &TraceArray, size: usize) -> Result<(), Errno> {
    if !ring_buffer::valid_subbuf_size(size) {
        return Err(Errno::EINVAL);
    }
    let _g = tr.resize_lock.lock();
    let old = tr.subbuf_size();
    if old == size {
        return Ok(());
    }
    let old_data = old - ring_buffer::BUF_PAGE_HDR_SIZE;
    // All new buffers first, so that a failure changes nothing.
    let mut made: Vec<(usize, CpuBuffer)> = Vec::new();
    let mut frames = 0usize;
    for cpu in tracing_cpus() {
        let bytes = tr.nr_pages[cpu].load(Ordering::Acquire) * old_data;
        let n = super::pages_for_subbuf(bytes, size);
        frames += n * (size / PAGE_SIZE);
        if frames + frames / 8 + 1024 > crate::mm::frame::stats().free {
            return Err(Errno::ENOMEM);
        }
        let mut pages: Vec<Box<Page>> = Vec::new();
        pages.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        for _ in 0..n {
            pages.push(ring_buffer::try_new_subbuf(size).ok_or(Errno::ENOMEM)?);
        }
        let mut b = CpuBuffer::new(pages).map_err(|_| Errno::EINVAL)?;
        b.set_overwrite(super::options::is_set(super::options::OVERWRITE));
        made.push((cpu, b));
    }
    let mut old_bufs: Vec<CpuBuffer> = Vec::new();
    tr.tracing_stop();
    for (cpu, b) in made {
        let n = b.nr_pages();
        let prev = tr.buffers[cpu].lock_serving_calls().replace(b);
        tr.nr_pages[cpu].store(n, Ordering::Release);
        old_bufs.extend(prev);
    }
    tr.subbuf.store(size, Ordering::Release);
    tr.tracing_start();
    // The old pages go back outside the buffer locks.
    drop(old_bufs);
    Ok(())
}

/// A write to `buffer_subbuf_size_kb` (the snapshot buffer follows, as
/// Linux keeps both of one order so that they can be swapped).
pub fn buffer_subbuf_size_write(tr: &TraceArray, buf: &[u8]) -> Result<usize, Errno> {
    let kb = super::tracefs::parse_ulong(buf)?;
    let size = subbuf_size_for_kb(kb)?;
    let old = tr.subbuf_size();
    set_subbuf_size(tr, size)?;
    if let Err(e) = super::snapshot::set_snapshot_subbuf_size(tr, size) {
        let _ = set_subbuf_size(tr, old);
        return Err(e);
    }
    Ok(buf.len())
}

/// What `buffer_subbuf_size_kb` reads.
pub fn buffer_subbuf_size_show(tr: &TraceArray) -> Vec<u8> {
    alloc::format!("{}\n", tr.subbuf_size() / 1024).into_bytes()
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn subbuf_kb_rounds_up_to_a_power_of_two_pages_within_128() {
        for (kb, want) in [
            (1, Ok(4096)),
            (3, Ok(4096)),
            (4, Ok(4096)),
            (5, Ok(8192)),
            (12, Ok(16384)),
            (512, Ok(524_288)),
            (513, Err(Errno::EINVAL)),
            (2000, Err(Errno::EINVAL)),
            (0, Err(Errno::EINVAL)),
            (u64::MAX, Err(Errno::EINVAL)),
        ] {
            assert_eq!(subbuf_size_for_kb(kb), want, "{kb}");
        }
    }
}
