//! What a cheating prover would try against the VM's AIR: every column of
//! every table changed at its first, a middle, its last real and a padding
//! row, and the semantic attacks on the ISA (addresses outside memory,
//! stale and unwritten reads, skipped and repeated inputs, reordered and
//! extra outputs, another opcode's flags, a stray register write, a jump
//! outside the program, a halt that is not last). Each must fail the
//! constraints or buses, and its forged proof must be rejected.

use backend_api::{ColMatrix, F};
use backend_cpu::CpuBackend;
use stark::attack::witness::{single_cell_attacks, Attack, Harness, Report, Verdict};
use stark::{Acceptance, ProofOptions};
use std::sync::Arc;
use vm::air::{cpu, prog};
use vm::bundle::ProofBundle;
use vm::exec::Deviation;
use vm::{assemble, examples, execute, trace, ExecOptions, Execution, Program, VmMachine};

fn felts(v: &[u64]) -> Vec<F> {
    v.iter().map(|&x| F::new(x)).collect()
}

fn run(p: &Program, inputs: &[F], deviation: Option<Deviation>) -> Execution {
    execute(p, inputs, &ExecOptions { record: true, deviation, ..Default::default() })
        .unwrap_or_else(|e| panic!("{deviation:?}: {e}"))
}

/// An attack claiming `outputs` for `p` on the execution's inputs.
fn attack<'a>(name: &str, p: &Program, ex: &Execution, outputs: &[F], traces: Vec<ColMatrix>) -> Attack<'a> {
    let machine = VmMachine::new(p, &ex.inputs, outputs);
    Attack { name: name.into(), publics: machine.publics().to_vec(), machine: Arc::new(machine), traces }
}

/// The witness an executor that breaks the ISA in one way would produce,
/// claimed as a run of `p` with the outputs it wrote.
fn deviant<'a>(name: &str, src: &str, inputs: &[u64], d: Deviation) -> Attack<'a> {
    let p = assemble(src).unwrap();
    let ex = run(&p, &felts(inputs), Some(d));
    let traces = trace::generate(&p, &ex).unwrap();
    attack(name, &p, &ex, &ex.outputs.clone(), traces)
}

const STORE_AT_INPUT: &str = "read r1\nstore [r1], r1\nwrite r1\nhalt";
const MEMORY: &str = "read r1\nread r2\nstore [100], r1\nstore [100], r2\nload r3, [100]\nload r4, [200]\n\
                      write r3\nwrite r4\nhalt";
const SUM3: &str = "read r1\nread r2\nread r3\nadd r4, r1, r2\nadd r4, r4, r3\nwrite r4\nwrite r1\nhalt";
const EARLY_HALT: &str = "read r1\nhalt\nwrite r1\nhalt";
/// Uses every opcode, memory both ways and io, so a sweep meets them all.
const EVERY_OPCODE: &str = "read r1\nread r2\nadd r3, r1, r2 + 1\nsub r4, r3, 2\nmul r5, r4, r1\neq r6, r5, r4\n\
    store [r1 + 7], r5\nload r6, [r1 + 7]\nbeq r6, r5, skip\nwrite r0\nskip: bne r6, r5 + 1, next\nwrite r0\n\
    next: jal r7, sub\nwrite r6\nhalt\nsub: write r3\njalr r0, r7";

fn out_of_range_addresses<'a>() -> Vec<Attack<'a>> {
    let p = F::ZERO - F::ONE;
    let unchecked = Deviation::UncheckedAddresses;
    [("p - 1", p.value()), ("2^32", 1 << 32), ("p - 5", (p - F::new(4)).value())]
        .into_iter()
        .map(|(what, addr)| deviant(&format!("store at address {what}"), STORE_AT_INPUT, &[addr], unchecked))
        .collect()
}

fn memory_reads<'a>() -> Vec<Attack<'a>> {
    vec![
        deviant("a load returns a stale value", MEMORY, &[5, 9], Deviation::StaleLoad { nth_load: 0 }),
        deviant("a load returns the stored value + 1", MEMORY, &[5, 9], Deviation::LoadPlusOne { nth_load: 0 }),
        deviant(
            "a load of a never-written word returns 7",
            MEMORY,
            &[5, 9],
            Deviation::UnwrittenLoad { nth_load: 1, value: F::new(7) },
        ),
    ]
}

fn inputs_and_outputs<'a>() -> Vec<Attack<'a>> {
    let p = assemble(SUM3).unwrap();
    let ex = run(&p, &felts(&[1, 2, 3]), None);
    let traces = || trace::generate(&p, &ex).unwrap();
    let (sum, first) = (ex.outputs[0], ex.outputs[1]);
    vec![
        deviant("an input is skipped", SUM3, &[1, 2, 3, 4], Deviation::SkipInput { nth_read: 1 }),
        deviant("an input is read twice", SUM3, &[1, 2, 3], Deviation::RepeatInput { nth_read: 1 }),
        attack("the outputs are reordered", &p, &ex, &[first, sum], traces()),
        attack("an extra output is claimed", &p, &ex, &[sum, first, first], traces()),
        attack("an output is dropped", &p, &ex, &[sum], traces()),
        attack("an output is changed", &p, &ex, &[sum + F::ONE, first], traces()),
    ]
}

/// A run of program B (A with one field of one instruction changed),
/// presented as a run of A: the CPU rows carry B's flags or selectors.
fn another_instruction<'a>() -> Vec<Attack<'a>> {
    let a = assemble(SUM3).unwrap();
    type Edit = fn(&mut vm::Instruction);
    let edits: [(&str, Edit); 4] = [
        ("the flags of sub where the program has add", |i| i.op = vm::Opcode::Sub),
        ("the flags of mul where the program has add", |i| i.op = vm::Opcode::Mul),
        ("the selector of r3 where the program reads r2", |i| i.rs2 = 3),
        ("the destination r5 where the program writes r4", |i| i.rd = 5),
    ];
    edits
        .into_iter()
        .map(|(name, edit)| {
            let mut b = a.clone();
            edit(&mut b.instructions[3]);
            let ex = run(&b, &felts(&[1, 2, 3]), None);
            attack(name, &a, &ex, &ex.outputs.clone(), trace::generate(&b, &ex).unwrap())
        })
        .collect()
}

fn control_flow<'a>() -> Vec<Attack<'a>> {
    vec![
        deviant("a register besides rd is written", SUM3, &[1, 2, 3], Deviation::ExtraWrite { cycle: 3, reg: 1 }),
        deviant("a halt that is not last", EARLY_HALT, &[4], Deviation::HaltFallsThrough),
        jump_outside_the_program(),
    ]
}

/// `read r1; jr r1; halt` on input 2 jumps to the halt. The forger claims
/// input 3: the jump lands past the program, where it claims a halt.
fn jump_outside_the_program<'a>() -> Attack<'a> {
    let p = assemble("read r1\njr r1\nhalt").unwrap();
    let ex = run(&p, &felts(&[2]), None);
    let mut traces = trace::generate(&p, &ex).unwrap();
    let cpu_trace = &mut traces[0];
    let rows = cpu_trace.height();
    cpu_trace.set(0, cpu::RES, F::new(3));
    cpu_trace.set(1, cpu::X, F::new(3));
    for r in 1..rows {
        cpu_trace.set(r, cpu::REG, F::new(3));
    }
    for r in 2..rows {
        cpu_trace.set(r, cpu::PC, F::new(3));
    }
    let mult = &mut traces[2];
    mult.set(3, prog::MULT, mult.get(2, prog::MULT));
    mult.set(2, prog::MULT, F::ZERO);
    let claimed = Execution { inputs: felts(&[3]), ..ex };
    attack("a jump to pc 3 of a 3-instruction program", &p, &claimed, &[], traces)
}

/// Single-cell attacks on every column of every table of a run of `src`.
fn sweep<'a>(src: &str, inputs: &[u64]) -> Vec<Attack<'a>> {
    let p = assemble(src).unwrap();
    let ex = run(&p, &felts(inputs), None);
    let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
    let publics = machine.publics().to_vec();
    let traces = trace::generate(&p, &ex).unwrap();
    let real = [ex.cycles as usize, ex.memory.len(), p.len(), traces[3].height()];
    single_cell_attacks(Arc::new(machine), &publics, &traces, &real)
}

fn harness(backend: &CpuBackend) -> Harness<'_, CpuBackend> {
    Harness { backend, options: ProofOptions::default(), seed: 11 }
}

/// Prints the table and keeps it under the target directory, where CI
/// shows it.
fn report(name: &str, report: &Report) {
    let table = report.table();
    println!("{table}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("soundness");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.txt")), &table).unwrap();
}

#[test]
fn the_out_of_range_address_forgery_is_rejected() {
    // The witness of an executor without the address check, proven by a
    // prover that ignores its own checks, with the default options.
    let p = assemble(STORE_AT_INPUT).unwrap();
    let ex = run(&p, &[F::ZERO - F::ONE], Some(Deviation::UncheckedAddresses));
    let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
    let traces = trace::generate(&p, &ex).unwrap();
    let options = ProofOptions::default();
    let backend = CpuBackend::new();
    assert!(stark::prove(&backend, &machine, traces.clone(), machine.publics(), &options).is_err());
    let proof = stark::attack::forge(&backend, &machine, traces, machine.publics(), &options).unwrap();
    let err = stark::verify(&machine, machine.publics(), &proof, &Acceptance::MinSecurity(100)).unwrap_err();
    println!("stark::verify: {err}");

    // `kiln verify` on the proof file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("forged.proof");
    let bundle = ProofBundle { program: p, publics: machine.publics().to_vec(), proof };
    std::fs::write(&file, bundle.to_bytes()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln")).arg("verify").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("kiln verify: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error:") && stderr.contains("rejected"), "{stderr}");
}

#[test]
fn semantic_attacks_are_rejected() {
    let attacks: Vec<Attack> = [out_of_range_addresses(), memory_reads(), inputs_and_outputs(), another_instruction()]
        .into_iter()
        .flatten()
        .chain(control_flow())
        .collect();
    let backend = CpuBackend::new();
    let r = harness(&backend).run(attacks);
    report("vm-semantic", &r);
    r.assert_none_accepted();
    // Each was refused by the verifier itself, not only by the checker.
    assert!(r.outcomes.iter().all(|o| matches!(o.verdict, Verdict::Rejected(_))), "{}", r.table());
}

#[test]
fn every_cell_of_every_table_is_bound() {
    let backend = CpuBackend::new();
    let (name, src, inputs) = examples::ALL[1];
    for (label, src, inputs) in [("every-opcode", EVERY_OPCODE, &[3u64, 4][..]), (name, src, inputs)] {
        let r = harness(&backend).run(sweep(src, inputs));
        report(&format!("vm-cells-{label}"), &r);
        r.assert_none_accepted();
    }
}
