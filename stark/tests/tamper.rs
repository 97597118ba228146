//! Every verifier check rejects a proof with one part altered, and
//! arbitrary corruption of the serialized bytes never panics.

use backend_api::{Ext, HashKind, F};
use backend_cpu::CpuBackend;
use proptest::prelude::*;
use stark::examples::{Fibonacci, TwoTables};
use stark::{prove, verify, Acceptance, Proof, ProofOptions, SingleTable, VerifyError};
use std::sync::OnceLock;

fn options() -> ProofOptions {
    ProofOptions {
        log_blowup: 2,
        num_queries: 8,
        grinding_bits: 6,
        hash: HashKind::Blake3,
        log_fri_arity: 1,
        log_final_poly_len: 1,
    }
}

fn machine() -> TwoTables {
    TwoTables::default()
}

fn honest() -> &'static Proof {
    static PROOF: OnceLock<Proof> = OnceLock::new();
    PROOF.get_or_init(|| prove(&CpuBackend::new(), &machine(), TwoTables::traces(6, 21), &[], &options()).unwrap())
}

fn check(p: &Proof) -> Result<(), VerifyError> {
    verify(&machine(), &[], p, &Acceptance::Options(options()))
}

fn tampered(f: impl FnOnce(&mut Proof)) -> Result<(), VerifyError> {
    let mut p = honest().clone();
    f(&mut p);
    assert_ne!(&p, honest(), "the tamper must change the proof");
    check(&p)
}

fn bump(e: &mut Ext) {
    e.0[0] += F::ONE;
}

#[test]
fn the_honest_proof_verifies() {
    check(honest()).unwrap();
}

#[test]
fn each_commitment_root_is_checked() {
    for t in 0..2 {
        assert!(tampered(|p| p.main_roots[t][0] ^= 1).is_err());
        assert!(tampered(|p| p.aux_roots[t].as_mut().unwrap()[5] ^= 1).is_err());
        assert!(tampered(|p| p.quotient_roots[t][31] ^= 1).is_err());
    }
    for k in 0..honest().fri_roots.len() {
        let err = tampered(|p| p.fri_roots[k][3] ^= 0x80).unwrap_err();
        assert!(!matches!(err, VerifyError::Shape(_)), "{err}");
    }
}

#[test]
fn merkle_openings_are_checked() {
    for t in 0..2 {
        let err = tampered(|p| p.queries[1].tables[t].main.values[0] += F::ONE).unwrap_err();
        assert!(matches!(err, VerifyError::TraceOpening { part: "main", .. }), "{err}");
        let err = tampered(|p| p.queries[2].tables[t].aux.as_mut().unwrap().values[4] += F::ONE).unwrap_err();
        assert!(matches!(err, VerifyError::TraceOpening { part: "auxiliary", .. }), "{err}");
        let err = tampered(|p| p.queries[0].tables[t].quotient.values[1] += F::ONE).unwrap_err();
        assert!(matches!(err, VerifyError::TraceOpening { part: "quotient", .. }), "{err}");
        let err = tampered(|p| p.queries[3].tables[t].main.path[0][0] ^= 1).unwrap_err();
        assert!(matches!(err, VerifyError::TraceOpening { .. }), "{err}");
    }
}

#[test]
fn out_of_domain_values_are_checked() {
    for t in 0..2 {
        let err = tampered(|p| bump(&mut p.ood[t].main[0][0])).unwrap_err();
        assert!(matches!(err, VerifyError::OodConstraints { .. }), "{err}");
        let err = tampered(|p| bump(&mut p.ood[t].aux[1][3])).unwrap_err();
        assert!(matches!(err, VerifyError::OodConstraints { .. }), "{err}");
        let err = tampered(|p| bump(&mut p.ood[t].quotient[2])).unwrap_err();
        assert!(matches!(err, VerifyError::OodConstraints { .. }), "{err}");
    }
}

#[test]
fn each_fri_layer_and_the_final_polynomial_are_checked() {
    let layers = honest().fri_roots.len();
    assert!(layers >= 3);
    for k in 0..layers {
        let err = tampered(|p| p.queries[0].fri[k].values[0] += F::ONE).unwrap_err();
        assert!(matches!(err, VerifyError::FriOpening { layer, .. } if layer == k), "{err}");
        let err = tampered(|p| p.queries[1].fri[k].path[0][7] ^= 2).unwrap_err();
        assert!(matches!(err, VerifyError::FriOpening { layer, .. } if layer == k), "{err}");
    }
    assert!(tampered(|p| bump(&mut p.final_poly[0])).is_err());
}

#[test]
fn the_nonce_and_auxiliary_values_are_checked() {
    assert!(tampered(|p| p.pow_nonce ^= 1).is_err());
    assert!(tampered(|p| p.pow_nonce = p.pow_nonce.wrapping_add(1 << 40)).is_err());
    let err = tampered(|p| {
        bump(&mut p.aux_values[0][0]);
        bump(&mut p.aux_values[1][0]);
    })
    .unwrap_err();
    assert!(matches!(err, VerifyError::OodConstraints { .. }), "{err}");
    let err = tampered(|p| bump(&mut p.aux_values[0][0])).unwrap_err();
    assert!(matches!(err, VerifyError::AuxValues(_)), "{err}");
}

#[test]
fn public_inputs_are_bound() {
    let o = options();
    let fib = SingleTable(Fibonacci::default());
    let (t, p) = Fibonacci::trace(5, F::ONE, F::ONE);
    let proof = prove(&CpuBackend::new(), &fib, vec![t], &p, &o).unwrap();
    verify(&fib, &p, &proof, &Acceptance::Options(o)).unwrap();
    for i in 0..p.len() {
        let mut q = p.clone();
        q[i] += F::ONE;
        assert!(verify(&fib, &q, &proof, &Acceptance::Options(o)).is_err(), "public {i}");
    }
}

#[test]
fn shape_changes_are_typed_errors() {
    let err = tampered(|p| {
        p.queries.pop();
    })
    .unwrap_err();
    assert!(matches!(err, VerifyError::Shape(_)));
    let err = tampered(|p| p.log_heights[1] += 1).unwrap_err();
    assert!(matches!(err, VerifyError::Shape(_)), "{err}");
    assert!(tampered(|p| p.final_poly.push(Ext::ONE)).is_err());
    assert!(tampered(|p| p.options.num_queries = 0).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_bytes_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..), 1..4)) {
        let mut bytes = honest().to_bytes();
        for (i, x) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x;
        }
        if let Ok(p) = Proof::from_bytes(&bytes) {
            prop_assert!(check(&p).is_err() || &p == honest());
        }
    }

    #[test]
    fn truncated_bytes_never_panic(keep in any::<prop::sample::Index>()) {
        let bytes = honest().to_bytes();
        let cut = keep.index(bytes.len());
        if let Ok(p) = Proof::from_bytes(&bytes[..cut]) {
            prop_assert!(check(&p).is_err());
        }
    }
}
