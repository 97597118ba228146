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
//! | `ntt`, `intt`, `coset_lde`, `commit`, `logup_aux`, `compose`, `split_quotient`, `deep_quotient`, `fri_fold` | `Admission`, `Alloc(stage)`, `Launch(stage)` | the operation's |
//! | `open`, `evaluate_at`, `grind` | `Admission`, `Alloc(stage)`, `Launch(stage)`, then `TransferToHost` for the result | the operation's |
//!
//! Admission is consulted by every compute operation (a memory gate admits
//! each piece of table work), and a decline always names the operation it
//! happened in, so the typed error, `Resilient`'s per-stage counters and
//! its log line agree. Requested bytes come from `backend_api::memory`.

use backend_api::fault::{FaultGuard, FaultInjector, FaultMode, FaultSite};
use backend_api::memory::{matrix_bytes, tree_bytes};
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint,
    DeviceMatrix, Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage,
    F,
};

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

    /// The sites a compute operation passes before it runs.
    fn compute(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<()> {
        self.decline(FaultSite::Admission, stage, ctx, bytes)?;
        self.decline(FaultSite::Alloc(stage), stage, ctx, bytes)?;
        self.decline(FaultSite::Launch(stage), stage, ctx, bytes)
    }

    /// The copy of an operation's result to the host.
    fn to_host(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<()> {
        self.decline(FaultSite::TransferToHost, stage, ctx, bytes)
    }
}

fn bytes<M: DeviceMatrix>(m: &M) -> u64 {
    matrix_bytes(m.height() as u64, m.width() as u64)
}

impl<B: Backend> BackendBase for Flaky<B> {
    type Matrix = B::Matrix;
    type Tree = B::Tree;

    fn name(&self) -> &str {
        &self.name
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<B::Matrix> {
        self.decline(
            FaultSite::TransferToDevice,
            Stage::Upload,
            ctx,
            matrix_bytes(m.height() as u64, m.width() as u64),
        )?;
        self.inner.upload(ctx, m)
    }

    fn download(&self, ctx: &Ctx, m: &B::Matrix) -> Result<ColMatrix> {
        self.decline(FaultSite::TransferToHost, Stage::Download, ctx, bytes(m))?;
        self.inner.download(ctx, m)
    }

    fn reshape(&self, ctx: &Ctx, m: &B::Matrix, height: usize) -> Result<B::Matrix> {
        self.inner.reshape(ctx, m, height)
    }

    fn drain(&self) -> Result<()> {
        self.inner.drain()
    }
}

impl<B: Backend> NttOps for Flaky<B> {
    fn ntt(&self, ctx: &Ctx, m: &B::Matrix) -> Result<B::Matrix> {
        self.compute(Stage::Ntt, ctx, 2 * bytes(m))?;
        self.inner.ntt(ctx, m)
    }

    fn intt(&self, ctx: &Ctx, m: &B::Matrix) -> Result<B::Matrix> {
        self.compute(Stage::InverseNtt, ctx, 2 * bytes(m))?;
        self.inner.intt(ctx, m)
    }

    fn coset_lde(&self, ctx: &Ctx, m: &B::Matrix, log_blowup: u32, shift: F) -> Result<B::Matrix> {
        let out = matrix_bytes((m.height() as u64) << log_blowup.min(16), m.width() as u64);
        self.compute(Stage::CosetLde, ctx, bytes(m) + 2 * out)?;
        self.inner.coset_lde(ctx, m, log_blowup, shift)
    }
}

impl<B: Backend> MerkleOps for Flaky<B> {
    fn commit(&self, ctx: &Ctx, m: &B::Matrix, hash: HashKind) -> Result<B::Tree> {
        self.compute(Stage::MerkleCommit, ctx, bytes(m) + tree_bytes(m.height() as u64))?;
        self.inner.commit(ctx, m, hash)
    }

    fn open(&self, ctx: &Ctx, m: &B::Matrix, tree: &B::Tree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        self.compute(Stage::MerkleOpen, ctx, bytes(m) + tree_bytes(m.height() as u64))?;
        let out = self.inner.open(ctx, m, tree, rows)?;
        self.to_host(Stage::MerkleOpen, ctx, (rows.len() * (m.width() * 8 + 32 * 32)) as u64)?;
        Ok(out)
    }
}

impl<B: Backend> LogUpOps for Flaky<B> {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<B::Matrix>) -> Result<(B::Matrix, Ext)> {
        let n = i.main.height() as u64;
        let out = matrix_bytes(n, 3 * i.logup.aux_width() as u64);
        self.compute(Stage::LogUp, ctx, bytes(i.main) + i.fixed.map_or(0, bytes) + out)?;
        self.inner.logup_aux(ctx, i)
    }
}

impl<B: Backend> ComposeOps for Flaky<B> {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<B::Matrix>) -> Result<B::Matrix> {
        let inputs = bytes(i.main) + i.fixed.map_or(0, bytes) + i.aux.map_or(0, bytes);
        self.compute(Stage::Compose, ctx, inputs + 2 * matrix_bytes(i.main.height() as u64, 3))?;
        self.inner.compose(ctx, i)
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        q: &B::Matrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<B::Matrix> {
        let out = matrix_bytes(q.height() as u64, 3 * parts as u64);
        self.compute(Stage::QuotientSplit, ctx, 2 * bytes(q) + out)?;
        self.inner.split_quotient(ctx, q, domain, log_trace_height, parts)
    }
}

impl<B: Backend> DeepOps for Flaky<B> {
    fn evaluate_at(&self, ctx: &Ctx, m: &B::Matrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        self.compute(Stage::OutOfDomain, ctx, bytes(m) + matrix_bytes(m.height() as u64, 3))?;
        let out = self.inner.evaluate_at(ctx, m, domain, points)?;
        self.to_host(Stage::OutOfDomain, ctx, (points.len() * m.width() * 24) as u64)?;
        Ok(out)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<B::Matrix>]) -> Result<B::Matrix> {
        let inputs: u64 = points.iter().flat_map(|p| p.columns.iter().map(|c| bytes(c.matrix))).sum();
        let size = 1u64.checked_shl(domain.log_size).unwrap_or(u64::MAX);
        self.compute(Stage::Deep, ctx, inputs + 2 * matrix_bytes(size, 3))?;
        self.inner.deep_quotient(ctx, domain, points)
    }
}

impl<B: Backend> FriOps for Flaky<B> {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &B::Matrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&B::Matrix, Ext)>,
    ) -> Result<B::Matrix> {
        self.compute(Stage::FriFold, ctx, bytes(layer) + roll_in.map_or(0, |(g, _)| bytes(g)))?;
        self.inner.fri_fold(ctx, layer, domain, log_arity, beta, roll_in)
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let scratch = backend_api::memory::stage_bytes(
            Stage::Grind,
            &backend_api::memory::TableDims {
                log_n: 0,
                log_blowup: 0,
                fixed_width: 0,
                main_width: 0,
                aux_width: 0,
                parts: 0,
            },
        );
        self.compute(Stage::Grind, ctx, scratch)?;
        let nonce = self.inner.grind(ctx, hash, seed, bits)?;
        self.to_host(Stage::Grind, ctx, 8)?;
        Ok(nonce)
    }
}
