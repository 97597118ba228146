//! The prover's rounds. Each does its per-table device work first, for all
//! tables at once (a backend may overlap them), then absorbs the results
//! into the transcript in table order, so the bytes never depend on which
//! table finished first.

use super::commit::{Committed, Held, Piece};
use super::lanes::Lanes;
use super::spill::{self, Residency, SpillState, Spiller};
use super::{Clock, Conduct, ProveError};
use crate::air::Air;
use crate::options::ProofOptions;
use crate::proof::{QueryProof, TableOod, TableQuery};
use crate::protocol::{self, FriStep, TableShape};
use crate::transcript::Transcript;
use backend_api::{
    Backend, BackendError, ColMatrix, ComposeInputs, Coset, Ctx, DeepColumns, DeepPoint, DeviceMatrix, Ext,
    LogUpInputs, F,
};
use rayon::prelude::*;

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

/// A table's main and fixed columns on the trace domain, kept for the
/// LogUp build and the out-of-domain values (n/N of the work on the LDE),
/// which takes them.
pub(super) struct Traces<B: Backend> {
    pub main: Held<B>,
    pub fixed: Option<B::Matrix>,
}

/// The main round's result: each table's traces and committed main
/// columns, and its fixed columns' LDE for composition, which takes it.
pub(super) struct MainRound<B: Backend> {
    pub traces: Vec<Traces<B>>,
    pub commits: Vec<Committed<B>>,
    pub fixed_ldes: Vec<Option<Held<B>>>,
}

/// The LogUp round's result: per table with interactions, its auxiliary
/// columns committed, their trace (taken by the out-of-domain round), and
/// the bus sum.
pub(super) struct AuxRound<B: Backend> {
    pub challenges: Vec<Ext>,
    pub commits: Vec<Option<Committed<B>>>,
    pub traces: Vec<Option<B::Matrix>>,
    pub values: Vec<Vec<Ext>>,
}

/// The FRI round's result: every committed layer and its step, and the
/// final polynomial's coefficients.
pub(super) struct FriRound<B: Backend> {
    pub layers: Vec<(Committed<B>, FriStep)>,
    pub final_poly: Vec<Ext>,
}

impl<B: Backend> Prover<'_, B> {
    /// Runs `f` for every table, all at once (heaviest first, each on its
    /// lane), and returns the results in table order (the first error in
    /// table order, if any).
    fn per_table<T: Send>(
        &self,
        f: impl Fn(usize, &Ctx) -> Result<T, ProveError> + Sync,
    ) -> Result<Vec<T>, ProveError> {
        self.per_table_taking((0..self.shapes.len()).map(|_| ()).collect(), |t, ctx, ()| f(t, ctx))
    }

    /// [`Self::per_table`], handing each table its item of `items`.
    fn per_table_taking<I: Send, T: Send>(
        &self,
        items: Vec<I>,
        f: impl Fn(usize, &Ctx, I) -> Result<T, ProveError> + Sync,
    ) -> Result<Vec<T>, ProveError> {
        let mut items: Vec<Option<I>> = items.into_iter().map(Some).collect();
        let ordered: Vec<(usize, I)> =
            self.order.iter().map(|&t| (t, items[t].take().expect("one item per table"))).collect();
        let mut results: Vec<(usize, Result<T, ProveError>)> = ordered
            .into_par_iter()
            .map(|(t, item)| (t, f(t, &Ctx::on(&self.shapes[t].name, self.lanes.tables[t]), item)))
            .collect();
        results.sort_by_key(|(t, _)| *t);
        results.into_iter().map(|(_, r)| r).collect()
    }

    fn lde_domain(&self, t: usize) -> Coset {
        Coset::new(self.shapes[t].log_lde, self.shapes[t].shift)
    }

    /// Table `t`'s spiller, when it is spilled.
    fn spiller_for(&self, t: usize) -> Option<Spiller<'_, B>> {
        self.spiller().filter(|_| self.residency.spills(t))
    }

    fn spiller(&self) -> Option<Spiller<'_, B>> {
        self.spill.as_ref().map(|s| Spiller {
            backend: self.backend,
            chunk_bytes: s.chunk_bytes,
            moved: &s.moved,
            clock: &s.clock,
        })
    }

    /// Extends and commits a trace made on the backend: kept there, or
    /// spilled to the host.
    fn extend(&self, ctx: &Ctx, t: usize, dev: &B::Matrix) -> Result<Committed<B>, BackendError> {
        let (b, o, shift) = (self.backend, self.options, self.shapes[t].shift);
        match self.spiller_for(t) {
            None => Committed::extend(b, ctx, dev, o.log_blowup, shift, o.hash),
            Some(s) => Committed::extend_spilled(&s, ctx, &s.down(ctx, dev)?, o.log_blowup, shift, o.hash),
        }
    }

    /// Commits table `t`'s matrix on its evaluation domain, kept or spilled.
    fn commit_rows(&self, ctx: &Ctx, t: usize, m: B::Matrix) -> Result<Committed<B>, BackendError> {
        match self.spiller_for(t) {
            None => Committed::rows(self.backend, ctx, m, self.options.hash),
            Some(s) => Committed::rows_spilled(&s, ctx, vec![s.down(ctx, &m)?], self.options.hash),
        }
    }

    /// Runs `f` on each piece of `domain` and returns its outputs as one
    /// matrix on `domain`. Kept, the piece is the whole domain; spilled,
    /// piece j is coset j of the trace domain, s * g^j * <w_n> (rows j, j +
    /// B, ... of the LDE), and the outputs interleave back.
    fn by_pieces(
        &self,
        ctx: &Ctx,
        domain: Coset,
        spilled: bool,
        f: impl Fn(usize, u32, Coset) -> Result<B::Matrix, BackendError>,
    ) -> Result<B::Matrix, BackendError> {
        let Some(s) = self.spiller().filter(|_| spilled) else { return f(0, 0, domain) };
        let log_pieces = self.options.log_blowup;
        let g = domain.generator();
        let mut outs = Vec::with_capacity(1 << log_pieces);
        for j in 0..1usize << log_pieces {
            let piece = Coset::new(domain.log_size - log_pieces, domain.shift * g.pow(j as u64));
            outs.push(s.down(ctx, &f(j, log_pieces, piece)?)?);
        }
        s.up(ctx, &s.host(|| spill::interleave(ctx, &outs))?)
    }

    /// Main round: every trace uploaded, extended and committed; the fixed
    /// columns uploaded and extended (the verifier has them: not
    /// committed).
    pub fn main_commit(&self, tr: &mut Transcript, traces: Vec<ColMatrix>) -> Result<MainRound<B>, ProveError> {
        let (b, o) = (self.backend, self.options);
        let tables = self.per_table_taking(traces, |t, ctx, host| {
            let shape = &self.shapes[t];
            let (trace, main) = self.clock.time("main commit", &shape.name, || -> Result<_, BackendError> {
                // Kept, the host trace goes once uploaded; spilled, it stays
                // on the host and the LDE is made from it in column blocks.
                match self.spiller_for(t) {
                    None => {
                        let dev = b.upload(ctx, &host)?;
                        drop(host);
                        let main = Committed::extend(b, ctx, &dev, o.log_blowup, shape.shift, o.hash)?;
                        Ok((Held::Kept(dev), main))
                    }
                    Some(s) => {
                        let main = Committed::extend_spilled(&s, ctx, &host, o.log_blowup, shape.shift, o.hash)?;
                        Ok((Held::Spilled(vec![host]), main))
                    }
                }
            })?;
            let fixed = match self.tables[t].fixed_trace() {
                Some(f) => Some(self.clock.time("fixed lde", &shape.name, || -> Result<_, BackendError> {
                    let dev = b.upload(ctx, f)?;
                    let lde = match self.spiller_for(t) {
                        None => Held::Kept(b.coset_lde(ctx, &dev, o.log_blowup, shape.shift)?),
                        Some(s) => Held::Spilled(s.extend(ctx, f, o.log_blowup, shape.shift)?),
                    };
                    Ok((dev, lde))
                })?),
                None => None,
            };
            let (fixed, fixed_lde) = fixed.unzip();
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

    /// LogUp round: the challenges (own or shared), then every table's auxiliary columns
    /// built from its traces on the backend, extended and committed.
    pub fn logup(
        &self,
        tr: &mut Transcript,
        num_challenges: usize,
        source: protocol::Challenges,
        traces: &[Traces<B>],
    ) -> Result<AuxRound<B>, ProveError> {
        let b = self.backend;
        let challenges = protocol::logup_challenges(tr, num_challenges, source).map_err(ProveError::Statement)?;
        let built = self.per_table(|t, ctx| {
            let Some(logup) = self.tables[t].logup() else { return Ok(None) };
            let shape = &self.shapes[t];
            let (trace, sum) = self.clock.time("aux build", &shape.name, || {
                let main = traces[t].main.piece(self.spiller().as_ref(), ctx, 0, 0)?;
                let inputs = LogUpInputs {
                    logup,
                    main: main.get(),
                    fixed: traces[t].fixed.as_ref(),
                    z: challenges[logup.z],
                    alpha: challenges[logup.alpha],
                };
                b.logup_aux(ctx, &inputs)
            })?;
            let aux = self.clock.time("aux commit", &shape.name, || self.extend(ctx, t, &trace))?;
            Ok(Some((trace, aux, sum)))
        })?;
        let mut round = AuxRound { challenges, commits: vec![], traces: vec![], values: vec![] };
        for table in built {
            let values: Vec<Ext> = table.as_ref().map(|(_, _, sum)| *sum).into_iter().collect();
            if let Some((_, commit, _)) = &table {
                tr.absorb_digest(b"aux-root", &commit.root());
            }
            tr.absorb_exts(b"aux-values", &values);
            let (trace, commit) = table.map(|(trace, commit, _)| (trace, commit)).unzip();
            round.traces.push(trace);
            round.commits.push(commit);
            round.values.push(values);
        }
        Ok(round)
    }

    /// Quotient round: alpha, then every table's constraints composed over
    /// its LDE, split into parts of degree < n and committed. The fixed
    /// LDEs are consumed.
    pub fn quotient(
        &self,
        tr: &mut Transcript,
        main: &MainRound<B>,
        fixed_ldes: Vec<Option<Held<B>>>,
        aux: &AuxRound<B>,
    ) -> Result<Vec<Committed<B>>, ProveError> {
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
                let parts = self.split(ctx, t, &q, &main.traces[t].main, aux.challenges.len())?;
                Ok(self.commit_rows(ctx, t, parts)?)
            })
        })?;
        for p in &parts {
            tr.absorb_digest(b"quotient-root", &p.root());
        }
        Ok(parts)
    }

    /// Table `t`'s constraints composed over its LDE, piece by piece.
    fn compose(
        &self,
        ctx: &Ctx,
        t: usize,
        main: &MainRound<B>,
        fixed: Option<&Held<B>>,
        aux: &AuxRound<B>,
        alpha: Ext,
    ) -> Result<B::Matrix, BackendError> {
        let s = self.spiller();
        self.by_pieces(ctx, self.lde_domain(t), self.residency.spills(t), |j, log_pieces, domain| {
            let main_p = main.commits[t].piece(s.as_ref(), ctx, j, log_pieces)?;
            let aux_p = aux.commits[t].as_ref().map(|a| a.piece(s.as_ref(), ctx, j, log_pieces)).transpose()?;
            let fixed_p = fixed.map(|f| f.piece(s.as_ref(), ctx, j, log_pieces)).transpose()?;
            self.backend.compose(
                ctx,
                &ComposeInputs {
                    constraints: self.tables[t].constraints(),
                    fixed: fixed_p.as_ref().map(Piece::get),
                    main: main_p.get(),
                    aux: aux_p.as_ref().map(Piece::get),
                    log_trace_height: self.shapes[t].log_n,
                    domain,
                    challenges: &aux.challenges,
                    publics: self.publics,
                    aux_values: &aux.values[t],
                    alpha,
                },
            )
        })
    }

    /// The quotient's parts. A composition that is not of low degree means
    /// a trace that fails its constraints: the error names the first
    /// failing constraint and row (a forger keeps the low-degree part).
    fn split(
        &self,
        ctx: &Ctx,
        t: usize,
        q: &B::Matrix,
        trace: &Held<B>,
        num_challenges: usize,
    ) -> Result<B::Matrix, ProveError> {
        let (b, shape, domain) = (self.backend, &self.shapes[t], self.lde_domain(t));
        match b.split_quotient(ctx, q, domain, shape.log_n, shape.parts) {
            Err(BackendError::ConstraintsNotSatisfied { .. }) if self.conduct == Conduct::Forge => {
                let low = super::low_degree_part(b, ctx, q, domain, shape.parts << shape.log_n)?;
                Ok(b.split_quotient(ctx, &low, domain, shape.log_n, shape.parts)?)
            }
            Err(e) => {
                let trace = trace.piece(self.spiller().as_ref(), ctx, 0, 0)?;
                Err(crate::debug::locate(e, b, self.tables[t], trace.get(), self.publics, num_challenges))
            }
            Ok(parts) => Ok(parts),
        }
    }

    /// Out-of-domain round: z, then every table's columns at z * w^offset
    /// and its quotient parts at z. No round reads the traces after it:
    /// they are released table by table.
    pub fn out_of_domain(
        &self,
        tr: &mut Transcript,
        traces: Vec<Traces<B>>,
        aux_traces: Vec<Option<B::Matrix>>,
        parts: &[Committed<B>],
    ) -> Result<(Ext, Vec<TableOod>), ProveError> {
        let z = protocol::draw_ood_point(tr);
        let b = self.backend;
        let both: Vec<_> = traces.into_iter().zip(aux_traces).collect();
        let ood = self.per_table_taking(both, |t, ctx, (main, aux)| {
            let shape = &self.shapes[t];
            let trace_domain = Coset::subgroup(shape.log_n);
            let points = shape.ood_points(z);
            Ok(self.clock.time("out-of-domain", &shape.name, || -> Result<_, BackendError> {
                let main = main.main.evaluate_at(b, self.spiller().as_ref(), ctx, trace_domain, &points)?;
                let aux = match &aux {
                    Some(a) => b.evaluate_at(ctx, a, trace_domain, &points)?,
                    None => vec![vec![]; points.len()],
                };
                let whole = parts[t].piece(self.spiller().as_ref(), ctx, 0, 0)?;
                let quotient = b.evaluate_at(ctx, whole.get(), self.lde_domain(t), &[z])?.remove(0);
                Ok(TableOod { main, aux, quotient })
            })?)
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
    /// their constraints read.
    pub fn deep(
        &self,
        tr: &mut Transcript,
        z: Ext,
        commits: (&[Committed<B>], &AuxRound<B>, &[Committed<B>]),
        ood: &[TableOod],
    ) -> Result<Vec<(u32, B::Matrix)>, ProveError> {
        let (main, aux, parts) = commits;
        let coeffs = protocol::deep_coeffs(&self.shapes, tr.challenge_ext(b"deep"));
        let mut heights: Vec<u32> = self.shapes.iter().map(|s| s.log_lde).collect();
        heights.sort_unstable_by(|a, b| b.cmp(a));
        heights.dedup();
        let results: Vec<Result<(u32, B::Matrix), ProveError>> = heights
            .par_iter()
            .map(|&log_lde| {
                let group: Vec<usize> = (0..self.shapes.len()).filter(|&t| self.shapes[t].log_lde == log_lde).collect();
                let label = group.iter().map(|&t| self.shapes[t].name.as_str()).collect::<Vec<_>>().join("+");
                let mut offsets: Vec<usize> = group.iter().flat_map(|&t| self.shapes[t].offsets.clone()).collect();
                offsets.sort_unstable();
                offsets.dedup();
                let w = self.shapes[group[0]].trace_generator();
                let domain = Coset::new(log_lde, self.shapes[group[0]].shift);
                let ctx = Ctx::on(&label, self.lanes.deep(log_lde));
                let s = self.spiller();
                let d = self.clock.time("deep", &label, || {
                    let spilled = group.iter().any(|&t| self.residency.spills(t));
                    self.by_pieces(&ctx, domain, spilled, |j, log_pieces, piece| {
                        // Each table's main, auxiliary and quotient matrices on this piece.
                        let mut pieces = Vec::with_capacity(group.len());
                        for &t in &group {
                            let a = aux.commits[t].as_ref().map(|a| a.piece(s.as_ref(), &ctx, j, log_pieces));
                            let m = main[t].piece(s.as_ref(), &ctx, j, log_pieces)?;
                            pieces.push((m, a.transpose()?, parts[t].piece(s.as_ref(), &ctx, j, log_pieces)?));
                        }
                        let points: Vec<DeepPoint<B::Matrix>> = offsets
                            .iter()
                            .map(|&o| {
                                let mut columns = vec![];
                                for (&t, (m, a, q)) in group.iter().zip(&pieces) {
                                    let (shape, c, od) = (&self.shapes[t], &coeffs[t], &ood[t]);
                                    if let Some(pi) = shape.offsets.iter().position(|&x| x == o) {
                                        let (coeffs, values) = (c.main[pi].clone(), od.main[pi].clone());
                                        columns.push(DeepColumns { matrix: m.get(), coeffs, values });
                                        if let Some(a) = a {
                                            let (coeffs, values) = (c.aux[pi].clone(), od.aux[pi].clone());
                                            columns.push(DeepColumns { matrix: a.get(), coeffs, values });
                                        }
                                    }
                                    if o == 0 {
                                        let (coeffs, values) = (c.quotient.clone(), od.quotient.clone());
                                        columns.push(DeepColumns { matrix: q.get(), coeffs, values });
                                    }
                                }
                                DeepPoint { point: z * w.pow(o as u64), columns }
                            })
                            .collect();
                        self.backend.deep_quotient(&ctx, piece, &points)
                    })
                })?;
                Ok((log_lde, d))
            })
            .collect();
        results.into_iter().collect()
    }

    /// FRI round: fold the tallest DEEP codeword down to the final layer,
    /// committing each layer and rolling each smaller one in at its own
    /// height with its own challenge; the final layer as a polynomial.
    pub fn fri(&self, tr: &mut Transcript, mut deep: Vec<(u32, B::Matrix)>) -> Result<FriRound<B>, ProveError> {
        let (b, o) = (self.backend, self.options);
        let (steps, log_final) = protocol::fri_schedule(&self.shapes, o);
        let ctx = Ctx::on("fri", self.lanes.fri);
        let mut layer = deep.remove(0).1;
        let mut layers = Vec::with_capacity(steps.len());
        for (step, &rolls_in) in steps.iter().zip(&protocol::roll_ins(&self.shapes, &steps)) {
            let domain = Coset::new(step.log_size, protocol::layer_shift(self.log_max, step.log_size));
            let committed = self.clock.time("fri commit", "fri", || -> Result<_, BackendError> {
                let leaves = b.reshape(&ctx, &layer, layer.height() >> step.log_arity)?;
                Committed::rows(b, &ctx, leaves, o.hash)
            })?;
            tr.absorb_digest(b"fri-root", &committed.root());
            let beta = tr.challenge_ext(b"fri-beta");
            let roll = rolls_in.then(|| {
                let (height, g) = deep.remove(0);
                debug_assert_eq!(height, step.log_size - step.log_arity, "the schedule lands on every LDE height");
                (g, tr.challenge_ext(b"fri-roll-in"))
            });
            let folded = self.clock.time("fri fold", "fri", || {
                b.fri_fold(&ctx, &layer, domain, step.log_arity, beta, roll.as_ref().map(|(g, w)| (g, *w)))
            })?;
            layers.push((committed, *step));
            layer = folded;
        }
        debug_assert!(deep.is_empty());
        let final_host = b.download(&ctx, &layer)?;
        let final_poly = super::final_polynomial(&final_host, self.log_max, log_final, o.log_blowup, self.conduct)
            .ok_or_else(|| BackendError::ConstraintsNotSatisfied {
                table: "fri".into(),
                bound: 1 << (log_final - o.log_blowup),
            })?;
        tr.absorb_exts(b"final-poly", &final_poly);
        Ok(FriRound { layers, final_poly })
    }

    /// Query round: the proof of work, the query positions, and every
    /// committed matrix opened at them. Returns the nonce and the openings.
    pub fn queries(
        &self,
        tr: &mut Transcript,
        commits: (&[Committed<B>], &AuxRound<B>, &[Committed<B>]),
        fri: &FriRound<B>,
    ) -> Result<(u64, Vec<QueryProof>), ProveError> {
        let (main, aux, parts) = commits;
        let (b, o) = (self.backend, self.options);
        let fri_ctx = Ctx::on("fri", self.lanes.fri);
        let unspilled = std::sync::atomic::AtomicU64::new(0);
        let moved = self.spill.as_ref().map_or(&unspilled, |s| &s.moved);
        let seed = tr.challenge_bytes(b"pow-seed");
        let nonce = self.clock.time("grind", "all", || b.grind(&fri_ctx, o.hash, &seed, o.grinding_bits))?;
        tr.absorb_u64(b"pow-nonce", nonce);
        let positions: Vec<usize> =
            (0..o.num_queries).map(|_| tr.challenge_index(b"query", 1 << self.log_max)).collect();
        let queries = self.clock.time("open", "all", || -> Result<_, ProveError> {
            let per_table = self.per_table(|t, ctx| {
                let rows: Vec<usize> = positions.iter().map(|&q| q & ((1 << self.shapes[t].log_lde) - 1)).collect();
                let open = |c: &Committed<B>| c.open_counting(b, ctx, &rows, moved);
                let main = open(&main[t])?;
                let aux = aux.commits[t].as_ref().map(open).transpose()?;
                let quotient = open(&parts[t])?;
                let mut aux = aux.map(|v| v.into_iter());
                Ok(main
                    .into_iter()
                    .zip(quotient)
                    .map(|(main, quotient)| TableQuery { main, aux: aux.as_mut().and_then(|it| it.next()), quotient })
                    .collect::<Vec<_>>())
            })?;
            let per_layer = fri
                .layers
                .iter()
                .map(|(layer, step)| {
                    let leaves = 1usize << (step.log_size - step.log_arity);
                    let rows: Vec<usize> = positions.iter().map(|&q| q & (leaves - 1)).collect();
                    layer.open(b, &fri_ctx, &rows)
                })
                .collect::<Result<Vec<_>, BackendError>>()?;
            Ok((0..positions.len())
                .map(|qi| QueryProof {
                    tables: per_table.iter().map(|t| t[qi].clone()).collect(),
                    fri: per_layer.iter().map(|l| l[qi].clone()).collect(),
                })
                .collect())
        })?;
        Ok((nonce, queries))
    }
}
