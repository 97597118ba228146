//! The verifier: host only, no backend. Replays the transcript, checks the
//! constraints at the out-of-domain point, every Merkle opening, every FRI
//! fold and the proof of work. Malformed proofs give typed errors, never
//! panics.

use crate::air::Machine;
use crate::options::ProofOptions;
use crate::poly::eval_poly;
use crate::proof::{Proof, QueryProof, TableOod};
use crate::protocol::{self, Challenges, DeepCoeffs, FriStep, TableShape};
use crate::transcript::Transcript;
use backend_api::hash::{hash_leaf, merkle_root_from_path, pow_ok};
use backend_api::{Digest, Ext, HashKind, RowOpening, F};
use std::collections::BTreeMap;
use thiserror::Error;

/// Which proofs the verifier accepts.
#[derive(Clone, Copy, Debug)]
pub enum Acceptance {
    /// Exactly these options.
    Options(ProofOptions),
    /// Any valid options reaching this conjectured security.
    MinSecurity(u32),
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum VerifyError {
    #[error("options not accepted: {0}")]
    Options(String),
    #[error("malformed proof: {0}")]
    Shape(String),
    #[error("auxiliary values rejected: {0}")]
    AuxValues(String),
    #[error("table {table}: the constraints do not hold at the out-of-domain point")]
    OodConstraints { table: String },
    #[error("query {query}: the {part} opening of table {table} does not match its commitment")]
    TraceOpening { query: usize, table: String, part: &'static str },
    #[error("query {query}: FRI layer {layer} opening does not match its commitment")]
    FriOpening { query: usize, layer: usize },
    #[error("query {query}: FRI layer {layer} disagrees with the fold of the layer before")]
    FriFold { query: usize, layer: usize },
    #[error("query {query}: the final polynomial disagrees with the last FRI layer")]
    FinalPoly { query: usize },
    #[error("the proof of work does not have {bits} leading zero bits")]
    ProofOfWork { bits: u32 },
}

fn shape_err(msg: impl Into<String>) -> VerifyError {
    VerifyError::Shape(msg.into())
}

/// Verifies `proof` for `machine` with public inputs `publics`.
pub fn verify<M: Machine + ?Sized>(
    machine: &M,
    publics: &[F],
    proof: &Proof,
    acceptance: &Acceptance,
) -> Result<(), VerifyError> {
    verify_with(machine, publics, proof, acceptance, Challenges::Own)
}

/// [`verify`], with the LogUp challenges from `challenges`: with shared
/// ones the bus sums (`proof.aux_values`) are left to the caller, who
/// checks them across the whole set ([`crate::segments`]).
pub fn verify_with<M: Machine + ?Sized>(
    machine: &M,
    publics: &[F],
    proof: &Proof,
    acceptance: &Acceptance,
    source: Challenges,
) -> Result<(), VerifyError> {
    let options = proof.options;
    options.validate().map_err(|e| VerifyError::Options(e.to_string()))?;
    let tables = machine.tables();
    if proof.log_heights.len() != tables.len() {
        return Err(shape_err(format!("{} table heights for {} tables", proof.log_heights.len(), tables.len())));
    }
    let num_challenges = machine.num_challenges();
    let shapes = protocol::table_shapes(&tables, &proof.log_heights, &options, publics.len(), num_challenges)
        .map_err(shape_err)?;
    let log_max = shapes.iter().map(|s| s.log_lde).max().expect("non-empty");
    accept(acceptance, &options, log_max)?;
    let (steps, log_final) = protocol::fri_schedule(&shapes, &options);
    check_shapes(proof, &shapes, steps.len(), log_final, &options)?;
    let layout = Layout { shapes, steps, log_final, log_max };
    let replay = replay(machine, publics, proof, source, &layout)?;
    for (qi, (&q, qp)) in replay.positions.iter().zip(&proof.queries).enumerate() {
        check_query(proof, &layout, &replay, qi, q, qp)?;
    }
    Ok(())
}

/// The proof's options against what the verifier accepts.
fn accept(acceptance: &Acceptance, options: &ProofOptions, log_max: u32) -> Result<(), VerifyError> {
    match acceptance {
        Acceptance::Options(o) if o != options => {
            Err(VerifyError::Options(format!("proof uses {options:?}, expected {o:?}")))
        }
        Acceptance::MinSecurity(bits) if options.security(log_max).bits < *bits => Err(VerifyError::Options(format!(
            "{} conjectured bits, at least {bits} required",
            options.security(log_max).bits
        ))),
        _ => Ok(()),
    }
}

/// The statement's tables and FRI layers, as the proof's heights imply.
struct Layout {
    shapes: Vec<TableShape>,
    steps: Vec<FriStep>,
    log_final: u32,
    log_max: u32,
}

/// What the transcript gives the query checks: z, the DEEP coefficients,
/// each FRI layer's fold and roll-in challenges, and the queried rows.
struct Replay {
    z: Ext,
    coeffs: Vec<DeepCoeffs>,
    betas: Vec<Ext>,
    roll_weights: Vec<Option<Ext>>,
    positions: Vec<usize>,
}

/// The prover's transcript replayed, checking on the way what needs no
/// query: the bus sums (own challenges), the constraints at z against the
/// committed quotient, and the proof of work.
fn replay<M: Machine + ?Sized>(
    machine: &M,
    publics: &[F],
    proof: &Proof,
    source: Challenges,
    layout: &Layout,
) -> Result<Replay, VerifyError> {
    let (options, tables, shapes) = (proof.options, machine.tables(), &layout.shapes);
    let mut tr = Transcript::new(options.hash, protocol::PROTOCOL);
    protocol::absorb_statement(&mut tr, &tables, &options, &proof.log_heights, publics);
    for root in &proof.main_roots {
        tr.absorb_digest(b"main-root", root);
    }
    let challenges = protocol::logup_challenges(&mut tr, machine.num_challenges(), source).map_err(shape_err)?;
    for (root, values) in proof.aux_roots.iter().zip(&proof.aux_values) {
        if let Some(root) = root {
            tr.absorb_digest(b"aux-root", root);
        }
        tr.absorb_exts(b"aux-values", values);
    }
    if let Challenges::Own = source {
        machine.check_aux_values(publics, &challenges, &proof.aux_values).map_err(VerifyError::AuxValues)?;
    }
    let alpha = tr.challenge_ext(b"alpha");
    for root in &proof.quotient_roots {
        tr.absorb_digest(b"quotient-root", root);
    }
    let z = protocol::draw_ood_point(&mut tr);

    // The constraints at z against the committed quotient.
    for (t, (air, shape)) in tables.iter().zip(shapes).enumerate() {
        let (od, values) = (&proof.ood[t], &proof.aux_values[t]);
        if !protocol::ood_consistent(*air, shape, z, alpha, od, &challenges, publics, values) {
            return Err(VerifyError::OodConstraints { table: shape.name.clone() });
        }
    }
    for od in &proof.ood {
        for p in 0..od.main.len() {
            tr.absorb_exts(b"ood-main", &od.main[p]);
            tr.absorb_exts(b"ood-aux", &od.aux[p]);
        }
        tr.absorb_exts(b"ood-quotient", &od.quotient);
    }
    let gamma = tr.challenge_ext(b"deep");
    let coeffs = protocol::deep_coeffs(shapes, gamma);
    let rolls = protocol::roll_ins(shapes, &layout.steps);
    let mut betas = Vec::with_capacity(layout.steps.len());
    let mut roll_weights = Vec::with_capacity(layout.steps.len());
    for (root, &rolls_in) in proof.fri_roots.iter().zip(&rolls) {
        tr.absorb_digest(b"fri-root", root);
        betas.push(tr.challenge_ext(b"fri-beta"));
        roll_weights.push(rolls_in.then(|| tr.challenge_ext(b"fri-roll-in")));
    }
    tr.absorb_exts(b"final-poly", &proof.final_poly);
    let seed = tr.challenge_bytes(b"pow-seed");
    if !pow_ok(options.hash, &seed, proof.pow_nonce, options.grinding_bits) {
        return Err(VerifyError::ProofOfWork { bits: options.grinding_bits });
    }
    tr.absorb_u64(b"pow-nonce", proof.pow_nonce);
    let positions = (0..options.num_queries).map(|_| tr.challenge_index(b"query", 1 << layout.log_max)).collect();
    Ok(Replay { z, coeffs, betas, roll_weights, positions })
}

/// Whether opening `o` is row `row` of the tree with root `root`.
fn opens(hash: HashKind, o: &RowOpening, root: &Digest, row: usize) -> bool {
    merkle_root_from_path(hash, hash_leaf(hash, &o.values), row, &o.path) == *root
}

/// Query `qi`, at row `q` of the tallest LDE: every table's openings
/// against its roots, their DEEP quotients, and the FRI fold chain from
/// them to the final polynomial.
fn check_query(
    proof: &Proof,
    layout: &Layout,
    replay: &Replay,
    qi: usize,
    q: usize,
    qp: &QueryProof,
) -> Result<(), VerifyError> {
    let deep = deep_sums(proof, layout, replay, qi, q, qp)?;
    let (hash, log_max) = (proof.options.hash, layout.log_max);
    let mut pos = q;
    let mut expected = deep[&log_max];
    for (k, step) in layout.steps.iter().enumerate() {
        let a = 1usize << step.log_arity;
        let log_leaves = step.log_size - step.log_arity;
        let leaf = pos & ((1 << log_leaves) - 1);
        let j = pos >> log_leaves;
        let o = &qp.fri[k];
        if !opens(hash, o, &proof.fri_roots[k], leaf) {
            return Err(VerifyError::FriOpening { query: qi, layer: k });
        }
        let siblings: Vec<Ext> = (0..a).map(|s| Ext::new(o.values[s], o.values[a + s], o.values[2 * a + s])).collect();
        if siblings[j] != expected {
            return Err(VerifyError::FriFold { query: qi, layer: k });
        }
        let x = protocol::layer_shift(log_max, step.log_size) * F::two_adic_root(step.log_size).pow(leaf as u64);
        expected = protocol::fold_point(&siblings, x, replay.betas[k]);
        if let Some(weight) = replay.roll_weights[k] {
            expected += weight * deep[&log_leaves];
        }
        pos = leaf;
    }
    let log_final = layout.log_final;
    let x = protocol::layer_shift(log_max, log_final) * F::two_adic_root(log_final).pow(pos as u64);
    if eval_poly(&proof.final_poly, Ext::from_base(x)) != expected {
        return Err(VerifyError::FinalPoly { query: qi });
    }
    Ok(())
}

/// Query `qi`'s DEEP quotients, each table's at its row (its openings
/// checked against its roots), summed per LDE height.
fn deep_sums(
    proof: &Proof,
    layout: &Layout,
    replay: &Replay,
    qi: usize,
    q: usize,
    qp: &QueryProof,
) -> Result<BTreeMap<u32, Ext>, VerifyError> {
    let hash = proof.options.hash;
    let mut deep: BTreeMap<u32, Ext> = BTreeMap::new();
    for (t, shape) in layout.shapes.iter().enumerate() {
        let tq = &qp.tables[t];
        let row = q & ((1 << shape.log_lde) - 1);
        let opening_err = |part| VerifyError::TraceOpening { query: qi, table: shape.name.clone(), part };
        if !opens(hash, &tq.main, &proof.main_roots[t], row) {
            return Err(opening_err("main"));
        }
        if let (Some(o), Some(root)) = (&tq.aux, &proof.aux_roots[t]) {
            if !opens(hash, o, root, row) {
                return Err(opening_err("auxiliary"));
            }
        }
        if !opens(hash, &tq.quotient, &proof.quotient_roots[t], row) {
            return Err(opening_err("quotient"));
        }
        let x = shape.shift * F::two_adic_root(shape.log_lde).pow(row as u64);
        let d = deep_at(shape, &proof.ood[t], &replay.coeffs[t], tq, x, replay.z).ok_or_else(|| opening_err("deep"))?;
        *deep.entry(shape.log_lde).or_insert(Ext::ZERO) += d;
    }
    Ok(deep)
}

/// The table's DEEP quotient at x from its opened row.
fn deep_at(
    shape: &TableShape,
    od: &TableOod,
    c: &protocol::DeepCoeffs,
    tq: &crate::proof::TableQuery,
    x: F,
    z: Ext,
) -> Option<Ext> {
    let w = shape.trace_generator();
    let mut acc = Ext::ZERO;
    for (pi, &o) in shape.offsets.iter().enumerate() {
        let zp = z * w.pow(o as u64);
        let mut num = Ext::ZERO;
        for (col, &v) in tq.main.values.iter().enumerate() {
            num += c.main[pi][col] * (Ext::from_base(v) - od.main[pi][col]);
        }
        if let Some(aux) = &tq.aux {
            for (col, &v) in aux.values.iter().enumerate() {
                num += c.aux[pi][col] * (Ext::from_base(v) - od.aux[pi][col]);
            }
        }
        if o == 0 {
            for (col, &v) in tq.quotient.values.iter().enumerate() {
                num += c.quotient[col] * (Ext::from_base(v) - od.quotient[col]);
            }
        }
        acc += num * (Ext::from_base(x) - zp).inverse()?;
    }
    Some(acc)
}

/// Every length in the proof against what the statement implies, so the
/// checks after it index safely.
fn check_shapes(
    proof: &Proof,
    shapes: &[TableShape],
    num_steps: usize,
    log_final: u32,
    options: &ProofOptions,
) -> Result<(), VerifyError> {
    let n = shapes.len();
    let counts = [
        ("main roots", proof.main_roots.len()),
        ("auxiliary roots", proof.aux_roots.len()),
        ("auxiliary value lists", proof.aux_values.len()),
        ("quotient roots", proof.quotient_roots.len()),
        ("out-of-domain tables", proof.ood.len()),
    ];
    for (what, got) in counts {
        if got != n {
            return Err(shape_err(format!("{got} {what} for {n} tables")));
        }
    }
    if proof.fri_roots.len() != num_steps {
        return Err(shape_err(format!("{} FRI roots, expected {num_steps}", proof.fri_roots.len())));
    }
    let final_len = 1usize << (log_final - options.log_blowup);
    if proof.final_poly.len() != final_len {
        return Err(shape_err(format!(
            "final polynomial has {} coefficients, expected {final_len}",
            proof.final_poly.len()
        )));
    }
    if proof.queries.len() != options.num_queries {
        return Err(shape_err(format!("{} queries, expected {}", proof.queries.len(), options.num_queries)));
    }
    for (t, s) in shapes.iter().enumerate() {
        if proof.aux_roots[t].is_some() != (s.aux_width > 0) {
            return Err(shape_err(format!("table {}: auxiliary commitment presence is wrong", s.name)));
        }
        if proof.aux_values[t].len() != s.num_aux_values {
            return Err(shape_err(format!(
                "table {}: {} auxiliary values, expected {}",
                s.name,
                proof.aux_values[t].len(),
                s.num_aux_values
            )));
        }
        let od = &proof.ood[t];
        let points = s.offsets.len();
        if od.main.len() != points
            || od.aux.len() != points
            || od.main.iter().any(|v| v.len() != s.main_width)
            || od.aux.iter().any(|v| v.len() != 3 * s.aux_width)
            || od.quotient.len() != 3 * s.parts
        {
            return Err(shape_err(format!("table {}: out-of-domain values have the wrong shape", s.name)));
        }
    }
    let log_max = shapes.iter().map(|s| s.log_lde).max().expect("non-empty");
    let mut fri_shapes = vec![];
    let mut s = log_max;
    let (steps, _) = protocol::fri_schedule(shapes, options);
    for st in &steps {
        fri_shapes.push((3usize << st.log_arity, (st.log_size - st.log_arity) as usize));
        s -= st.log_arity;
    }
    debug_assert_eq!(s, log_final);
    let opening_ok = |o: &RowOpening, width: usize, depth: usize| o.values.len() == width && o.path.len() == depth;
    for (qi, q) in proof.queries.iter().enumerate() {
        if q.tables.len() != n || q.fri.len() != fri_shapes.len() {
            return Err(shape_err(format!("query {qi} has the wrong number of openings")));
        }
        for (t, s) in shapes.iter().enumerate() {
            let tq = &q.tables[t];
            let depth = s.log_lde as usize;
            let aux_ok = match &tq.aux {
                Some(o) => s.aux_width > 0 && opening_ok(o, 3 * s.aux_width, depth),
                None => s.aux_width == 0,
            };
            if !opening_ok(&tq.main, s.main_width, depth) || !aux_ok || !opening_ok(&tq.quotient, 3 * s.parts, depth) {
                return Err(shape_err(format!("query {qi}: table {} openings have the wrong shape", s.name)));
            }
        }
        for (k, &(width, depth)) in fri_shapes.iter().enumerate() {
            if !opening_ok(&q.fri[k], width, depth) {
                return Err(shape_err(format!("query {qi}: FRI layer {k} opening has the wrong shape")));
            }
        }
    }
    Ok(())
}
