//! Segmented runs: proofs that verify whatever the segment size, bytes
//! that do not depend on the order segments are proven in, and the
//! malicious-witness harness at segment boundaries: a value changed
//! between a write in one segment and a read in the next, memory dropped
//! or invented at a boundary, a forged start state, reordered, dropped and
//! re-indexed segments, a run cut short. Every attack must be rejected;
//! the table of verdicts is written to target/tmp/soundness/.

use backend_api::F;
use backend_cpu::CpuBackend;
use stark::attack::forge_with;
use stark::segments::{commit_main, MainCommitment};
use stark::{Acceptance, Challenges, ProofOptions};
use vm::air::STATE_LEN;
use vm::bundle::{Expected, SegmentedBundle};
use vm::segment::Segmented;
use vm::{assemble, examples, execute, ExecOptions, Execution, Program};

/// Stores in the first segment, loops across several, then reads back,
/// updates and reads again: memory crosses every boundary.
const ACROSS: &str = "read r1\nstore [100], r1\nadd r6, r1, 5\nstore [200], r6\nli r2, 0\n\
    loop: add r2, r2, 1\nbne r2, r0 + 40, loop\nload r3, [100]\nadd r3, r3, 1\nstore [100], r3\n\
    load r4, [200]\nload r5, [100]\nwrite r3\nwrite r4\nwrite r5\nhalt";

fn options() -> ProofOptions {
    ProofOptions { num_queries: 20, grinding_bits: 0, ..ProofOptions::default() }
}

fn record(src: &str, inputs: &[u64]) -> (Program, Execution) {
    let p = assemble(src).unwrap();
    let inputs: Vec<F> = inputs.iter().map(|&v| F::new(v)).collect();
    let ex = execute(&p, &inputs, &ExecOptions { record: true, ..Default::default() }).unwrap();
    (p, ex)
}

fn expected(p: &Program, ex: &Execution) -> Expected {
    Expected { program_hash: Some(p.hash()), inputs: Some(ex.inputs.clone()), outputs: Some(ex.outputs.clone()) }
}

/// Both phases of every segment as a cheating prover runs them: where the
/// honest prover would refuse a witness that fails its constraints, it
/// commits anyway and keeps the low-degree part.
fn forge_all(s: &Segmented, o: &ProofOptions) -> SegmentedBundle {
    let b = CpuBackend::new();
    let commitments: Vec<MainCommitment> = (0..s.count())
        .map(|k| {
            let (m, t) = s.statement(k).unwrap();
            commit_main(&b, &m, t, m.publics(), o).unwrap()
        })
        .collect();
    let shared = s.challenges(o, &commitments).unwrap();
    let segments = (0..s.count())
        .map(|k| {
            let (m, t) = s.statement(k).unwrap();
            let proof = forge_with(&b, &m, t, m.publics(), o, Challenges::Shared(&shared)).unwrap();
            (m.publics().to_vec(), proof)
        })
        .collect();
    SegmentedBundle { program: s.program.clone(), segments }
}

#[test]
fn segmented_runs_verify_at_every_size_and_carry_memory() {
    let o = options();
    for (src, inputs, sizes) in [
        (ACROSS, vec![7], vec![16, 32, 64, 256]),
        (examples::MATMUL, vec![3], vec![32, 128]),
        (examples::CHAIN, vec![60, 3], vec![16, 64]),
    ] {
        let (p, ex) = record(src, &inputs);
        for size in sizes {
            let s = Segmented::new(&p, &ex, size).unwrap();
            let proofs = s.prove_all(&CpuBackend::new(), &o).unwrap();
            let segments = (0..s.count()).map(|k| s.machine(k).unwrap().publics().to_vec()).zip(proofs).collect();
            let bundle = SegmentedBundle { program: p.clone(), segments };
            let v = bundle.verify(&expected(&p, &ex), &Acceptance::Options(o));
            assert!(v.is_ok(), "{} cycles in segments of {size}: {:?}", ex.cycles, v.err());
            let again = SegmentedBundle::from_bytes(&bundle.to_bytes()).unwrap();
            assert_eq!(again.to_bytes(), bundle.to_bytes());
            if size == 16 {
                assert!(s.count() >= 5, "the run crosses several boundaries");
            }
        }
    }
}

#[test]
fn bytes_do_not_depend_on_the_order_segments_are_proven_in() {
    let o = options();
    let (p, ex) = record(ACROSS, &[9]);
    let s = Segmented::new(&p, &ex, 32).unwrap();
    let b = CpuBackend::new();
    let in_order = s.prove_all(&b, &o).unwrap();
    let commitments: Vec<_> = (0..s.count()).rev().map(|k| s.commit(&b, k, &o).unwrap()).rev().collect();
    let shared = s.challenges(&o, &commitments).unwrap();
    for k in (0..s.count()).rev() {
        let proof = s.prove(&b, k, &o, &shared, &commitments[k]).unwrap();
        assert_eq!(proof.to_bytes(), in_order[k].to_bytes(), "segment {k}");
    }
}

#[test]
fn a_segment_whose_traces_changed_between_the_phases_is_refused() {
    let o = options();
    let (p, ex) = record(ACROSS, &[9]);
    let s = Segmented::new(&p, &ex, 32).unwrap();
    let b = CpuBackend::new();
    let commitments: Vec<_> = (0..s.count()).map(|k| s.commit(&b, k, &o).unwrap()).collect();
    let shared = s.challenges(&o, &commitments).unwrap();
    let err = s.prove(&b, 1, &o, &shared, &commitments[0]).unwrap_err();
    assert!(err.to_string().contains("first phase"), "{err}");
}

type Tamper = Box<dyn Fn(&mut Segmented)>;
type Rearrange = Box<dyn Fn(&mut SegmentedBundle)>;

#[test]
fn cross_segment_attacks_are_rejected() {
    let o = options();
    let (p, ex) = record(ACROSS, &[7]);
    let honest = Segmented::new(&p, &ex, 16).unwrap();
    let count = honest.count();
    let mid = count / 2;
    let bump = |v: &mut F| *v += F::ONE;
    let witness: Vec<(&str, Tamper)> = vec![
        (
            "a value changed between its write and a read in a later segment",
            Box::new(move |s| s.tamper(mid).1.iter_mut().for_each(|(_, v)| bump(v))),
        ),
        (
            "an address dropped from a segment's opening memory",
            Box::new(move |s| {
                s.tamper(mid).1.pop();
            }),
        ),
        (
            "an address invented in a segment's opening memory",
            Box::new(move |s| s.tamper(mid).1.push((999, F::new(3)))),
        ),
        (
            "a forged start state (r1 + 1), the segment before ending there",
            Box::new(move |s| {
                bump(&mut s.tamper(mid).0.start[2]);
                bump(&mut s.tamper(mid - 1).0.end[2]);
            }),
        ),
        ("a forged start state, the chain broken", Box::new(move |s| bump(&mut s.tamper(mid).0.start[2]))),
        ("a forged initial state (r1 = 1)", Box::new(|s| s.tamper(0).0.start[2] = F::ONE)),
        (
            "the run cut short: a middle segment marked last",
            Box::new(move |s| {
                let (place, _) = s.tamper(mid);
                place.is_last = true;
                place.end = [F::ZERO; STATE_LEN];
            }),
        ),
        (
            "the run cut short: the segments after a middle one dropped, it marked last",
            Box::new(move |s| {
                let (place, _) = s.tamper(mid);
                place.is_last = true;
                place.end = [F::ZERO; STATE_LEN];
                s.truncate(mid + 1);
            }),
        ),
        ("segment indices shifted by one", Box::new(|s| (0..s.count()).for_each(|k| s.tamper(k).0.index += 1))),
    ];
    let rearranged: Vec<(&str, Rearrange)> = vec![
        ("two segments reordered in the file", Box::new(move |b| b.segments.swap(mid, mid + 1))),
        ("a middle segment dropped", Box::new(move |b| drop(b.segments.remove(mid)))),
        ("the last segment dropped", Box::new(|b| drop(b.segments.pop()))),
        ("a segment repeated", Box::new(move |b| b.segments[mid + 1] = b.segments[mid].clone())),
    ];
    let want = expected(&p, &ex);
    let mut rows = vec![];
    for (name, tamper) in &witness {
        let mut s = Segmented::new(&p, &ex, 16).unwrap();
        tamper(&mut s);
        let verdict = forge_all(&s, &o).verify(&want, &Acceptance::Options(o));
        rows.push((name.to_string(), verdict.map(|_| ()).map_err(|e| e.to_string())));
    }
    let honest_bundle = forge_all(&honest, &o);
    assert!(honest_bundle.verify(&want, &Acceptance::Options(o)).is_ok(), "the honest run verifies");
    for (name, rearrange) in &rearranged {
        let mut b = SegmentedBundle { program: p.clone(), segments: honest_bundle.segments.clone() };
        rearrange(&mut b);
        let verdict = b.verify(&want, &Acceptance::Options(o));
        rows.push((name.to_string(), verdict.map(|_| ()).map_err(|e| e.to_string())));
    }
    let mut table = format!("cross-segment attacks on a run of {} segments of 16 cycles\n", count);
    for (name, verdict) in &rows {
        let said = match verdict {
            Ok(()) => "ACCEPTED".to_string(),
            Err(e) => format!("rejected: {e}"),
        };
        table += &format!("{name:<66} {said}\n");
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("soundness");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("vm-segments.txt"), &table).unwrap();
    print!("{table}");
    let accepted: Vec<&String> = rows.iter().filter(|(_, v)| v.is_ok()).map(|(n, _)| n).collect();
    assert!(accepted.is_empty(), "accepted: {accepted:?}");
    assert_eq!(rows.len(), witness.len() + rearranged.len());
}

#[test]
fn a_bus_total_that_does_not_cancel_is_the_rejection_named() {
    // The sum of all segments' bus sums and the public io is what decides
    // memory across segments: check the verifier names it.
    let o = options();
    let (p, ex) = record(ACROSS, &[7]);
    let mut s = Segmented::new(&p, &ex, 16).unwrap();
    s.tamper(2).1.iter_mut().for_each(|(_, v)| *v += F::ONE);
    let err = forge_all(&s, &o).verify(&expected(&p, &ex), &Acceptance::Options(o)).unwrap_err();
    assert!(err.to_string().contains("balance together"), "{err}");
}
