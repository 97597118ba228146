//! The prover's rounds. Each does its per-table device work first, for all
//! tables at once (a backend may overlap them), then absorbs the results
//! into the transcript in table order, so the bytes never depend on which
//! table finished first.

use super::commit::{Committed, Held};
use super::lanes::Lanes;
use super::spill::{Residency, SpillState};
use super::{Clock, Conduct, ProveError};
use crate::air::Air;
use crate::options::ProofOptions;
use crate::proof::TableOod;
use crate::protocol::{self, FriStep, TableShape};
use crate::transcript::Transcript;
use backend_api::{Backend, BackendError, ColMatrix, Ext, LogUpInputs, F};
use rayon::prelude::*;
use std::sync::Arc;

/// What every round reads: the backend, the statement's tables and shapes,
/// the options, and the stage clock.
pub(super) struct Prover<'a, B: Backend> {
    pub backend: &'a B,
    pub tables: Vec<&'a dyn Air>,
    pub shapes: Vec<TableShape>,
    pub options: &'a ProofOptions,
    pub publics: &'a [F],
    pub conduct: Conduct,
    pub clock: Clock<'a>,
    pub log_max: u32,
    pub lanes: Lanes,
    /// Table indices in the order their work starts (heaviest first).
    pub order: Vec<usize>,
    /// Which tables' LDEs are spilled to host memory.
    pub residency: Residency,
    /// Set when some are.
    pub spill: Option<SpillState>,
}

/// A table's main and fixed columns on the trace domain, for the LogUp
/// build, which releases them (a recomputed LDE's recipe shares them):
/// later rounds read the committed LDEs.
pub(super) struct Traces<B: Backend> {
    pub main: Held<B>,
    pub fixed: Option<Arc<B::Matrix>>,
}

/// The main round's result: each table's traces and committed main
/// columns, and its fixed columns' LDE for composition, which takes it.
pub(super) struct MainRound<B: Backend> {
    pub traces: Vec<Traces<B>>,
    pub commits: Vec<Committed<B>>,
    pub fixed_ldes: Vec<Option<Held<B>>>,
}

/// The LogUp round's result: per table with interactions, its auxiliary
/// columns committed, and the bus sum.
pub(super) struct AuxRound<B: Backend> {
    pub challenges: Vec<Ext>,
    pub commits: Vec<Option<Committed<B>>>,
    pub values: Vec<Vec<Ext>>,
}

/// The FRI round's result: every committed layer and its step, and the
/// final polynomial's coefficients.
pub(super) struct FriRound<B: Backend> {
    pub layers: Vec<(Committed<B>, FriStep)>,
    pub final_poly: Vec<Ext>,
}

impl<B: Backend> Prover<'_, B> {
    /// Main round: every trace uploaded, extended and committed; the fixed
    /// columns uploaded and extended (the verifier has them: not
    /// committed).
    pub fn main_commit(&self, tr: &mut Transcript, traces: Vec<ColMatrix>) -> Result<MainRound<B>, ProveError> {
        let (b, o) = (self.backend, self.options);
        let tables = self.per_table_taking(traces, |t, ctx, host| {
            let shape = &self.shapes[t];
            let (trace, main) = self.clock.time("main commit", &shape.name, || -> Result<_, BackendError> {
                // Kept or recomputed, the host trace goes once uploaded
                // (kept, in the same call as its extension and commitment,
                // which a device overlaps with the transfer); spilled, it stays on the
                // host and the LDE is made from it in column blocks.
                if let Some(s) = self.spiller_for(t) {
                    let main = Committed::extend_spilled(&s, ctx, &host, o.log_blowup, shape.shift, o.hash)?;
                    return Ok((Held::Spilled(vec![host]), main));
                }
                if self.residency.recomputes(t) {
                    let dev = b.upload(ctx, &host)?;
                    drop(host);
                    return self.extend(ctx, t, dev, self.main_hold(t));
                }
                let (dev, lde, tree) = b.upload_commit(ctx, &host, o.log_blowup, shape.shift, o.hash)?;
                drop(host);
                Ok((Held::Kept(Arc::new(dev)), Committed::kept(lde, tree)))
            })?;
            let (fixed, fixed_lde) = self.fixed_lde(ctx, t)?.unzip();
            Ok((Traces { main: trace, fixed }, main, fixed_lde))
        })?;
        let mut round = MainRound { traces: vec![], commits: vec![], fixed_ldes: vec![] };
        for (traces, commit, fixed_lde) in tables {
            tr.absorb_digest(b"main-root", &commit.root());
            round.traces.push(traces);
            round.commits.push(commit);
            round.fixed_ldes.push(fixed_lde);
        }
        Ok(round)
    }

    /// LogUp round: the challenges (own or shared), then every table's
    /// auxiliary columns built from its traces on the backend, extended and
    /// committed. Each table's traces are released once read: no later
    /// round needs them (the out-of-domain values come from the LDEs).
    pub fn logup(
        &self,
        tr: &mut Transcript,
        num_challenges: usize,
        source: protocol::Challenges,
        traces: Vec<Traces<B>>,
    ) -> Result<AuxRound<B>, ProveError> {
        let b = self.backend;
        let challenges = protocol::logup_challenges(tr, num_challenges, source).map_err(ProveError::Statement)?;
        let built = self.per_table_taking(traces, |t, ctx, traces| {
            let Some(logup) = self.tables[t].logup() else { return Ok(None) };
            let shape = &self.shapes[t];
            let (trace, sum) = self.clock.time("aux build", &shape.name, || {
                let main = traces.main.piece(self.spiller().as_ref(), ctx, 0, 0)?;
                let inputs = LogUpInputs {
                    logup,
                    main: main.get(),
                    fixed: traces.fixed.as_deref(),
                    z: challenges[logup.z],
                    alpha: challenges[logup.alpha],
                };
                b.logup_aux(ctx, &inputs)
            })?;
            drop(traces);
            let (_, aux) =
                self.clock.time("aux commit", &shape.name, || self.extend(ctx, t, trace, self.aux_hold(t)))?;
            Ok(Some((aux, sum)))
        })?;
        let mut round = AuxRound { challenges, commits: vec![], values: vec![] };
        for table in built {
            let values: Vec<Ext> = table.as_ref().map(|(_, sum)| *sum).into_iter().collect();
            if let Some((commit, _)) = &table {
                tr.absorb_digest(b"aux-root", &commit.root());
            }
            tr.absorb_exts(b"aux-values", &values);
            round.commits.push(table.map(|(commit, _)| commit));
            round.values.push(values);
        }
        Ok(round)
    }

    /// Quotient round: alpha, then every table's constraints composed over
    /// its quotient domain, split into parts of degree < n and committed on
    /// its LDE. The fixed LDEs are consumed. Returns alpha and the parts.
    pub fn quotient(
        &self,
        tr: &mut Transcript,
        main: &MainRound<B>,
        fixed_ldes: Vec<Option<Held<B>>>,
        aux: &AuxRound<B>,
    ) -> Result<(Ext, Vec<Committed<B>>), ProveError> {
        let alpha = tr.challenge_ext(b"alpha");
        let fixed_ldes: Vec<std::sync::Mutex<Option<Held<B>>>> =
            fixed_ldes.into_iter().map(std::sync::Mutex::new).collect();
        let parts = self.per_table(|t, ctx| {
            let shape = &self.shapes[t];
            let fixed = fixed_ldes[t].lock().expect("not poisoned").take();
            let q =
                self.clock.time("compose", &shape.name, || self.compose(ctx, t, main, fixed.as_ref(), aux, alpha))?;
            drop(fixed);
            self.clock.time("quotient commit", &shape.name, || {
                let parts = self.split(ctx, t, &q, &main.commits[t], aux.challenges.len())?;
                // The composition is not needed past its split: freed
                // before the parts are committed (the round's peak).
                drop(q);
                Ok(self.commit_rows(ctx, t, parts)?)
            })
        })?;
        for p in &parts {
            tr.absorb_digest(b"quotient-root", &p.root());
        }
        Ok((alpha, parts))
    }

    /// Out-of-domain round: z, then every table's columns at z * w^offset
    /// and its quotient parts at z, checked against each other as the
    /// verifier will (an honest prover reports a trace that fails its
    /// constraints here, by constraint and row).
    pub fn out_of_domain(
        &self,
        tr: &mut Transcript,
        (alpha, aux_round): (Ext, &AuxRound<B>),
        (main, parts): (&[Committed<B>], &[Committed<B>]),
    ) -> Result<(Ext, Vec<TableOod>), ProveError> {
        let z = protocol::draw_ood_point(tr);
        let b = self.backend;
        let ood = self.per_table(|t, ctx| {
            let shape = &self.shapes[t];
            let points = shape.ood_points(z);
            let s = self.spiller();
            let od = self.clock.time("out-of-domain", &shape.name, || -> Result<_, BackendError> {
                // Every committed matrix has degree below n: one n-point
                // coset of the LDE domain determines it.
                let lde = (self.lde_domain(t), shape.log_lde - shape.log_n);
                let main = main[t].evaluate_at(s.as_ref(), b, ctx, lde, &points)?;
                let aux = match &aux_round.commits[t] {
                    Some(a) => a.evaluate_at(s.as_ref(), b, ctx, lde, &points)?,
                    None => vec![vec![]; points.len()],
                };
                let quotient = parts[t].evaluate_at(s.as_ref(), b, ctx, lde, &[z])?.remove(0);
                Ok(TableOod { main, aux, quotient })
            })?;
            let (challenges, values) = (&aux_round.challenges, &aux_round.values[t]);
            let air = self.tables[t];
            if self.conduct == Conduct::Honest
                && !protocol::ood_consistent(air, shape, z, alpha, &od, challenges, self.publics, values)
            {
                let e = BackendError::ConstraintsNotSatisfied {
                    table: shape.name.clone(),
                    bound: shape.parts << shape.log_n,
                };
                return Err(self.locate(ctx, t, e, &main[t], challenges.len()));
            }
            Ok(od)
        })?;
        for od in &ood {
            for p in 0..od.main.len() {
                tr.absorb_exts(b"ood-main", &od.main[p]);
                tr.absorb_exts(b"ood-aux", &od.aux[p]);
            }
            tr.absorb_exts(b"ood-quotient", &od.quotient);
        }
        Ok((z, ood))
    }

    /// DEEP round: gamma, then one DEEP codeword per distinct LDE height
    /// (tallest first), each summing its tables' quotients at every point
    /// their constraints read ([`Prover::deep_codeword`]).
    pub fn deep(
        &self,
        tr: &mut Transcript,
        z: Ext,
        commits: (&[Committed<B>], &AuxRound<B>, &[Committed<B>]),
        ood: &[TableOod],
    ) -> Result<Vec<(u32, B::Matrix)>, ProveError> {
        let coeffs = protocol::deep_coeffs(&self.shapes, tr.challenge_ext(b"deep"));
        let mut heights: Vec<u32> = self.shapes.iter().map(|s| s.log_lde).collect();
        heights.sort_unstable_by(|a, b| b.cmp(a));
        heights.dedup();
        let results: Vec<Result<(u32, B::Matrix), ProveError>> = heights
            .par_iter()
            .map(|&log_lde| {
                let group: Vec<usize> = (0..self.shapes.len()).filter(|&t| self.shapes[t].log_lde == log_lde).collect();
                let codeword = self.deep_codeword(&group, z, commits, ood, &coeffs)?;
                Ok((log_lde, codeword))
            })
            .collect();
        results.into_iter().collect()
    }
}
