//! `rseq` events (Linux's `include/trace/events/rseq.h`): the kernel wrote
//! a thread's CPU numbers into its rseq area, or moved it to the abort
//! handler of the critical section it was in.

use crate::define_trace_event;

define_trace_event! {
    /// The CPU numbers were written to the current thread's rseq area.
    rseq / rseq_update,
    fn trace_rseq_update(cpu_id: u32, node_id: u32, mm_cid: u32),
    fields {
        cpu_id: i32 as "s32" = cpu_id as i32,
        node_id: i32 as "s32" = node_id as i32,
        mm_cid: i32 as "s32" = mm_cid as i32,
    },
    printk "\"cpu_id=%d node_id=%d mm_cid=%d\", REC->cpu_id, REC->node_id, REC->mm_cid",
    print(out, e) {
        write!(out, "cpu_id={} node_id={} mm_cid={}", e.cpu_id, e.node_id, e.mm_cid)
    }
}

define_trace_event! {
    /// A critical section was aborted: the thread at `regs_ip` goes on at
    /// `abort_ip`.
    rseq / rseq_ip_fixup,
    fn trace_rseq_ip_fixup(regs_ip: u64, start_ip: u64, post_commit_offset: u64, abort_ip: u64),
    fields {
        regs_ip: u64 as "unsigned long" = regs_ip,
        start_ip: u64 as "unsigned long" = start_ip,
        post_commit_offset: u64 as "unsigned long" = post_commit_offset,
        abort_ip: u64 as "unsigned long" = abort_ip,
    },
    printk "\"regs_ip=0x%lx start_ip=0x%lx post_commit_offset=%lu abort_ip=0x%lx\", REC->regs_ip, REC->start_ip, REC->post_commit_offset, REC->abort_ip",
    print(out, e) {
        write!(out, "regs_ip=0x{:x} start_ip=0x{:x} post_commit_offset={} abort_ip=0x{:x}",
            e.regs_ip, e.start_ip, e.post_commit_offset, e.abort_ip)
    }
}

/// Registers the `rseq` events.
pub fn register() -> Result<(), uapi::Errno> {
    rseq_update::register()?;
    rseq_ip_fixup::register()
}
