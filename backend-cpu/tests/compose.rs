//! Constraint composition against a direct per-row evaluation of the IR.

mod common;

use backend_api::{
    BackendError, ComposeInputs, ComposeOps, ConstraintBuilder, ConstraintDomain, ConstraintSystem, Coset,
    DeviceMatrix, Expr, Ext, Layout, Leaf, Stage, F, GENERATOR,
};
use backend_cpu::{CpuBackend, CpuMatrix};
use common::*;
use proptest::prelude::*;

/// A small AIR touching every leaf kind, every domain, base/extension
/// mixing, negation, row offsets 0..2 and a constraint that is a scalar.
fn air() -> ConstraintSystem {
    let layout =
        Layout { fixed_width: 1, main_width: 3, aux_width: 2, num_challenges: 2, num_public: 2, num_aux_values: 1 };
    let mut b = ConstraintBuilder::new(layout);
    let m = |c, o| Expr::main(c, o);
    b.when_transition(m(0, 1) - m(0, 0) * m(1, 0) - Expr::fixed(0, 0));
    b.when_transition(
        Expr::aux(0, 1) - Expr::aux(0, 0) * (Expr::challenge(0) - m(2, 0)) - Expr::aux_value(0) * m(1, 1),
    );
    b.when_first_row(m(0, 0) - Expr::public(0));
    b.when_last_row(m(1, 0) - Expr::public(1) + (-Expr::aux(1, 0)));
    b.always(m(2, 0) * m(2, 0) * m(2, 0) - m(2, 0) * Expr::challenge(1) + Expr::from_u64(5));
    b.always(Expr::challenge(0) * Expr::challenge(1) - Expr::public(0));
    b.when_transition(-(m(0, 0) * Expr::fixed(0, 1)) + m(1, 2) * Expr::from_u64(3) - Expr::public(1));
    b.when_first_row(Expr::aux(1, 2) * Expr::aux(0, 0) - Expr::aux_value(0));
    b.build().unwrap()
}

struct Case {
    cs: ConstraintSystem,
    fixed: CpuMatrix,
    main: CpuMatrix,
    aux: CpuMatrix,
    challenges: Vec<Ext>,
    publics: Vec<F>,
    aux_values: Vec<Ext>,
    alpha: Ext,
    domain: Coset,
    log_n: u32,
}

impl Case {
    fn new(seed: u64, log_n: u32, log_blowup: u32) -> Case {
        let mut r = rng(seed);
        let big = 1usize << (log_n + log_blowup);
        Case {
            cs: air(),
            fixed: rand_matrix(&mut r, 1, big),
            main: rand_matrix(&mut r, 3, big),
            aux: rand_matrix(&mut r, 6, big),
            challenges: vec![rand_ext(&mut r), rand_ext(&mut r)],
            publics: vec![rand_f(&mut r), rand_f(&mut r)],
            aux_values: vec![rand_ext(&mut r)],
            alpha: rand_ext(&mut r),
            domain: Coset::new(log_n + log_blowup, GENERATOR),
            log_n,
        }
    }

    fn inputs(&self) -> ComposeInputs<'_, CpuMatrix> {
        ComposeInputs {
            constraints: &self.cs,
            fixed: Some(&self.fixed),
            main: &self.main,
            aux: Some(&self.aux),
            log_trace_height: self.log_n,
            domain: self.domain,
            challenges: &self.challenges,
            publics: &self.publics,
            aux_values: &self.aux_values,
            alpha: self.alpha,
            next: None,
            log_stride: 0,
        }
    }

    /// The quotient at row i straight from the definition.
    fn expected(&self, i: usize) -> Ext {
        let big = self.domain.size();
        let n = 1usize << self.log_n;
        let blowup = big / n;
        let at = |offset: u32| (i + offset as usize * blowup) % big;
        let values = self.cs.eval(|leaf| match *leaf {
            Leaf::Const(c) => Ext::from_base(c),
            Leaf::Main { col, offset } => Ext::from_base(self.main.get(at(offset), col as usize)),
            Leaf::Fixed { col, offset } => Ext::from_base(self.fixed.get(at(offset), col as usize)),
            Leaf::Aux { col, offset } => self.aux.get_ext(at(offset), col as usize),
            Leaf::Challenge(k) => self.challenges[k as usize],
            Leaf::Public(k) => Ext::from_base(self.publics[k as usize]),
            Leaf::AuxValue(k) => self.aux_values[k as usize],
        });
        let x = self.domain.point(i);
        let last = F::two_adic_root(self.log_n).pow(n as u64 - 1);
        let zh = x.pow(n as u64) - F::ONE;
        let mut q = Ext::ZERO;
        let mut alpha_k = Ext::ONE;
        for (c, v) in self.cs.constraints.iter().zip(values) {
            let z = match c.domain {
                ConstraintDomain::Transition => zh * (x - last).inverse().unwrap(),
                ConstraintDomain::FirstRow => x - F::ONE,
                ConstraintDomain::LastRow => x - last,
                ConstraintDomain::AllRows => zh,
            };
            q += alpha_k * v.mul_base(z.inverse().unwrap());
            alpha_k *= self.alpha;
        }
        q
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On every 2^s-th row of a larger coset, read in place, composition
    /// gives what it gives there on the whole coset.
    #[test]
    fn compose_with_a_stride_reads_every_strided_row(seed: u64, log_n in 0u32..=6, log_blowup in 1u32..=3, s in 1u32..=3) {
        let s = s.min(log_blowup);
        let c = Case::new(seed, log_n, log_blowup);
        let b = CpuBackend::new();
        let whole = b.compose(&CTX, &c.inputs()).unwrap();
        let sub = Coset::new(c.domain.log_size - s, c.domain.shift);
        let strided = b.compose(&CTX, &ComposeInputs { domain: sub, log_stride: s, ..c.inputs() }).unwrap();
        prop_assert_eq!(strided.height(), sub.size());
        for i in 0..sub.size() {
            prop_assert_eq!(strided.get_ext(i, 0), whole.get_ext(i << s, 0));
        }
    }

    #[test]
    fn compose_matches_direct_evaluation(seed: u64, log_n in 0u32..=6, log_blowup in 1u32..=3) {
        let c = Case::new(seed, log_n, log_blowup);
        let q = CpuBackend::new().compose(&CTX, &c.inputs()).unwrap();
        prop_assert_eq!((q.height(), q.width()), (c.domain.size(), 3));
        for i in 0..c.domain.size() {
            prop_assert_eq!(q.get_ext(i, 0), c.expected(i), "row {}", i);
        }
    }
}

/// Several chunks of rows, so wrap-around reads cross chunk boundaries.
#[test]
fn compose_over_many_chunks() {
    let c = Case::new(3, 9, 2);
    let q = CpuBackend::new().compose(&CTX, &c.inputs()).unwrap();
    for i in (0..c.domain.size()).step_by(37).chain([c.domain.size() - 1]) {
        assert_eq!(q.get_ext(i, 0), c.expected(i), "row {i}");
    }
}

#[test]
fn compose_rejects_malformed_systems_and_domains() {
    let b = CpuBackend::new();
    let c = Case::new(1, 3, 1);
    // A domain that contains trace-subgroup points has undefined quotients.
    let mut bad_domain = Case::new(1, 3, 1);
    bad_domain.domain.shift = F::ONE;
    assert!(matches!(
        b.compose(&CTX, &bad_domain.inputs()),
        Err(BackendError::InvalidInput { stage: Stage::Compose, .. })
    ));
    // Operands must precede their node; constraint roots must exist.
    let mut cs = c.cs.clone();
    cs.nodes.push(backend_api::Node::Add(0, cs.nodes.len() as u32 + 5));
    let mut bad = Case::new(1, 3, 1);
    bad.cs = cs;
    assert!(matches!(b.compose(&CTX, &bad.inputs()), Err(BackendError::InvalidInput { stage: Stage::Compose, .. })));
    let mut bad = Case::new(1, 3, 1);
    bad.cs.constraints[0].node = 10_000;
    assert!(matches!(b.compose(&CTX, &bad.inputs()), Err(BackendError::InvalidInput { stage: Stage::Compose, .. })));
    // Wrong widths, via the shared validator.
    let mut bad = Case::new(1, 3, 1);
    bad.main = rand_matrix(&mut rng(2), 2, 16);
    assert!(matches!(b.compose(&CTX, &bad.inputs()), Err(BackendError::InvalidInput { stage: Stage::Compose, .. })));
    // A stride needs matrices 2^s times the domain's height, and at most
    // the largest blowup.
    for s in [1, 5] {
        let strided = ComposeInputs { log_stride: s, ..c.inputs() };
        assert!(matches!(b.compose(&CTX, &strided), Err(BackendError::InvalidInput { stage: Stage::Compose, .. })));
    }
}
