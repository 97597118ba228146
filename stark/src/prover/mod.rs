//! The prover: every heavy stage runs on the backend `B`; the host keeps
//! only what the transcript and the proof need. [`prove`] reads as the
//! protocol's rounds ([`rounds`], then [`fri`] for folding and the
//! queries); a round's per-table work runs through [`tables`]; each
//! committed matrix is owned by the commitment layer ([`commit`]), kept on
//! the backend, spilled to the host ([`spill`]) or rebuilt from its trace
//! ([`recompute`]).

mod commit;
mod deep;
mod fri;
mod lanes;
mod quotient;
mod recompute;
mod rounds;
mod spill;
mod tables;

pub use commit::Committed;
pub use spill::{Residency, SpillTimes, Tables};

use crate::air::{self, Machine};
use crate::options::{OptionsError, ProofOptions};
use crate::proof::Proof;
use crate::protocol;
pub use crate::protocol::Challenges;
use crate::transcript::Transcript;
use backend_api::{Backend, BackendError, ColMatrix, Coset, Ctx, Ext, F};
use rounds::Prover;
use std::sync::Mutex;
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
    /// In the order stages finished (tables of one round may overlap).
    pub timings: Vec<StageTiming>,
    /// Wall time of each round, in order: they and the set-up before the
    /// first sum to `total`.
    pub rounds: Vec<(&'static str, Duration)>,
    pub total: Duration,
    /// Where the committed matrices were kept.
    pub residency: Residency,
    /// Bytes moved between host and backend for the matrices not kept
    /// (spilled pieces); 0 when every table is kept or recomputed (its
    /// pieces are taken and interleaved on the backend).
    pub spilled_bytes: u64,
    /// Where that moving's time went (zero when kept).
    pub spill_times: SpillTimes,
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

/// Times stages; shared by the tables of a round, which may run at once.
pub(crate) struct Clock<'a> {
    start: Instant,
    timings: Mutex<Vec<StageTiming>>,
    observer: &'a dyn ProveObserver,
}

impl Clock<'_> {
    /// Runs one round, recording its wall time.
    fn round<T>(&self, rounds: &mut Vec<(&'static str, Duration)>, name: &'static str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        rounds.push((name, t0.elapsed()));
        out
    }

    fn time<T>(&self, stage: &'static str, table: &str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        let timing = StageTiming { stage, table: table.to_string(), start: t0 - self.start, duration: t0.elapsed() };
        self.observer.stage_done(&timing);
        self.timings.lock().expect("timings lock").push(timing);
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

/// [`prove`], also returning per-stage timings and reporting progress.
pub fn prove_with_stats<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    observer: Option<&dyn ProveObserver>,
) -> Result<(Proof, ProveStats), ProveError> {
    let settings = ProveSettings { observer, ..ProveSettings::default() };
    prove_with_settings(backend, machine, traces, publics, options, &settings)
}

/// How a prove runs, beside what it proves: none of it changes the proof.
#[derive(Clone, Copy, Default)]
pub struct ProveSettings<'a> {
    pub residency: Residency,
    pub observer: Option<&'a dyn ProveObserver>,
}

/// [`prove_with_stats`] with the residency (and observer) of `settings`.
pub fn prove_with_settings<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    settings: &ProveSettings,
) -> Result<(Proof, ProveStats), ProveError> {
    prove_as(Conduct::Honest, backend, machine, traces, publics, options, Challenges::Own, settings)
}

/// Whether the prover refuses a witness that fails its own checks (the
/// buses' balance, the quotient's degree, the last FRI layer's degree) or
/// carries on as a cheating prover would: commit to what it has and keep
/// the low-degree part of what is not low-degree. Only the soundness
/// harness ([`crate::attack`]) forges; the verifier must reject the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conduct {
    Honest,
    Forge,
}

#[allow(clippy::too_many_arguments)] // the entry points' arguments, plus conduct and challenge source
pub(crate) fn prove_as<B: Backend, M: Machine + ?Sized>(
    conduct: Conduct,
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    challenges: Challenges,
    settings: &ProveSettings,
) -> Result<(Proof, ProveStats), ProveError> {
    let (p, mut tr, _reservation) = setup(conduct, backend, machine, &traces, publics, options, settings)?;
    let (c, r) = (&p.clock, &mut vec![]);
    let mut main = c.round(r, "main", || p.main_commit(&mut tr, traces))?;
    let traces = std::mem::take(&mut main.traces);
    let aux = c.round(r, "logup", || p.logup(&mut tr, machine.num_challenges(), challenges, traces))?;
    if conduct == Conduct::Honest && matches!(challenges, Challenges::Own) {
        machine.check_aux_values(publics, &aux.challenges, &aux.values).map_err(ProveError::AuxValues)?;
    }
    let fixed_ldes = std::mem::take(&mut main.fixed_ldes);
    let (alpha, parts) = c.round(r, "quotient", || p.quotient(&mut tr, &main, fixed_ldes, &aux))?;
    let main = main.commits;
    let (z, ood) = c.round(r, "out-of-domain", || p.out_of_domain(&mut tr, (alpha, &aux), (&main, &parts)))?;
    let deep = c.round(r, "deep", || p.deep(&mut tr, z, (&main, &aux, &parts), &ood))?;
    let fri = c.round(r, "fri", || p.fri(&mut tr, deep))?;
    let (pow_nonce, queries) = c.round(r, "queries", || p.queries(&mut tr, (&main, &aux, &parts), &fri))?;
    let rounds = std::mem::take(r);

    let proof = Proof {
        options: *options,
        log_heights: p.shapes.iter().map(|s| s.log_n).collect(),
        main_roots: main.iter().map(Committed::root).collect(),
        aux_roots: aux.commits.iter().map(|a| a.as_ref().map(Committed::root)).collect(),
        aux_values: aux.values,
        quotient_roots: parts.iter().map(Committed::root).collect(),
        ood,
        fri_roots: fri.layers.iter().map(|(layer, _)| layer.root()).collect(),
        final_poly: fri.final_poly,
        pow_nonce,
        queries,
    };
    let timings = p.clock.timings.into_inner().expect("timings lock");
    let spill_times = p.spill.as_ref().map(|s| s.clock.times()).unwrap_or_default();
    let spilled_bytes = p.spill.map_or(0, |s| s.moved.into_inner());
    let total = p.clock.start.elapsed();
    let residency = settings.residency;
    let stats = ProveStats { timings, rounds, total, residency, spilled_bytes, spill_times };
    Ok((proof, stats))
}

/// What every entry point does before the first round: checks the
/// options and traces, shapes the tables, reserves the device set and
/// absorbs the statement.
fn setup<'a, B: Backend, M: Machine + ?Sized>(
    conduct: Conduct,
    backend: &'a B,
    machine: &'a M,
    traces: &[ColMatrix],
    publics: &'a [F],
    options: &'a ProofOptions,
    settings: &ProveSettings<'a>,
) -> Result<(Prover<'a, B>, Transcript, backend_api::Reservation), ProveError> {
    options.validate()?;
    let observer = settings.observer.unwrap_or(&NoObserver);
    let clock = Clock { start: Instant::now(), timings: Mutex::new(vec![]), observer };
    let tables = machine.tables();
    let log_heights = check_traces(machine, traces)?;
    let shapes = protocol::table_shapes(&tables, &log_heights, options, publics.len(), machine.num_challenges())
        .map_err(ProveError::Statement)?;
    let log_max = shapes.iter().map(|s| s.log_lde).max().expect("non-empty");
    // The device set is held from before the first upload; buffers made on
    // the proof's lanes keep it until they are freed.
    let lanes = lanes::Lanes::new(&shapes);
    let names = shapes.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join("+");
    let set = lanes::device_set(&shapes, options, settings.residency);
    let reservation = backend.reserve(&Ctx::table(&names), &lanes.all(), &set)?;
    let mut tr = Transcript::new(options.hash, protocol::PROTOCOL);
    protocol::absorb_statement(&mut tr, &tables, options, &log_heights, publics);
    let order = lanes::heaviest_first(&shapes, options);
    // A recomputing proof reads by pieces as a spilled one does, with
    // nothing to move: its pieces are rebuilt on the backend.
    let spill = match settings.residency {
        Residency::Keep => None,
        Residency::Spill { chunk_bytes, .. } => Some(chunk_bytes),
        Residency::Recompute { .. } => Some(0),
    };
    let spill = spill.map(|chunk_bytes| spill::SpillState {
        chunk_bytes,
        moved: 0.into(),
        clock: spill::SpillClock::default(),
    });
    let residency = settings.residency;
    let p =
        Prover { backend, tables, shapes, options, publics, conduct, clock, log_max, lanes, order, residency, spill };
    Ok((p, tr, reservation))
}

/// The main round alone: every trace extended and committed, the roots
/// returned and everything else released (the first phase of a segmented
/// proof, [`crate::segments`]).
pub(crate) fn main_roots<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
) -> Result<Vec<backend_api::Digest>, ProveError> {
    let settings = ProveSettings::default();
    let (p, mut tr, _reservation) = setup(Conduct::Honest, backend, machine, &traces, publics, options, &settings)?;
    let main = p.main_commit(&mut tr, traces)?;
    Ok(main.commits.iter().map(Committed::root).collect())
}

/// The device set a proof of this statement reserves when it keeps its
/// LDEs (the memory model's resident and transient bytes of its tables):
/// what a batch orders its proofs by, and what [`Residency::auto`]
/// compares with the budget.
pub fn device_set<M: Machine + ?Sized>(
    machine: &M,
    traces: &[ColMatrix],
    publics: &[F],
    options: &ProofOptions,
) -> Result<backend_api::DeviceSet, ProveError> {
    options.validate()?;
    let log_heights = check_traces(machine, traces)?;
    let shapes =
        protocol::table_shapes(&machine.tables(), &log_heights, options, publics.len(), machine.num_challenges())
            .map_err(ProveError::Statement)?;
    Ok(lanes::device_set(&shapes, options, Residency::Keep))
}

/// One trace per table, of a power-of-two height and the AIR's width, and
/// auxiliary layouts that match the interactions; returns the log heights.
fn check_traces<M: Machine + ?Sized>(machine: &M, traces: &[ColMatrix]) -> Result<Vec<u32>, ProveError> {
    let tables = machine.tables();
    if traces.len() != tables.len() {
        return Err(ProveError::Statement(format!("{} traces for {} tables", traces.len(), tables.len())));
    }
    let mut log_heights = Vec::with_capacity(traces.len());
    for (air, t) in tables.iter().zip(traces) {
        let name = air.name();
        if t.height() == 0 || !t.height().is_power_of_two() {
            return Err(ProveError::Statement(format!("table {name}: height {} is not a power of two", t.height())));
        }
        let width = air.constraints().layout.main_width;
        if t.width() != width {
            return Err(ProveError::Statement(format!(
                "table {name}: trace has {} columns, the AIR {width}",
                t.width()
            )));
        }
        air::check_aux_layout(*air, machine.num_challenges())
            .map_err(|e| ProveError::Statement(format!("table {name}: {e}")))?;
        log_heights.push(t.height().trailing_zeros());
    }
    Ok(log_heights)
}

/// Interpolates the final FRI layer (on its coset) and returns its first
/// 2^(log_final - log_blowup) coefficients, or `None` if the higher ones
/// are not zero (a forger keeps the first ones regardless).
fn final_polynomial(
    layer: &ColMatrix,
    log_max: u32,
    log_final: u32,
    log_blowup: u32,
    conduct: Conduct,
) -> Option<Vec<Ext>> {
    let values: Vec<Ext> = layer.ext_column(0);
    let shift = protocol::layer_shift(log_max, log_final);
    let coeffs = crate::poly::interpolate_coset(&values, shift);
    let keep = 1usize << (log_final - log_blowup);
    if conduct == Conduct::Honest && coeffs[keep..].iter().any(|c| !c.is_zero()) {
        return None;
    }
    Some(coeffs[..keep].to_vec())
}

/// A forger's quotient: the evaluations on `domain` of the first `bound`
/// coefficients of the committed composition, which is not of low degree
/// when the witness fails a constraint. On the host: forging is for tests.
fn low_degree_part<B: Backend>(
    backend: &B,
    ctx: &Ctx,
    quotient: &B::Matrix,
    domain: Coset,
    bound: usize,
) -> Result<B::Matrix, BackendError> {
    let values = backend.download(ctx, quotient)?.ext_column(0);
    let mut coeffs = crate::poly::interpolate_coset(&values, domain.shift);
    coeffs[bound..].iter_mut().for_each(|c| *c = Ext::ZERO);
    let low = crate::poly::evaluate_coset(&coeffs, domain.shift);
    backend.upload(ctx, &ColMatrix::from_ext_columns(&[low]))
}
