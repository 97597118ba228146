//! FRI folds and proof-of-work grinding, against the reference.

use super::{Checker, CTX};
use crate::inputs::{rand_ext, rand_matrix, rows_label};
use backend_api::{Backend, Coset, FriOps, HashKind, GENERATOR};
use rand::Rng;

impl<B: Backend> Checker<'_, B> {
    pub fn fri(&mut self) {
        for log in 1..=self.cfg.max_log + 2 {
            for la in 1..=4u32.min(log) {
                for roll in [false, true] {
                    let op = format!("fri_fold /{}{}", 1 << la, if roll { " +roll-in" } else { "" });
                    self.case(op, rows_label(1 << log), "3", |c, r| {
                        let layer = rand_matrix(r, 3, 1 << log);
                        let domain = Coset::new(log, GENERATOR.pow(r.gen_range(1..64)));
                        let beta = rand_ext(r);
                        let (g, cm) = c.up(&layer)?;
                        let rolled =
                            if roll { Some((c.up(&rand_matrix(r, 3, 1 << (log - la)))?, rand_ext(r))) } else { None };
                        let got = c.b.fri_fold(&CTX, &g, domain, la, beta, rolled.as_ref().map(|((g, _), s)| (g, *s)));
                        let want =
                            c.cpu.fri_fold(&CTX, &cm, domain, la, beta, rolled.as_ref().map(|((_, m), s)| (m, *s)));
                        c.same_matrix(got, want).map(drop)
                    });
                }
            }
        }
    }

    pub fn grind(&mut self) {
        for hash in HashKind::ALL {
            for bits in [0u32, 1, 2, 4, 8, 12, 16] {
                for s in 0..2 {
                    self.case(format!("grind {hash}"), format!("{bits} bits"), format!("seed {s}"), |c, r| {
                        let mut seed = [0u8; 32];
                        r.fill(&mut seed[..]);
                        let got = c.b.grind(&CTX, hash, &seed, bits).map_err(|e| e.to_string())?;
                        let want = c.cpu.grind(&CTX, hash, &seed, bits).map_err(|e| e.to_string())?;
                        (got == want).then_some(()).ok_or_else(|| format!("nonce {got}, reference (smallest) {want}"))
                    });
                }
            }
        }
    }
}
