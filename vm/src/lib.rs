//! The Kiln VM: a small register machine over Goldilocks words, and
//! everything needed to prove its runs.
//!
//! Owns the instruction set ([`isa`]), the assembler ([`asm`]), the
//! executor ([`exec`]), the multi-table AIR joined by LogUp buses
//! ([`air`], [`logup`]), trace generation ([`trace`]), runs cut into
//! segments proven together ([`segment`]), a direct constraint
//! checker for tests ([`check`]), the bundled example programs
//! ([`examples`]), the proof file and the statement it proves ([`bundle`]),
//! and the `kiln` CLI (the crate's binary, behind the default `cli`
//! feature, so library users go without its dependencies). The ISA and the
//! text syntax are documented in `vm/README.md`.

pub mod air;
pub mod asm;
pub mod bundle;
pub mod check;
pub mod exec;
pub mod isa;
pub mod logup;
pub mod segment;
pub mod trace;

pub use air::VmMachine;
pub use asm::{assemble, assemble_bytes, AsmError, AsmErrorKind};
pub use exec::{execute, ExecError, ExecOptions, Execution};
pub use isa::{Instruction, Opcode, Program};

/// The bundled example programs (their sources live in `vm/examples/`).
pub mod examples {
    pub const FIBONACCI: &str = include_str!("../examples/fibonacci.kasm");
    pub const FACTORIAL: &str = include_str!("../examples/factorial.kasm");
    pub const MATMUL: &str = include_str!("../examples/matmul.kasm");
    pub const CHAIN: &str = include_str!("../examples/chain.kasm");
    /// What `kiln prove` proves when given no program.
    pub const DEFAULT: &str = FIBONACCI;
    /// The inputs used with [`DEFAULT`] when none are given.
    pub const DEFAULT_INPUTS: &[u64] = &[1000];
    /// (name, source, small inputs for tests).
    pub const ALL: &[(&str, &str, &[u64])] = &[
        ("fibonacci", FIBONACCI, &[10]),
        ("factorial", FACTORIAL, &[5]),
        ("matmul", MATMUL, &[3]),
        ("chain", CHAIN, &[20, 3]),
    ];
}
