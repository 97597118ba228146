//! Error parity: invalid shapes and options must give the same typed error
//! (variant, stage and detail) on the backend under test as on the
//! reference, and never a panic or a success.

use crate::inputs::{rand_ext, rand_exts, rand_matrix};
use crate::ops::{Checker, CTX};
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, DeepColumns, DeepOps, DeepPoint,
    Ext, FriOps, HashKind, MerkleOps, NttOps, F, GENERATOR,
};
use stark::examples::{Fibonacci, Permutation, TwoTables};
use stark::{Air, ProofOptions, SingleTable};

/// Equal errors on both sides.
fn same_err(got: Result<(), BackendError>, want: Result<(), BackendError>) -> Result<(), String> {
    match (got, want) {
        (Err(a), Err(b)) if a == b => Ok(()),
        (Err(a), Err(b)) => Err(format!("error {a:?}, reference {b:?}")),
        (Ok(()), Err(b)) => Err(format!("accepted; the reference refuses it with {b:?}")),
        (_, Ok(())) => Err("the reference accepted this input (the case is wrong)".into()),
    }
}

/// Runs `$body` (which may use `?` on backend results) once with `$x`
/// bound to the backend under test and once to the reference, and
/// requires equal errors.
macro_rules! parity {
    ($c:expr, $op:expr, $rows:expr, $cols:expr, |$x:ident, $r:ident| $body:block) => {
        $c.case($op, $rows, $cols, |c, rr| {
            let seed: u64 = rand::Rng::gen(rr);
            let got = {
                let $x = c.b;
                let $r = &mut crate::inputs::rng(seed);
                (|| -> Result<(), BackendError> {
                    $body;
                    Ok(())
                })()
            };
            let want = {
                let $x = c.cpu;
                let $r = &mut crate::inputs::rng(seed);
                (|| -> Result<(), BackendError> {
                    $body;
                    Ok(())
                })()
            };
            same_err(got, want)
        })
    };
}

/// Like `parity!` for whole proves: the `ProveError`s must print and
/// debug-format the same.
macro_rules! prove_parity {
    ($c:expr, $op:expr, |$x:ident| $body:expr) => {
        $c.case($op, "-", "-", |c, _| {
            let got = {
                let $x = c.b;
                $body
            };
            let want = {
                let $x = c.cpu;
                $body
            };
            match (got, want) {
                (Err(a), Err(b)) if format!("{a:?}") == format!("{b:?}") => Ok(()),
                (Err(a), Err(b)) => Err(format!("error {a:?}, reference {b:?}")),
                (Ok(_), Err(b)) => Err(format!("proved; the reference refuses with {b:?}")),
                (_, Ok(_)) => Err("the reference proved this statement (the case is wrong)".into()),
            }
        })
    };
}

fn empty(width: usize, height: usize) -> ColMatrix {
    ColMatrix::new(width, height, vec![])
}

pub(crate) fn run<B: Backend>(c: &mut Checker<B>) {
    transforms(c);
    merkle(c);
    compose(c);
    logup(c);
    quotient_and_deep(c);
    fri_and_grind(c);
    proves(c);
}

fn logup<B: Backend>(c: &mut Checker<B>) {
    use backend_api::{LogUpInputs, LogUpOps};
    let specs = crate::ops::logups();
    let mixed = &specs.iter().find(|(n, _)| n == "mixed").expect("the mixed interactions").1;
    let (fw, mw) = (mixed.eval.layout.fixed_width, mixed.eval.layout.main_width);
    // (case, rows, main width, fixed (rows, width)).
    type Shape = (&'static str, usize, usize, Option<(usize, usize)>);
    let shapes: [Shape; 5] = [
        ("logup: height not a power of two", 6, mw, Some((6, fw))),
        ("logup: main width 3 for 4", 8, mw - 1, Some((8, fw))),
        ("logup: fixed columns missing", 8, mw, None),
        ("logup: fixed width 1 for 2", 8, mw, Some((8, fw - 1))),
        ("logup: fixed height 4 for 8", 8, mw, Some((4, fw))),
    ];
    for (op, n, w, fixed) in shapes {
        parity!(c, op, n.to_string(), w.to_string(), |x, r| {
            let main = x.upload(&CTX, &rand_matrix(r, w, n))?;
            let fixed = match fixed {
                Some((h, fw)) => Some(x.upload(&CTX, &rand_matrix(r, fw, h))?),
                None => None,
            };
            let (z, alpha) = (rand_ext(r), rand_ext(r));
            x.logup_aux(&CTX, &LogUpInputs { logup: mixed, main: &main, fixed: fixed.as_ref(), z, alpha })?;
        });
    }
    let mut broken = mixed.clone();
    broken.arities[0] += 1;
    parity!(c, "logup: arities that do not match the expressions", "8", mw.to_string(), |x, r| {
        let main = x.upload(&CTX, &rand_matrix(r, mw, 8))?;
        let fixed = x.upload(&CTX, &rand_matrix(r, fw, 8))?;
        let (z, alpha) = (rand_ext(r), rand_ext(r));
        x.logup_aux(&CTX, &LogUpInputs { logup: &broken, main: &main, fixed: Some(&fixed), z, alpha })?;
    });
}

fn transforms<B: Backend>(c: &mut Checker<B>) {
    parity!(c, "ntt: height not a power of two", "3", "2", |x, r| {
        x.ntt(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 3))?)?;
    });
    parity!(c, "ntt: empty matrix", "0", "0", |x, _r| {
        x.ntt(&CTX, &x.upload(&CTX, &empty(0, 0))?)?;
    });
    parity!(c, "intt: height not a power of two", "6", "1", |x, r| {
        x.intt(&CTX, &x.upload(&CTX, &rand_matrix(r, 1, 6))?)?;
    });
    parity!(c, "coset_lde: height not a power of two", "3", "2", |x, r| {
        x.coset_lde(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 3))?, 1, GENERATOR)?;
    });
    parity!(c, "coset_lde: blowup 32", "2^3", "2", |x, r| {
        x.coset_lde(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, 5, GENERATOR)?;
    });
    parity!(c, "coset_lde: zero shift", "2^3", "2", |x, r| {
        x.coset_lde(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, 1, F::ZERO)?;
    });
    parity!(c, "intt_in_place: height not a power of two", "3", "2", |x, r| {
        x.intt_in_place(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 3))?)?;
    });
    parity!(c, "coset_ntt: height not a power of two", "3", "2", |x, r| {
        x.coset_ntt(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 3))?, 1, GENERATOR)?;
    });
    parity!(c, "coset_ntt: zero shift", "2^3", "2", |x, r| {
        x.coset_ntt(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, 1, F::ZERO)?;
    });
    parity!(c, "coset_rows: position past the coset", "2^3", "2", |x, r| {
        x.coset_rows(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, GENERATOR, &[1, 8])?;
    });
    parity!(c, "coset_rows: zero shift", "2^3", "2", |x, r| {
        x.coset_rows(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, F::ZERO, &[1])?;
    });
    parity!(c, "fold_coeffs: past the height", "2^3", "2", |x, r| {
        x.fold_coeffs(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, 4, GENERATOR)?;
    });
    parity!(c, "stride_rows: past the height", "2^3", "2", |x, r| {
        x.stride_rows(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, 0, 4)?;
    });
    parity!(c, "interleave: three pieces", "2^3", "2", |x, r| {
        let p = (0..3).map(|_| x.upload(&CTX, &rand_matrix(r, 2, 8))).collect::<Result<Vec<_>, _>>()?;
        x.interleave(&CTX, &p.iter().collect::<Vec<_>>())?;
    });
    parity!(c, "interleave: pieces of two shapes", "2^3", "2", |x, r| {
        let (a, b) = (x.upload(&CTX, &rand_matrix(r, 2, 8))?, x.upload(&CTX, &rand_matrix(r, 2, 4))?);
        x.interleave(&CTX, &[&a, &b])?;
    });
    parity!(c, "combine_columns: a weight short", "2^3", "3", |x, r| {
        x.combine_columns(&CTX, &x.upload(&CTX, &rand_matrix(r, 3, 8))?, &rand_exts(r, 2))?;
    });
    for h in [0, 3, 16] {
        parity!(c, format!("reshape to {h} rows"), "2^3", "2", |x, r| {
            x.reshape(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, h)?;
        });
    }
}

fn merkle<B: Backend>(c: &mut Checker<B>) {
    for hash in HashKind::ALL {
        parity!(c, format!("commit {hash}: no columns"), "2^3", "0", |x, _r| {
            x.commit(&CTX, &x.upload(&CTX, &empty(0, 8))?, hash)?;
        });
        parity!(c, format!("commit {hash}: height not a power of two"), "6", "2", |x, r| {
            x.commit(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 6))?, hash)?;
        });
        parity!(c, format!("open {hash}: row out of range"), "2^3", "2", |x, r| {
            let m = x.upload(&CTX, &rand_matrix(r, 2, 8))?;
            let t = x.commit(&CTX, &m, hash)?;
            x.open(&CTX, &m, &t, &[1, 8])?;
        });
        parity!(c, format!("open {hash}: tree of another matrix"), "2^2", "2", |x, r| {
            let m8 = x.upload(&CTX, &rand_matrix(r, 2, 8))?;
            let m4 = x.upload(&CTX, &rand_matrix(r, 2, 4))?;
            let t = x.commit(&CTX, &m8, hash)?;
            x.open(&CTX, &m4, &t, &[0])?;
        });
    }
}

/// The shape of one invalid compose call.
struct ComposeCase {
    main_width: usize,
    aux_width: Option<usize>,
    log_n: u32,
    log_lde: u32,
    challenges: usize,
    publics: usize,
    aux_values: usize,
}

fn compose<B: Backend>(c: &mut Checker<B>) {
    let fib = Fibonacci::default();
    let perm = Permutation::default();
    let good_fib =
        ComposeCase { main_width: 2, aux_width: None, log_n: 3, log_lde: 5, challenges: 0, publics: 3, aux_values: 0 };
    let good_perm = ComposeCase {
        main_width: 2,
        aux_width: Some(9),
        log_n: 3,
        log_lde: 4,
        challenges: 2,
        publics: 0,
        aux_values: 1,
    };
    let cases: Vec<(&str, &dyn Air, ComposeCase)> = vec![
        ("compose: main width 3 for 2", &fib, ComposeCase { main_width: 3, ..good_fib }),
        ("compose: trace taller than the LDE", &fib, ComposeCase { log_n: 6, ..good_fib }),
        ("compose: blowup 32", &fib, ComposeCase { log_lde: 8, ..good_fib }),
        ("compose: 2 public inputs for 3", &fib, ComposeCase { publics: 2, ..good_fib }),
        ("compose: auxiliary trace missing", &perm, ComposeCase { aux_width: None, ..good_perm }),
        ("compose: auxiliary width 6 for 9", &perm, ComposeCase { aux_width: Some(6), ..good_perm }),
        ("compose: 3 challenges for 2", &perm, ComposeCase { challenges: 3, ..good_perm }),
        ("compose: no auxiliary values", &perm, ComposeCase { aux_values: 0, ..good_perm }),
    ];
    for (op, air, k) in cases {
        let cs = air.constraints();
        let big = 1usize << k.log_lde;
        parity!(c, op, format!("2^{}", k.log_n), format!("{}", k.main_width), |x, r| {
            let main = x.upload(&CTX, &rand_matrix(r, k.main_width, big))?;
            let aux = match k.aux_width {
                Some(w) => Some(x.upload(&CTX, &rand_matrix(r, w, big))?),
                None => None,
            };
            let ch: Vec<Ext> = (0..k.challenges).map(|_| rand_ext(r)).collect();
            let pubs: Vec<F> = (0..k.publics).map(|i| F::new(i as u64 + 1)).collect();
            let av: Vec<Ext> = (0..k.aux_values).map(|_| rand_ext(r)).collect();
            x.compose(
                &CTX,
                &ComposeInputs {
                    constraints: cs,
                    fixed: None,
                    main: &main,
                    aux: aux.as_ref(),
                    log_trace_height: k.log_n,
                    domain: Coset::new(k.log_lde, GENERATOR),
                    challenges: &ch,
                    publics: &pubs,
                    aux_values: &av,
                    alpha: rand_ext(r),
                    next: None,
                    log_stride: 0,
                },
            )?;
        });
    }
}

fn quotient_and_deep<B: Backend>(c: &mut Checker<B>) {
    let d16 = Coset::new(4, GENERATOR);
    let split_cases: [(&str, usize, Coset, u32, usize); 4] = [
        ("split_quotient: width 2", 2, d16, 2, 2),
        ("split_quotient: domain of another height", 3, Coset::new(5, GENERATOR), 2, 2),
        ("split_quotient: 5 parts of 4 rows in 16", 3, d16, 2, 5),
        ("split_quotient: no parts", 3, d16, 2, 0),
    ];
    for (op, w, domain, log_n, parts) in split_cases {
        parity!(c, op, "2^4", w.to_string(), |x, r| {
            x.split_quotient(&CTX, &x.upload(&CTX, &rand_matrix(r, w, 16))?, domain, log_n, parts, domain.log_size)?;
        });
    }
    parity!(c, "evaluate_coeffs: height not a power of two", "3", "2", |x, r| {
        x.evaluate_coeffs(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 3))?, &[rand_ext(r)])?;
    });
    parity!(c, "evaluate_at: domain of another height", "2^3", "2", |x, r| {
        x.evaluate_at(&CTX, &x.upload(&CTX, &rand_matrix(r, 2, 8))?, d16, 0, &[rand_ext(r)])?;
    });
    parity!(c, "deep_quotient: no points", "2^4", "-", |x, _r| {
        x.deep_quotient(&CTX, d16, &[])?;
    });
    parity!(c, "deep_quotient: 1 coefficient for 2 columns", "2^4", "2", |x, r| {
        let m = x.upload(&CTX, &rand_matrix(r, 2, 16))?;
        let col = DeepColumns { matrix: &m, coeffs: vec![rand_ext(r)], values: vec![rand_ext(r), rand_ext(r)] };
        x.deep_quotient(&CTX, d16, &[DeepPoint { point: rand_ext(r), columns: vec![col] }])?;
    });
    parity!(c, "deep_quotient: matrix of another height", "2^3", "2", |x, r| {
        let m = x.upload(&CTX, &rand_matrix(r, 2, 8))?;
        let col = DeepColumns { matrix: &m, coeffs: vec![rand_ext(r); 2], values: vec![rand_ext(r); 2] };
        x.deep_quotient(&CTX, d16, &[DeepPoint { point: rand_ext(r), columns: vec![col] }])?;
    });
    parity!(c, "deep_quotient: point on the domain", "2^4", "2", |x, r| {
        let m = x.upload(&CTX, &rand_matrix(r, 2, 16))?;
        let col = DeepColumns { matrix: &m, coeffs: vec![rand_ext(r); 2], values: vec![rand_ext(r); 2] };
        x.deep_quotient(&CTX, d16, &[DeepPoint { point: Ext::from_base(d16.point(5)), columns: vec![col] }])?;
    });
}

type FoldCase = (&'static str, usize, usize, Coset, u32, Option<usize>);

fn fri_and_grind<B: Backend>(c: &mut Checker<B>) {
    let d16 = Coset::new(4, GENERATOR);
    // (case, layer width, layer height, domain, log arity, roll-in height)
    let folds: [FoldCase; 6] = [
        ("fri_fold: arity 1", 3, 16, d16, 0, None),
        ("fri_fold: arity 32", 3, 64, Coset::new(6, GENERATOR), 5, None),
        ("fri_fold: arity 8 of 4 rows", 3, 4, Coset::new(2, GENERATOR), 3, None),
        ("fri_fold: layer width 2", 2, 16, d16, 1, None),
        ("fri_fold: domain of another height", 3, 16, Coset::new(5, GENERATOR), 1, None),
        ("fri_fold: roll-in of 4 rows for 8", 3, 16, d16, 1, Some(4)),
    ];
    for (op, w, h, domain, la, roll) in folds {
        parity!(c, op, format!("2^{}", h.trailing_zeros()), w.to_string(), |x, r| {
            let layer = x.upload(&CTX, &rand_matrix(r, w, h))?;
            let g = match roll {
                Some(rh) => Some(x.upload(&CTX, &rand_matrix(r, 3, rh))?),
                None => None,
            };
            x.fri_fold(&CTX, &layer, domain, la, rand_ext(r), g.as_ref().map(|g| (g, rand_ext(r))))?;
        });
    }
    for hash in HashKind::ALL {
        for bits in [33, 64] {
            parity!(c, format!("grind {hash}: {bits} bits"), "-", "-", |x, _r| {
                x.grind(&CTX, hash, &[7u8; 32], bits)?;
            });
        }
    }
}

fn proves<B: Backend>(c: &mut Checker<B>) {
    let fib = SingleTable(Fibonacci::default());
    let base = ProofOptions { num_queries: 8, grinding_bits: 0, log_final_poly_len: 1, ..ProofOptions::default() };
    let bad_options = [
        ("prove: blowup 32", ProofOptions { log_blowup: 5, ..base }),
        ("prove: blowup 1", ProofOptions { log_blowup: 0, ..base }),
        ("prove: 33 grinding bits", ProofOptions { grinding_bits: 33, ..base }),
        ("prove: folding arity 32", ProofOptions { log_fri_arity: 5, ..base }),
        ("prove: no queries", ProofOptions { num_queries: 0, ..base }),
        ("prove: final polynomial of 2^11", ProofOptions { log_final_poly_len: 11, ..base }),
    ];
    for (op, o) in bad_options {
        let (t, p) = Fibonacci::trace(4, F::ONE, F::ONE);
        prove_parity!(c, op, |x| stark::prove(x, &fib, vec![t.clone()], &p, &o));
    }
    let (t, p) = Fibonacci::trace(3, F::ONE, F::ONE);
    let three_rows = ColMatrix::from_columns(t.columns().map(|c| c[..3].to_vec()).collect());
    prove_parity!(c, "prove: trace of 3 rows", |x| stark::prove(x, &fib, vec![three_rows.clone()], &p, &base));
    let wide = ColMatrix::from_columns(vec![t.column(0).to_vec(); 3]);
    prove_parity!(c, "prove: trace of 3 columns for 2", |x| stark::prove(x, &fib, vec![wide.clone()], &p, &base));
    let two = TwoTables::default();
    let one_trace = TwoTables::traces(4, 1).remove(0);
    prove_parity!(c, "prove: one trace for two tables", |x| stark::prove(x, &two, vec![one_trace.clone()], &[], &base));
    // A wrong public input: the quotient is not low-degree, which the
    // split stage reports as ConstraintsNotSatisfied for the table.
    let mut wrong = p.clone();
    wrong[2] += F::ONE;
    prove_parity!(c, "prove: unsatisfied constraints", |x| stark::prove(x, &fib, vec![t.clone()], &wrong, &base));
}
