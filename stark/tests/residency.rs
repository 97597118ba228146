//! Spilled and recomputed residencies give the kept proof's bytes: every
//! example, both hashes, blowups 2 to 8, spilled in pieces from a few
//! columns or rows (many blocks, subtrees and cosets) to the whole matrix,
//! recomputed a coset at a time or in pieces of a coset (the traces kept
//! until LogUp or rebuilt there, the auxiliary LDE kept or rebuilt), every
//! table spilled or recomputed, or one alone.

use backend_api::op::{Op, Out};
use backend_api::wrap::{Matrix, Tree, Wrapper};
use backend_api::{ColMatrix, Ctx, HashKind, Result, F};
use backend_cpu::CpuBackend;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{
    prove_with_settings, verify, Acceptance, Machine, ProofOptions, ProveSettings, Residency, SingleTable, Tables,
};
use std::sync::Mutex;

fn options(log_blowup: u32, hash: HashKind) -> ProofOptions {
    ProofOptions { log_blowup, num_queries: 20, grinding_bits: 4, hash, log_fri_arity: 2, log_final_poly_len: 2 }
}

fn same_bytes<M: Machine>(m: &M, traces: Vec<ColMatrix>, publics: &[F], o: &ProofOptions) {
    let b = CpuBackend::new();
    let prove = |residency| {
        let settings = ProveSettings { residency, ..ProveSettings::default() };
        prove_with_settings(&b, m, traces.clone(), publics, o, &settings).expect("prove")
    };
    let (kept, stats) = prove(Residency::Keep);
    assert_eq!(stats.spilled_bytes, 0);
    verify(m, publics, &kept, &Acceptance::Options(*o)).expect("verify");
    // Every table in pieces from 1 byte to 1 GiB; then each table alone
    // (a DEEP group of two heights, or one with a kept table in it).
    let all = [1, 200, 4096, 1 << 30].map(Residency::spill_all);
    let each = (0..m.tables().len()).map(|t| Residency::Spill { chunk_bytes: 4096, tables: Tables(1 << t) });
    for residency in all.into_iter().chain(each) {
        let (spilled, stats) = prove(residency);
        assert_eq!(stats.residency, residency);
        assert!(stats.spilled_bytes > 0, "a spilled proof moves its LDEs");
        assert!(spilled.to_bytes() == kept.to_bytes(), "{residency:?}: the bytes differ");
    }
    // Every table recomputed, each coset whole or in pieces down to single
    // rows (composition given its next rows), the traces kept until LogUp
    // or rebuilt there, the auxiliary LDE kept or rebuilt; then each table
    // alone.
    let way =
        |tables, (log_split, keep_traces, keep_aux)| Residency::Recompute { tables, log_split, keep_traces, keep_aux };
    let ways =
        [(0, true, true), (0, true, false), (0, false, true), (1, true, true), (1, false, false), (2, false, false)];
    let all = ways.into_iter().chain([(9, false, false)]).map(|w| way(Tables::ALL, w));
    let each = (0..m.tables().len()).flat_map(|t| [(0, true, true), (1, false, false)].map(|w| way(Tables(1 << t), w)));
    for residency in all.into_iter().chain(each) {
        let (recomputed, stats) = prove(residency);
        assert_eq!(stats.residency, residency);
        assert_eq!(stats.spilled_bytes, 0, "a recomputed proof rebuilds and interleaves its pieces on the device");
        assert!(recomputed.to_bytes() == kept.to_bytes(), "{residency:?}: the bytes differ");
    }
}

#[test]
fn every_example_spilled_or_recomputed_equals_kept() {
    for hash in HashKind::ALL {
        for log_blowup in 1..=3 {
            let o = options(log_blowup, hash);
            let fib = SingleTable(Fibonacci::default());
            let (t, p) = Fibonacci::trace(6, F::ONE, F::ONE);
            same_bytes(&fib, vec![t], &p, &o);
            let cubic = SingleTable(Cubic::new(7));
            let (t, p) = cubic.0.trace(5, 7);
            same_bytes(&cubic, vec![t], &p, &o);
            same_bytes(&Permutation::default(), vec![Permutation::trace(5, 3)], &[], &o);
            // Mixed heights: two DEEP groups, the small one rolled in late.
            same_bytes(&TwoTables::default(), TwoTables::traces(6, 11), &[], &o);
        }
    }
}

#[test]
fn tiny_tables_spill_and_recompute_too() {
    let fib = SingleTable(Fibonacci::default());
    for log_n in 0..=2 {
        let (t, p) = Fibonacci::trace(log_n, F::new(2), F::new(3));
        same_bytes(&fib, vec![t], &p, &options(1, HashKind::Blake3));
    }
}

/// Two tables of one height: one DEEP codeword over both. Spilling or
/// recomputing one alone puts a kept table in a group read by cosets (its
/// cosets go through the host).
struct Twins(Cubic, Cubic);

impl Machine for Twins {
    fn tables(&self) -> Vec<&dyn stark::Air> {
        vec![&self.0, &self.1]
    }
}

#[test]
fn a_kept_table_in_a_deep_group_read_by_cosets() {
    let m = Twins(Cubic::new(3), Cubic::new(5));
    // Same seed: both traces start from the same x_0, the shared public.
    let (a, p) = m.0.trace(6, 9);
    let (b, q) = m.1.trace(6, 9);
    assert_eq!(p, q);
    same_bytes(&m, vec![a, b], &p, &options(2, HashKind::Keccak256));
}

/// Counts the backend's operations by name.
struct Counting {
    inner: CpuBackend,
    ops: Mutex<Vec<&'static str>>,
}

impl Wrapper for Counting {
    type Inner = CpuBackend;

    fn inner(&self) -> &CpuBackend {
        &self.inner
    }

    fn call(&self, ctx: &Ctx, op: Op<'_, &Matrix<Self>, &Tree<Self>>) -> Result<Out<Matrix<Self>, Tree<Self>>> {
        self.ops.lock().unwrap().push(op.name());
        op.dispatch(&self.inner, ctx)
    }
}

#[test]
fn a_trace_kept_until_logup_is_not_rebuilt_there() {
    let (m, o) = (Permutation::default(), options(2, HashKind::Blake3));
    let prove = |keep_traces| {
        let b = Counting { inner: CpuBackend::new(), ops: Mutex::new(vec![]) };
        let residency = Residency::Recompute { tables: Tables::ALL, log_split: 0, keep_traces, keep_aux: false };
        let settings = ProveSettings { residency, ..ProveSettings::default() };
        let (proof, _) = prove_with_settings(&b, &m, vec![Permutation::trace(6, 3)], &[], &o, &settings).unwrap();
        let ops = b.ops.into_inner().unwrap();
        let count = |name| ops.iter().filter(|&&o| o == name).count();
        (proof.to_bytes(), count("coset_ntt"), count("intt"), count("intt_in_place"))
    };
    let (kept, kept_cosets, kept_intt, kept_in_place) = prove(true);
    let (rebuilt, rebuilt_cosets, rebuilt_intt, rebuilt_in_place) = prove(false);
    assert!(kept == rebuilt);
    // The main trace: made into coefficients beside itself, and one coset
    // (the trace, shift one) not rebuilt for LogUp.
    assert_eq!(kept_cosets + 1, rebuilt_cosets);
    assert_eq!((kept_intt, kept_in_place), (rebuilt_intt + 1, rebuilt_in_place - 1));
}

#[test]
fn a_kept_auxiliary_lde_is_extended_once_and_never_rebuilt() {
    let (m, o) = (Permutation::default(), options(2, HashKind::Keccak256));
    let prove = |keep_aux| {
        let b = Counting { inner: CpuBackend::new(), ops: Mutex::new(vec![]) };
        let residency = Residency::Recompute { tables: Tables::ALL, log_split: 0, keep_traces: true, keep_aux };
        let settings = ProveSettings { residency, ..ProveSettings::default() };
        let (proof, _) = prove_with_settings(&b, &m, vec![Permutation::trace(6, 3)], &[], &o, &settings).unwrap();
        let ops = b.ops.into_inner().unwrap();
        let count = |name| ops.iter().filter(|&&o| o == name).count();
        (proof.to_bytes(), count("coset_lde"), count("coset_ntt"), count("coset_rows"), count("stride_rows"))
    };
    let (kept, kept_ldes, kept_cosets, kept_rows, kept_strides) = prove(true);
    let (rebuilt, rebuilt_ldes, rebuilt_cosets, rebuilt_rows, rebuilt_strides) = prove(false);
    assert!(kept == rebuilt);
    // Extended once; composition reads its pieces of the quotient domain
    // by stride instead of rebuilding them, and neither the commitment (4
    // cosets), DEEP (its combination) nor the openings rebuild it.
    assert_eq!(kept_ldes, rebuilt_ldes + 1);
    let composed = kept_strides.checked_sub(rebuilt_strides).expect("composition reads the kept LDE by stride");
    assert!(composed >= 1);
    assert_eq!(kept_cosets + 4 + composed + 1, rebuilt_cosets);
    assert!(kept_rows < rebuilt_rows);
}
