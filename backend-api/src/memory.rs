//! The device-memory model: pure functions giving the bytes each stage
//! needs, and the set of bytes one proof holds on a device.
//!
//! Two views of the same buffers:
//! - per operation ([`stage_alloc`], [`stage_bytes`]): what one backend
//!   call allocates (its outputs and its scratch) and the peak it reaches
//!   with its inputs, for operands described by a [`TableDims`] (see each
//!   stage's convention there). Device backends admit loose operations with
//!   these, and they are checked against the device pool's measured
//!   high-water mark per stage.
//! - per table of a proof ([`table_resident`], [`table_transient`]): what
//!   the prover keeps on the device from a table's upload to its queries,
//!   and the most it holds on top at any stage. A proof reserves the sum
//!   over its tables ([`DeviceSet`]) before it starts, so concurrent tables
//!   and concurrent proofs share a card without over-committing it.
//!
//! Tests pin the numbers, so a change to a stage's buffers must update the
//! model.

use crate::error::Stage;
use crate::hash::Digest;
use std::fmt;

const ELEM: u64 = 8;
const DIGEST: u64 = std::mem::size_of::<Digest>() as u64;

/// The shape of one table's work on a device, or of one operation's
/// operands (see [`stage_alloc`] for each stage's convention).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableDims {
    pub log_n: u32,
    pub log_blowup: u32,
    pub fixed_width: u64,
    pub main_width: u64,
    /// Extension columns (three base columns each).
    pub aux_width: u64,
    /// Quotient parts (three base columns each).
    pub parts: u64,
    /// Set when the table's LDEs are spilled to host memory and come back
    /// in pieces of about this many bytes ([`spilled_resident`],
    /// [`spilled_transient`]).
    pub spill_piece: Option<u64>,
    /// Set when the table's committed LDEs are rebuilt from its traces,
    /// a coset at a time, whenever they are read ([`recomputed_resident`],
    /// [`recomputed_transient`]).
    pub recompute: bool,
    /// A recomputed table's cosets are rebuilt in 2^recompute_split pieces
    /// (from folded coefficients), for a device with no room for a whole
    /// coset beside the coefficients.
    pub recompute_split: u32,
    /// A recomputed table keeps its main trace beside its coefficients
    /// until the LogUp round reads it (not rebuilt there): the main round
    /// holds it with a coset.
    pub recompute_keeps_traces: bool,
    /// A recomputed table keeps its auxiliary LDE (with its tree) in place
    /// of the auxiliary columns' coefficients.
    pub recompute_keeps_aux: bool,
}

impl TableDims {
    /// Operands of one matrix: `width` columns of 2^log_n rows, extended
    /// by 2^log_blowup where the stage extends.
    pub fn matrix(log_n: u32, log_blowup: u32, width: usize) -> TableDims {
        TableDims { log_n, log_blowup, main_width: width as u64, ..TableDims::default() }
    }
    pub fn n(&self) -> u64 {
        1u64.checked_shl(self.log_n).unwrap_or(u64::MAX)
    }
    pub fn lde_rows(&self) -> u64 {
        1u64.checked_shl(self.log_n.saturating_add(self.log_blowup)).unwrap_or(u64::MAX)
    }
    /// Base columns of the table's traces (fixed, main and auxiliary).
    fn trace_width(&self) -> u64 {
        add(&[self.fixed_width, self.main_width, self.aux_width.saturating_mul(3)])
    }
    /// The widest matrix the table extends.
    fn widest(&self) -> u64 {
        self.main_width.max(self.aux_width.saturating_mul(3)).max(self.fixed_width)
    }
}

/// A sum that saturates (shapes near u64::MAX bytes cannot be admitted
/// anyway, and must not panic).
fn add(xs: &[u64]) -> u64 {
    xs.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// Bytes of a Merkle tree over `rows` leaves (every layer kept).
pub fn tree_bytes(rows: u64) -> u64 {
    rows.saturating_mul(2).saturating_sub(1).saturating_mul(DIGEST)
}

/// Bytes of a `rows` x `width` base-field matrix.
pub fn matrix_bytes(rows: u64, width: u64) -> u64 {
    rows.saturating_mul(width).saturating_mul(ELEM)
}

/// Elements of the two twist tables of a coset LDE of 2^log_n rows
/// (shift^k / n split as k = hi * 2^lo_bits + lo).
fn twist_elems(log_n: u32) -> u64 {
    let lo = log_n.min(126).div_ceil(2);
    let shl = |k: u32| 1u64.checked_shl(k).unwrap_or(u64::MAX);
    shl(lo).saturating_add(shl(log_n.min(126) - lo))
}

/// Points an out-of-domain evaluation reads a matrix once for (a table's
/// columns are opened at z and at z times the trace's generator).
pub const OOD_POINTS: u64 = 2;

/// Partial sums of a barycentric evaluation: up to 64 slices per column,
/// for each point of a pass.
fn ood_partials(rows: u64, width: u64) -> u64 {
    matrix_bytes(rows.div_ceil(4096).clamp(1, 64), width.saturating_mul(3 * OOD_POINTS))
}

/// What one operation allocates on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageAlloc {
    /// The results it returns on the device (kept by the caller).
    pub output: u64,
    /// Buffers it frees before it returns.
    pub scratch: u64,
}

impl StageAlloc {
    pub fn total(&self) -> u64 {
        self.output.saturating_add(self.scratch)
    }
}

/// What one call of `stage` allocates, for operands described by `d`:
/// - upload, download: one n x `main_width` matrix;
/// - ntt, intt: n x `main_width` in, the same out;
/// - coset-lde: n x `main_width` in, extended by 2^log_blowup;
/// - merkle-commit, merkle-open: n rows of `main_width` (the openings'
///   row gathers are a few KiB and not counted);
/// - logup-aux: n rows of `fixed_width` + `main_width` in, `aux_width`
///   extension columns out;
/// - compose: the LDEs (lde_rows of `fixed_width` + `main_width` + 3
///   `aux_width`) in, one extension column out;
/// - quotient-split: the quotient (lde_rows x 3) in, `parts` out;
/// - out-of-domain: n x `main_width` in (n is the size of its domain);
/// - deep: lde_rows x `main_width` in (every column at one point);
/// - fri-fold: a layer of lde_rows x 3 folded by 2^log_blowup to n rows;
///   `main_width` counts the output's 3 columns and a roll-in's 3;
/// - grind: nothing but the result word.
pub fn stage_alloc(stage: Stage, d: &TableDims) -> StageAlloc {
    let (n, big, w) = (d.n(), d.lde_rows(), d.main_width);
    let (output, scratch) = match stage {
        Stage::Upload => (matrix_bytes(n, w), 0),
        Stage::Download | Stage::MerkleOpen => (0, 0),
        Stage::Ntt | Stage::InverseNtt => (matrix_bytes(n, w), 0),
        // The inverse transform's coefficients, then the twist tables.
        Stage::CosetLde => (matrix_bytes(big, w), add(&[matrix_bytes(n, w), ELEM * twist_elems(d.log_n)])),
        Stage::MerkleCommit => (tree_bytes(n), 0),
        // Block totals of the running-sum scan (2^11 rows a block), and
        // theirs.
        Stage::LogUp => {
            let blocks = n.div_ceil(2048) + n.div_ceil(2048 * 2048) + 1;
            (matrix_bytes(n, d.aux_width.saturating_mul(3)), matrix_bytes(blocks, 3))
        }
        // The denominators 1 / (x^n - 1) take 2^log_blowup values.
        Stage::Compose => (matrix_bytes(big, 3), matrix_bytes(1 << d.log_blowup.min(32), 1)),
        Stage::QuotientSplit => (matrix_bytes(big, d.parts.saturating_mul(3)), add(&[matrix_bytes(big, 3), ELEM])),
        // Barycentric weights and per-slice partial sums, for the points
        // of one pass.
        Stage::OutOfDomain => (0, add(&[matrix_bytes(n, 3 * OOD_POINTS), ood_partials(n, w)])),
        Stage::Deep => (matrix_bytes(big, 3), matrix_bytes(big, 3)),
        Stage::FriFold => (matrix_bytes(n, 3), 0),
        Stage::Grind => (0, ELEM),
    };
    StageAlloc { output, scratch }
}

/// Bytes of the operands a call of `stage` reads (same conventions).
pub fn stage_inputs(stage: Stage, d: &TableDims) -> u64 {
    let (n, big, w) = (d.n(), d.lde_rows(), d.main_width);
    match stage {
        Stage::Upload | Stage::Grind => 0,
        Stage::Download | Stage::Ntt | Stage::InverseNtt | Stage::CosetLde | Stage::OutOfDomain => matrix_bytes(n, w),
        Stage::MerkleCommit => matrix_bytes(n, w),
        Stage::MerkleOpen => add(&[matrix_bytes(n, w), tree_bytes(n)]),
        Stage::LogUp => matrix_bytes(n, d.fixed_width + w),
        Stage::Compose => matrix_bytes(big, d.trace_width()),
        Stage::QuotientSplit => matrix_bytes(big, 3),
        Stage::Deep => matrix_bytes(big, w),
        // The layer, and the roll-in when main_width counts one.
        Stage::FriFold => add(&[matrix_bytes(big, 3), matrix_bytes(n, w.saturating_sub(3))]),
    }
}

/// Bytes the device holds at once while running one call of `stage`: its
/// inputs, its outputs and its scratch (what the pool's high-water mark
/// reaches over the bytes already in use before the call, plus the
/// inputs).
pub fn stage_bytes(stage: Stage, d: &TableDims) -> u64 {
    stage_inputs(stage, d).saturating_add(stage_alloc(stage, d).total())
}

/// Bytes the prover keeps on the device for one table from its upload to
/// its queries: the traces (fixed, main, auxiliary; released after the
/// LogUp round, counted to the end: an upper bound), their LDEs and the
/// quotient parts, their trees, and (counted per table, so an upper bound
/// when tables share a height) the DEEP codeword and the FRI layers with
/// their trees.
pub fn table_resident(d: &TableDims) -> u64 {
    if d.spill_piece.is_some() {
        return spilled_resident(d);
    }
    if d.recompute {
        return recomputed_resident(d);
    }
    let (n, big) = (d.n(), d.lde_rows());
    let trees = 2 + u64::from(d.aux_width > 0);
    let deep_fri = add(&[matrix_bytes(big, 3), tree_bytes(big)]).saturating_mul(2);
    add(&[
        matrix_bytes(n, d.trace_width()),
        matrix_bytes(big, d.trace_width().saturating_add(d.parts.saturating_mul(3))),
        tree_bytes(big).saturating_mul(trees),
        deep_fri,
    ])
}

/// The most a table holds on top of its resident set at any stage: the
/// LDE's coefficient scratch of its widest matrix, or the quotient with
/// the split's coefficients (both lde_rows x 3), or an out-of-domain
/// evaluation's weights over the trace's size (every committed matrix is
/// read on an n-point coset of its LDE) with its partial sums.
pub fn table_transient(d: &TableDims) -> u64 {
    if let Some(piece) = d.spill_piece {
        return spilled_transient(d, piece);
    }
    if d.recompute {
        return recomputed_transient(d);
    }
    let lde = TableDims::matrix(d.log_n, d.log_blowup, d.widest() as usize);
    let split = add(&[matrix_bytes(d.lde_rows(), 3), stage_alloc(Stage::QuotientSplit, d).scratch]);
    let ood = stage_alloc(Stage::OutOfDomain, &TableDims::matrix(d.log_n, 0, d.widest() as usize));
    stage_alloc(Stage::CosetLde, &lde).scratch.max(split).max(ood.scratch)
}

/// Everything one table can hold at once: resident plus transient.
pub fn table_device_set(d: &TableDims) -> u64 {
    table_resident(d).saturating_add(table_transient(d))
}

/// What a table whose LDEs are spilled to host memory keeps on the
/// device: its fixed and auxiliary traces (the main trace stays on the
/// host), its trees (a commitment's subtrees together are one tree), and
/// the DEEP and FRI bounds.
pub fn spilled_resident(d: &TableDims) -> u64 {
    let (n, big) = (d.n(), d.lde_rows());
    let trees = 2 + u64::from(d.aux_width > 0);
    let deep_fri = add(&[matrix_bytes(big, 3), tree_bytes(big)]).saturating_mul(2);
    add(&[
        matrix_bytes(n, d.fixed_width.saturating_add(d.aux_width.saturating_mul(3))),
        tree_bytes(big).saturating_mul(trees),
        deep_fri,
    ])
}

/// A spilled table's room on top: a piece of `piece` bytes, or one coset
/// of every matrix composition or DEEP reads (each the trace's height)
/// with the output, or the quotient's split, which runs whole.
pub fn spilled_transient(d: &TableDims, piece: u64) -> u64 {
    let coset = matrix_bytes(d.n(), add(&[d.trace_width(), d.parts.saturating_mul(3), 6]));
    let split = add(&[matrix_bytes(d.lde_rows(), 3), stage_alloc(Stage::QuotientSplit, d).scratch]);
    piece.max(coset).max(split)
}

/// What a table whose LDEs are recomputed keeps on the device: its
/// traces' coefficients (the recipes, in place of the traces), the
/// quotient parts' LDE with its tree (the parts have no trace to rebuild
/// them from; pieces of it are taken with `stride_rows`), and the DEEP
/// and FRI bounds. The main and auxiliary trees are on the host, unless
/// the auxiliary LDE is kept: then it and its tree are here, not its
/// coefficients.
pub fn recomputed_resident(d: &TableDims) -> u64 {
    let (n, big) = (d.n(), d.lde_rows());
    let deep_fri = add(&[matrix_bytes(big, 3), tree_bytes(big)]).saturating_mul(2);
    let aux = d.aux_width.saturating_mul(3);
    let (kept, coeffs) = match d.recompute_keeps_aux && aux > 0 {
        true => (aux, d.trace_width().saturating_sub(aux)),
        false => (0, d.trace_width()),
    };
    let kept_trees = if kept > 0 { 2 } else { 1 };
    let lde = matrix_bytes(big, d.parts.saturating_mul(3).saturating_add(kept));
    add(&[matrix_bytes(n, coeffs), lde, tree_bytes(big).saturating_mul(kept_trees), deep_fri])
}

/// A recomputed table's room on top: one coset of every matrix
/// composition (or, split, DEEP) reads (a coset is rebuilt from coefficients with
/// no scratch; a trace rebuilt takes no more, and one is made into
/// coefficients in place, `intt_in_place`: a backend that allocates
/// there needs the trace's bytes more) and the output, with the main
/// trace when it is kept until LogUp, or with split
/// cosets a piece's worth (see below), beside the pieces' outputs so far
/// and their interleave; or the quotient's split, which runs whole; or
/// the LogUp build.
pub fn recomputed_transient(d: &TableDims) -> u64 {
    let outputs = matrix_bytes(d.lde_rows(), 6);
    let piece = match d.recompute_split {
        0 => matrix_bytes(d.n(), add(&[d.trace_width(), d.parts.saturating_mul(3), 6])),
        // Composition on a piece holds it, its next rows, the folded
        // coefficients the next piece is made from, and the output.
        s => {
            let reads = d.trace_width().saturating_mul(2).saturating_add(d.widest());
            matrix_bytes(d.n() >> s.min(63), add(&[reads, d.parts.saturating_mul(3), 6]))
        }
    };
    let traces = match d.recompute_keeps_traces {
        true => matrix_bytes(d.n(), d.main_width),
        false => 0,
    };
    let coset = add(&[piece, outputs, traces]);
    let split = add(&[matrix_bytes(d.lde_rows(), 3), stage_alloc(Stage::QuotientSplit, d).scratch]);
    // The LogUp build reads the whole trace (kept or rebuilt) beside its
    // coefficients.
    let logup = match d.aux_width {
        0 => 0,
        _ => add(&[matrix_bytes(d.n(), d.main_width + d.fixed_width), stage_alloc(Stage::LogUp, d).total()]),
    };
    // A kept auxiliary LDE is made from its trace, beside it.
    let aux_lde = match d.recompute_keeps_aux && d.aux_width > 0 {
        true => {
            let aux = TableDims::matrix(d.log_n, d.log_blowup, d.aux_width.saturating_mul(3) as usize);
            add(&[matrix_bytes(d.n(), d.aux_width.saturating_mul(3)), stage_alloc(Stage::CosetLde, &aux).scratch])
        }
        false => 0,
    };
    // DEEP reads a recomputed table's two combinations (3 columns each,
    // from their coefficients) on the whole LDE when its cosets are whole,
    // beside the quotient's codeword.
    let deep = match d.recompute_split {
        0 => add(&[matrix_bytes(d.lde_rows(), 9), matrix_bytes(d.n(), 6)]),
        _ => 0,
    };
    coset.max(split).max(logup).max(deep).max(aux_lde)
}

/// The device bytes one proof reserves before it starts: every table's
/// resident set, and each table's transient room (tables of a round run at
/// once, each one stage at a time).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceSet {
    pub tables: Vec<TableDims>,
}

impl DeviceSet {
    pub fn resident(&self) -> u64 {
        add(&self.tables.iter().map(table_resident).collect::<Vec<_>>())
    }
    pub fn transient(&self) -> u64 {
        add(&self.tables.iter().map(table_transient).collect::<Vec<_>>())
    }
    pub fn bytes(&self) -> u64 {
        self.resident().saturating_add(self.transient())
    }
}

/// Device memory held for a proof until dropped (see
/// `BackendBase::reserve`). A backend without a memory gate returns
/// [`Reservation::none`].
pub struct Reservation {
    bytes: u64,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl Reservation {
    /// Nothing held.
    pub fn none() -> Reservation {
        Reservation { bytes: 0, _guard: None }
    }
    /// `bytes` held until `guard` is dropped.
    pub fn held(bytes: u64, guard: Box<dyn Send + Sync>) -> Reservation {
        Reservation { bytes, _guard: Some(guard) }
    }
    /// Reservations of several backends (a cross-check's two sides), held
    /// and released together.
    pub fn both(a: Reservation, b: Reservation) -> Reservation {
        Reservation { bytes: a.bytes.saturating_add(b.bytes), _guard: Some(Box::new((a, b))) }
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reservation({} bytes)", self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM_CPU: TableDims = TableDims {
        log_n: 20,
        log_blowup: 1,
        fixed_width: 0,
        main_width: 63,
        aux_width: 4,
        parts: 2,
        spill_piece: None,
        recompute: false,
        recompute_split: 0,
        recompute_keeps_traces: false,
        recompute_keeps_aux: false,
    };

    #[test]
    fn per_operation_model_pins_a_2_20_by_64_lde() {
        let d = TableDims::matrix(20, 2, 64);
        // The LDE of 64 columns at 2^22 rows is 2 GiB, its input 512 MiB,
        // and the coefficient scratch another 512 MiB.
        assert_eq!(matrix_bytes(d.lde_rows(), 64), 2 << 30);
        let a = stage_alloc(Stage::CosetLde, &d);
        assert_eq!(a.output, 2 << 30);
        assert_eq!(a.scratch, (512 << 20) + 8 * 2048);
        assert_eq!(stage_bytes(Stage::CosetLde, &d), (3 << 30) + 8 * 2048);
        // A commit of the LDE adds its tree (2^23 - 1 digests).
        let c = TableDims::matrix(22, 0, 64);
        assert_eq!(stage_bytes(Stage::MerkleCommit, &c), (2 << 30) + ((1 << 23) - 1) * 32);
        // Folding by 4 with a roll-in: layer in, output and roll-in of a quarter.
        let f = TableDims { log_n: 20, log_blowup: 2, main_width: 6, ..TableDims::default() };
        assert_eq!(stage_bytes(Stage::FriFold, &f), 3 * 8 * (1 << 22) + 2 * 3 * 8 * (1 << 20));
    }

    #[test]
    fn table_model_pins_the_vm_cpu_table() {
        let set = table_device_set(&VM_CPU);
        // Traces 2^20 x 75, LDEs 2^21 x 81, three trees of 2^21 leaves, DEEP
        // and FRI bounds: 2.57 GiB resident; the LDE scratch (504 MiB) is
        // the transient peak.
        assert_eq!(table_transient(&VM_CPU), matrix_bytes(1 << 20, 63) + 8 * 2048);
        assert!(set > 3 << 30 && set < 4 << 30, "{set}");
        // Doubling the height doubles the set (within rounding of trees).
        let d2 = TableDims { log_n: 21, ..VM_CPU };
        let ratio = table_device_set(&d2) as f64 / set as f64;
        assert!((ratio - 2.0).abs() < 0.01, "{ratio}");
        let proof = DeviceSet { tables: vec![VM_CPU, TableDims { log_n: 18, ..VM_CPU }] };
        assert_eq!(proof.bytes(), set + table_device_set(&TableDims { log_n: 18, ..VM_CPU }));
    }

    #[test]
    fn a_spilled_table_holds_about_a_coset_and_its_trees() {
        // The seeds' shape: 2^21 x 449, blowup 4. Kept, 44.8 GiB; spilled
        // in 8.5 GiB pieces, the 7 GiB coset and trees fit a 24 GiB card.
        let d = TableDims { log_n: 21, log_blowup: 2, main_width: 449, parts: 1, ..TableDims::default() };
        let kept = DeviceSet { tables: vec![d] };
        let spilled = DeviceSet { tables: vec![TableDims { spill_piece: Some(17 << 29), ..d }] };
        assert!(kept.bytes() > 44 << 30, "{}", kept.bytes());
        assert!(spilled.bytes() < 24 << 30 && spilled.bytes() > 8 << 30, "{}", spilled.bytes());
        assert_eq!(spilled_transient(&d, 17 << 29), 17 << 29, "the piece outweighs a coset");
        assert_eq!(spilled_transient(&d, 1), matrix_bytes(1 << 21, 449 + 3 + 6));
    }

    #[test]
    fn a_recomputed_table_holds_its_traces_and_two_cosets() {
        // The seeds' table: trace 7 GiB; resident adds the parts, a tree
        // and the DEEP/FRI bounds; room for a coset and the output, beside
        // the cosets' outputs and their interleave.
        let d =
            TableDims { log_n: 21, log_blowup: 2, main_width: 449, parts: 1, recompute: true, ..TableDims::default() };
        let parts = matrix_bytes(1 << 23, 3);
        let deep_fri = 2 * (parts + tree_bytes(1 << 23));
        assert_eq!(table_resident(&d), matrix_bytes(1 << 21, 449) + parts + tree_bytes(1 << 23) + deep_fri);
        assert_eq!(table_transient(&d), matrix_bytes(1 << 21, 449 + 3 + 6) + matrix_bytes(1 << 23, 6));
        let kept = table_device_set(&TableDims { recompute: false, ..d });
        assert!(table_device_set(&d) < 24 << 30 && kept > 44 << 30, "{kept}");
    }

    #[test]
    fn traces_kept_until_logup_add_their_bytes_beside_a_coset() {
        let d = TableDims {
            log_n: 21,
            log_blowup: 2,
            fixed_width: 2,
            main_width: 449,
            aux_width: 4,
            parts: 1,
            recompute: true,
            ..TableDims::default()
        };
        let keeping = TableDims { recompute_keeps_traces: true, ..d };
        assert_eq!(table_resident(&keeping), table_resident(&d));
        assert_eq!(table_transient(&keeping), table_transient(&d) + matrix_bytes(1 << 21, 449));
    }

    #[test]
    fn a_kept_auxiliary_lde_replaces_its_coefficients() {
        let d = TableDims {
            log_n: 20,
            log_blowup: 2,
            main_width: 52,
            aux_width: 4,
            parts: 2,
            recompute: true,
            ..TableDims::default()
        };
        let keeping = TableDims { recompute_keeps_aux: true, ..d };
        let more = matrix_bytes(1 << 22, 12) + tree_bytes(1 << 22) - matrix_bytes(1 << 20, 12);
        assert_eq!(table_resident(&keeping), table_resident(&d) + more);
        assert!(table_transient(&keeping) >= table_transient(&d));
        // Nothing to keep without auxiliary columns.
        let none = TableDims { aux_width: 0, ..d };
        assert_eq!(table_device_set(&TableDims { recompute_keeps_aux: true, ..none }), table_device_set(&none));
    }

    #[test]
    fn a_narrow_recomputed_table_peaks_at_deep() {
        // Two columns: DEEP's two combinations on the whole LDE and its
        // codeword outweigh a coset of the trace and the split.
        let d =
            TableDims { log_n: 16, log_blowup: 2, main_width: 2, parts: 1, recompute: true, ..TableDims::default() };
        assert_eq!(table_transient(&d), matrix_bytes(1 << 18, 9) + matrix_bytes(1 << 16, 6));
        let split = TableDims { recompute_split: 1, ..d };
        assert!(table_transient(&split) < table_transient(&d));
    }

    #[test]
    fn a_narrow_tall_table_peaks_at_the_split() {
        // Two columns: the quotient and the split's coefficients (2 x 3
        // columns of the LDE) outweigh the LDE scratch.
        let d = TableDims { log_n: 16, log_blowup: 2, main_width: 2, parts: 4, ..TableDims::default() };
        assert_eq!(table_transient(&d), 2 * matrix_bytes(1 << 18, 3) + 8);
    }

    #[test]
    fn a_reservation_holds_its_guards_until_dropped() {
        use std::sync::Arc;
        let (a, b) = (Arc::new(()), Arc::new(()));
        let r = Reservation::both(
            Reservation::held(5, Box::new(a.clone())),
            Reservation::both(Reservation::none(), Reservation::held(7, Box::new(b.clone()))),
        );
        assert_eq!(r.bytes(), 12);
        assert_eq!((Arc::strong_count(&a), Arc::strong_count(&b)), (2, 2));
        drop(r);
        assert_eq!((Arc::strong_count(&a), Arc::strong_count(&b)), (1, 1));
    }

    #[test]
    fn lanes_are_never_handed_out_twice() {
        use crate::backend::Lane;
        let lanes: Vec<Lane> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4).map(|_| s.spawn(|| (0..1000).map(|_| Lane::fresh()).collect::<Vec<_>>())).collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = lanes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), lanes.len());
        assert!(!lanes.contains(&Lane::NONE));
    }

    #[test]
    fn shapes_past_u64_saturate_instead_of_overflowing() {
        let d = TableDims::matrix(63, 5, 1 << 20);
        assert_eq!(stage_bytes(Stage::Upload, &d), u64::MAX);
        assert!(table_device_set(&d) > 0);
    }
}
