//! Quotient splitting, and its refusal of quotients of too high a degree, against the reference.

use super::{trace_logs, Checker, CTX};
use crate::inputs::{rand_f, rows_label, CaseRng};
use backend_api::{Backend, BackendError, ColMatrix, ComposeOps, Coset, NttOps, F, GENERATOR};
use backend_cpu::CpuMatrix;
use rand::Rng;

impl<B: Backend> Checker<'_, B> {
    /// Evaluations on `domain` of three random polynomials with `degree`
    /// coefficients (and one extra at `bump` when given).
    fn quotient_evals(&self, r: &mut CaseRng, domain: Coset, degree: usize, bump: Option<usize>) -> ColMatrix {
        let big = domain.size();
        let mut data = vec![F::ZERO; 3 * big];
        for coord in 0..3 {
            let col = &mut data[coord * big..(coord + 1) * big];
            for v in &mut col[..degree] {
                *v = rand_f(r);
            }
        }
        if let Some(k) = bump {
            let coord = r.gen_range(0..3);
            data[coord * big + k] = rand_f(r);
        }
        // p(shift * w^j) is the NTT of the coefficients c_i * shift^i.
        for coord in 0..3 {
            let mut s = F::ONE;
            for v in &mut data[coord * big..(coord + 1) * big] {
                *v *= s;
                s *= domain.shift;
            }
        }
        let m = CpuMatrix::new(3, big, data).expect("shape");
        self.cpu.ntt(&CTX, &m).expect("reference ntt").to_host()
    }

    pub fn quotient(&mut self) {
        for log_n in trace_logs(self.cfg) {
            let n = 1usize << log_n;
            for lb in 1..=4u32 {
                let big = n << lb;
                if 3 * big > self.lde_cap() {
                    continue;
                }
                let mut parts = vec![1, 2, 3, 1 << lb];
                parts.retain(|&p| p <= 1 << lb);
                parts.sort_unstable();
                parts.dedup();
                let domain = Coset::new(log_n + lb, GENERATOR);
                let op = format!("split_quotient x{}", 1 << lb);
                for &p in &parts {
                    self.case(op.clone(), rows_label(n), format!("{p} parts"), |c, r| {
                        let q = c.quotient_evals(r, domain, p * n, None);
                        let (g, cm) = c.up(&q)?;
                        let got = c.b.split_quotient(&CTX, &g, domain, log_n, p, domain.log_size);
                        let want = c.cpu.split_quotient(&CTX, &cm, domain, log_n, p, domain.log_size);
                        if let Err(e) = &want {
                            return Err(format!("the reference refused a valid quotient: {e}"));
                        }
                        c.same_matrix(got, want).map(drop)
                    });
                    // From the quotient domain (parts * n points, rounded
                    // up to a power of two) out to the LDE, as the prover
                    // splits.
                    let log_q = log_n + p.next_power_of_two().trailing_zeros();
                    if log_q < domain.log_size {
                        let qdomain = Coset::new(log_q, GENERATOR);
                        self.case(format!("{op} from 2^{log_q}"), rows_label(n), format!("{p} parts"), |c, r| {
                            let q = c.quotient_evals(r, qdomain, p * n, None);
                            let (g, cm) = c.up(&q)?;
                            let got = c.b.split_quotient(&CTX, &g, qdomain, log_n, p, domain.log_size);
                            let want = c.cpu.split_quotient(&CTX, &cm, qdomain, log_n, p, domain.log_size);
                            if let Err(e) = &want {
                                return Err(format!("the reference refused a valid quotient: {e}"));
                            }
                            c.same_matrix(got, want).map(drop)
                        });
                    }
                }
                // One non-zero coefficient at or past parts * n: the same
                // ConstraintsNotSatisfied on both.
                for &p in parts.iter().filter(|&&p| p * n < big) {
                    self.case(format!("{op} degree too high"), rows_label(n), format!("{p} parts"), |c, r| {
                        let bump = p * n + r.gen_range(0..big - p * n);
                        let q = c.quotient_evals(r, domain, p * n, Some(bump));
                        let (g, cm) = c.up(&q)?;
                        let got = c.b.split_quotient(&CTX, &g, domain, log_n, p, domain.log_size).map(drop);
                        let want = c.cpu.split_quotient(&CTX, &cm, domain, log_n, p, domain.log_size).map(drop);
                        match (got, want) {
                            (Err(a), Err(b @ BackendError::ConstraintsNotSatisfied { .. })) if a == b => Ok(()),
                            (got, want) => Err(format!("got {got:?}, reference {want:?}")),
                        }
                    });
                }
            }
        }
    }
}
