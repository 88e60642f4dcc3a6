//! In-kernel tests of the pending-signal queues: the RLIMIT_SIGPENDING
//! accounting and that a queue gives its entries back when it dies; and
//! of a shared signal handed on when the thread picked for it exits.

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

/// Never called: the threads of the test process below are never woken.
extern "C" fn never_runs(_: usize) {}

/// A thread of `p` that never runs: asleep uninterruptibly, so that a
/// signal picks it without waking it (a wake would run it).
fn sleeping_thread(p: &Arc<Process>) -> Arc<Task> {
    let t = Task::new_kthread(never_runs, 0, "sigtarget").expect("task");
    t.set_state(TaskState::Uninterruptible);
    t.process.call_once(|| p.clone());
    p.threads.lock().push(t.clone());
    t
}

/// Linux's retarget_shared_pending in exit_signals: a process-directed
/// signal is flagged on one thread only (complete_signal's pick, here
/// the leader); when that thread exits before taking it, the signal is
/// handed on to a thread that stays and does not block it, and that
/// thread alone (not one that blocks it) now sees it pending. Without the
/// hand-on the signal would sit in the shared set with no thread flagged
/// to take it until some unrelated event recalculated.
#[kernel_test]
fn shared_signal_picked_for_an_exiting_thread_goes_to_a_thread_that_takes_it() {
    let leader = Task::new_kthread(never_runs, 0, "sigtarget").expect("task");
    leader.set_state(TaskState::Uninterruptible);
    let p = crate::process::Process::new_for_ktest(leader.tid());
    leader.process.call_once(|| p.clone());
    p.threads.lock().push(leader.clone());
    let blocker = sleeping_thread(&p);
    let taker = sleeping_thread(&p);
    // A handler, so that SIGUSR1 is not fatal to the group.
    p.sighand.set(
        SIGUSR1,
        SigAction {
            handler: 0x1000,
            ..Default::default()
        },
    );
    blocker.sig_blocked.store(sigmask(SIGUSR1), Ordering::SeqCst);
    send_sig_to_process(
        &p,
        SigInfo {
            signo: SIGUSR1,
            code: code::SI_USER,
            ..Default::default()
        },
    )
    .expect("send");
    assert_eq!(p.shared_pending.load(Ordering::SeqCst), sigmask(SIGUSR1));
    assert!(has_pending(&leader), "the leader was not picked");
    assert!(
        !has_pending(&blocker) && !has_pending(&taker),
        "more than one thread picked"
    );
    // The leader exits as exit_thread has it: off the list, then its
    // signals.
    p.threads.lock().retain(|t| !Arc::ptr_eq(t, &leader));
    exit_signals(&leader, &p, false);
    assert!(
        !leader.sigpending.load(Ordering::SeqCst),
        "the exited thread still flagged"
    );
    assert!(
        !blocker.sigpending.load(Ordering::SeqCst),
        "handed to the thread that blocks it"
    );
    assert!(has_pending(&taker), "not handed on to the thread that may take it");
    assert_eq!(
        p.shared_pending.load(Ordering::SeqCst),
        sigmask(SIGUSR1),
        "the signal left the shared set"
    );
    // The threads point at the process: break the cycle.
    p.threads.lock().clear();
    flush_process_signals(&p, u64::MAX);
}
