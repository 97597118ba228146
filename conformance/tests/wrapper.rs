//! "Write a new backend, get the whole suite for free": `Forwarding` is a
//! complete backend of its own (its own matrix and tree types, shape
//! validation first, every trait method implemented) that computes with the
//! CPU backend underneath. One line instantiates the suite for it.

use backend_api::{
    validate, BackendBase, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint, DeviceMatrix,
    DeviceTree, Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage, F,
};
use backend_cpu::{CpuBackend, CpuMatrix, CpuTree};

/// A matrix "on the device".
pub struct FwdMatrix(CpuMatrix);

impl DeviceMatrix for FwdMatrix {
    fn height(&self) -> usize {
        self.0.height()
    }
    fn width(&self) -> usize {
        self.0.width()
    }
}

pub struct FwdTree(CpuTree);

impl DeviceTree for FwdTree {
    fn root(&self) -> Digest {
        self.0.root()
    }
    fn leaves(&self) -> usize {
        self.0.leaves()
    }
    fn hash(&self) -> HashKind {
        self.0.hash()
    }
}

#[derive(Default)]
pub struct Forwarding {
    cpu: CpuBackend,
}

impl BackendBase for Forwarding {
    type Matrix = FwdMatrix;
    type Tree = FwdTree;

    fn name(&self) -> &str {
        "forwarding"
    }

    fn upload(&self, _ctx: &Ctx, m: &ColMatrix) -> Result<FwdMatrix> {
        Ok(FwdMatrix(CpuMatrix::from_host(m)))
    }

    fn download(&self, _ctx: &Ctx, m: &FwdMatrix) -> Result<ColMatrix> {
        Ok(m.0.to_host())
    }

    fn reshape(&self, ctx: &Ctx, m: &FwdMatrix, height: usize) -> Result<FwdMatrix> {
        validate::reshape(m, height)?;
        self.cpu.reshape(ctx, &m.0, height).map(FwdMatrix)
    }
}

impl NttOps for Forwarding {
    fn ntt(&self, ctx: &Ctx, m: &FwdMatrix) -> Result<FwdMatrix> {
        validate::ntt(Stage::Ntt, m)?;
        self.cpu.ntt(ctx, &m.0).map(FwdMatrix)
    }

    fn intt(&self, ctx: &Ctx, m: &FwdMatrix) -> Result<FwdMatrix> {
        validate::ntt(Stage::InverseNtt, m)?;
        self.cpu.intt(ctx, &m.0).map(FwdMatrix)
    }

    fn coset_lde(&self, ctx: &Ctx, m: &FwdMatrix, log_blowup: u32, shift: F) -> Result<FwdMatrix> {
        validate::coset_lde(m, log_blowup, shift)?;
        self.cpu.coset_lde(ctx, &m.0, log_blowup, shift).map(FwdMatrix)
    }
}

impl MerkleOps for Forwarding {
    fn commit(&self, ctx: &Ctx, m: &FwdMatrix, hash: HashKind) -> Result<FwdTree> {
        validate::commit(m)?;
        self.cpu.commit(ctx, &m.0, hash).map(FwdTree)
    }

    fn open(&self, ctx: &Ctx, m: &FwdMatrix, tree: &FwdTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        validate::open(m, tree, rows)?;
        self.cpu.open(ctx, &m.0, &tree.0, rows)
    }
}

impl LogUpOps for Forwarding {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<FwdMatrix>) -> Result<(FwdMatrix, Ext)> {
        validate::logup_aux(i)?;
        self.cpu.logup_aux(ctx, &i.map(|m| &m.0)).map(|(m, sum)| (FwdMatrix(m), sum))
    }
}

impl ComposeOps for Forwarding {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<FwdMatrix>) -> Result<FwdMatrix> {
        validate::compose(i)?;
        // The wrapper's matrices hold the inner backend's; `map` passes them on.
        let inputs = i.map(|m| &m.0);
        self.cpu.compose(ctx, &inputs).map(FwdMatrix)
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        q: &FwdMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<FwdMatrix> {
        validate::split_quotient(q, domain, log_trace_height, parts)?;
        self.cpu.split_quotient(ctx, &q.0, domain, log_trace_height, parts).map(FwdMatrix)
    }
}

impl DeepOps for Forwarding {
    fn evaluate_at(&self, ctx: &Ctx, m: &FwdMatrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        validate::evaluate_at(m, domain)?;
        self.cpu.evaluate_at(ctx, &m.0, domain, points)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<FwdMatrix>]) -> Result<FwdMatrix> {
        validate::deep(domain, points)?;
        let inner: Vec<DeepPoint<CpuMatrix>> = points.iter().map(|p| p.map(|m| &m.0)).collect();
        self.cpu.deep_quotient(ctx, domain, &inner).map(FwdMatrix)
    }
}

impl FriOps for Forwarding {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &FwdMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&FwdMatrix, Ext)>,
    ) -> Result<FwdMatrix> {
        validate::fri_fold(layer, domain, log_arity, roll_in.map(|(g, _)| g))?;
        self.cpu.fri_fold(ctx, &layer.0, domain, log_arity, beta, roll_in.map(|(g, s)| (&g.0, s))).map(FwdMatrix)
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        validate::grind(bits)?;
        self.cpu.grind(ctx, hash, seed, bits)
    }
}

// The whole suite, one test per operation group, from one line.
conformance::suite!(forwarding, Forwarding::default());
