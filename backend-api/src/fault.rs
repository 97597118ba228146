//! Fault injection: every place a device can decline work is one variant
//! of [`FaultSite`]. Backends ask their [`FaultInjector`] at each site
//! whether to decline; tests arm sites (once, after n calls, or sticky)
//! under the `fault-injection` cargo feature, which production builds leave
//! off (then `should_fail` is a constant `false`).
//!
//! Armed faults belong to one injector (one backend instance), not to the
//! process, so concurrently running tests never see each other's faults,
//! and arming returns a guard that disarms on drop, so a failing assert
//! cannot leak a fault into the next test.

use crate::error::Stage;
use std::fmt;
#[cfg(feature = "fault-injection")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "fault-injection")]
use std::sync::{Arc, Mutex};

/// A place where the device can decline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultSite {
    /// A device allocation made by this stage.
    Alloc(Stage),
    /// The memory gate refusing to admit a table's work.
    Admission,
    /// A kernel launch of this stage.
    Launch(Stage),
    /// A host-to-device copy.
    TransferToDevice,
    /// A device-to-host copy.
    TransferToHost,
    /// Not a decline: a hazard a test arms on purpose. The next free of a
    /// buffer used on another stream skips waiting for that use (the
    /// mistake of seed 000), so the race detector must name it. Not in
    /// [`FaultSite::all`].
    UnorderedFree,
}

impl FaultSite {
    /// Every decline site: allocation and launch for each compute stage,
    /// admission, both transfer directions (hazards such as
    /// [`FaultSite::UnorderedFree`] are not declines and not listed).
    pub fn all() -> Vec<FaultSite> {
        let compute = Stage::ALL.iter().copied().filter(|s| !matches!(s, Stage::Upload | Stage::Download));
        let mut out: Vec<FaultSite> = compute.clone().map(FaultSite::Alloc).collect();
        out.extend(compute.map(FaultSite::Launch));
        out.extend([FaultSite::Admission, FaultSite::TransferToDevice, FaultSite::TransferToHost]);
        out
    }

    /// The stage a decline at this site is reported under.
    pub fn stage(self, fallback: Stage) -> Stage {
        match self {
            FaultSite::Alloc(s) | FaultSite::Launch(s) => s,
            FaultSite::TransferToDevice => Stage::Upload,
            FaultSite::TransferToHost => Stage::Download,
            FaultSite::Admission | FaultSite::UnorderedFree => fallback,
        }
    }
}

impl fmt::Display for FaultSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultSite::Alloc(s) => write!(f, "alloc:{s}"),
            FaultSite::Admission => f.write_str("admission"),
            FaultSite::Launch(s) => write!(f, "launch:{s}"),
            FaultSite::TransferToDevice => f.write_str("transfer:h2d"),
            FaultSite::TransferToHost => f.write_str("transfer:d2h"),
            FaultSite::UnorderedFree => f.write_str("hazard:unordered-free"),
        }
    }
}

/// When an armed site declines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// The next call declines; later calls pass.
    Once,
    /// The first n calls pass, the next one declines, later calls pass.
    AfterCalls(u64),
    /// Every call declines until the guard is dropped.
    Sticky,
}

#[cfg(feature = "fault-injection")]
struct Armed {
    id: u64,
    site: FaultSite,
    /// Calls still to pass before the fault fires.
    passes_left: AtomicU64,
    /// Declines still to deliver (u64::MAX: sticky).
    shots_left: AtomicU64,
    fired: AtomicU64,
}

#[cfg(feature = "fault-injection")]
impl Armed {
    fn fire(&self) -> bool {
        // Both counters move by atomic saturating updates: two threads at the
        // site can never both take the last pass or the last shot.
        let passed = self.passes_left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| p.checked_sub(1)).is_ok();
        if passed {
            return false;
        }
        let shot = self
            .shots_left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| match s {
                0 => None,
                u64::MAX => Some(u64::MAX),
                s => Some(s - 1),
            })
            .is_ok();
        if shot {
            self.fired.fetch_add(1, Ordering::AcqRel);
        }
        shot
    }
}

#[cfg(feature = "fault-injection")]
#[derive(Default)]
struct Table {
    next_id: u64,
    armed: Vec<Arc<Armed>>,
}

/// The armed faults of one backend instance.
#[derive(Clone, Default)]
pub struct FaultInjector {
    #[cfg(feature = "fault-injection")]
    table: Arc<Mutex<Table>>,
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FaultInjector")
    }
}

impl FaultInjector {
    pub fn new() -> FaultInjector {
        FaultInjector::default()
    }

    /// Whether the device should decline at `site` now. Called by backends
    /// at every decline site; always `false` without `fault-injection`.
    #[inline]
    pub fn should_fail(&self, site: FaultSite) -> bool {
        #[cfg(feature = "fault-injection")]
        {
            let armed: Vec<Arc<Armed>> = {
                let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
                t.armed.iter().filter(|a| a.site == site).cloned().collect()
            };
            armed.iter().any(|a| a.fire())
        }
        #[cfg(not(feature = "fault-injection"))]
        {
            let _ = site;
            false
        }
    }

    /// Arms `site`; the fault stays armed until the guard is dropped.
    #[cfg(feature = "fault-injection")]
    pub fn arm(&self, site: FaultSite, mode: FaultMode) -> FaultGuard {
        let (passes, shots) = match mode {
            FaultMode::Once => (0, 1),
            FaultMode::AfterCalls(n) => (n, 1),
            FaultMode::Sticky => (0, u64::MAX),
        };
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        t.next_id += 1;
        let armed = Arc::new(Armed {
            id: t.next_id,
            site,
            passes_left: AtomicU64::new(passes),
            shots_left: AtomicU64::new(shots),
            fired: AtomicU64::new(0),
        });
        t.armed.push(armed.clone());
        FaultGuard { table: self.table.clone(), armed }
    }
}

/// Disarms its fault when dropped.
#[cfg(feature = "fault-injection")]
pub struct FaultGuard {
    table: Arc<Mutex<Table>>,
    armed: Arc<Armed>,
}

#[cfg(feature = "fault-injection")]
impl FaultGuard {
    /// How many declines this fault has delivered.
    pub fn fired(&self) -> u64 {
        self.armed.fired.load(Ordering::Acquire)
    }
}

#[cfg(feature = "fault-injection")]
impl Drop for FaultGuard {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let id = self.armed.id;
        t.armed.retain(|a| a.id != id);
    }
}

#[cfg(all(test, feature = "fault-injection"))]
mod tests {
    use super::*;

    const SITE: FaultSite = FaultSite::Launch(Stage::Ntt);

    #[test]
    fn modes_fire_as_documented() {
        let inj = FaultInjector::new();
        assert!(!inj.should_fail(SITE));
        {
            let g = inj.arm(SITE, FaultMode::Once);
            assert!(!inj.should_fail(FaultSite::Admission));
            assert!(inj.should_fail(SITE));
            assert!(!inj.should_fail(SITE));
            assert_eq!(g.fired(), 1);
        }
        {
            let _g = inj.arm(SITE, FaultMode::AfterCalls(2));
            assert_eq!(
                [inj.should_fail(SITE), inj.should_fail(SITE), inj.should_fail(SITE), inj.should_fail(SITE)],
                [false, false, true, false]
            );
        }
        {
            let g = inj.arm(SITE, FaultMode::Sticky);
            assert!((0..10).all(|_| inj.should_fail(SITE)));
            assert_eq!(g.fired(), 10);
        }
        assert!(!inj.should_fail(SITE), "dropping the guard disarms");
    }

    #[test]
    fn a_panicking_test_cannot_leak_its_fault() {
        let inj = FaultInjector::new();
        let inj2 = inj.clone();
        let r = std::panic::catch_unwind(move || {
            let _g = inj2.arm(SITE, FaultMode::Sticky);
            panic!("assert failed while armed");
        });
        assert!(r.is_err());
        assert!(!inj.should_fail(SITE));
    }

    #[test]
    fn the_countdown_is_exact_under_contention() {
        // 8 threads race 1000 calls each at a site armed after 5000 passes:
        // exactly one call declines.
        let inj = FaultInjector::new();
        let g = inj.arm(SITE, FaultMode::AfterCalls(5000));
        let fired: u64 = std::thread::scope(|s| {
            let hs: Vec<_> =
                (0..8).map(|_| s.spawn(|| (0..1000).filter(|_| inj.should_fail(SITE)).count() as u64)).collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(fired, 1);
        assert_eq!(g.fired(), 1);
    }
}
