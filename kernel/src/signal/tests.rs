//! In-kernel tests of the pending-signal queues: the RLIMIT_SIGPENDING
//! accounting and that a queue gives its entries back when it dies.

use super::*;
use ktest_macros::kernel_test;

fn rt(n: u32, code: i32) -> SigInfo {
    SigInfo {
        signo: SIGRTMIN + 2,
        code,
        value: n as u64,
        ..Default::default()
    }
}

#[kernel_test]
fn sigqueue_bounded_by_rlimit_and_returned_when_dropped() {
    let before = QUEUED.load(Ordering::SeqCst);
    let limit = sigpending_limit();
    assert!(before < limit, "{before} entries already queued, limit {limit}");
    let bits = AtomicU64::new(0);
    let q = SigQueue::new();
    let mut queued = 0;
    while queue_signal(&bits, &q, rt(queued as u32, code::SI_QUEUE)).is_ok() {
        queued += 1;
        assert!(queued <= limit, "queued past the limit {limit}");
    }
    assert_eq!(queued, limit - before, "entries until EAGAIN");
    assert_eq!(q.len() as u64, queued);
    // kill()'s SI_USER over the limit: pending, without information.
    assert_eq!(queue_signal(&bits, &q, rt(0, code::SI_USER)), Ok(()));
    assert_eq!(q.len() as u64, queued);
    // A classic signal from the kernel may go over the limit.
    assert_eq!(
        queue_signal(
            &bits,
            &q,
            SigInfo {
                signo: SIGALRM,
                code: code::SI_KERNEL,
                ..Default::default()
            }
        ),
        Ok(())
    );
    assert_eq!(q.len() as u64, queued + 1);
    assert_eq!(bits.load(Ordering::SeqCst), sigmask(SIGRTMIN + 2) | sigmask(SIGALRM));
    drop(q);
    assert_eq!(
        QUEUED.load(Ordering::SeqCst),
        before,
        "a dropped queue returns its entries"
    );
}

#[kernel_test]
fn flushing_a_mask_drops_bits_and_entries() {
    let before = QUEUED.load(Ordering::SeqCst);
    let bits = AtomicU64::new(0);
    let q = SigQueue::new();
    for n in 0..3 {
        queue_signal(&bits, &q, rt(n, code::SI_QUEUE)).unwrap();
    }
    queue_signal(
        &bits,
        &q,
        SigInfo {
            signo: SIGUSR1,
            ..Default::default()
        },
    )
    .unwrap();
    flush_sigqueue_mask(&bits, &q, sigmask(SIGRTMIN + 2));
    assert_eq!(bits.load(Ordering::SeqCst), sigmask(SIGUSR1));
    assert_eq!(q.len(), 1);
    assert_eq!(QUEUED.load(Ordering::SeqCst), before + 1);
    drop(q);
    assert_eq!(QUEUED.load(Ordering::SeqCst), before);
}
