//! Wait queues (kernel/sched/wait.c, v4.9), as pipes and AF_UNIX sockets use them: sleepers
//! join with `prepare_to_wait` (non-exclusive), so `__wake_up` wakes every one of them, and a
//! woken task that loses the race for what it waited for sleeps again (its call is retried).
//! The waker pays `try_to_wake_up` for each task it wakes (linux/kernel/sched/core.rs), a sync
//! one (`wake_up_interruptible_sync_poll`, what both callers use).

use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

impl Kernel {
    /// `__wake_up` of a non-exclusive wait queue whose sleepers were taken out as `queue`:
    /// wakes each from `at`, in the order they slept, each after the waker's `try_to_wake_up`
    /// of it. Returns the emptied vector (to put back, so the queue keeps its allocation), how
    /// many were woken, and the waker's time.
    pub(in crate::linux) fn wake_up_all(
        &mut self,
        ctx: &mut Ctx,
        mut queue: Vec<usize>,
        at: Ps,
    ) -> (Vec<usize>, u64, Ps) {
        let n = queue.len() as u64;
        let mut d = Ps::ZERO;
        for &w in &queue {
            d += self.try_to_wake_up_as(ctx, w, at + d, true);
        }
        queue.clear();
        (queue, n, d)
    }
}
