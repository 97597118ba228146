//! A backend that is wrong in exactly one place, for the tests that check
//! the suite and `CrossCheck` catch it.
#![allow(dead_code)]

use backend_api::{
    BackendBase, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint, DeviceMatrix, Digest, Ext,
    FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage, F,
};
use backend_cpu::{CpuBackend, CpuMatrix, CpuTree};

/// The CPU backend with one element (column, row) of one stage's output
/// altered, for one table or all; outputs too small to hold the element
/// are left alone.
pub struct Corrupting {
    cpu: CpuBackend,
    stage: Stage,
    /// `None`: every table.
    table: Option<&'static str>,
    column: usize,
    row: usize,
}

impl Corrupting {
    pub fn new(stage: Stage, table: Option<&'static str>, column: usize, row: usize) -> Corrupting {
        Corrupting { cpu: CpuBackend::new(), stage, table, column, row }
    }

    fn touch(&self, stage: Stage, ctx: &Ctx, m: Result<CpuMatrix>) -> Result<CpuMatrix> {
        let m = m?;
        let hit = stage == self.stage
            && self.table.is_none_or(|t| t == ctx.table)
            && self.row < m.height()
            && self.column < m.width();
        if !hit {
            return Ok(m);
        }
        let mut host = m.to_host();
        let v = host.get(self.row, self.column);
        host.set(self.row, self.column, v + F::ONE);
        Ok(CpuMatrix::from_host(&host))
    }
}

impl BackendBase for Corrupting {
    type Matrix = CpuMatrix;
    type Tree = CpuTree;
    fn name(&self) -> &str {
        "corrupting"
    }
    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<CpuMatrix> {
        self.cpu.upload(ctx, m)
    }
    fn download(&self, ctx: &Ctx, m: &CpuMatrix) -> Result<ColMatrix> {
        self.cpu.download(ctx, m)
    }
    fn reshape(&self, ctx: &Ctx, m: &CpuMatrix, height: usize) -> Result<CpuMatrix> {
        self.cpu.reshape(ctx, m, height)
    }
}

impl NttOps for Corrupting {
    fn ntt(&self, ctx: &Ctx, m: &CpuMatrix) -> Result<CpuMatrix> {
        self.touch(Stage::Ntt, ctx, self.cpu.ntt(ctx, m))
    }
    fn intt(&self, ctx: &Ctx, m: &CpuMatrix) -> Result<CpuMatrix> {
        self.touch(Stage::InverseNtt, ctx, self.cpu.intt(ctx, m))
    }
    fn coset_lde(&self, ctx: &Ctx, m: &CpuMatrix, log_blowup: u32, shift: F) -> Result<CpuMatrix> {
        self.touch(Stage::CosetLde, ctx, self.cpu.coset_lde(ctx, m, log_blowup, shift))
    }
}

impl MerkleOps for Corrupting {
    fn commit(&self, ctx: &Ctx, m: &CpuMatrix, hash: HashKind) -> Result<CpuTree> {
        self.cpu.commit(ctx, m, hash)
    }
    fn open(&self, ctx: &Ctx, m: &CpuMatrix, tree: &CpuTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        self.cpu.open(ctx, m, tree, rows)
    }
}

impl LogUpOps for Corrupting {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<CpuMatrix>) -> Result<(CpuMatrix, Ext)> {
        let (m, sum) = self.cpu.logup_aux(ctx, i)?;
        Ok((self.touch(Stage::LogUp, ctx, Ok(m))?, sum))
    }
}

impl ComposeOps for Corrupting {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<CpuMatrix>) -> Result<CpuMatrix> {
        self.touch(Stage::Compose, ctx, self.cpu.compose(ctx, i))
    }
    fn split_quotient(&self, ctx: &Ctx, q: &CpuMatrix, d: Coset, log_n: u32, parts: usize) -> Result<CpuMatrix> {
        self.touch(Stage::QuotientSplit, ctx, self.cpu.split_quotient(ctx, q, d, log_n, parts))
    }
}

impl DeepOps for Corrupting {
    fn evaluate_at(&self, ctx: &Ctx, m: &CpuMatrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        self.cpu.evaluate_at(ctx, m, domain, points)
    }
    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<CpuMatrix>]) -> Result<CpuMatrix> {
        self.touch(Stage::Deep, ctx, self.cpu.deep_quotient(ctx, domain, points))
    }
}

impl FriOps for Corrupting {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &CpuMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&CpuMatrix, Ext)>,
    ) -> Result<CpuMatrix> {
        self.touch(Stage::FriFold, ctx, self.cpu.fri_fold(ctx, layer, domain, log_arity, beta, roll_in))
    }
    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        self.cpu.grind(ctx, hash, seed, bits)
    }
}
