//! The prover: every heavy stage runs on the backend `B`; the host keeps
//! only what the transcript and the proof need.

use crate::air::{self, Machine};
use crate::options::{OptionsError, ProofOptions};
use crate::proof::{Proof, QueryProof, TableOod, TableQuery};
use crate::protocol::{self, FriStep};
use crate::transcript::Transcript;
use backend_api::{
    Backend, BackendError, ColMatrix, ComposeInputs, Coset, Ctx, DeepColumns, DeepPoint, DeviceMatrix, DeviceTree, Ext,
    LogUpInputs, F,
};
use std::time::{Duration, Instant};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProveError {
    #[error("invalid options: {0}")]
    Options(#[from] OptionsError),
    #[error("invalid statement: {0}")]
    Statement(String),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("auxiliary values rejected: {0}")]
    AuxValues(String),
    /// The quotient exceeded its degree bound and the checker found why.
    #[error("the trace does not satisfy its constraints: {0}")]
    Unsatisfied(crate::debug::Violation),
}

/// Wall time of one prover stage on one table (or "all").
#[derive(Clone, Debug)]
pub struct StageTiming {
    pub stage: &'static str,
    pub table: String,
    /// Since the prove started.
    pub start: Duration,
    pub duration: Duration,
}

/// What a prove did, besides the proof.
#[derive(Clone, Debug, Default)]
pub struct ProveStats {
    pub timings: Vec<StageTiming>,
    pub total: Duration,
}

impl ProveStats {
    /// Total time per stage, in first-seen order.
    pub fn per_stage(&self) -> Vec<(&'static str, Duration)> {
        let mut out: Vec<(&'static str, Duration)> = vec![];
        for t in &self.timings {
            match out.iter_mut().find(|(s, _)| *s == t.stage) {
                Some((_, d)) => *d += t.duration,
                None => out.push((t.stage, t.duration)),
            }
        }
        out
    }
}

/// Receives progress as stages finish (for progress bars).
pub trait ProveObserver: Sync {
    fn stage_done(&self, _timing: &StageTiming) {}
}

struct NoObserver;
impl ProveObserver for NoObserver {}

struct Clock<'a> {
    start: Instant,
    stats: ProveStats,
    observer: &'a dyn ProveObserver,
}

impl Clock<'_> {
    fn time<T>(&mut self, stage: &'static str, table: &str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        let timing = StageTiming { stage, table: table.to_string(), start: t0 - self.start, duration: t0.elapsed() };
        self.observer.stage_done(&timing);
        self.stats.timings.push(timing);
        out
    }
}

/// Proves that `traces` (one main trace per table of `machine`, in order)
/// satisfy the machine's constraints with public inputs `publics`.
pub fn prove<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
) -> Result<Proof, ProveError> {
    prove_with_stats(backend, machine, traces, publics, options, None).map(|(p, _)| p)
}

struct TableState<B: Backend> {
    /// The traces on the trace domain, kept for the LogUp build and
    /// out-of-domain evaluation, which is n/N of the work on the LDE.
    main_trace: B::Matrix,
    fixed_trace: Option<B::Matrix>,
    aux_trace: Option<B::Matrix>,
    fixed_lde: Option<B::Matrix>,
    main_lde: B::Matrix,
    main_tree: B::Tree,
    aux_lde: Option<B::Matrix>,
    aux_tree: Option<B::Tree>,
    parts: Option<B::Matrix>,
    parts_tree: Option<B::Tree>,
}

/// [`prove`], also returning per-stage timings and reporting progress.
pub fn prove_with_stats<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    observer: Option<&dyn ProveObserver>,
) -> Result<(Proof, ProveStats), ProveError> {
    options.validate()?;
    let mut clock =
        Clock { start: Instant::now(), stats: ProveStats::default(), observer: observer.unwrap_or(&NoObserver) };
    let tables = machine.tables();
    if traces.len() != tables.len() {
        return Err(ProveError::Statement(format!("{} traces for {} tables", traces.len(), tables.len())));
    }
    let mut log_heights = Vec::with_capacity(traces.len());
    for (air, t) in tables.iter().zip(&traces) {
        if t.height() == 0 || !t.height().is_power_of_two() {
            return Err(ProveError::Statement(format!(
                "table {}: height {} is not a power of two",
                air.name(),
                t.height()
            )));
        }
        if t.width() != air.constraints().layout.main_width {
            return Err(ProveError::Statement(format!(
                "table {}: trace has {} columns, the AIR {}",
                air.name(),
                t.width(),
                air.constraints().layout.main_width
            )));
        }
        log_heights.push(t.height().trailing_zeros());
    }
    let num_challenges = machine.num_challenges();
    for air in &tables {
        air::check_aux_layout(*air, num_challenges)
            .map_err(|e| ProveError::Statement(format!("table {}: {e}", air.name())))?;
    }
    let shapes = protocol::table_shapes(&tables, &log_heights, options, publics.len(), num_challenges)
        .map_err(ProveError::Statement)?;
    let log_max = shapes.iter().map(|s| s.log_lde).max().expect("non-empty");

    let mut tr = Transcript::new(options.hash, protocol::PROTOCOL);
    protocol::absorb_statement(&mut tr, &tables, options, &log_heights, publics);

    // Main traces: LDE and commit.
    let mut states: Vec<TableState<B>> = Vec::with_capacity(tables.len());
    for ((air, shape), trace) in tables.iter().zip(&shapes).zip(traces) {
        let ctx = Ctx::table(&shape.name);
        let (main_trace, main_lde, main_tree) =
            clock.time("main commit", &shape.name, || -> Result<_, BackendError> {
                let dev = backend.upload(&ctx, &trace)?;
                let lde = backend.coset_lde(&ctx, &dev, options.log_blowup, shape.shift)?;
                let tree = backend.commit(&ctx, &lde, options.hash)?;
                Ok((dev, lde, tree))
            })?;
        drop(trace);
        let (fixed_trace, fixed_lde) = match air.fixed_trace() {
            Some(f) => {
                let (dev, lde) = clock.time("fixed lde", &shape.name, || -> Result<_, BackendError> {
                    let dev = backend.upload(&ctx, f)?;
                    let lde = backend.coset_lde(&ctx, &dev, options.log_blowup, shape.shift)?;
                    Ok((dev, lde))
                })?;
                (Some(dev), Some(lde))
            }
            None => (None, None),
        };
        tr.absorb_digest(b"main-root", &main_tree.root());
        states.push(TableState {
            main_trace,
            fixed_trace,
            aux_trace: None,
            fixed_lde,
            main_lde,
            main_tree,
            aux_lde: None,
            aux_tree: None,
            parts: None,
            parts_tree: None,
        });
    }

    // Auxiliary traces, built from the challenges.
    let challenges: Vec<Ext> = (0..num_challenges).map(|_| tr.challenge_ext(b"challenge")).collect();
    let mut aux_roots = Vec::with_capacity(tables.len());
    let mut aux_values = Vec::with_capacity(tables.len());
    for ((air, shape), st) in tables.iter().zip(&shapes).zip(states.iter_mut()) {
        let ctx = Ctx::table(&shape.name);
        let mut values = vec![];
        if let Some(logup) = air.logup() {
            let (dev, sum) = clock.time("aux build", &shape.name, || {
                let inputs = LogUpInputs {
                    logup,
                    main: &st.main_trace,
                    fixed: st.fixed_trace.as_ref(),
                    z: challenges[logup.z],
                    alpha: challenges[logup.alpha],
                };
                backend.logup_aux(&ctx, &inputs)
            })?;
            values.push(sum);
            let (lde, tree) = clock.time("aux commit", &shape.name, || -> Result<_, BackendError> {
                let lde = backend.coset_lde(&ctx, &dev, options.log_blowup, shape.shift)?;
                let tree = backend.commit(&ctx, &lde, options.hash)?;
                Ok((lde, tree))
            })?;
            st.aux_trace = Some(dev);
            tr.absorb_digest(b"aux-root", &tree.root());
            aux_roots.push(Some(tree.root()));
            st.aux_lde = Some(lde);
            st.aux_tree = Some(tree);
        } else {
            aux_roots.push(None);
        }
        tr.absorb_exts(b"aux-values", &values);
        aux_values.push(values);
    }
    machine.check_aux_values(publics, &challenges, &aux_values).map_err(ProveError::AuxValues)?;

    // Composition and quotient split.
    let alpha = tr.challenge_ext(b"alpha");
    let mut quotient_roots = Vec::with_capacity(tables.len());
    for (((air, shape), st), values) in tables.iter().zip(&shapes).zip(states.iter_mut()).zip(&aux_values) {
        let ctx = Ctx::table(&shape.name);
        let domain = Coset::new(shape.log_lde, shape.shift);
        let q = clock.time("compose", &shape.name, || {
            backend.compose(
                &ctx,
                &ComposeInputs {
                    constraints: air.constraints(),
                    fixed: st.fixed_lde.as_ref(),
                    main: &st.main_lde,
                    aux: st.aux_lde.as_ref(),
                    log_trace_height: shape.log_n,
                    domain,
                    challenges: &challenges,
                    publics,
                    aux_values: values,
                    alpha,
                },
            )
        })?;
        st.fixed_lde = None;
        let committed = clock.time("quotient commit", &shape.name, || -> Result<_, BackendError> {
            let parts = backend.split_quotient(&ctx, &q, domain, shape.log_n, shape.parts)?;
            let tree = backend.commit(&ctx, &parts, options.hash)?;
            Ok((parts, tree))
        });
        // A trace that fails its constraints: name the constraint and row.
        let (parts, tree) =
            committed.map_err(|e| crate::debug::locate(e, backend, *air, &st.main_trace, publics, num_challenges))?;
        tr.absorb_digest(b"quotient-root", &tree.root());
        quotient_roots.push(tree.root());
        st.parts = Some(parts);
        st.parts_tree = Some(tree);
    }

    // Out-of-domain values.
    let z = protocol::draw_ood_point(&mut tr);
    let mut ood = Vec::with_capacity(tables.len());
    for (shape, st) in shapes.iter().zip(&states) {
        let ctx = Ctx::table(&shape.name);
        let domain = Coset::new(shape.log_lde, shape.shift);
        let trace_domain = Coset::subgroup(shape.log_n);
        let points = shape.ood_points(z);
        let table_ood = clock.time("out-of-domain", &shape.name, || -> Result<_, BackendError> {
            let main = backend.evaluate_at(&ctx, &st.main_trace, trace_domain, &points)?;
            let aux = match &st.aux_trace {
                Some(a) => backend.evaluate_at(&ctx, a, trace_domain, &points)?,
                None => vec![vec![]; points.len()],
            };
            let parts = st.parts.as_ref().expect("quotient committed");
            let quotient = backend.evaluate_at(&ctx, parts, domain, &[z])?.remove(0);
            Ok(TableOod { main, aux, quotient })
        })?;
        for p in 0..points.len() {
            tr.absorb_exts(b"ood-main", &table_ood.main[p]);
            tr.absorb_exts(b"ood-aux", &table_ood.aux[p]);
        }
        tr.absorb_exts(b"ood-quotient", &table_ood.quotient);
        ood.push(table_ood);
    }

    // DEEP quotients, one per distinct LDE height.
    let gamma = tr.challenge_ext(b"deep");
    let coeffs = protocol::deep_coeffs(&shapes, gamma);
    let mut deep_by_height: Vec<(u32, B::Matrix)> = vec![];
    let mut heights: Vec<u32> = shapes.iter().map(|s| s.log_lde).collect();
    heights.sort_unstable_by(|a, b| b.cmp(a));
    heights.dedup();
    for &log_lde in &heights {
        let group: Vec<usize> = (0..shapes.len()).filter(|&t| shapes[t].log_lde == log_lde).collect();
        let first = &shapes[group[0]];
        let domain = Coset::new(log_lde, first.shift);
        let names: Vec<&str> = group.iter().map(|&t| shapes[t].name.as_str()).collect();
        let label = names.join("+");
        let ctx = Ctx::table(&label);
        let mut offsets: Vec<usize> = group.iter().flat_map(|&t| shapes[t].offsets.clone()).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let w = first.trace_generator();
        let mut points: Vec<DeepPoint<B::Matrix>> = vec![];
        for &o in &offsets {
            let mut columns = vec![];
            for &t in &group {
                let (shape, st, c, od) = (&shapes[t], &states[t], &coeffs[t], &ood[t]);
                if let Some(pi) = shape.offsets.iter().position(|&x| x == o) {
                    columns.push(DeepColumns {
                        matrix: &st.main_lde,
                        coeffs: c.main[pi].clone(),
                        values: od.main[pi].clone(),
                    });
                    if let Some(a) = &st.aux_lde {
                        columns.push(DeepColumns { matrix: a, coeffs: c.aux[pi].clone(), values: od.aux[pi].clone() });
                    }
                }
                if o == 0 {
                    columns.push(DeepColumns {
                        matrix: st.parts.as_ref().expect("quotient committed"),
                        coeffs: c.quotient.clone(),
                        values: od.quotient.clone(),
                    });
                }
            }
            points.push(DeepPoint { point: z * w.pow(o as u64), columns });
        }
        let d = clock.time("deep", &label, || backend.deep_quotient(&ctx, domain, &points))?;
        deep_by_height.push((log_lde, d));
    }

    // FRI: commit, fold, roll in each smaller table's DEEP quotient.
    let (steps, log_final) = protocol::fri_schedule(&shapes, options);
    let fri_ctx = Ctx::table("fri");
    let mut layer = deep_by_height.remove(0).1;
    let mut layers: Vec<(B::Matrix, B::Tree, FriStep)> = vec![];
    let mut fri_roots = vec![];
    for step in &steps {
        let domain = Coset::new(step.log_size, protocol::layer_shift(log_max, step.log_size));
        let (leaves, tree) = clock.time("fri commit", "fri", || -> Result<_, BackendError> {
            let leaves = backend.reshape(&fri_ctx, &layer, layer.height() >> step.log_arity)?;
            let tree = backend.commit(&fri_ctx, &leaves, options.hash)?;
            Ok((leaves, tree))
        })?;
        tr.absorb_digest(b"fri-root", &tree.root());
        fri_roots.push(tree.root());
        let beta = tr.challenge_ext(b"fri-beta");
        let next_log = step.log_size - step.log_arity;
        let roll = match deep_by_height.first() {
            Some((h, _)) if *h == next_log => Some(deep_by_height.remove(0).1),
            _ => None,
        };
        let folded = clock.time("fri fold", "fri", || {
            backend.fri_fold(&fri_ctx, &layer, domain, step.log_arity, beta, roll.as_ref().map(|g| (g, beta * beta)))
        })?;
        layers.push((leaves, tree, *step));
        layer = folded;
    }
    debug_assert!(deep_by_height.is_empty());

    // The final layer, as a polynomial.
    let final_host = backend.download(&fri_ctx, &layer)?;
    let final_poly = final_polynomial(&final_host, log_max, log_final, options.log_blowup).ok_or_else(|| {
        BackendError::ConstraintsNotSatisfied { table: "fri".into(), bound: 1 << (log_final - options.log_blowup) }
    })?;
    tr.absorb_exts(b"final-poly", &final_poly);

    // Proof of work, then the queries.
    let seed = tr.challenge_bytes(b"pow-seed");
    let pow_nonce =
        clock.time("grind", "all", || backend.grind(&fri_ctx, options.hash, &seed, options.grinding_bits))?;
    tr.absorb_u64(b"pow-nonce", pow_nonce);
    let positions: Vec<usize> = (0..options.num_queries).map(|_| tr.challenge_index(b"query", 1 << log_max)).collect();

    let queries = clock.time("open", "all", || -> Result<_, BackendError> {
        let mut per_table: Vec<Vec<TableQuery>> = Vec::with_capacity(shapes.len());
        for (shape, st) in shapes.iter().zip(&states) {
            let ctx = Ctx::table(&shape.name);
            let rows: Vec<usize> = positions.iter().map(|&q| q & ((1 << shape.log_lde) - 1)).collect();
            let main = backend.open(&ctx, &st.main_lde, &st.main_tree, &rows)?;
            let aux = match (&st.aux_lde, &st.aux_tree) {
                (Some(m), Some(t)) => Some(backend.open(&ctx, m, t, &rows)?),
                _ => None,
            };
            let parts = st.parts.as_ref().expect("committed");
            let quotient = backend.open(&ctx, parts, st.parts_tree.as_ref().expect("committed"), &rows)?;
            let mut aux_iter = aux.map(|v| v.into_iter());
            per_table.push(
                main.into_iter()
                    .zip(quotient)
                    .map(|(main, quotient)| TableQuery {
                        main,
                        aux: aux_iter.as_mut().and_then(|it| it.next()),
                        quotient,
                    })
                    .collect(),
            );
        }
        let mut per_layer: Vec<Vec<backend_api::RowOpening>> = Vec::with_capacity(layers.len());
        for (leaves, tree, step) in &layers {
            let leaf_count = 1usize << (step.log_size - step.log_arity);
            let rows: Vec<usize> = positions.iter().map(|&q| q & (leaf_count - 1)).collect();
            per_layer.push(backend.open(&fri_ctx, leaves, tree, &rows)?);
        }
        Ok((0..positions.len())
            .map(|qi| QueryProof {
                tables: per_table.iter().map(|t| t[qi].clone()).collect(),
                fri: per_layer.iter().map(|l| l[qi].clone()).collect(),
            })
            .collect::<Vec<_>>())
    })?;

    clock.stats.total = clock.start.elapsed();
    let proof = Proof {
        options: *options,
        log_heights,
        main_roots: states.iter().map(|s| s.main_tree.root()).collect(),
        aux_roots,
        aux_values,
        quotient_roots,
        ood,
        fri_roots,
        final_poly,
        pow_nonce,
        queries,
    };
    Ok((proof, clock.stats))
}

/// Interpolates the final FRI layer (on its coset) and returns its first
/// 2^(log_final - log_blowup) coefficients, or `None` if the higher ones
/// are not zero.
fn final_polynomial(layer: &ColMatrix, log_max: u32, log_final: u32, log_blowup: u32) -> Option<Vec<Ext>> {
    let values: Vec<Ext> = layer.ext_column(0);
    let shift = protocol::layer_shift(log_max, log_final);
    let coeffs = crate::poly::interpolate_coset(&values, shift);
    let keep = 1usize << (log_final - log_blowup);
    if coeffs[keep..].iter().any(|c| !c.is_zero()) {
        return None;
    }
    Some(coeffs[..keep].to_vec())
}
