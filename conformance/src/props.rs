//! Property tests: proptest draws (shape, seed) tuples, the seed fills the
//! inputs with random non-zero elements, and a failing case shrinks to the
//! smallest shape and seed that still fails, which the report prints.

use crate::inputs::{rand_ext, rand_exts, rand_f, rand_matrix, rng};
use crate::ops::{Checker, CTX};
use backend_api::{Backend, Coset, DeepOps, DeviceTree, FriOps, HashKind, MerkleOps, NttOps, GENERATOR};
use backend_cpu::CpuMatrix;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use rand::Rng;

fn runner<B: Backend>(c: &Checker<B>, salt: u8) -> TestRunner {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&c.cfg.seed.to_le_bytes());
    seed[8] = salt;
    let config =
        Config { cases: c.cfg.prop_cases, failure_persistence: None, max_shrink_iters: 4096, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
}

fn record<B: Backend, V: std::fmt::Debug>(c: &mut Checker<B>, op: &str, what: &str, r: Result<(), TestError<V>>) {
    let outcome = match r {
        Ok(()) => Ok(()),
        Err(TestError::Fail(why, v)) => Err(format!("minimal failing input {what} = {v:?}: {why}")),
        Err(TestError::Abort(why)) => Err(format!("aborted: {why}")),
    };
    c.report.push(op, "random", format!("{} cases", c.cfg.prop_cases), outcome);
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if ok {
        Ok(())
    } else {
        Err(TestCaseError::fail(what()))
    }
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

pub(crate) fn run<B: Backend>(c: &mut Checker<B>) {
    let max_log = c.cfg.max_log.min(12);

    // ntt, intt, coset_lde, coset_ntt, fold_coeffs, combine_columns and
    // commit/open of one random matrix.
    let mut tr = runner(c, 1);
    let r = tr.run(&(0..=max_log, 1usize..=16, any::<u64>()), |(log, w, seed)| {
        let r = &mut rng(seed);
        let m = rand_matrix(r, w, 1 << log);
        let g = c.b.upload(&CTX, &m).map_err(fail)?;
        let cm = CpuMatrix::from_host(&m);
        let same = |what: &str, got: backend_api::Result<B::Matrix>, want: backend_api::Result<CpuMatrix>| {
            let got = got.map_err(fail)?;
            let host = c.b.download(&CTX, &got).map_err(fail)?;
            let want = want.map_err(fail)?.to_host();
            crate::ops::same_host(&host, &want).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))
        };
        same("ntt", c.b.ntt(&CTX, &g), c.cpu.ntt(&CTX, &cm))?;
        same("intt", c.b.intt(&CTX, &g), c.cpu.intt(&CTX, &cm))?;
        let lb = r.gen_range(1..=4);
        same("coset_lde", c.b.coset_lde(&CTX, &g, lb, GENERATOR), c.cpu.coset_lde(&CTX, &cm, lb, GENERATOR))?;
        same("coset_ntt", c.b.coset_ntt(&CTX, &g, lb, GENERATOR), c.cpu.coset_ntt(&CTX, &cm, lb, GENERATOR))?;
        let (log_fold, point) = (r.gen_range(0..=log), rand_f(r));
        same("fold_coeffs", c.b.fold_coeffs(&CTX, &g, log_fold, point), c.cpu.fold_coeffs(&CTX, &cm, log_fold, point))?;
        let weights = rand_exts(r, w);
        same("combine_columns", c.b.combine_columns(&CTX, &g, &weights), c.cpu.combine_columns(&CTX, &cm, &weights))?;
        let hash = HashKind::ALL[r.gen_range(0..2)];
        let gt = c.b.commit(&CTX, &g, hash).map_err(fail)?;
        let ct = c.cpu.commit(&CTX, &cm, hash).map_err(fail)?;
        check(gt.root() == ct.root(), || format!("{hash} root differs"))?;
        let rows: Vec<usize> = (0..3).map(|_| r.gen_range(0..1usize << log)).collect();
        let go = c.b.open(&CTX, &g, &gt, &rows).map_err(fail)?;
        let co = c.cpu.open(&CTX, &cm, &ct, &rows).map_err(fail)?;
        check(go == co, || format!("{hash} openings of rows {rows:?} differ"))
    });
    record(
        c,
        "property: ntt, intt, coset_lde, coset_ntt, fold_coeffs, combine_columns, commit, open",
        "(log_rows, width, seed)",
        r,
    );

    // fri_fold with random arity and roll-in, and evaluate_at.
    let mut tr = runner(c, 2);
    let r = tr.run(&(1..=max_log + 2, 1u32..=4, any::<bool>(), any::<u64>()), |(log, la, roll, seed)| {
        let la = la.min(log);
        let r = &mut rng(seed);
        let layer = rand_matrix(r, 3, 1 << log);
        let g = c.b.upload(&CTX, &layer).map_err(fail)?;
        let cm = CpuMatrix::from_host(&layer);
        let domain = Coset::new(log, GENERATOR.pow(r.gen_range(1..64)));
        let beta = rand_ext(r);
        let roll_m = roll.then(|| rand_matrix(r, 3, 1 << (log - la)));
        let s = rand_ext(r);
        let rg = roll_m.as_ref().map(|m| c.b.upload(&CTX, m)).transpose().map_err(fail)?;
        let rc = roll_m.as_ref().map(CpuMatrix::from_host);
        let got = c.b.fri_fold(&CTX, &g, domain, la, beta, rg.as_ref().map(|m| (m, s))).map_err(fail)?;
        let want = c.cpu.fri_fold(&CTX, &cm, domain, la, beta, rc.as_ref().map(|m| (m, s))).map_err(fail)?;
        let host = c.b.download(&CTX, &got).map_err(fail)?;
        crate::ops::same_host(&host, &want.to_host()).map_err(|e| TestCaseError::fail(format!("fri_fold: {e}")))?;
        let z = [rand_ext(r)];
        let ge = c.b.evaluate_at(&CTX, &g, domain, 0, &z).map_err(fail)?;
        let ce = c.cpu.evaluate_at(&CTX, &cm, domain, 0, &z).map_err(fail)?;
        check(ge == ce, || "evaluate_at differs".into())
    });
    record(c, "property: fri_fold, evaluate_at", "(log_rows, log_arity, roll_in, seed)", r);
}
