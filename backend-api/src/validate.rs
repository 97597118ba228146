//! Shape checks shared by every backend, so the same invalid call gives
//! the same typed error whichever backend receives it.

use crate::backend::{ComposeInputs, DeepPoint, DeviceMatrix, DeviceTree, LogUpInputs};
use crate::domain::Coset;
use crate::error::{BackendError, Result, Stage};
use crate::ext::Ext;
use crate::field::{F, TWO_ADICITY};
use crate::ir::{ConstraintSystem, Leaf, Node};

/// Largest supported log2 blowup (blowup 16).
pub const MAX_LOG_BLOWUP: u32 = 4;
/// Largest supported proof-of-work difficulty.
pub const MAX_GRIND_BITS: u32 = 32;
/// Largest supported log2 FRI folding arity (arity 16).
pub const MAX_LOG_ARITY: u32 = 4;

fn err(stage: Stage, detail: String) -> BackendError {
    BackendError::invalid(stage, detail)
}

/// A height usable as a two-adic domain: a power of two within 2^32.
pub fn two_adic_height(stage: Stage, height: usize) -> Result<u32> {
    if height == 0 || !height.is_power_of_two() {
        return Err(err(stage, format!("height {height} is not a power of two")));
    }
    let log = height.trailing_zeros();
    if log > TWO_ADICITY {
        return Err(err(stage, format!("height 2^{log} exceeds the field's 2^{TWO_ADICITY} roots of unity")));
    }
    Ok(log)
}

/// A domain whose size and shift the arithmetic can use. `Coset` has
/// public fields, so a caller may hand any values in.
pub fn domain(stage: Stage, d: &Coset) -> Result<()> {
    if d.log_size > TWO_ADICITY {
        return Err(err(stage, format!("domain of 2^{} points exceeds 2^{TWO_ADICITY}", d.log_size)));
    }
    if d.shift.is_zero() {
        return Err(err(stage, "domain shift is zero".into()));
    }
    Ok(())
}

pub fn ntt<M: DeviceMatrix>(stage: Stage, m: &M) -> Result<u32> {
    two_adic_height(stage, m.height())
}

pub fn coset_lde<M: DeviceMatrix>(m: &M, log_blowup: u32, shift: F) -> Result<u32> {
    let stage = Stage::CosetLde;
    let log_n = two_adic_height(stage, m.height())?;
    // Blowup 1 evaluates on the coset of the trace's own size: one coset
    // of a larger LDE, rebuilt on its own.
    if log_blowup > MAX_LOG_BLOWUP {
        return Err(err(stage, format!("blowup 2^{log_blowup} is not one of 1, 2, 4, 8, 16")));
    }
    if log_n + log_blowup > TWO_ADICITY {
        return Err(err(stage, format!("LDE of 2^{} rows exceeds the field's two-adicity", log_n + log_blowup)));
    }
    if shift.is_zero() {
        return Err(err(stage, "coset shift is zero".into()));
    }
    Ok(log_n)
}

pub fn reshape<M: DeviceMatrix>(m: &M, height: usize) -> Result<()> {
    let stage = Stage::MerkleCommit;
    if height == 0 || !m.height().is_multiple_of(height) || !(m.height() / height).is_power_of_two() {
        return Err(err(stage, format!("cannot view {} rows as {height}", m.height())));
    }
    Ok(())
}

/// Strided rows of a power-of-two height the stride divides.
pub fn stride_rows<M: DeviceMatrix>(m: &M, log_stride: u32) -> Result<()> {
    let stage = Stage::CosetLde;
    let log_n = two_adic_height(stage, m.height())?;
    if log_stride > log_n {
        return Err(err(stage, format!("cannot take every 2^{log_stride}-th row of 2^{log_n}")));
    }
    Ok(())
}

/// Pieces to interleave: a power-of-two count of one power-of-two shape.
pub fn interleave<M: DeviceMatrix>(pieces: &[&M]) -> Result<()> {
    let stage = Stage::CosetLde;
    if !pieces.len().is_power_of_two() {
        return Err(err(stage, format!("cannot interleave {} pieces", pieces.len())));
    }
    two_adic_height(stage, pieces[0].height())?;
    let shape = |p: &&M| (p.height(), p.width());
    if let Some(p) = pieces.iter().find(|p| shape(p) != shape(&pieces[0])) {
        let ((h, w), (h0, w0)) = (shape(p), shape(&pieces[0]));
        return Err(err(stage, format!("a {h}x{w} piece among {h0}x{w0} ones")));
    }
    Ok(())
}

pub fn commit<M: DeviceMatrix>(m: &M) -> Result<u32> {
    if m.width() == 0 {
        return Err(err(Stage::MerkleCommit, "matrix has no columns".into()));
    }
    two_adic_height(Stage::MerkleCommit, m.height())
}

/// An upload extended and committed: a matrix `coset_lde` accepts, with
/// columns to commit.
pub fn upload_commit<M: DeviceMatrix>(m: &M, log_blowup: u32, shift: F) -> Result<u32> {
    let log_n = coset_lde(m, log_blowup, shift)?;
    if m.width() == 0 {
        return Err(err(Stage::MerkleCommit, "matrix has no columns".into()));
    }
    Ok(log_n)
}

/// Leaf digests: the rows of a matrix `commit` accepts.
pub fn leaf_digests<M: DeviceMatrix>(m: &M) -> Result<()> {
    commit(m).map(drop)
}

/// Rows of a matrix: every index in range.
pub fn rows<M: DeviceMatrix>(m: &M, rows: &[usize]) -> Result<()> {
    match rows.iter().find(|&&r| r >= m.height()) {
        Some(&r) => Err(err(Stage::MerkleOpen, format!("row {r} is out of range for {} rows", m.height()))),
        None => Ok(()),
    }
}

pub fn open<M: DeviceMatrix, T: DeviceTree>(m: &M, tree: &T, rows: &[usize]) -> Result<()> {
    let stage = Stage::MerkleOpen;
    if tree.leaves() != m.height() {
        return Err(err(stage, format!("tree has {} leaves, matrix {} rows", tree.leaves(), m.height())));
    }
    if let Some(&r) = rows.iter().find(|&&r| r >= m.height()) {
        return Err(err(stage, format!("row {r} is out of range for {} rows", m.height())));
    }
    Ok(())
}

/// A LogUp build: well-formed interactions over a trace (and fixed
/// columns) of the widths they were compiled for, one power-of-two height.
pub fn logup_aux<M: DeviceMatrix>(i: &LogUpInputs<M>) -> Result<()> {
    let stage = Stage::LogUp;
    i.logup.check().map_err(|e| err(stage, format!("malformed interactions: {e}")))?;
    let l = &i.logup.eval.layout;
    let n = i.main.height();
    two_adic_height(stage, n)?;
    if i.main.width() != l.main_width {
        return Err(err(
            stage,
            format!("main trace has {} columns, the interactions {}", i.main.width(), l.main_width),
        ));
    }
    match (i.fixed, l.fixed_width) {
        (None, 0) => Ok(()),
        (Some(f), w) if f.height() == n && f.width() == w && w > 0 => Ok(()),
        (f, w) => Err(err(stage, format!("fixed trace is {:?}, expected {n}x{w}", f.map(|f| (f.height(), f.width()))))),
    }
}

pub fn compose<M: DeviceMatrix>(i: &ComposeInputs<M>) -> Result<()> {
    let stage = Stage::Compose;
    domain(stage, &i.domain)?;
    i.constraints.check_structure().map_err(|e| err(stage, format!("malformed constraint system: {e}")))?;
    let (log_n, log_size) = (i.log_trace_height, i.domain.log_size);
    match i.next {
        None if log_n > log_size || log_size - log_n > MAX_LOG_BLOWUP => {
            return Err(err(stage, format!("LDE of 2^{log_size} rows does not extend a trace of 2^{log_n}")));
        }
        Some(_) if log_size > log_n => {
            return Err(err(
                stage,
                format!("a piece of 2^{log_size} rows given next rows exceeds the trace's 2^{log_n}"),
            ));
        }
        Some(_) => {
            if let Some(o) = i.constraints.nodes.iter().filter_map(leaf_offset).find(|&o| o > 1) {
                return Err(err(stage, format!("a constraint reads row offset {o}; given next rows, only 0 and 1")));
            }
        }
        None => {}
    }
    if i.log_stride > MAX_LOG_BLOWUP {
        return Err(err(stage, format!("a stride of 2^{} rows is past the largest blowup", i.log_stride)));
    }
    let rows = i.domain.size() << i.log_stride;
    compose_matrices(i.fixed, i.main, i.aux, i.constraints, rows)?;
    if let Some(next) = i.next {
        if next.fixed.is_some() != i.fixed.is_some() || next.aux.is_some() != i.aux.is_some() {
            return Err(err(stage, "the next rows name other matrices than the rows".into()));
        }
        compose_matrices(next.fixed, next.main, next.aux, i.constraints, rows)?;
    }
    let l = &i.constraints.layout;
    let counts = [
        ("challenges", i.challenges.len(), l.num_challenges),
        ("public inputs", i.publics.len(), l.num_public),
        ("auxiliary values", i.aux_values.len(), l.num_aux_values),
    ];
    for (what, got, want) in counts {
        if got != want {
            return Err(err(stage, format!("{got} {what} given, the constraints expect {want}")));
        }
    }
    // x^n - 1 vanishes somewhere on the coset iff shift^N = 1 (N the
    // larger of the coset's and the trace's sizes): the quotient would be
    // undefined there.
    if i.domain.shift.pow(1u64 << log_size.max(log_n)) == F::ONE {
        return Err(err(stage, "the coset meets the trace domain's vanishing set".into()));
    }
    Ok(())
}

fn leaf_offset(node: &Node) -> Option<u32> {
    match node {
        Node::Leaf(Leaf::Main { offset, .. } | Leaf::Fixed { offset, .. } | Leaf::Aux { offset, .. }) => Some(*offset),
        _ => None,
    }
}

/// The fixed, main and auxiliary matrices of a composition: `rows` rows
/// each, as wide as the constraints' layout says.
fn compose_matrices<M: DeviceMatrix>(
    fixed: Option<&M>,
    main: &M,
    aux: Option<&M>,
    cs: &ConstraintSystem,
    rows: usize,
) -> Result<()> {
    let (stage, l) = (Stage::Compose, &cs.layout);
    if main.height() != rows || main.width() != l.main_width {
        return Err(err(
            stage,
            format!("main LDE is {}x{}, expected {rows}x{}", main.height(), main.width(), l.main_width),
        ));
    }
    match (fixed, l.fixed_width) {
        (None, 0) => {}
        (Some(f), w) if f.height() == rows && f.width() == w && w > 0 => {}
        (f, w) => {
            let got = f.map(|f| (f.height(), f.width()));
            return Err(err(stage, format!("fixed LDE is {got:?}, expected {rows}x{w}")));
        }
    }
    match (aux, l.aux_width) {
        (None, 0) => Ok(()),
        (Some(a), w) if a.height() == rows && a.width() == 3 * w && w > 0 => Ok(()),
        (a, w) => {
            let got = a.map(|a| (a.height(), a.width()));
            Err(err(stage, format!("auxiliary LDE is {got:?}, expected {rows}x{}", 3 * w)))
        }
    }
}

/// A column combination: one weight per column.
pub fn combine_columns<M: DeviceMatrix>(m: &M, weights: &[Ext]) -> Result<()> {
    if weights.len() != m.width() {
        return Err(err(Stage::Deep, format!("{} weights for {} columns", weights.len(), m.width())));
    }
    Ok(())
}

/// A coefficient fold: a power-of-two height the fold divides.
pub fn fold_coeffs<M: DeviceMatrix>(m: &M, log_fold: u32) -> Result<()> {
    let stage = Stage::CosetLde;
    let log_n = two_adic_height(stage, m.height())?;
    if log_fold > log_n {
        return Err(err(stage, format!("cannot fold 2^{log_n} coefficients by 2^{log_fold}")));
    }
    Ok(())
}

/// Rows of a coset evaluation: the coset as `coset_lde` of blowup 1
/// takes it, and positions inside it.
pub fn coset_rows<M: DeviceMatrix>(m: &M, shift: F, positions: &[usize]) -> Result<()> {
    coset_lde(m, 0, shift)?;
    match positions.iter().find(|&&p| p >= m.height()) {
        Some(&p) => {
            Err(err(Stage::CosetLde, format!("position {p} is out of range for a coset of {} points", m.height())))
        }
        None => Ok(()),
    }
}

pub fn split_quotient<M: DeviceMatrix>(
    q: &M,
    d: Coset,
    log_trace_height: u32,
    parts: usize,
    log_out: u32,
) -> Result<()> {
    let stage = Stage::QuotientSplit;
    domain(stage, &d)?;
    let domain = d;
    if q.width() != 3 || q.height() != domain.size() {
        return Err(err(stage, format!("quotient is {}x{}, expected {}x3", q.height(), q.width(), domain.size())));
    }
    let fits = log_trace_height <= domain.log_size && parts <= domain.size() >> log_trace_height;
    if parts == 0 || !fits {
        return Err(err(
            stage,
            format!("{parts} parts of 2^{log_trace_height} do not fit a domain of {}", domain.size()),
        ));
    }
    if log_out < domain.log_size || log_out > TWO_ADICITY {
        return Err(err(
            stage,
            format!(
                "parts of 2^{log_trace_height} from a domain of 2^{} cannot go to 2^{log_out} points",
                domain.log_size
            ),
        ));
    }
    Ok(())
}

pub fn evaluate_at<M: DeviceMatrix>(m: &M, d: Coset, log_stride: u32) -> Result<()> {
    let stage = Stage::OutOfDomain;
    domain(stage, &d)?;
    if d.log_size + log_stride > TWO_ADICITY {
        return Err(err(stage, format!("2^{} points 2^{log_stride} rows apart", d.log_size)));
    }
    let rows = d.size() << log_stride;
    if m.height() != rows {
        let apart = if log_stride > 0 { format!(", 2^{log_stride} rows apart") } else { String::new() };
        return Err(err(stage, format!("matrix has {} rows, domain {}{apart}", m.height(), d.size())));
    }
    Ok(())
}

/// Coefficients evaluated off a domain: a power-of-two height, as the
/// transforms take.
pub fn evaluate_coeffs<M: DeviceMatrix>(m: &M) -> Result<()> {
    two_adic_height(Stage::OutOfDomain, m.height()).map(drop)
}

pub fn deep<M: DeviceMatrix>(d: Coset, points: &[DeepPoint<M>]) -> Result<()> {
    let stage = Stage::Deep;
    domain(stage, &d)?;
    let domain = d;
    if points.iter().any(|p| domain.index_of(p.point).is_some()) {
        return Err(err(stage, "an opening point lies on the evaluation domain".into()));
    }
    if points.is_empty() {
        return Err(err(stage, "no opening points".into()));
    }
    for p in points {
        for c in &p.columns {
            if c.matrix.height() != domain.size() {
                return Err(err(stage, format!("matrix has {} rows, domain {}", c.matrix.height(), domain.size())));
            }
            if c.coeffs.len() != c.matrix.width() || c.values.len() != c.matrix.width() {
                return Err(err(
                    stage,
                    format!(
                        "{} coefficients and {} values for {} columns",
                        c.coeffs.len(),
                        c.values.len(),
                        c.matrix.width()
                    ),
                ));
            }
        }
    }
    Ok(())
}

pub fn fri_fold<M: DeviceMatrix>(layer: &M, d: Coset, log_arity: u32, roll_in: Option<&M>) -> Result<()> {
    let stage = Stage::FriFold;
    domain(stage, &d)?;
    let domain = d;
    if layer.width() != 3 || layer.height() != domain.size() {
        return Err(err(stage, format!("layer is {}x{}, expected {}x3", layer.height(), layer.width(), domain.size())));
    }
    if log_arity == 0 || log_arity > MAX_LOG_ARITY || log_arity > domain.log_size {
        return Err(err(stage, format!("cannot fold 2^{} rows by 2^{log_arity}", domain.log_size)));
    }
    if let Some(r) = roll_in {
        let h = domain.size() >> log_arity;
        if r.width() != 3 || r.height() != h {
            return Err(err(stage, format!("roll-in is {}x{}, expected {h}x3", r.height(), r.width())));
        }
    }
    Ok(())
}

pub fn grind(bits: u32) -> Result<()> {
    if bits > MAX_GRIND_BITS {
        return Err(err(Stage::Grind, format!("{bits} grinding bits exceed the maximum of {MAX_GRIND_BITS}")));
    }
    Ok(())
}
