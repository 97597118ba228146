//! Coset NTTs and LDEs, coefficient folds and row gathers, against the reference.

use super::{rows_of, same_host, same_rows, Checker, CTX};
use crate::inputs::{rand_f, rand_matrix, rows_label};
use backend_api::{Backend, BackendBase, MerkleOps, NttOps, GENERATOR};
use rand::Rng;

impl<B: Backend> Checker<'_, B> {
    pub fn lde(&mut self) {
        for (log, w) in self.cfg.shapes() {
            self.coset_ldes(log, w);
            self.fused_upload_lde(log, w);
            self.coset_ntt_is_lde(log, w);
            self.folds(log, w);
            self.queried_coset_rows(log, w);
            self.strided_rows(log, w);
            self.fold_is_evaluation(log, w);
        }
    }

    fn coset_ldes(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        // Blowup 1 is one coset of an LDE rebuilt on its own.
        for lb in 0..=4u32 {
            if w > 1 && (w << (log + lb)) > self.lde_cap() {
                continue;
            }
            self.case(format!("coset_lde x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                // The prover's shifts are powers of the generator; any
                // non-zero shift is valid.
                let shift = if r.gen::<bool>() { GENERATOR } else { rand_f(r) };
                let (g, cm) = c.up(&m)?;
                c.same_matrix(c.b.coset_lde(&CTX, &g, lb, shift), c.cpu.coset_lde(&CTX, &cm, lb, shift)).map(drop)
            });
            self.case(format!("coset_ntt x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                let shift = rand_f(r);
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.coset_ntt(&CTX, &g, lb, shift), c.cpu.coset_ntt(&CTX, &cm, lb, shift)).map(drop)
            });
        }
    }

    /// The upload and the LDE in one call: both results.
    fn fused_upload_lde(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        let mut lb = 1 + log % 3;
        while lb > 0 && (w << (log + lb)) > self.lde_cap() {
            lb -= 1;
        }
        self.case(format!("upload_coset_lde x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
            let (m, shift) = (rand_matrix(r, w, rows), rand_f(r));
            let (g, lde) = c.b.upload_coset_lde(&CTX, &m, lb, shift).map_err(|e| e.to_string())?;
            same_host(&c.b.download(&CTX, &g).map_err(|e| e.to_string())?, &m)?;
            let cm = c.cpu.upload(&CTX, &m).map_err(|e| e.to_string())?;
            c.same_matrix(Ok(lde), c.cpu.coset_lde(&CTX, &cm, lb, shift)).map(drop)
        });
    }

    /// Ties the coset NTT to the LDE: the coefficients' evaluations
    /// are the LDE of the evaluations they interpolate.
    fn coset_ntt_is_lde(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        self.case("coset_ntt(intt(x)) = coset_lde(x)", rows_label(rows), w.to_string(), |c, r| {
            let shift = rand_f(r);
            let (g, _) = c.up(&rand_matrix(r, w, rows))?;
            let coeffs = c.b.intt(&CTX, &g).map_err(|e| e.to_string())?;
            let lb = r.gen_range(0..=2);
            let via = c.b.coset_ntt(&CTX, &coeffs, lb, shift).map_err(|e| e.to_string())?;
            let lde = c.b.coset_lde(&CTX, &g, lb, shift).map_err(|e| e.to_string())?;
            let d = |m| c.b.download(&CTX, m).map_err(|e| e.to_string());
            same_host(&d(&via)?, &d(&lde)?)
        });
    }

    fn folds(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        for log_fold in [1, 2, log].into_iter().filter(|&f| f >= 1 && f <= log) {
            self.case(format!("fold_coeffs /{}", 1u64 << log_fold), rows_label(rows), w.to_string(), |c, r| {
                let point = rand_f(r);
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                let got = c.b.fold_coeffs(&CTX, &g, log_fold, point);
                c.same_matrix(got, c.cpu.fold_coeffs(&CTX, &cm, log_fold, point)).map(drop)
            });
        }
    }

    /// Queried rows of a coset evaluated alone: the reference
    /// coset's rows, at runs of neighbours, both ends and repeats.
    fn queried_coset_rows(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        for k in [1, 3, 40] {
            self.case(format!("coset_rows of {k}"), rows_label(rows), w.to_string(), |c, r| {
                let shift = rand_f(r);
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                let mut at: Vec<usize> = (0..k).map(|i| (r.gen_range(0..rows) + i / 4) % rows).collect();
                at.extend([0, rows - 1, at[0]]);
                let got = c.b.coset_rows(&CTX, &g, shift, &at).map_err(|e| e.to_string())?;
                let coset = c.cpu.coset_ntt(&CTX, &cm, 0, shift).map_err(|e| e.to_string())?;
                let want = c.cpu.rows(&CTX, &coset, &at).map_err(|e| e.to_string())?;
                same_rows(&got, &want)
            });
        }
    }

    /// Pieces of rows, taken on the backend and put back together.
    fn strided_rows(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        for log_stride in [0, 1, 3.min(log)].into_iter().filter(|&s| s <= log) {
            let label = format!("stride_rows /{}", 1u64 << log_stride);
            self.case(label, rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                // Offsets past the last piece wrap a row on.
                let first = r.gen_range(0..2usize << log_stride);
                let got = c.b.stride_rows(&CTX, &g, first, log_stride).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &got).map_err(|e| e.to_string())?, &m.stride_rows(first, log_stride))
            });
            let label = format!("interleave(stride_rows /{}) = x", 1u64 << log_stride);
            self.case(label, rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                let pieces = (0..1usize << log_stride)
                    .map(|j| c.b.stride_rows(&CTX, &g, j, log_stride))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())?;
                let whole = c.b.interleave(&CTX, &pieces.iter().collect::<Vec<_>>()).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &whole).map_err(|e| e.to_string())?, &m)
            });
        }
    }

    /// Ties the fold to evaluation: on s * H_m (s^m the fold's point)
    /// the folded coefficients take the polynomial's values, rows
    /// 0, 2^f, 2 * 2^f, ... of its evaluations on s * H_n.
    fn fold_is_evaluation(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        if log >= 1 {
            self.case("coset_ntt(fold_coeffs(x)) = rows of coset_ntt(x)", rows_label(rows), w.to_string(), |c, r| {
                let (shift, log_fold) = (rand_f(r), r.gen_range(1..=log.min(3)));
                let (g, _) = c.up(&rand_matrix(r, w, rows))?;
                let m = rows >> log_fold;
                let folded = c.b.fold_coeffs(&CTX, &g, log_fold, shift.pow(m as u64)).map_err(|e| e.to_string())?;
                let piece = c.b.coset_ntt(&CTX, &folded, 0, shift).map_err(|e| e.to_string())?;
                let whole = c.b.coset_ntt(&CTX, &g, 0, shift).map_err(|e| e.to_string())?;
                let d = |m| c.b.download(&CTX, m).map_err(|e| e.to_string());
                same_host(&d(&piece)?, &rows_of(&d(&whole)?, 0, log_fold))
            });
        }
    }
}
