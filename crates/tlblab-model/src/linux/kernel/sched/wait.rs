//! Wait queues (kernel/sched/wait.c, v4.9), as pipes and AF_UNIX sockets use them: sleepers
//! join with `prepare_to_wait` (non-exclusive), so `__wake_up` wakes every one of them, and a
//! woken task that loses the race for what it waited for sleeps again (its call is retried).

use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

impl Kernel {
    /// `__wake_up` of a non-exclusive wait queue whose sleepers were taken out as `queue`:
    /// wakes each at `at`, in the order they slept. Returns the emptied vector (to put back, so
    /// the queue keeps its allocation) and how many were woken.
    pub(in crate::linux) fn wake_up_all(
        &mut self,
        ctx: &mut Ctx,
        mut queue: Vec<usize>,
        at: Ps,
    ) -> (Vec<usize>, u64) {
        let n = queue.len() as u64;
        for &w in &queue {
            self.wake(ctx, w, at);
        }
        queue.clear();
        (queue, n)
    }
}
