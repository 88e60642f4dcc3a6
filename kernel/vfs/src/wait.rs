//! Wake-ups for the kernel's sleepers.
//!
//! The VFS never sleeps; a file whose operation returned EAGAIN has a
//! [`WaitQueueHead`] that it wakes when that operation may succeed (data
//! arrived, space freed, the other end closed). The kernel adds a
//! [`WaitHook`] of its own (typically "make this task runnable") before
//! trying the operation, sleeps if it failed with EAGAIN, and removes the
//! hook when done, in the manner of Linux's `prepare_to_wait`. poll and
//! select add the same hook to every file's queue. The generation counter
//! offers a lock-free alternative: read it before the attempt, and sleep
//! only while it is unchanged.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;

/// Something the kernel wants called when a wait queue is woken.
pub trait WaitHook: Send + Sync {
    /// Called without VFS locks held, possibly from another CPU.
    fn wake(&self);
}

/// Identifies a hook added to a [`WaitQueueHead`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaiterId(u64);

/// A list of hooks to call when an object's readiness changes.
#[derive(Default)]
pub struct WaitQueueHead {
    generation: AtomicU64,
    next_id: AtomicU64,
    hooks: Mutex<Vec<(u64, Arc<dyn WaitHook>)>>,
}

impl WaitQueueHead {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `hook`; it stays until [`remove`](Self::remove)d.
    pub fn add(&self, hook: Arc<dyn WaitHook>) -> WaiterId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.hooks.lock().push((id, hook));
        WaiterId(id)
    }

    pub fn remove(&self, id: WaiterId) {
        self.hooks.lock().retain(|(i, _)| *i != id.0);
    }

    /// Incremented by every wake-up.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Bumps the generation and calls every hook (outside the list's lock).
    pub fn wake_up(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let hooks: Vec<Arc<dyn WaitHook>> = self.hooks.lock().iter().map(|(_, h)| h.clone()).collect();
        for h in hooks {
            h.wake();
        }
    }
}
