//! The last two rounds: FRI folding with roll-ins, then the proof of work
//! and the openings of every committed matrix at the query positions.

use super::commit::Committed;
use super::rounds::{AuxRound, FriRound, Prover};
use super::ProveError;
use crate::proof::{QueryProof, TableQuery};
use crate::protocol;
use crate::transcript::Transcript;
use backend_api::{Backend, BackendError, Coset, Ctx, DeviceMatrix};

impl<B: Backend> Prover<'_, B> {
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
