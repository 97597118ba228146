//! A backend that is wrong in exactly one place, for the tests that check
//! the suite and `CrossCheck` catch it.
#![allow(dead_code)]

use backend_api::{Ctx, DeviceMatrix, Op, Out, Result, Stage, Wrapper, F};
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

    fn hits(&self, stage: Stage, ctx: &Ctx) -> bool {
        stage == self.stage && self.table.is_none_or(|t| t == ctx.table)
    }

    fn touch(&self, stage: Stage, ctx: &Ctx, m: Result<CpuMatrix>) -> Result<CpuMatrix> {
        let m = m?;
        let hit = self.hits(stage, ctx) && self.row < m.height() && self.column < m.width();
        if !hit {
            return Ok(m);
        }
        let mut host = m.to_host();
        let v = host.get(self.row, self.column);
        host.set(self.row, self.column, v + F::ONE);
        Ok(CpuMatrix::from_host(&host))
    }
}

impl Wrapper for Corrupting {
    type Inner = CpuBackend;

    fn inner(&self) -> &CpuBackend {
        &self.cpu
    }

    fn name(&self) -> &str {
        "corrupting"
    }

    fn call(&self, ctx: &Ctx, op: Op<'_, &CpuMatrix, &CpuTree>) -> Result<Out<CpuMatrix, CpuTree>> {
        // Views and transfers carry the corruption of the stage that made
        // the matrix; only computed results are altered.
        let computed = !matches!(op, Op::Upload(_) | Op::Download(_) | Op::Reshape { .. });
        let stage = op.stage();
        Ok(match op.dispatch(&self.cpu, ctx)? {
            Out::Matrix(m) if computed => Out::Matrix(self.touch(stage, ctx, Ok(m))?),
            Out::LogUp(m, sum) => Out::LogUp(self.touch(stage, ctx, Ok(m))?, sum),
            Out::Extended(m, lde) => Out::Extended(m, self.touch(stage, ctx, Ok(lde))?),
            Out::Committed(m, lde, t) => Out::Committed(m, self.touch(stage, ctx, Ok(lde))?, t),
            // Leaf digests by row; gathered rows by (row asked, column).
            Out::Digests(mut d) if self.hits(stage, ctx) && self.row < d.len() => {
                d[self.row][0] ^= 1;
                Out::Digests(d)
            }
            Out::Rows(mut r) if self.hits(stage, ctx) && self.row < r.len() && self.column < r[self.row].len() => {
                r[self.row][self.column] += F::ONE;
                Out::Rows(r)
            }
            out => out,
        })
    }
}
