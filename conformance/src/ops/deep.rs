//! Out-of-domain evaluations, column combinations and DEEP quotients, against the reference.

use super::{same_host, Checker, CTX};
use crate::inputs::{rand_ext, rand_exts, rand_f, rand_matrix, rows_label, CaseRng};
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, Coset, DeepColumns, DeepOps, DeepPoint, Ext, NttOps, F, GENERATOR,
};
use backend_cpu::CpuMatrix;
use rand::Rng;

/// One DEEP point: z and, per matrix index, its coefficients and values.
type DeepSpec = (Ext, Vec<(usize, Vec<Ext>, Vec<Ext>)>);

/// Which matrices are opened at which point: per point, its power of the
/// trace generator (times z) and the indices of the matrices opened there.
type OpeningPattern = [(u64, &'static [usize])];

/// `spec` over the matrices `matrix` gives for each index.
fn deep_points<'m, M>(spec: &[DeepSpec], matrix: impl Fn(usize) -> &'m M) -> Vec<DeepPoint<'m, M>> {
    spec.iter()
        .map(|(p, cols)| DeepPoint {
            point: *p,
            columns: cols
                .iter()
                .map(|(i, k, v)| DeepColumns { matrix: matrix(*i), coeffs: k.clone(), values: v.clone() })
                .collect(),
        })
        .collect()
}

impl<B: Backend> Checker<'_, B> {
    pub fn deep(&mut self) {
        for (log, w) in self.cfg.shapes() {
            self.evaluate_at_domains(log, w);
            self.coefficient_evaluations(log, w);
            self.evaluate_at_strided(log, w);
            self.deep_quotients(log, w);
            self.combinations(log, w);
            self.deep_quotient_of_combination(log, w);
        }
    }

    fn evaluate_at_domains(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        self.case("evaluate_at trace domain", rows_label(rows), w.to_string(), |c, r| {
            let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
            let z = rand_ext(r);
            let points = [z, z * F::two_adic_root(log)];
            let d = Coset::subgroup(log);
            let got = c.b.evaluate_at(&CTX, &g, d, 0, &points).map_err(|e| e.to_string())?;
            let want = c.cpu.evaluate_at(&CTX, &cm, d, 0, &points).map_err(|e| e.to_string())?;
            (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
        });
        self.case("evaluate_at coset", rows_label(rows), w.to_string(), |c, r| {
            let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
            let points = [rand_ext(r)];
            let d = Coset::new(log, GENERATOR);
            let got = c.b.evaluate_at(&CTX, &g, d, 0, &points).map_err(|e| e.to_string())?;
            let want = c.cpu.evaluate_at(&CTX, &cm, d, 0, &points).map_err(|e| e.to_string())?;
            (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
        });
    }

    /// Coefficients at z and z * w (a table's values at z, its
    /// trace never rebuilt), one point on H_n and one of the base
    /// field: the reference's values of the columns they transform to.
    fn coefficient_evaluations(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        self.case("evaluate_coeffs", rows_label(rows), w.to_string(), |c, r| {
            let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
            let (z, d) = (rand_ext(r), Coset::subgroup(log));
            let on = Ext::from_base(d.generator().pow(r.gen_range(0..rows as u64)));
            let points = [z, z * F::two_adic_root(log), on, Ext::from_base(rand_f(r))];
            let got = c.b.evaluate_coeffs(&CTX, &g, &points).map_err(|e| e.to_string())?;
            let evals = c.cpu.ntt(&CTX, &cm).map_err(|e| e.to_string())?;
            let want = c.cpu.evaluate_at(&CTX, &evals, d, 0, &points).map_err(|e| e.to_string())?;
            (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
        });
    }

    /// A committed LDE read in place on the coset of every 2^s-th
    /// row, at three points off the domain (a backend may read a
    /// matrix once for several) and one on it (its rows themselves).
    fn evaluate_at_strided(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        for s in [1u32, 2] {
            if (rows << s) * w > self.lde_cap() && w > 1 {
                continue;
            }
            self.case(format!("evaluate_at rows {} apart", 1 << s), rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows << s))?;
                let d = Coset::new(log, GENERATOR);
                let on = Ext::from_base(d.shift * d.generator().pow(r.gen_range(0..rows as u64)));
                let points = [rand_ext(r), on, rand_ext(r), rand_ext(r)];
                let got = c.b.evaluate_at(&CTX, &g, d, s, &points).map_err(|e| e.to_string())?;
                let want = c.cpu.evaluate_at(&CTX, &cm, d, s, &points).map_err(|e| e.to_string())?;
                let rows_apart = c.cpu.stride_rows(&CTX, &cm, 0, s).map_err(|e| e.to_string())?;
                let copied = c.cpu.evaluate_at(&CTX, &rows_apart, d, 0, &points).map_err(|e| e.to_string())?;
                match (got == want, want == copied) {
                    (true, true) => Ok(()),
                    (false, _) => Err("values differ".to_string()),
                    (_, false) => Err("the reference's strided values differ from its copied rows'".to_string()),
                }
            });
        }
    }

    fn deep_quotients(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        for lb in [1u32, 2] {
            let big = rows << lb;
            if big * (w + 12) > self.lde_cap() && w > 1 {
                continue;
            }
            // Main, auxiliary-like and quotient-like matrices (0, 1, 2)
            // at z; main and auxiliary again at z * w (the next row).
            // Then three points: a matrix at the second point only, one
            // at the first two in another order, one at the third only.
            let prove_like: &OpeningPattern = &[(0, &[0, 1, 2]), (1, &[0, 1])];
            let three: &OpeningPattern = &[(0, &[0]), (1, &[1, 0]), (2, &[2])];
            for (name, pattern) in [("deep_quotient", prove_like), ("deep_quotient 3 points", three)] {
                self.case(format!("{name} x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                    c.same_deep_quotient(r, log, lb, w, pattern)
                });
            }
        }
    }

    /// One DEEP quotient on a 2^(log + lb)-row LDE: a matrix of width `w`
    /// and two of 6 columns, opened as `pattern` says.
    fn same_deep_quotient(
        &self,
        r: &mut CaseRng,
        log: u32,
        lb: u32,
        w: usize,
        pattern: &OpeningPattern,
    ) -> Result<(), String> {
        let big = 1usize << (log + lb);
        let mats: Vec<ColMatrix> = [w, 6, 6].iter().map(|&k| rand_matrix(r, k, big)).collect();
        let up: Vec<(B::Matrix, CpuMatrix)> = mats.iter().map(|m| self.up(m)).collect::<Result<_, _>>()?;
        let z = rand_ext(r);
        let spec: Vec<DeepSpec> = pattern
            .iter()
            .map(|&(k, at)| {
                let cols = at.iter().map(|&i| (i, rand_exts(r, mats[i].width()), rand_exts(r, mats[i].width())));
                (z * F::two_adic_root(log).pow(k), cols.collect())
            })
            .collect();
        let domain = Coset::new(log + lb, GENERATOR);
        let gp = deep_points(&spec, |i| &up[i].0);
        let cp = deep_points(&spec, |i| &up[i].1);
        self.same_matrix(self.b.deep_quotient(&CTX, domain, &gp), self.cpu.deep_quotient(&CTX, domain, &cp)).map(drop)
    }

    fn combinations(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        // Any height: a combination is row by row.
        for height in [rows, rows + rows / 2 + 1] {
            self.case("combine_columns", rows_label(height), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, height))?;
                let weights = rand_exts(r, w);
                let got = c.b.combine_columns(&CTX, &g, &weights);
                c.same_matrix(got, c.cpu.combine_columns(&CTX, &cm, &weights)).map(drop)
            });
        }
    }

    /// What a recomputed table's DEEP quotient relies on: combining
    /// coefficients, then extending 3 columns, is extending every
    /// column, then combining.
    fn deep_quotient_of_combination(&mut self, log: u32, w: usize) {
        let rows = 1usize << log;
        self.case("deep_quotient(combined) = deep_quotient(columns)", rows_label(rows), w.to_string(), |c, r| {
            let (coeffs, _) = c.up(&rand_matrix(r, w, rows))?;
            let (weights, values) = (rand_exts(r, w), rand_exts(r, w));
            let domain = Coset::new(log + 1, GENERATOR);
            let z = rand_ext(r);
            let e = |x: Result<B::Matrix, BackendError>| x.map_err(|e| e.to_string());
            let lde = e(c.b.coset_ntt(&CTX, &coeffs, 1, GENERATOR))?;
            let combined = e(c.b.combine_columns(&CTX, &coeffs, &weights))?;
            let combined = e(c.b.coset_ntt(&CTX, &combined, 1, GENERATOR))?;
            let value: Ext = weights.iter().zip(&values).map(|(&k, &v)| k * v).sum();
            let basis = vec![Ext::ONE, Ext([F::ZERO, F::ONE, F::ZERO]), Ext([F::ZERO, F::ZERO, F::ONE])];
            let whole = [DeepPoint { point: z, columns: vec![DeepColumns { matrix: &lde, coeffs: weights, values }] }];
            let values = vec![value, Ext::ZERO, Ext::ZERO];
            let columns = vec![DeepColumns { matrix: &combined, coeffs: basis, values }];
            let d = |m: &B::Matrix| c.b.download(&CTX, m).map_err(|e| e.to_string());
            let want = d(&e(c.b.deep_quotient(&CTX, domain, &whole))?)?;
            let got = e(c.b.deep_quotient(&CTX, domain, &[DeepPoint { point: z, columns }]))?;
            same_host(&d(&got)?, &want)
        });
    }
}
