//! [`Flaky`]: wraps any backend and declines work at armed fault sites, so
//! decline recovery (`backend_cpu::Resilient`) can be tested on any
//! backend, the CPU one included. Only built with the `fault-injection`
//! feature.
//!
//! Which sites each operation consults, in this order, before running the
//! wrapped operation (and after it, for results copied to the host):
//!
//! | operation | sites | stage reported |
//! |---|---|---|
//! | `upload` | `TransferToDevice` | upload |
//! | `download` | `TransferToHost` | download |
//! | `reshape` | none (a view, no device work) | - |
//! | `ntt`, `intt`, `intt_in_place`, `coset_lde`, `coset_ntt`, `fold_coeffs`, `stride_rows`, `interleave`, `commit`, `logup_aux`, `compose`, `split_quotient`, `deep_quotient`, `combine_columns`, `fri_fold` | `Admission`, `Alloc(stage)`, `Launch(stage)` | the operation's |
//! | `upload_coset_lde` | `Admission`, `Alloc(stage)`, `TransferToDevice`, `Launch(stage)` | coset LDE |
//! | `open`, `leaf_digests`, `rows`, `coset_rows`, `evaluate_at`, `evaluate_coeffs`, `grind` | `Admission`, `Alloc(stage)`, `Launch(stage)`, then `TransferToHost` for the result | the operation's |
//!
//! Admission is consulted by every compute operation (a memory gate admits
//! each piece of table work), and a decline always names the operation it
//! happened in, so the typed error, `Resilient`'s per-stage counters and
//! its log line agree. Requested bytes are the op's (`Op::bytes`, from
//! `backend_api::memory`).
//!
//! `Flaky` is a [`Wrapper`]: one hook decides the sites from the op, and
//! everything else forwards.

use backend_api::fault::{FaultGuard, FaultInjector, FaultMode, FaultSite};
use backend_api::wrap::{Matrix, Tree};
use backend_api::{Backend, BackendError, Ctx, Op, Out, Result, Stage, Wrapper};

/// A backend that declines at armed sites and otherwise forwards to `B`.
pub struct Flaky<B> {
    inner: B,
    faults: FaultInjector,
    name: String,
}

impl<B: Backend> Flaky<B> {
    pub fn new(inner: B) -> Flaky<B> {
        let name = format!("flaky({})", inner.name());
        Flaky { inner, faults: FaultInjector::new(), name }
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The injector tests arm sites on.
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }

    /// Arms `site`; disarmed when the guard drops.
    pub fn arm(&self, site: FaultSite, mode: FaultMode) -> FaultGuard {
        self.faults.arm(site, mode)
    }

    fn decline(&self, site: FaultSite, stage: Stage, ctx: &Ctx, requested_bytes: u64) -> Result<()> {
        if self.faults.should_fail(site) {
            return Err(BackendError::DeviceDecline {
                stage,
                table: ctx.table.to_string(),
                requested_bytes,
                free_bytes: 0,
                reason: format!("injected fault at {site}"),
            });
        }
        Ok(())
    }
}

impl<B: Backend> Wrapper for Flaky<B> {
    type Inner = B;

    fn inner(&self) -> &B {
        &self.inner
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn call(&self, ctx: &Ctx, op: Op<'_, &Matrix<Self>, &Tree<Self>>) -> Result<Out<Matrix<Self>, Tree<Self>>> {
        let (stage, bytes) = (op.stage(), op.bytes());
        match op {
            Op::Upload(_) => self.decline(FaultSite::TransferToDevice, stage, ctx, bytes)?,
            Op::Download(_) => self.decline(FaultSite::TransferToHost, stage, ctx, bytes)?,
            Op::Reshape { .. } => {}
            Op::UploadCosetLde { .. } | Op::UploadCommit { .. } => {
                self.decline(FaultSite::Admission, stage, ctx, bytes)?;
                self.decline(FaultSite::Alloc(stage), stage, ctx, bytes)?;
                self.decline(FaultSite::TransferToDevice, stage, ctx, bytes)?;
                self.decline(FaultSite::Launch(stage), stage, ctx, bytes)?;
            }
            _ => {
                self.decline(FaultSite::Admission, stage, ctx, bytes)?;
                self.decline(FaultSite::Alloc(stage), stage, ctx, bytes)?;
                self.decline(FaultSite::Launch(stage), stage, ctx, bytes)?;
            }
        }
        let out = op.dispatch(&self.inner, ctx)?;
        // The copy of a compute op's result to the host.
        if let (false, Some(bytes)) = (matches!(op, Op::Download(_)), op.result_bytes()) {
            self.decline(FaultSite::TransferToHost, stage, ctx, bytes)?;
        }
        Ok(out)
    }
}
