//! Spilled residency: a proof whose low-degree extensions do not fit the
//! device keeps them in host memory and streams them back in pieces.
//!
//! Every piece is computed by the same backend operations as a kept LDE,
//! so the proof's bytes do not change:
//! - an LDE is extended a block of columns at a time (columns are
//!   independent);
//! - a tree is committed a block of rows at a time: each block is a
//!   subtree, and the levels above the blocks' roots are hashed on the host;
//! - composition and DEEP run once per coset of the trace domain: rows
//!   j, j + B, j + 2B, ... of an LDE of blowup B are the evaluations on
//!   the coset s * g^j * <w_n>, where "the next row" is the next row of the
//!   coset, so both stages are the same operation on a domain of blowup 1,
//!   and their outputs interleave back into the whole domain.

use backend_api::host::{fill_columns, try_zeroed};
use backend_api::memory::{self, DeviceSet, TableDims};
use backend_api::{Backend, ColMatrix, Ctx, Result, Stage, F};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a proof keeps its committed matrices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residency {
    /// Every LDE and tree on the backend until the queries (the fastest).
    #[default]
    Keep,
    /// The LDEs of `tables` in host memory; pieces of about `chunk_bytes`
    /// (column blocks to extend, row blocks to commit) and one coset at a
    /// time (a trace's size) go to the backend. The other tables keep
    /// theirs.
    Spill { chunk_bytes: u64, tables: Tables },
    /// The LDEs of `tables` kept nowhere: each coset (split in
    /// 2^log_split pieces) is rebuilt from the table's traces'
    /// coefficients, which stay on the backend, whenever a stage reads it
    /// ([`super::recompute`]). With `keep_traces`, the main trace stays
    /// beside its coefficients until the LogUp round reads it (else that
    /// round rebuilds it: one transform more, a trace's bytes less in the
    /// main round). With `keep_aux`, the auxiliary columns' LDE is kept
    /// (narrower than the main one; composition and the openings then
    /// rebuild only the main columns). The other tables keep theirs.
    Recompute { tables: Tables, log_split: u32, keep_traces: bool, keep_aux: bool },
}

/// A set of tables by index (bit t: table t; at most 64 tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tables(pub u64);

impl Tables {
    pub const ALL: Tables = Tables(u64::MAX);

    pub fn contains(self, t: usize) -> bool {
        t < 64 && (self.0 >> t) & 1 == 1
    }
}

impl Residency {
    /// Every table spilled, in pieces of `chunk_bytes`.
    pub fn spill_all(chunk_bytes: u64) -> Residency {
        Residency::Spill { chunk_bytes, tables: Tables::ALL }
    }

    /// Every table recomputed, whole cosets, the traces kept until LogUp
    /// and the auxiliary LDEs kept (with no budget to fit: the fewest
    /// transforms).
    pub const RECOMPUTE_ALL: Residency =
        Residency::Recompute { tables: Tables::ALL, log_split: 0, keep_traces: true, keep_aux: true };

    /// `tables` recomputed in `way` ([`recompute_ways`]).
    fn recompute(tables: Tables, way: Way) -> Residency {
        Residency::Recompute { tables, log_split: way.log_split, keep_traces: way.keep_traces, keep_aux: way.keep_aux }
    }

    /// Every table recomputed, in the first way that fits `budget`
    /// ([`recompute_ways`]; the last, when none does).
    pub fn recompute_all_within(set: &DeviceSet, budget: u64) -> Residency {
        let last = Way { log_split: MAX_LOG_SPLIT, keep_traces: false, keep_aux: false };
        let way = recompute_ways().find(|&w| recomputed(set, Tables::ALL, w) <= budget).unwrap_or(last);
        Residency::recompute(Tables::ALL, way)
    }

    /// Pieces per coset of a recomputed table, as a power of two (0 when
    /// nothing is recomputed).
    pub fn log_split(&self) -> u32 {
        match self {
            Residency::Recompute { log_split, .. } => *log_split,
            _ => 0,
        }
    }

    /// Pieces per coset (log) of table `t`, of 2^log_n rows whose
    /// constraints read rows up to `max_offset` on: the split when it is
    /// recomputed, no finer than single rows, and none when a constraint
    /// reads past the next row (a piece is given only its next rows).
    pub(crate) fn table_split(&self, t: usize, log_n: u32, max_offset: usize) -> u32 {
        match self.recomputes(t) && max_offset <= 1 {
            true => self.log_split().min(log_n),
            false => 0,
        }
    }

    /// Whether table `t` is spilled.
    pub fn spills(&self, t: usize) -> bool {
        matches!(self, Residency::Spill { tables, .. } if tables.contains(t))
    }

    /// Whether table `t`'s LDEs are recomputed.
    pub fn recomputes(&self, t: usize) -> bool {
        matches!(self, Residency::Recompute { tables, .. } if tables.contains(t))
    }

    /// Whether table `t` is recomputed with its traces kept until LogUp.
    pub fn keeps_traces(&self, t: usize) -> bool {
        matches!(self, Residency::Recompute { tables, keep_traces: true, .. } if tables.contains(t))
    }

    /// Whether table `t` is recomputed with its auxiliary LDE kept.
    pub fn keeps_aux(&self, t: usize) -> bool {
        matches!(self, Residency::Recompute { tables, keep_aux: true, .. } if tables.contains(t))
    }

    /// Whether table `t`'s LDEs are read a coset at a time (not kept).
    pub fn in_pieces(&self, t: usize) -> bool {
        self.spills(t) || self.recomputes(t)
    }

    /// The residency of a proof whose tables kept would need `set` (the
    /// memory model's device set, [`crate::device_set`]): keep when it
    /// fits `budget`; else recompute the largest tables, one at a time,
    /// until the set fits (recomputing moves nothing over the bus), with
    /// cosets split in as few pieces as fit; else
    /// spill the largest tables until the kept tables' sets and the
    /// spilled tables' own (about a trace's size each) fit, the spilled
    /// tables' pieces sharing half of what is left.
    pub fn auto(set: &DeviceSet, budget: u64) -> Residency {
        let kept: Vec<u64> = set.tables.iter().map(memory::table_device_set).collect();
        if kept.iter().sum::<u64>() <= budget {
            return Residency::Keep;
        }
        let mut order: Vec<usize> = (0..set.tables.len().min(64)).collect();
        order.sort_by_key(|&t| std::cmp::Reverse(kept[t]));
        let largest_first = |fits: &dyn Fn(Tables) -> bool| {
            let mut tables = Tables(0);
            for &t in &order {
                tables.0 |= 1 << t;
                if fits(tables) {
                    return Some(tables);
                }
            }
            None
        };
        for way in recompute_ways() {
            if let Some(tables) = largest_first(&|tables| recomputed(set, tables, way) <= budget) {
                return Residency::recompute(tables, way);
            }
        }
        let tables = largest_first(&|tables| held(set, tables) <= budget).unwrap_or(Tables::ALL);
        Residency::Spill { chunk_bytes: pieces(set, tables, budget), tables }
    }

    /// Every table spilled, with pieces sized for `budget` as
    /// [`Residency::auto`] sizes them.
    pub fn spill_all_within(set: &DeviceSet, budget: u64) -> Residency {
        Residency::Spill { chunk_bytes: pieces(set, Tables::ALL, budget), tables: Tables::ALL }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Residency::Keep => "keep",
            Residency::Spill { .. } => "spill",
            Residency::Recompute { .. } => "recompute",
        }
    }
}

/// The device bytes of `set` with `tables` spilled in pieces of nothing.
fn held(set: &DeviceSet, tables: Tables) -> u64 {
    let dims = |(t, d): (usize, &TableDims)| {
        let piece = tables.contains(t).then_some(0);
        memory::table_device_set(&TableDims { spill_piece: piece, ..*d })
    };
    set.tables.iter().enumerate().map(dims).sum()
}

/// The most pieces a recomputed coset is split in (2^4): past it, each
/// piece's fold reads the coefficients for little memory saved.
const MAX_LOG_SPLIT: u32 = 4;

/// A way to recompute a table (see [`Residency::Recompute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Way {
    log_split: u32,
    keep_traces: bool,
    keep_aux: bool,
}

/// The ways to recompute, fastest first: whole cosets with the traces
/// kept until LogUp and the auxiliary LDE kept, then with the auxiliary
/// LDE rebuilt too, then with the traces rebuilt for LogUp, then cosets in
/// ever more pieces.
fn recompute_ways() -> impl Iterator<Item = Way> {
    let whole = |keep_traces, keep_aux| Way { log_split: 0, keep_traces, keep_aux };
    [whole(true, true), whole(true, false)].into_iter().chain((0..=MAX_LOG_SPLIT).map(|log_split| Way {
        log_split,
        keep_traces: false,
        keep_aux: false,
    }))
}

/// The device bytes of `set` with `tables` recomputed in `way`.
fn recomputed(set: &DeviceSet, tables: Tables, way: Way) -> u64 {
    let dims = |(t, d): (usize, &TableDims)| {
        let recompute = tables.contains(t);
        let log_split = if recompute { way.log_split.min(d.log_n) } else { 0 };
        memory::table_device_set(&TableDims {
            recompute,
            recompute_split: log_split,
            recompute_keeps_traces: recompute && way.keep_traces,
            recompute_keeps_aux: recompute && way.keep_aux,
            ..*d
        })
    };
    set.tables.iter().enumerate().map(dims).sum()
}

/// Piece bytes for the spilled `tables`: half of what `budget` leaves over
/// what they hold, shared between them (the tables of a round run at once).
fn pieces(set: &DeviceSet, tables: Tables, budget: u64) -> u64 {
    let spilled = (0..set.tables.len()).filter(|&t| tables.contains(t)).count().max(1) as u64;
    (budget.saturating_sub(held(set, tables)) / 2 / spilled).max(1 << 20)
}

/// A spilling proof's piece size, the bytes it has moved and where its
/// time went.
pub(crate) struct SpillState {
    pub chunk_bytes: u64,
    pub moved: AtomicU64,
    pub clock: SpillClock,
}

/// Nanoseconds spent uploading, downloading and arranging pieces on the
/// host, summed over the tables (which may run at once).
#[derive(Default)]
pub(crate) struct SpillClock {
    pub upload: AtomicU64,
    pub download: AtomicU64,
    pub host: AtomicU64,
}

impl SpillClock {
    pub fn time<T>(counter: &AtomicU64, f: impl FnOnce() -> T) -> T {
        let t0 = std::time::Instant::now();
        let out = f();
        counter.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    pub fn times(&self) -> SpillTimes {
        let d = |c: &AtomicU64| std::time::Duration::from_nanos(c.load(Ordering::Relaxed));
        SpillTimes { upload: d(&self.upload), download: d(&self.download), host: d(&self.host) }
    }
}

/// Where a spilled or recomputed proof's moving time went (summed over
/// tables).
#[derive(Clone, Copy, Debug, Default)]
pub struct SpillTimes {
    pub upload: std::time::Duration,
    /// Includes waiting for the device work that makes what is downloaded.
    pub download: std::time::Duration,
    /// Gathering pieces out of host matrices and interleaving results.
    pub host: std::time::Duration,
}

/// The backend side of spilling: transfers counted, and piece sizes.
pub(crate) struct Spiller<'a, B: Backend> {
    pub backend: &'a B,
    pub chunk_bytes: u64,
    /// Bytes uploaded and downloaded by spilling.
    pub moved: &'a AtomicU64,
    pub clock: &'a SpillClock,
}

impl<B: Backend> Spiller<'_, B> {
    pub fn up(&self, ctx: &Ctx, m: &ColMatrix) -> Result<B::Matrix> {
        self.moved.fetch_add(bytes(m), Ordering::Relaxed);
        SpillClock::time(&self.clock.upload, || self.backend.upload(ctx, m))
    }

    pub fn down(&self, ctx: &Ctx, m: &B::Matrix) -> Result<ColMatrix> {
        let host = SpillClock::time(&self.clock.download, || self.backend.download(ctx, m))?;
        self.moved.fetch_add(bytes(&host), Ordering::Relaxed);
        Ok(host)
    }

    /// Runs host-side arranging (gathers, interleaves) on the clock.
    pub fn host<T>(&self, f: impl FnOnce() -> T) -> T {
        SpillClock::time(&self.clock.host, f)
    }

    /// The coset LDE of `evals` on the host, as blocks of columns, each
    /// extended on the backend (input, coefficients and output of a block
    /// within `chunk_bytes`).
    pub fn extend(&self, ctx: &Ctx, evals: &ColMatrix, log_blowup: u32, shift: F) -> Result<Vec<ColMatrix>> {
        let (n, w) = (evals.height(), evals.width());
        let per_column = 8 * (2 * n + (n << log_blowup)) as u64;
        let block = ((self.chunk_bytes / per_column) as usize).clamp(1, w.max(1));
        let mut out = Vec::with_capacity(w.div_ceil(block));
        for c0 in (0..w).step_by(block) {
            let part = self.up(ctx, &self.host(|| column_block(ctx, evals, c0, (c0 + block).min(w)))?)?;
            let lde = self.backend.coset_lde(ctx, &part, log_blowup, shift)?;
            drop(part);
            out.push(self.down(ctx, &lde)?);
        }
        Ok(out)
    }

    /// Rows per committed block: a power of two, the block of `width`
    /// columns within `chunk_bytes`, and small enough (at most 1/256 of
    /// the rows, down to 1024) that opening re-sends little: a block goes
    /// back to the backend for each query that lands in it.
    pub fn block_rows(&self, height: usize, width: usize) -> usize {
        let fit = (self.chunk_bytes / (8 * width.max(1) as u64)).max(1) as usize;
        let fit = 1usize << (usize::BITS - 1 - fit.leading_zeros());
        fit.min((height / 256).max(1024)).min(height).max(1)
    }
}

/// Bytes of a host piece (what moving it costs).
pub(crate) fn bytes(m: &ColMatrix) -> u64 {
    memory::matrix_bytes(m.height() as u64, m.width() as u64)
}

/// A host buffer for a piece (on huge pages: pieces are GiB-sized and
/// filled at once, so page faults would bound them).
fn buffer(ctx: &Ctx, len: usize) -> Result<Vec<F>> {
    try_zeroed(len).map_err(|e| e.at(Stage::Upload, ctx))
}

/// Columns [c0, c1) of `m`.
pub(crate) fn column_block(ctx: &Ctx, m: &ColMatrix, c0: usize, c1: usize) -> Result<ColMatrix> {
    let h = m.height();
    let src = &m.data()[c0 * h..c1 * h];
    let mut out = buffer(ctx, src.len())?;
    out.par_chunks_mut(1 << 16).zip(src.par_chunks(1 << 16)).for_each(|(o, s)| o.copy_from_slice(s));
    Ok(ColMatrix::new(c1 - c0, h, out))
}

/// Columns of a matrix held as blocks of columns (of one height).
fn columns(blocks: &[ColMatrix]) -> Vec<&[F]> {
    blocks.iter().flat_map(|b| b.columns()).collect()
}

/// Rows [r0, r1) of the matrix `blocks` hold.
pub(crate) fn row_block(ctx: &Ctx, blocks: &[ColMatrix], r0: usize, r1: usize) -> Result<ColMatrix> {
    let cols = columns(blocks);
    let rows = r1 - r0;
    let mut out = buffer(ctx, rows * cols.len())?;
    out.par_chunks_mut(rows.max(1)).zip(cols).for_each(|(o, c)| o.copy_from_slice(&c[r0..r1]));
    Ok(ColMatrix::new(out.len() / rows.max(1), rows, out))
}

/// Rows j, j + 2^log_cosets, j + 2 * 2^log_cosets, ... of the matrix
/// `blocks` hold: its values on coset j of the trace domain.
pub(crate) fn coset_rows(ctx: &Ctx, blocks: &[ColMatrix], j: usize, log_cosets: u32) -> Result<ColMatrix> {
    let cols = columns(blocks);
    let height = blocks.first().map_or(0, |b| b.height());
    let n = height >> log_cosets;
    let mut out = buffer(ctx, n * cols.len())?;
    // Past the last coset, rows wrap: coset j + 2^log_cosets is coset j
    // one row on (a piece's next rows).
    fill_columns(&mut out, n, |c, r0, block| {
        let col = cols[c];
        for (r, v) in (r0..).zip(block) {
            *v = col[(j + (r << log_cosets)) & (height - 1)];
        }
    });
    Ok(ColMatrix::new(out.len() / n.max(1), n, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: Ctx = Ctx::table("spill");

    fn sample(w: usize, h: usize) -> ColMatrix {
        ColMatrix::new(
            w,
            h,
            (0..w * h).map(|i| F::new(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 3) >> 2)).collect(),
        )
    }

    #[test]
    fn cosets_interleave_back_into_the_matrix() {
        let m = sample(3, 32);
        for log_cosets in 0..4 {
            let blocks = [column_block(&CTX, &m, 0, 1).unwrap(), column_block(&CTX, &m, 1, 3).unwrap()];
            let parts: Vec<ColMatrix> =
                (0..1 << log_cosets).map(|j| coset_rows(&CTX, &blocks, j, log_cosets).unwrap()).collect();
            assert_eq!(parts[1.min(parts.len() - 1)].height(), 32 >> log_cosets);
            assert_eq!(ColMatrix::interleave(&parts), m, "{log_cosets}");
            for (j, p) in parts.iter().enumerate() {
                assert_eq!(&m.stride_rows(j, log_cosets), p, "{log_cosets} {j}");
            }
        }
        let c = coset_rows(&CTX, std::slice::from_ref(&m), 3, 2).unwrap();
        assert_eq!(c.get(5, 2), m.get(3 + 5 * 4, 2));
        // Past the last coset, a row on.
        assert_eq!(coset_rows(&CTX, std::slice::from_ref(&m), 4, 2).unwrap(), m.stride_rows(4, 2));
        assert_eq!(m.stride_rows(4, 2).get(7, 1), m.get(0, 1));
    }

    #[test]
    fn blocks_are_the_rows_and_columns_they_name() {
        let m = sample(5, 16);
        let blocks = [column_block(&CTX, &m, 0, 2).unwrap(), column_block(&CTX, &m, 2, 5).unwrap()];
        let r = row_block(&CTX, &blocks, 4, 12).unwrap();
        assert_eq!((r.height(), r.width()), (8, 5));
        assert_eq!(r.get(0, 4), m.get(4, 4));
        assert_eq!(r.get(7, 1), m.get(11, 1));
        assert_eq!(r.get(3, 3), m.get(7, 3));
        let c = column_block(&CTX, &m, 1, 3).unwrap();
        assert_eq!((c.height(), c.width()), (16, 2));
        assert_eq!(c.column(1), m.column(2));
    }

    #[test]
    fn auto_keeps_what_fits_then_recomputes_then_spills_the_largest_tables_first() {
        let table = |log_n, main_width, aux_width| TableDims {
            log_n,
            log_blowup: 2,
            main_width,
            aux_width,
            parts: 1,
            ..TableDims::default()
        };
        // The seeds' table (with 4 auxiliary columns) beside a small one:
        // kept, about 46 GiB.
        let set = DeviceSet { tables: vec![table(12, 8, 0), table(21, 449, 4)] };
        assert_eq!(Residency::auto(&set, 64 << 30), Residency::Keep);
        // Recomputed whole, each way holds less than the one before it
        // (the auxiliary LDE, then the trace until LogUp given up), and a
        // budget of a way's set gets that way, for the large table alone.
        let ways: Vec<Way> = recompute_ways().collect();
        let sets: Vec<u64> = ways.iter().map(|&w| recomputed(&set, Tables(2), w)).collect();
        assert!(sets[..3].windows(2).all(|p| p[0] > p[1]), "{sets:?}");
        for (&way, &bytes) in ways.iter().zip(&sets).take(3) {
            assert_eq!(Residency::auto(&set, bytes), Residency::recompute(Tables(2), way), "{way:?}");
        }
        let r = Residency::auto(&set, sets[0]);
        assert!(r.keeps_aux(1) && r.keeps_traces(1) && !r.in_pieces(0) && !r.keeps_aux(0), "{r:?}");
        // With less room, its cosets are rebuilt in pieces: the fewest
        // that fit.
        let budget = *sets.iter().min().unwrap();
        let r = Residency::auto(&set, budget);
        let Residency::Recompute { tables, log_split, keep_traces: false, keep_aux: false } = r else {
            panic!("{r:?}")
        };
        let split = |log_split| Way { log_split, keep_traces: false, keep_aux: false };
        assert!(log_split > 0 && recomputed(&set, tables, split(log_split)) <= budget, "{r:?}");
        assert!(recomputed(&set, tables, split(log_split - 1)) > budget, "{r:?}: the fewest pieces that fit");
        // Below the finest split, spilled.
        let below = recomputed(&set, Tables::ALL, *ways.last().unwrap()) - 1;
        let r = Residency::auto(&set, below);
        assert!(r.spills(1) && !r.spills(0) && !r.recomputes(1), "{r:?}");
        let Residency::Spill { chunk_bytes, .. } = r else { unreachable!() };
        assert!(chunk_bytes > 1 << 20 && chunk_bytes < below / 2, "{chunk_bytes}");
        // Spilled as chosen, the set fits the budget.
        let spilled: u64 = set
            .tables
            .iter()
            .enumerate()
            .map(|(t, d)| {
                memory::table_device_set(&TableDims { spill_piece: r.spills(t).then_some(chunk_bytes), ..*d })
            })
            .sum();
        assert!(spilled <= below, "{spilled}");
        let all = Residency::spill_all_within(&set, 24 << 30);
        assert!(all.spills(0) && all.spills(1) && !Residency::Keep.spills(0));
    }
}
