//! The memory gate of one device: a byte budget that proofs and loose
//! operations are admitted against, so concurrent tables, concurrent
//! proofs and several backends' work share a card without over-committing
//! it. Pure bookkeeping (no CUDA), tested here.
//!
//! - A [`Claim`] is one proof's device set (`backend_api::memory::DeviceSet`):
//!   its tables' resident bytes and their transient room, reserved before
//!   the proof starts. Waiting claims are admitted heaviest first; a claim
//!   larger than the whole budget waits for the device to be idle and then
//!   runs alone. Every device buffer made under a claim holds it, so its
//!   bytes return to the gate only when the proof's reservation and every
//!   such buffer are gone: the gate accounts buffers by who owns them.
//! - Inside a claim, each stage's scratch is counted against the claim's
//!   transient room ([`Claim::stage`]), which holds one stage per table at
//!   once; a stage never waits once its proof is admitted (so an admitted
//!   proof always makes progress and claims cannot deadlock, even when a
//!   thread blocked in a transfer runs another table's stage), and a stage
//!   beyond the room is counted as the model's error.
//! - A loose operation (no claim: a plain backend call outside a proof)
//!   asks for its whole stage bytes for its duration, waits a bounded time,
//!   and is refused (a typed decline) rather than left blocking.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Memory left out of the default budget: the driver's own needs, kernel
/// images, twiddle tables, fragmentation of the pool.
pub const SAFETY_MARGIN_BYTES: u64 = 2 << 30;

/// How long a loose request that fits the budget waits for room.
pub const LOOSE_WAIT: Duration = Duration::from_secs(5);

/// Counters of one gate, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GateStats {
    pub budget: u64,
    /// Bytes held now by claims and by loose operations.
    pub held: u64,
    /// The most ever held at once.
    pub peak_held: u64,
    pub claims: u64,
    /// Claims that had to wait for others to release memory.
    pub claim_waits: u64,
    /// Claims larger than the budget, run alone.
    pub alone: u64,
    /// Stages whose scratch went past their claim's transient room.
    pub stage_overruns: u64,
    /// Loose operations that waited, and those refused.
    pub loose_waits: u64,
    pub loose_refused: u64,
    /// Device bytes of buffers owned by claims, most at once.
    pub peak_owned: u64,
    /// Claims whose buffers outgrew their reservation (the model was low).
    pub overruns: u64,
}

#[derive(Debug, Default)]
struct State {
    budget: u64,
    /// Bytes of admitted claims.
    claimed: u64,
    /// Bytes of loose operations in flight.
    loose: u64,
    /// Claims running: while one runs alone nothing else is admitted.
    running: u64,
    alone: bool,
    /// Waiting claims: heaviest first, then in arrival order.
    queue: BTreeSet<(Reverse<u64>, u64)>,
    next_ticket: u64,
    owned: u64,
    stats: GateStats,
}

impl State {
    fn held(&self) -> u64 {
        self.claimed.saturating_add(self.loose)
    }
    fn note_peak(&mut self) {
        self.stats.peak_held = self.stats.peak_held.max(self.held());
    }
}

/// The byte budget of one device.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    released: Condvar,
}

/// Why a request was not admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub budget: u64,
    pub held: u64,
    pub waited: Duration,
}

impl Gate {
    pub fn new(budget: u64) -> Arc<Gate> {
        let state = State { budget, stats: GateStats { budget, ..GateStats::default() }, ..State::default() };
        Arc::new(Gate { state: Mutex::new(state), released: Condvar::new() })
    }

    /// The budget a device gets: the one given, else free memory less the
    /// margin.
    pub fn default_budget(given: Option<u64>, free_now: u64) -> u64 {
        given.unwrap_or(free_now.saturating_sub(SAFETY_MARGIN_BYTES))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn stats(&self) -> GateStats {
        let st = self.lock();
        GateStats { held: st.held(), ..st.stats }
    }

    /// Waits on the gate's condition until `deadline`; on a rayon worker it
    /// also runs pending pool work meanwhile, so workers blocked here cannot
    /// starve the tables whose progress would release memory.
    fn wait<'a>(&'a self, st: MutexGuard<'a, State>, deadline: Instant) -> MutexGuard<'a, State> {
        let now = Instant::now();
        if rayon::current_thread_index().is_some() {
            drop(st);
            rayon::yield_now();
            let st = self.lock();
            let slice = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(2));
            return self.released.wait_timeout(st, slice).unwrap_or_else(|p| p.into_inner()).0;
        }
        self.released.wait_timeout(st, deadline.saturating_duration_since(now)).unwrap_or_else(|p| p.into_inner()).0
    }

    /// Admits a proof of `resident` + `transient` bytes: heaviest waiting
    /// claim first; one larger than the budget when nothing else runs, and
    /// then alone. Refused after `max_wait`.
    pub fn claim(self: &Arc<Self>, resident: u64, transient: u64, max_wait: Duration) -> Result<Arc<Claim>, Refusal> {
        let bytes = resident.saturating_add(transient);
        let start = Instant::now();
        let deadline = start + max_wait;
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.insert((Reverse(bytes), ticket));
        let mut waited = false;
        loop {
            let first = st.queue.first() == Some(&(Reverse(bytes), ticket));
            let fits = if bytes > st.budget { st.held() == 0 } else { st.held() + bytes <= st.budget };
            if first && !st.alone && fits {
                st.queue.remove(&(Reverse(bytes), ticket));
                st.claimed += bytes;
                st.running += 1;
                st.alone = bytes > st.budget;
                st.stats.claims += 1;
                st.stats.alone += u64::from(st.alone);
                st.note_peak();
                drop(st);
                // The next in line may fit too.
                self.released.notify_all();
                return Ok(Arc::new(Claim {
                    gate: self.clone(),
                    bytes,
                    transient,
                    inner: Mutex::new(ClaimState::default()),
                }));
            }
            if Instant::now() >= deadline {
                st.queue.remove(&(Reverse(bytes), ticket));
                let refusal = Refusal { budget: st.budget, held: st.held(), waited: start.elapsed() };
                drop(st);
                self.released.notify_all();
                return Err(refusal);
            }
            if !waited {
                waited = true;
                st.stats.claim_waits += 1;
            }
            st = self.wait(st, deadline);
        }
    }

    /// Admits a loose operation's `bytes` for as long as the permit lives:
    /// when no claim is waiting (loose work must not starve proofs) and
    /// they fit beside everything admitted (a request larger than the
    /// budget when nothing else runs); refused after `max_wait`.
    pub fn loose(self: &Arc<Self>, bytes: u64, max_wait: Duration) -> Result<Permit, Refusal> {
        let start = Instant::now();
        let deadline = start + max_wait;
        let mut st = self.lock();
        let mut waited = false;
        loop {
            let fits = if bytes > st.budget { st.held() == 0 } else { st.held() + bytes <= st.budget };
            if st.queue.is_empty() && !st.alone && fits {
                st.loose += bytes;
                st.note_peak();
                return Ok(Permit { gate: self.clone(), bytes });
            }
            if Instant::now() >= deadline {
                st.stats.loose_refused += 1;
                return Err(Refusal { budget: st.budget, held: st.held(), waited: start.elapsed() });
            }
            if !waited {
                waited = true;
                st.stats.loose_waits += 1;
            }
            st = self.wait(st, deadline);
        }
    }

    fn owned(&self, delta: i64) {
        let mut st = self.lock();
        st.owned = if delta >= 0 { st.owned + delta as u64 } else { st.owned.saturating_sub(delta.unsigned_abs()) };
        st.stats.peak_owned = st.stats.peak_owned.max(st.owned);
    }
}

/// A loose operation's admitted bytes, returned on drop.
pub struct Permit {
    gate: Arc<Gate>,
    bytes: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.loose = st.loose.saturating_sub(self.bytes);
        drop(st);
        self.gate.released.notify_all();
    }
}

#[derive(Debug, Default)]
struct ClaimState {
    /// Scratch of this claim's stages in flight.
    scratch: u64,
    /// Bytes of live buffers owned by the claim.
    owned: u64,
    overrun: bool,
}

/// One proof's admitted bytes. Held by the proof's reservation and by
/// every buffer made under it; returned to the gate when the last goes.
#[derive(Debug)]
pub struct Claim {
    gate: Arc<Gate>,
    bytes: u64,
    /// Room for the stages' scratch (one stage per table at once).
    transient: u64,
    inner: Mutex<ClaimState>,
}

impl Claim {
    fn lock(&self) -> MutexGuard<'_, ClaimState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a stage's `scratch` bytes against the claim's transient
    /// room until the permit is dropped; never waits (see the module doc).
    pub fn stage(self: &Arc<Self>, scratch: u64) -> StagePermit {
        let mut st = self.lock();
        st.scratch += scratch;
        if st.scratch > self.transient {
            self.gate.lock().stats.stage_overruns += 1;
        }
        StagePermit { claim: self.clone(), scratch }
    }

    /// A buffer of `bytes` made under the claim (negative: freed).
    pub fn own(&self, delta: i64) {
        let newly_over = {
            let mut st = self.lock();
            st.owned = if delta >= 0 { st.owned + delta as u64 } else { st.owned.saturating_sub(delta.unsigned_abs()) };
            let over = st.owned > self.bytes && !st.overrun;
            st.overrun |= over;
            over
        };
        self.gate.owned(delta);
        if newly_over {
            self.gate.lock().stats.overruns += 1;
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.claimed = st.claimed.saturating_sub(self.bytes);
        st.running = st.running.saturating_sub(1);
        if st.running == 0 {
            st.alone = false;
        }
        drop(st);
        self.gate.released.notify_all();
    }
}

/// What a stage was admitted with: its scratch inside its proof's claim,
/// or, outside any claim, its whole bytes on the gate.
pub enum Admitted {
    Stage(#[allow(dead_code)] StagePermit),
    Loose(#[allow(dead_code)] Permit),
}

/// A stage's scratch inside its claim, returned on drop.
pub struct StagePermit {
    claim: Arc<Claim>,
    scratch: u64,
}

impl Drop for StagePermit {
    fn drop(&mut self) {
        let mut st = self.claim.lock();
        st.scratch = st.scratch.saturating_sub(self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    const LONG: Duration = Duration::from_secs(20);

    #[test]
    fn a_claim_waits_until_the_one_before_and_its_buffers_are_gone() {
        let g = Gate::new(100);
        let a = g.claim(50, 10, LONG).unwrap();
        // A buffer made under `a` keeps it after the proof drops its handle.
        let buffer = a.clone();
        a.own(40);
        drop(a);
        assert_eq!(g.stats().held, 60);
        let g2 = g.clone();
        let t = std::thread::spawn(move || g2.claim(50, 0, LONG).map(|c| c.bytes));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "admitted while the first claim's buffer lived");
        buffer.own(-40);
        drop(buffer);
        assert_eq!(t.join().unwrap(), Ok(50));
        let s = g.stats();
        assert_eq!((s.held, s.claims, s.claim_waits, s.peak_held, s.peak_owned), (0, 2, 1, 60, 40));
    }

    #[test]
    fn waiting_claims_are_admitted_heaviest_first() {
        let g = Gate::new(100);
        let blocker = g.claim(100, 0, LONG).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = [20u64, 70, 40]
            .into_iter()
            .map(|b| {
                let (g, order) = (g.clone(), order.clone());
                let t = std::thread::spawn(move || {
                    let c = g.claim(b, 0, LONG).unwrap();
                    order.lock().unwrap().push(b);
                    // Held long enough that each admission is seen alone.
                    std::thread::sleep(Duration::from_millis(30));
                    drop(c);
                });
                std::thread::sleep(Duration::from_millis(30));
                t
            })
            .collect();
        drop(blocker);
        threads.into_iter().for_each(|t| t.join().unwrap());
        // 70 first; then 40 and 20 (both fit beside each other once 70 left,
        // or one after the other): never 20 or 40 before 70.
        assert_eq!(order.lock().unwrap()[0], 70, "{:?}", order.lock().unwrap());
    }

    #[test]
    fn a_claim_larger_than_the_budget_runs_alone() {
        let g = Gate::new(100);
        let small = g.claim(30, 0, LONG).unwrap();
        let g2 = g.clone();
        let big = std::thread::spawn(move || {
            let c = g2.claim(250, 0, LONG).unwrap();
            std::thread::sleep(Duration::from_millis(60));
            drop(c);
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!big.is_finished(), "ran beside another claim");
        drop(small);
        std::thread::sleep(Duration::from_millis(20));
        // While it runs alone, even a tiny loose request waits.
        assert!(g.loose(1, Duration::from_millis(5)).is_err());
        big.join().unwrap();
        assert!(g.loose(1, Duration::from_millis(5)).is_ok());
        assert_eq!(g.stats().alone, 1);
    }

    #[test]
    fn a_claim_that_never_fits_in_time_is_refused_with_the_budget() {
        let g = Gate::new(100);
        let _held = g.claim(80, 0, LONG).unwrap();
        let r = g.claim(50, 0, Duration::from_millis(20)).unwrap_err();
        assert_eq!((r.budget, r.held), (100, 80));
        // The refused request left the queue: a later one is not stuck
        // behind it.
        assert!(g.claim(20, 0, Duration::from_millis(20)).is_ok());
    }

    #[test]
    fn stages_past_a_claims_transient_room_are_counted_not_blocked() {
        let g = Gate::new(1000);
        let c = g.claim(100, 50, LONG).unwrap();
        let a = c.stage(30);
        drop(c.stage(20));
        assert_eq!(g.stats().stage_overruns, 0);
        drop(c.stage(30));
        assert_eq!(g.stats().stage_overruns, 1);
        drop(a);
        drop(c.stage(50));
        assert_eq!(g.stats().stage_overruns, 1, "the room came back with the permit");
    }

    #[test]
    fn a_claim_whose_buffers_outgrow_it_is_counted() {
        let g = Gate::new(1000);
        let c = g.claim(100, 0, LONG).unwrap();
        c.own(80);
        c.own(30);
        c.own(40);
        assert_eq!(g.stats().overruns, 1, "counted once per claim");
    }

    #[test]
    fn loose_requests_wait_then_are_refused_not_blocked() {
        let g = Gate::new(100);
        let a = g.loose(60, LONG).unwrap();
        let g2 = g.clone();
        let t = std::thread::spawn(move || g2.loose(50, LONG).map(|p| p.bytes).ok());
        std::thread::sleep(Duration::from_millis(50));
        drop(a);
        assert_eq!(t.join().unwrap(), Some(50));
        let _b = g.loose(90, LONG).unwrap();
        assert!(g.loose(20, Duration::from_millis(10)).is_err());
        let s = g.stats();
        assert_eq!((s.loose_waits, s.loose_refused), (2, 1));
    }

    /// Many proofs of random sizes (some over the budget) from more threads
    /// than cores: all finish, and the gate never holds more than its
    /// budget except for one claim running alone.
    #[test]
    fn random_claims_never_deadlock_nor_overcommit() {
        let g = Gate::new(1000);
        let worst = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            for t in 0..12u64 {
                let (g, worst) = (g.clone(), worst.clone());
                s.spawn(move || {
                    let mut x = t * 7919 + 1;
                    for _ in 0..40 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let bytes = 50 + (x >> 33) % 1200;
                        let c = g.claim(bytes * 3 / 4, bytes / 4, LONG).unwrap();
                        let held = g.stats().held;
                        if bytes <= 1000 {
                            worst.fetch_max(held, Ordering::SeqCst);
                        }
                        let stages: Vec<_> = (0..3).map(|_| c.clone()).collect();
                        std::thread::scope(|s2| {
                            for st in &stages {
                                s2.spawn(move || drop(st.stage(bytes / 8)));
                            }
                        });
                        drop(c);
                    }
                });
            }
        });
        assert!(worst.load(Ordering::SeqCst) <= 1000);
        let s = g.stats();
        assert_eq!(s.held, 0);
        assert_eq!(s.claims, 12 * 40);
        assert!(s.alone > 0 && s.claim_waits > 0, "{s:?}");
    }
}
