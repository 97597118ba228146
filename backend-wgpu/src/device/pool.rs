//! Idle device buffers kept for reuse, and the job tickets that hold a dropped one back from reuse.

use std::sync::{Arc, Mutex};

/// Buffers no longer used, kept for reuse: a new buffer costs the driver
/// an allocation that grows with its size (about 2.2 ms per 64 MiB on the
/// H200, more than the transforms that fill it), and the prover asks for
/// the same sizes round after round. Oldest first; at most `cap` bytes.
///
/// A buffer dropped while a job that may use it is still being recorded
/// waits until every job open at its drop has been submitted (or
/// abandoned): work recorded but not submitted is not yet in the queue's
/// order, and the buffer's next user could otherwise overwrite it first.
pub(crate) struct BufferPool {
    state: Mutex<PoolState>,
    cap: u64,
}

#[derive(Default)]
struct PoolState {
    idle: std::collections::VecDeque<wgpu::Buffer>,
    /// Dropped buffers with the first job id not yet open at their drop.
    waiting: Vec<(u64, wgpu::Buffer)>,
    /// Jobs being recorded.
    open: std::collections::BTreeSet<u64>,
    next_job: u64,
}

impl BufferPool {
    pub(super) fn new(cap: u64) -> BufferPool {
        BufferPool { state: Mutex::new(PoolState::default()), cap }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The smallest idle buffer whose size `fits`, the newest of equals.
    pub(super) fn take(&self, fits: impl Fn(u64) -> bool) -> Option<wgpu::Buffer> {
        let mut st = self.state();
        let (i, _) = st.idle.iter().enumerate().rev().filter(|(_, b)| fits(b.size())).min_by_key(|(_, b)| b.size())?;
        st.idle.remove(i)
    }

    /// Keeps `buf` (once no job open now can still record a use of it).
    pub(super) fn give(&self, buf: wgpu::Buffer) {
        if buf.size() > self.cap {
            return;
        }
        let mut st = self.state();
        if st.open.is_empty() {
            self.keep(&mut st, buf);
        } else {
            let tag = st.next_job;
            st.waiting.push((tag, buf));
        }
    }

    /// Adds `buf` to the idle buffers, freeing the oldest past the cap.
    fn keep(&self, st: &mut PoolState, buf: wgpu::Buffer) {
        let mut held: u64 = st.idle.iter().map(|b| b.size()).sum::<u64>() + buf.size();
        while held > self.cap {
            held -= st.idle.pop_front().map_or(0, |b| b.size());
        }
        st.idle.push_back(buf);
    }

    /// A job starts recording: its id.
    pub(super) fn open(&self) -> u64 {
        let mut st = self.state();
        let id = st.next_job;
        st.next_job += 1;
        st.open.insert(id);
        id
    }

    /// Job `id` was submitted or abandoned: buffers that no open job
    /// predates become idle.
    fn close(&self, id: u64) {
        let mut st = self.state();
        st.open.remove(&id);
        let oldest = st.open.first().copied().unwrap_or(u64::MAX);
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut st.waiting).into_iter().partition(|(t, _)| *t <= oldest);
        st.waiting = waiting;
        for (_, b) in ready {
            self.keep(&mut st, b);
        }
    }

    /// Frees every idle buffer; whether there were any.
    pub(crate) fn release(&self) -> bool {
        let mut st = self.state();
        let any = !st.idle.is_empty();
        st.idle.clear();
        any
    }

    #[cfg(test)]
    pub(super) fn idle_sizes(&self) -> Vec<u64> {
        self.state().idle.iter().map(|b| b.size()).collect()
    }
}

/// Marks a job open in the buffer pool while it records; closes it when
/// dropped, which `Job::submit` does after submitting.
pub(super) struct JobTicket {
    pub(super) pool: Arc<BufferPool>,
    pub(super) id: u64,
}

impl Drop for JobTicket {
    fn drop(&mut self) {
        self.pool.close(self.id);
    }
}

/// A device buffer that goes back to its pool when dropped.
pub(crate) struct DeviceBuffer {
    pub(super) buf: Option<wgpu::Buffer>,
    pub(super) pool: Arc<BufferPool>,
}

impl std::ops::Deref for DeviceBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        self.buf.as_ref().expect("a live buffer")
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // Work already submitted that uses it runs first: the queue is in
        // order, so its next user's writes come after.
        if let Some(b) = self.buf.take() {
            self.pool.give(b);
        }
    }
}
