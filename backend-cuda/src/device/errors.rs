//! How operations fail: typed errors and declines, armed fault sites, poisoning and found races.

use super::Device;
use crate::race::Race;
use backend_api::fault::FaultSite;
use backend_api::{BackendError, Ctx, Stage};

impl Device {
    /// Marks the device untrustworthy: every later operation fails.
    pub(crate) fn poison(&self, why: String) {
        let mut p = self.poisoned.lock().unwrap_or_else(|p| p.into_inner());
        p.get_or_insert(why);
    }

    /// Fails when the device is poisoned, or (checking races) when a race
    /// was found: the error names the buffer, stage and table.
    pub(crate) fn healthy(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        if let Some(why) = self.poisoned.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            return Err(self.err(stage, ctx, format!("the device is unusable after an earlier failure: {why}")));
        }
        if let Some(r) = self.races().first() {
            return Err(self.err(stage, ctx, r));
        }
        Ok(())
    }

    pub(crate) fn races(&self) -> Vec<Race> {
        self.streams.races()
    }

    pub(crate) fn err(&self, stage: Stage, ctx: &Ctx, e: impl std::fmt::Display) -> BackendError {
        BackendError::Device { stage, table: ctx.table.to_string(), message: e.to_string() }
    }

    pub(crate) fn bind(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(|e| self.err(stage, ctx, e))
    }

    /// The decline the device gives for `stage` (an injected fault gives
    /// exactly the same, with the real free memory).
    pub(crate) fn decline(&self, stage: Stage, ctx: &Ctx, requested: u64, reason: impl Into<String>) -> BackendError {
        BackendError::DeviceDecline {
            stage,
            table: ctx.table.to_string(),
            requested_bytes: requested,
            free_bytes: self.free_bytes(),
            reason: reason.into(),
        }
    }

    /// Declines when a fault is armed at `site`.
    pub(crate) fn check(&self, site: FaultSite, stage: Stage, ctx: &Ctx, requested: u64) -> Result<(), BackendError> {
        if self.faults.should_fail(site) {
            return Err(self.decline(site.stage(stage), ctx, requested, format!("injected fault at {site}")));
        }
        Ok(())
    }
}
